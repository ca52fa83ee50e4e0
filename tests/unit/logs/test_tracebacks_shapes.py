"""A real log reads the same behind the line shapes collectors and launchers put before it (issue 15, cause 3).

bench/tracebacks_shapes.py runs the same shapes over the whole labelled corpus; these tests hold the mechanisms it
found missing: a collector's time before an exception line or a Python logging record (no journald host and program),
a launcher's logger relaying its child's records, a head learned from the known records behind it (srun --label,
pdsh, a tag); an exception group behind a prefix: test_tracebacks_groups.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from workbench.logformats import parse_line
from workbench.tracebacks import analyze

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))
from tracebacks_shapes import apply_shape  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "tracebacks"
# windows a paste shaped first (a Markdown quote, a rich box): no collector writes its prefix before a paste's quote
PASTES = {"sglang_dp_attention_quoted_window", "trtllm_rank_error_lines_quoted_window", "rich_boxed_keyerror_load_weights"}


def _key(text: str) -> tuple[str | None, str | None, str] | None:
    root = analyze(text).root_cause
    return None if root is None else (root.exception_type, root.message, root.phase)


@pytest.mark.parametrize("shape", ["cri", "journald", "compose", "srun_label", "ansi"])
def test_every_fixture_reads_the_same_behind_a_collector_s_prefix(shape: str) -> None:
    differ = []
    for log in sorted(FIXTURES.glob("*.log")):
        if log.stem in PASTES:
            continue
        text = log.read_text(errors="replace")
        if _key(text) != _key(apply_shape(text, shape)):
            differ.append(log.stem)
    # (compose: a tqdm bar redrawn mid-line and a terminal-wrapped window join their lines differently behind it)
    assert len(differ) <= {"compose": 2, "journald": 1}.get(shape, 0), differ


def test_a_collector_s_time_before_an_exception_line_is_no_host_and_program() -> None:
    line = parse_line("2025-06-01T10:00:00.000456789Z RuntimeError: permute(sparse_coo): number of dimensions")
    assert line.host is None and line.message.startswith("RuntimeError: permute(sparse_coo)")
    record = parse_line("2025-06-01T10:00:05.005456789Z 2024-09-05 08:43:29,394 - lmdeploy - INFO - loading weights.")
    assert (record.format, record.level, record.message) == ("pylogging", "INFO", "loading weights.")
    journal = parse_line("2025-06-01T10:00:00+0000 gpu-node-3 python3[4242]: ERROR 03-13 09:00:43 [core.py:330] x")
    assert (journal.host, journal.service, journal.pid, journal.level) == ("gpu-node-3", "python3", 4242, "ERROR")
    root = analyze("2025-06-01T10:00:00.000456789Z RuntimeError: permute(sparse_coo): bad dims\n").root_cause
    assert root is not None and root.exception_type == "RuntimeError"
    cuda = parse_line("2025-06-01T10:00:00.000456789Z CUDA error: out of memory")  # no host "CUDA", program "error"
    assert (cuda.host, cuda.service, cuda.message) == (None, None, "CUDA error: out of memory")


def test_a_collector_s_time_before_vllm_s_record_is_no_rust_tracing_record() -> None:
    line = parse_line("2025-06-01T10:00:00.000456789Z ERROR 03-13 09:00:43 [core.py:330] torch.OutOfMemoryError: x")
    assert (line.format, line.location, line.message) == ("vllm", "core.py:330", "torch.OutOfMemoryError: x")
    rust = parse_line("2025-06-05T01:31:26.837710Z  INFO mistralrs_core::engine: Model loaded.")
    assert (rust.format, rust.level, rust.location, rust.message) == (
        "tracing", "INFO", "mistralrs_core::engine", "Model loaded.")


def test_a_rust_server_s_record_in_a_container_s_log_is_read() -> None:
    line = parse_line("2025-06-01T10:00:02.123456789Z stdout F 2024-12-21T13:26:25.250809Z ERROR lorax_launcher: "
                      "server.py:317 Error when initializing model")
    assert (line.format, line.level, line.location, line.host) == ("tracing", "ERROR", "lorax_launcher", None)
    assert line.message == "server.py:317 Error when initializing model"


def test_an_exception_line_a_logger_relays_at_info_is_read() -> None:
    """A launcher's logger writes its child's stderr at INFO: the line is still the exception's."""
    log = ("2025-03-08 10:00:01,693 - launcher - INFO - return torch._C._nn.pad(input, pad, mode, value)\n"
           "2025-03-08 10:00:01,694 - launcher - INFO - torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
           "112.00 MiB.\n")
    root = analyze(log).root_cause
    assert root is not None and root.exception_type == "torch.OutOfMemoryError"


def test_a_launcher_s_logger_relaying_a_child_s_record_gives_the_child_s_record() -> None:
    line = parse_line("2025-03-08 10:00:01,693 - launcher - INFO - ERROR 03-13 09:00:43 [core.py:330] EngineCore failed")
    assert (line.format, line.level, line.location, line.message) == ("vllm", "ERROR", "core.py:330", "EngineCore failed")
    plain = parse_line("2025-03-08 10:00:01,693 - launcher - INFO - 3 workers started")
    assert (plain.format, plain.message) == ("pylogging", "3 workers started")


_VLLM = """ERROR 03-13 09:00:43 [core.py:330] EngineCore hit an exception: Traceback (most recent call last):
ERROR 03-13 09:00:43 [core.py:330] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.16 GiB.
ERROR 03-13 09:00:43 [core.py:330]
CRITICAL 03-13 09:00:43 [core_client.py:260] Got fatal signal from worker processes, shutting down.
"""


@pytest.mark.parametrize("head", ["0: ", "  3: ", "gpu-node-3: ", "[1,0]<stderr>:", "\x1b[36m[node-1]\x1b[0m "])
def test_a_head_no_format_knows_is_learned_from_the_records_behind_it(head: str) -> None:
    """No frame line to learn from: the records a known format reads behind the head teach it."""
    plain = analyze(_VLLM).root_cause
    tagged = analyze("\n".join(head + ln for ln in _VLLM.split("\n") if ln) + "\n").root_cause
    assert plain is not None and tagged is not None
    assert (tagged.exception_type, tagged.message) == (plain.exception_type, plain.message) == (
        "torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 1.16 GiB.")


def test_no_head_is_learned_from_progress_bars_or_sentences() -> None:
    """A bar glued before a record, or words before a level, are not a head every line carries."""
    from workbench.logformats import LineShapes
    from workbench.tracebacks.prefixes import learn_shapes

    shapes = LineShapes()
    bars = "\n".join(f"Loading safetensors checkpoint shards:  {p}% Completed | {p}/100 ERROR 03-13 09:00:43 [x.py:1] y"
                     for p in range(10, 90, 10))
    learn_shapes(shapes, bars)
    assert not shapes
    pmix = "\n".join(f"[qbd{i}:345] PMIX ERROR: UNREACHABLE in file server.c at line 23" for i in range(5))
    learn_shapes(shapes, pmix)
    assert not shapes


def test_a_head_before_one_record_and_an_exception_line_is_learned_when_every_line_has_it() -> None:
    """A short window of a tagged log: one record and one exception line behind the same head on every line."""
    log = ("[node-1] ValueError: token_to_kv_pool_allocator memory leak detected! available_size=3189424\n"
           "[node-1] self.tree_cache.evictable_size()=325120\n"
           "[node-1] [2025-06-06 01:56:27] Received sigquit from a child process. It usually means the child failed.\n")
    root = analyze(log).root_cause
    assert root is not None and root.exception_type == "ValueError"


def test_pytest_s_margin_behind_a_ci_runner_s_time_is_removed() -> None:
    """A CI job's log (GitHub Actions, Buildkite) puts its time before pytest's report: its "E" margin is read."""
    log = ("2026-06-17T10:00:00.5969653Z E       RuntimeError: Failed: Assertion error csrc/x.hpp:136 'mn % 4 == 0'\n"
           "2026-06-17T10:00:00.5969653Z \n"
           "2026-06-17T10:00:00.5969653Z ../../../vllm/utils/deep_gemm.py:111: RuntimeError\n")
    root = analyze(log).root_cause
    assert root is not None and root.exception_type == "RuntimeError"
    assert root.message.startswith("Failed: Assertion error csrc/x.hpp:136")
