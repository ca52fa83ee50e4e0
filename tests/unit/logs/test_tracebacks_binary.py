"""Lines that are not text (random bytes, a core dump read as a log) are counted, not read: the
fast path never takes a real log line, gives what the general path gives, and never hides a failure."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from workbench.tracebacks import analyze, analyze_stream, reader, scan, to_json
from workbench.tracebacks.binary import binary_noise_bytes
from workbench.tracebacks.scan import binary_noise

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TRACEBACK = FIXTURES / "tracebacks" / "captured_cuda_oom_single.log"


def _noise(seed: int, size: int) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.getrandbits(8) for _ in range(size))


def _slow_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every line through the general path: neither the reader's run of noise nor the scanner's test counts any."""
    monkeypatch.setattr(scan, "binary_noise", lambda line: False)
    monkeypatch.setattr(reader, "binary_noise_bytes", lambda raw: False)


def _both(data: bytes) -> tuple[object, object]:
    return to_json(analyze(data)), to_json(analyze_stream(io.BytesIO(data)))


def test_the_readers_byte_test_answers_as_the_line_test() -> None:
    # the reader tests a line's UTF-8 (binary_noise_bytes, decoding only near the quarter): same answer
    lines = [line for path in sorted(FIXTURES.rglob("*.log"))[:80]
             for line in path.read_bytes().decode("utf-8", "replace").split("\n")]
    lines += _noise(3, 200_000).decode("utf-8", "replace").split("\n")
    rng = random.Random(5)
    lines += ["\ufffd" * k + rng.choice(["é", "x", "日本", ""]) * j + rng.choice(["", " Error", " Traceback"])
              for k in range(6) for j in range(14)]
    assert sum(binary_noise(line) for line in lines) > 100
    for line in lines:
        assert binary_noise_bytes(line.encode()) == binary_noise(line), line


def test_no_real_log_line_is_binary_noise() -> None:
    logs = sorted(FIXTURES.rglob("*.log"))
    assert len(logs) > 250
    for path in logs:
        for line in path.read_bytes().decode("utf-8", "replace").split("\n"):
            if not line.replace("\ufffd", "").strip():
                continue  # a paste's garbled line that is nothing but U+FFFD (xinference#3905): no text to lose
            assert not binary_noise(line), (path.name, line)


def test_random_bytes_are_binary_noise_but_not_a_failure_among_them() -> None:
    lines = _noise(1, 200_000).decode("utf-8", "replace").split("\n")
    assert sum(map(binary_noise, lines)) > 0.9 * len(lines)
    junk = "\ufffd\x03\ufffd" * 40
    for report in ("Traceback (most recent call last):", '  File "/x.py", line 3, in f', "RuntimeError: CUDA error",
                   "Segmentation fault (core dumped)", "terminate called after throwing", "NCCL WARN x", "Killed"):
        assert not binary_noise(junk + report + junk), report


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_failure_inside_random_bytes_reads_as_without_the_fast_path(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixture logs between stretches of random bytes, and a failure written into a line of junk:
    reported, and the same analysis (whole text and stream) as when every line takes the general path."""
    rng = random.Random(seed)
    logs = sorted((FIXTURES / "tracebacks").glob("*.log"))
    parts = [_noise(seed, 300_000)]
    for path in rng.sample(logs, 4):
        parts += [b"\n", path.read_bytes(), b"\n", _noise(seed + 10, 100_000)]
    inside = TRACEBACK.read_bytes().split(b"\n")  # a line of junk in the middle of a traceback
    inside.insert(len(inside) // 2, b"\xff\xfe" * 100)
    parts += [b"\n", b"\xff\xfe" * 200 + b" RuntimeError: CUDA error: an illegal memory access was encountered\n",
              _noise(seed + 20, 100_000), b"\n", b"\n".join(inside), b"\n", TRACEBACK.read_bytes()]
    data = b"".join(parts)
    fast = _both(data)
    _slow_path(monkeypatch)
    slow = _both(data)
    assert fast == slow
    assert fast[0] == fast[1]
    alone = to_json(analyze(TRACEBACK.read_bytes()))
    assert fast[0]["tracebacks"] and fast[0]["tracebacks"][-1]["exception_type"] == alone["tracebacks"][-1]["exception_type"]
    assert fast[0]["tracebacks"][-1]["frames"] == alone["tracebacks"][-1]["frames"]


def test_a_failure_on_a_line_of_junk_is_the_root_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    """The only failure of a big file of random bytes sits on a line of junk: still found, as without the fast path."""
    data = _noise(7, 400_000) + b"\n" + b"\xff\xfe" * 200 + b" Segmentation fault (core dumped)\n" + _noise(8, 400_000)
    fast = _both(data)
    assert fast[0]["root_cause"] is not None and fast[0] == fast[1]
    _slow_path(monkeypatch)
    assert _both(data) == fast
