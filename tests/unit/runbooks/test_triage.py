"""The triage runbook and its pure parts (workbench.runbooks.cause) on real captured logs:
likely cause in words, flags a variant changes against its base, the phase timeline timed by the journal."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from workbench.runbooks import cause, triage
from workbench.tracebacks import analyze

FIXTURES = Path(__file__).parents[2] / "fixtures"
EP8 = (FIXTURES / "runbooks" / "sim_ep8_variant.log").read_text()
EP8_NVLS = (FIXTURES / "runbooks" / "sim_ep8_nvls_variant.log").read_text()
BASE = "sglang-k26-ddtree.service"
BASE_ARGV = ["/usr/bin/python3", "-m", "sglang.launch_server", "--model-path", "/models/Kimi-K2.6", "--port", "30000",
             "--tp-size", "8", "--trust-remote-code", "--speculative-num-draft-tokens", "8", "--enable-metrics"]


def test_likely_cause_of_the_ep8_variant_names_the_exception_phase_frame_ranks_and_flag():
    words = cause.likely_cause(analyze(EP8), variant_of=BASE, flags=[("--ep-size", "8")])
    assert words == (
        "Root cause: AttributeError: 'NoneType' object has no attribute 'topk_ids' during cuda_graph_capture, "
        "innermost frame dispatch (sglang/srt/layers/moe/token_dispatcher/standard.py:18) on 8 ranks "
        "(TP0 EP0..TP7 EP7). The unit is a workbench variant of sglang-k26-ddtree.service; it differs from its "
        "base by --ep-size 8: the likely trigger (the bisect runbook confirms which).")


def test_likely_cause_tells_the_root_cause_from_the_last_error():
    words = cause.likely_cause(analyze(EP8_NVLS), variant_of=BASE,
                                flags=[("--ep-size", "8"), ("--enable-nccl-nvls", True)])
    assert words.startswith("Root cause: RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling ")
    assert " during cuda_graph_capture, innermost frame forward_absorb_prepare (" in words
    assert "The last error logged (Exception: Capture cuda graph failed: " in words and "follows from it." in words
    assert words.endswith("differs from its base by --ep-size 8, --enable-nccl-nvls: the likely trigger "
                          "(the bisect runbook confirms which).")


def test_likely_cause_of_a_real_vllm_failure_and_of_a_clean_log():
    vllm = (FIXTURES / "tracebacks" / "captured_vllm_tp4.log").read_text()
    words = cause.likely_cause(analyze(vllm))
    assert words.startswith("Root cause: AssertionError: Not enough allowed NUMA nodes")
    assert "RuntimeError: Engine core initialization failed" in words and "variant" not in words
    assert cause.likely_cause(analyze("INFO ready\n"), invocation={"result": "running"}) == \
        "No failure in this invocation: no traceback and no failing log line (it is still running)."
    quiet = cause.likely_cause(analyze("INFO bye\n"), invocation={"result": "signal", "exit_status": 9})
    assert quiet.startswith("The invocation ended (signal, exit 9) without a traceback")
    gone = cause.likely_cause(analyze(EP8), variant_of=BASE)
    assert gone.endswith("its flags could not be compared (unit file gone and no ledger entry).")


def test_flag_diff_of_a_variant_against_its_base():
    ep8 = [*BASE_ARGV, "--ep-size", "8"]
    assert cause.flag_diff(BASE_ARGV, ep8) == [("--ep-size", "8")]
    assert cause.flag_diff(BASE_ARGV, [a for a in BASE_ARGV if a != "--enable-metrics"]) == [("--enable-metrics", None)]
    changed = [*BASE_ARGV[:8], "--tp-size=4", *BASE_ARGV[9:]]
    assert cause.flag_diff(BASE_ARGV, changed) == [("--tp-size", "4")]
    assert cause.flags_of(["prog", "--cuda-graph-bs", "1", "2", "4", "--x", "--lr", "-1e-3"]) == \
        {"--cuda-graph-bs": ("1", "2", "4"), "--x": True, "--lr": "-1e-3"}


def test_variant_base_from_the_marker_or_the_name():
    text = "[Unit]\nDescription=x\nX-WorkbenchVariantOf=sglang-k26-ddtree.service\n[Service]\nExecStart=/bin/true\n"
    assert cause.variant_base("anything.service", text) == BASE
    assert cause.variant_base("sglang-k26-ddtree-wb-ecf0cadcae.service", None) == BASE
    assert cause.variant_base(BASE, "[Service]\nExecStart=/bin/true\n") is None


def test_phase_timeline_of_the_failed_start_timed_by_the_journal():
    rows = cause.phase_rows(EP8)
    assert [r["phase"] for r in rows] == ["startup_other", "nccl_init", "startup_other", "weight_loading",
                                          "kv_cache_alloc", "cuda_graph_capture", "failed"]
    assert rows[-1]["failed_in"] == "cuda_graph_capture"
    lines = EP8.count("\n") + 1
    t0 = pd.Timestamp("2026-11-29T14:28:56", tz="UTC")
    times = [t0 + pd.Timedelta(milliseconds=10 * i) for i in range(lines)]
    timed = cause.phase_rows(EP8, times)
    assert timed[0]["started_at"] == times[timed[0]["line_no"] - 1]
    assert all(r["duration_s"] is not None and r["duration_s"] >= 0 for r in timed)
    assert timed[-1]["ended_at"] == times[-1]


def test_line_times_repeat_the_time_of_a_multi_line_message():
    frame = pd.DataFrame({"time": [1, 2, 3], "origin": ["manager", "unit", "unit"],
                          "message": ["Started x", "a\nb", "c"]})
    assert cause.line_times(frame) == [2, 2, 3]
    assert cause.line_times(None) == []


def test_phase_chart_and_tables_from_a_result():
    result = {"unit": "u.service", "invocation": {"id": "25756fc9465848ea", "result": "signal"},
              "phases": [{"phase": "weight_loading", "started_at": "2026-11-29T14:28:59+00:00",
                          "ended_at": "2026-11-29T14:29:01+00:00", "failed_in": None},
                         {"phase": "failed", "started_at": "2026-11-29T14:29:01+00:00",
                          "ended_at": "2026-11-29T14:29:01+00:00", "failed_in": "cuda_graph_capture"}],
              "failures": [{"signature": "AttributeError@x", "exception_type": "AttributeError", "message": "m",
                            "phase": "cuda_graph_capture", "ranks": ["TP0", "TP1"], "occurrences": 2,
                            "innermost_frame": {"file": "/x/site-packages/sglang/a.py", "line": 3, "function": "f"}}]}
    spec = triage.phase_chart(result).to_dict()
    phases = {d["phase"] for d in spec["datasets"].values() for d in d if "phase" in d}
    assert phases == {"weight_loading", "failed in cuda_graph_capture"}
    table = triage.failures_frame(result)
    assert table.loc[0, "innermost frame"] == "f (sglang/a.py:3)" and table.loc[0, "ranks"] == "TP0, TP1"
    assert triage.phase_chart({"phases": []}) is None


@pytest.mark.parametrize("text, expected", [("last", "last"), ("-1", -1), ("0", 0), ("25756fc9", "25756fc9")])
def test_invocation_argument(text, expected):
    assert triage._invocation_arg(text) == expected
