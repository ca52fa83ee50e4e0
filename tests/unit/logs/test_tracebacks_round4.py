"""Mechanisms added after held-out 5 was measured (issue 15, fourth round), each on lines built
from the shapes of real logs (the corpus part says which)."""

from __future__ import annotations

from workbench.logformats import LineShapes
from workbench.tracebacks import analyze

_CI = "[2025-12-13T19:54:35Z] (Worker_TP0 pid=9260) ERROR 12-13 11:54:35 [multiproc_executor.py:826] "


def test_a_learned_prefix_stops_where_a_known_format_begins() -> None:
    shapes = LineShapes()
    assert shapes.learn(_CI + '  File "/vllm/compilation/cuda_graph.py", line 266, in __call__')
    rest = shapes.strip(_CI + "    super().capture_end()")
    assert rest is not None and rest.startswith("(Worker_TP0 pid=9260) ERROR")


def test_the_rank_behind_a_ci_timestamp_is_read() -> None:
    log = "".join(_CI + tail + "\n" for tail in (
        '  File "/vllm/compilation/cuda_graph.py", line 266, in __call__',
        "    with torch.cuda.graph(cudagraph, pool=self.graph_pool):",
        '  File "/torch/cuda/graphs.py", line 130, in capture_end',
        "    super().capture_end()"))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.ranks == ("TP0",)
    assert a.root_cause.phase == "cuda_graph_capture"


def test_an_unknown_prefix_with_nothing_known_after_it_is_learned_whole() -> None:
    shapes = LineShapes()
    assert shapes.learn('2026-05-29 09:14:45,594 - wrapper - stderr | File "/x.py", line 1, in f')
    assert shapes.strip("2026-05-29 09:14:46,001 - wrapper - stderr |     f()") == "    f()"  # noqa: B005 (LineShapes.strip)


def test_a_record_indented_as_a_whole_is_read_through_its_learned_prefix() -> None:
    pre = "    2025-06-06T19:02:34.252Z DEBUG dynamo_run::subprocess: "
    log = "".join(pre + tail + "\n" for tail in (
        "    raise e",
        '  File "/vllm/engine/multiprocessing/engine.py", line 586, in run_mp_engine',
        "    engine = MQLLMEngine.from_vllm_config(",
        '  File "/vllm/engine/multiprocessing/engine.py", line 248, in from_vllm_config',
        "    return cls("))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "startup_other"
    assert a.final is not None and a.final.truncated


def test_only_an_indented_timestamp_counts_as_an_indented_record() -> None:
    from workbench.tracebacks.prefixes import indented_record

    assert indented_record("    2025-06-06T19:02:34.252Z DEBUG dynamo_run::subprocess:   File \"/x.py\", line 1, in f")
    assert not indented_record("    raise OSError(f'File \"{p}\" missing')")
    assert not indented_record("    2048 tokens in File \"x\"")
    assert not indented_record("                    2025-06-06T19:02:34Z deep in a table")
