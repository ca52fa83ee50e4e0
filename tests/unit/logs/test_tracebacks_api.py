"""The public API around the fixtures: signatures, compare, JSON shape, the CLI."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

import workbench.tracebacks as tb
from workbench.cli import main
from workbench.tracebacks import analyze, compare, normalize_message, to_json

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tracebacks"


def _text(case: str) -> str:
    return (FIXTURES / f"{case}.log").read_text()


def test_public_names() -> None:
    assert set(tb.__all__) == {
        "Analysis", "Comparison", "CppException", "Extractor", "Failure", "Final", "Frame", "LogEvent",
        "RootCause", "Traceback", "analysis_of", "analyze", "compare", "comparison_to_json", "extract",
        "extract_tracebacks", "format_summary", "is_pointer", "normalize_message", "signature", "to_json",
    }


def test_json_keys_are_the_documented_ones() -> None:
    doc = to_json(analyze(_text("vllm_compose_kv_cache_restart")))
    assert set(doc) == {"tracebacks", "failures", "final", "root_cause"}
    assert set(doc["tracebacks"][0]) == {"rank", "start_line", "end_line", "frames", "exception_type", "message",
                                         "truncated", "chained_from", "chain"}
    assert set(doc["tracebacks"][0]["frames"][0]) == {"file", "line", "function", "code"}
    assert set(doc["failures"][0]) == {"signature", "exception_type", "message", "innermost_frame", "phase", "ranks",
                                       "occurrences", "tracebacks"}
    assert set(doc["final"]) == {"exception_type", "message", "innermost_frame", "phase", "ranks", "truncated", "last_complete"}
    assert set(doc["root_cause"]) == {"kind", "exception_type", "message", "line", "innermost_frame", "phase", "ranks"}


def test_signature_ignores_what_varies_between_ranks_and_runs() -> None:
    one = _text("sglang_tp8_nccl_init_remote_exit")
    # another start of the same failure: other time, other ranks, other install path, other line numbers
    other = (one.replace("2026-02-25 16:41:56", "2026-03-01 09:00:01").replace("TP3]", "TP11]")
             .replace("/app/sglang/sglang-latest/lib64/python3.12/site-packages", "/usr/local/lib/python3.12/dist-packages")
             .replace("line 2937", "line 2950"))
    a, b = analyze(one), analyze(other)
    assert [f.signature for f in a.failures] == [f.signature for f in b.failures]
    c = compare(a, b)
    assert (c.same, c.only_in_a, c.only_in_b, c.root_cause) == ((a.failures[0].signature,), (), (), "same")


@pytest.mark.parametrize(
    ("message", "normalized"),
    [
        ("CUDA out of memory. Tried to allocate 448.00 MiB. GPU 7 has a total capacity of 95.00 GiB",
         "CUDA out of memory. Tried to allocate N MiB. GPU N has a total capacity of N GiB"),
        ("Can't pickle <function <lambda> at 0x7fffac0fe980>: attribute lookup", "Can't pickle <function <lambda> at <addr>>: attribute lookup"),
        ("The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 0",
         "The size of tensor a (N) must match the size of tensor b (N) at non-singleton dimension N"),
        ("Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9", "Rank N scheduler died during initialization (exit code: #-9). If exit code is N"),
        ("connect to 10.82.101.249<37857> returned Connection refused", "connect to <ip><N> returned Connection refused"),
        ("[Errno 98] Address already in use", "[Errno #98] Address already in use"),
        ("", ""),
        (None, ""),
    ],
)
def test_normalize_message(message: str | None, normalized: str) -> None:
    assert normalize_message(message) == normalized


def test_compare_two_different_variants() -> None:
    a = analyze(_text("sglang_tp8_capture_typeerror_cut"))
    b = analyze(_text("sglang_tp8_nccl_init_remote_exit"))
    c = compare(a, b)
    assert c.same == ()
    assert set(c.only_in_a) == {f.signature for f in a.failures}
    assert set(c.only_in_b) == {f.signature for f in b.failures}
    assert c.root_cause == "different"
    assert tb.comparison_to_json(c)["root_cause"] == "different"


def test_compare_pairs_same_place_other_message() -> None:
    a = analyze(_text("sglang_capture_oom_wrapper_window"))
    b = analyze(_text("sglang_capture_oom_wrapper_window").replace("CUDA out of memory", "CUDA error: an illegal memory access"))
    c = compare(a, b)
    assert c.different == ((a.failures[0].signature, b.failures[0].signature),)
    assert (c.same, c.only_in_a, c.only_in_b) == ((), (), ())


def test_cli_json_equals_to_json(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "vllm_compose_kv_cache_restart.log"
    assert main(["tracebacks", str(path), "--json"]) == 1  # failures found
    assert json.loads(capsys.readouterr().out) == to_json(analyze(path.read_text()))


def test_cli_summary_from_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = (FIXTURES / "sglang_tp8_nccl_init_remote_exit.log").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["tracebacks", "-"]) == 1  # failures found
    out = capsys.readouterr().out
    assert "RuntimeError: NCCL error: remote process exited or there was a network error" in out
    assert "phase nccl_init on TP0, TP1, TP2, TP3, TP4, TP6, TP7 x7" in out
    assert out.splitlines()[-1].startswith("Root cause (line 3, phase nccl_init")


def test_cli_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["tracebacks", str(tmp_path / "nope.log")]) == 2  # bad input
    assert "cannot read" in capsys.readouterr().err


def test_summary_of_a_clean_log() -> None:
    assert tb.format_summary(analyze("[2025-01-23 19:35:33] The server is fired up and ready to roll!\n")) == (
        "No tracebacks or failure lines in 2 lines.\n"
    )


def test_a_peer_death_echo_is_not_the_root_cause_when_a_rank_says_more() -> None:
    """Seven ranks report "remote process exited" first; the rank that really failed prints later."""
    echoes = _text("sglang_tp8_nccl_init_remote_exit").replace("Killed\n", "")
    oom = _text("captured_cuda_oom_single")
    analysis = analyze(echoes + oom)
    assert analysis.root_cause is not None
    assert analysis.root_cause.exception_type == "torch.OutOfMemoryError"
    alone = analyze(echoes).root_cause
    assert alone is not None and alone.message.startswith("NCCL error: remote process exited")


def test_the_simulated_ep8_variants_differ() -> None:
    a = analyze(_text("sim_sglang_ep8_nvls_cublas"))
    b = analyze(_text("sim_sglang_ep8_nonetype"))
    assert a.root_cause is not None and b.root_cause is not None
    assert "CUBLAS_STATUS_EXECUTION_FAILED" in a.root_cause.message
    assert b.root_cause.exception_type == "AttributeError"
    assert a.root_cause.phase == b.root_cause.phase == "cuda_graph_capture"
    assert compare(a, b).root_cause == "different"
    assert len(a.failures[0].ranks) == len(b.failures[0].ranks) == 8
