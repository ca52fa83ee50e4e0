"""Properties of the traceback pass: any input, no crash, sane output, one parse per line."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench.tracebacks.scan as scan_mod
from workbench.logformats import LogLine
from workbench.tracebacks import Extractor, analyze, extract, to_json

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tracebacks"
REAL_LINES = sorted({
    line for p in sorted(FIXTURES.glob("*.log")) for line in p.read_text(errors="replace").split("\n")[:400]
})


def _check(text: str | bytes) -> None:
    analysis = analyze(text)
    doc = to_json(analysis)
    json.dumps(doc)  # serialisable
    n = analysis.lines
    seen: list[int] = []
    for i, t in enumerate(doc["tracebacks"]):
        assert 1 <= t["start_line"] <= t["end_line"] <= n
        assert t["chained_from"] is None or 0 <= t["chained_from"] < i
        assert (t["chain"] is None) == (t["chained_from"] is None)
        assert t["truncated"] or t["exception_type"] is not None
    for f in doc["failures"]:
        assert f["occurrences"] >= 1
        seen.extend(f["tracebacks"])
    assert sorted(seen) == list(range(len(doc["tracebacks"])))  # every block in exactly one failure
    if doc["tracebacks"]:
        assert doc["final"] is not None
    if doc["root_cause"] is not None:
        assert 1 <= doc["root_cause"]["line"] <= n


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=2000))
@settings(max_examples=300, deadline=None)
def test_random_text(text: str) -> None:
    _check(text)


@given(st.binary(max_size=4000))
@settings(max_examples=200, deadline=None)
def test_random_bytes(data: bytes) -> None:
    _check(data)


@given(st.lists(st.sampled_from(REAL_LINES), max_size=200), st.randoms(use_true_random=False))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_shuffled_real_lines(lines: list[str], rnd: random.Random) -> None:
    rnd.shuffle(lines)
    _check("\n".join(lines))


@given(st.lists(st.sampled_from(REAL_LINES), min_size=1, max_size=120))
@settings(max_examples=100, deadline=None)
def test_interleaving_with_prefixed_writers_keeps_each_stream(lines: list[str]) -> None:
    """Lines of one vLLM worker interleaved with another worker's lines parse like the worker's lines alone."""
    worker = [f"(VllmWorker rank=1 pid=11) ERROR 05-16 16:35:18 [multiproc_executor.py:470] {ln}" for ln in lines]
    other = [f"(VllmWorker rank=0 pid=10) INFO 05-16 16:35:18 [x.py:1] noise {i}" for i in range(len(lines))]
    mixed = [x for pair in zip(other, worker, strict=True) for x in pair]
    alone = analyze("\n".join(worker))
    both = analyze("\n".join(mixed))
    assert [(t.exception_type, t.message, t.frames) for t in alone.tracebacks] == [
        (t.exception_type, t.message, t.frames) for t in both.tracebacks
    ]


def test_each_line_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    real = scan_mod._parse

    def counting(line: str) -> tuple[LogLine, tuple[str | None, ...], str | None]:
        nonlocal calls
        calls += 1
        return real(line)

    monkeypatch.setattr(scan_mod, "_parse", counting)
    text = "\n".join((FIXTURES / f"{c}.log").read_text() for c in ("sglang_tp8_nccl_init_remote_exit", "vllm_compose_kv_cache_restart"))
    ex = extract(text)
    # at most every line once, a line whose learned prefix is stripped once more, plus the bounded
    # sample of frame lines the prefix learner reads first: linear in the input; the indented
    # lines of an open plain block (frames, code) skip the parser
    assert ex.line_no == text.count("\n") + 1
    assert calls <= 2 * ex.line_no + 64


def test_feeding_lines_one_by_one_equals_the_whole_text() -> None:
    text = (FIXTURES / "vllm_compose_kv_cache_restart.log").read_text()
    ex = Extractor()
    for line in text.split("\n"):
        ex.feed(line)
    ex.finish()
    assert ex.tracebacks == extract(text).tracebacks


def test_big_input_and_pathological_lines() -> None:
    """Inputs much larger than a log window: still one pass (bench/ measures the speed)."""
    block = (FIXTURES / "sglang_tp8_nccl_init_remote_exit.log").read_text()
    big = block * 40  # ~1.4 MB, 280 tracebacks
    analysis = analyze(big)
    assert len(analysis.tracebacks) == 7 * 40
    assert analysis.failures[0].occurrences == 7 * 40
    for line in (
        'File "' * 200_000,
        "Traceback (most recent call last): " + 'File "a.py", line 1, in f x = 1 ' * 20_000,
        "[" * 300_000,
        "(" + "a=1 " * 100_000,
        "\x1b[" * 100_000,
        "  File \"x\", line 1, in f\n" * 50_000 + "ValueError: " + "x" * 100_000,
    ):
        _check(line)


@pytest.mark.parametrize("head", [64, 4096, 10_000_000])
def test_reading_a_stream_equals_reading_the_text(head: int) -> None:
    """extract_stream (the CLI's path: bounded memory) finds what extract finds in the whole text."""
    import io

    from workbench.tracebacks import extract_stream

    for name in ("vllm_compose_kv_cache_restart", "sglang_tp8_nccl_init_remote_exit", "vllm_flattened_paste"):
        data = (FIXTURES / f"{name}.log").read_bytes()
        whole = extract(data.decode("utf-8", "replace"))
        streamed = extract_stream(io.BytesIO(data), head_bytes=head)
        assert streamed.line_no == whole.line_no
        assert streamed.tracebacks == whole.tracebacks
        assert streamed.events == whole.events


@pytest.mark.parametrize("prefix", [
    "2025-06-01T10:00:{s:02d}.123456789Z stdout F ",              # containerd / CRI
    "2025-03-08 02:04:{s:02d},693 - __main__ - INFO - ",            # Python logging in front of the server's lines
    "kserve-container ",                                            # a container name
    "2026-06-17T16:25:{s:02d}.5969653Z ",                           # GitHub Actions
    "^[[1;36m(EngineCore_DP0 pid=6444)^[[0;0m ",                    # colour codes pasted as text
])
def test_a_line_prefix_nobody_declared_is_learned(prefix: str) -> None:
    """A real log behind a prefix no parser knows analyses like the log itself."""
    for name in ("sglang_tp8_capture_typeerror_cut", "captured_cuda_oom_single", "vllm_v0_headless_spawnprocess_window"):
        text = (FIXTURES / f"{name}.log").read_text()
        prefixed = "\n".join(prefix.format(s=i % 60) + line for i, line in enumerate(text.split("\n")))
        plain, wrapped = analyze(text), analyze(prefixed)
        assert [(t.exception_type, t.message, [(f.file, f.function) for f in t.frames]) for t in wrapped.tracebacks] == [
            (t.exception_type, t.message, [(f.file, f.function) for f in t.frames]) for t in plain.tracebacks
        ], name
        assert (wrapped.root_cause.exception_type, wrapped.root_cause.phase) == (
            plain.root_cause.exception_type, plain.root_cause.phase), name
