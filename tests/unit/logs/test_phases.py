"""Startup phases: whole real logs (tests/fixtures/logs/phases/<case>.log + .json) and the live tracker."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from workbench.logformats import parse_line
from workbench.phases import (
    PHASES,
    PhaseTracker,
    phase_from_frames,
    phase_of_message,
    timeline,
    track,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "phases"
CASES = sorted(p.stem for p in FIXTURES.glob("*.log"))


@pytest.mark.parametrize("case", CASES)
def test_real_log_timeline(case: str) -> None:
    text = (FIXTURES / f"{case}.log").read_text()
    expected = json.loads((FIXTURES / f"{case}.json").read_text())
    rows = [
        {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in r.items() if k not in ("line", "ended_at")}
        for r in timeline(text, year=2026)
    ]
    assert rows == expected["timeline"]
    final = {
        server: {"phase": t.phase, "ready": t.ready, "restarts": t.restarts,
                 "failed_in": t.failure.phase if t.failure else None, "flavor": t.flavor}
        for server, t in track(text, year=2026).items()
    }
    assert final == expected["final"]


def test_live_feed_reports_transitions_ready_and_the_caller_time() -> None:
    tracker = PhaseTracker()
    at = datetime(2026, 1, 1, 12, 0, 0)
    assert tracker.phase == "unknown" and not tracker.ready
    tr = tracker.feed("[2025-01-23 19:35:14 TP0] Init torch distributed begin.", at)
    assert tr is not None and (tr.phase, tr.started_at, tr.line_no) == ("nccl_init", at, 1)
    assert tracker.feed("[2025-01-23 19:35:14 TP1] Init torch distributed begin.", at) is None  # same phase, other rank
    assert tracker.feed("[2025-01-23 19:35:15 TP0] Load weight begin. avail mem=78.81 GB").phase == "weight_loading"  # type: ignore[union-attr]
    assert tracker.started_at == datetime(2025, 1, 23, 19, 35, 15)  # no caller time: the line's own
    tracker.feed(parse_line("[2025-01-23 19:35:20 TP0] Capture cuda graph begin. This can take up to several minutes."))
    # a lagging rank's end line does not pull the phase back
    assert tracker.feed("[2025-01-23 19:35:20 TP7] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16") is None
    assert tracker.phase == "cuda_graph_capture"
    tracker.feed("[2025-01-23 19:35:27] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    assert (tracker.phase, tracker.ready) == ("warmup", False)  # SGLang still sends its warmup request
    tracker.feed("[2025-01-23 19:35:33] The server is fired up and ready to roll!")
    assert (tracker.phase, tracker.ready) == ("serving", True)
    assert [t.phase for t in tracker.transitions] == ["nccl_init", "weight_loading", "cuda_graph_capture", "warmup", "serving"]


def test_a_start_that_dies_records_the_phase_and_a_new_start_resets() -> None:
    tracker = PhaseTracker()
    for line in [
        "(EngineCore_DP0 pid=132) INFO 03-09 12:56:44 [gpu_worker.py:424] Available KV cache memory: -8.59 GiB",
        "(EngineCore_DP0 pid=132) ERROR 03-09 12:56:44 [core.py:1100] EngineCore failed to start.",
        "(EngineCore_DP0 pid=132) ERROR 03-09 12:56:44 [core.py:1100] Traceback (most recent call last):",
    ]:
        tracker.feed(line)
    assert tracker.failure is not None and tracker.failure.phase == "kv_cache_alloc" and tracker.failure.line_no == 2
    tr = tracker.feed("(APIServer pid=1) INFO 03-09 12:56:57 [utils.py:238] non-default args: {'model': 'x'}")
    assert tr is not None and tr.restart and tracker.restarts == 1 and tracker.failure is None


def test_uvicorn_lines_mean_serving_for_vllm() -> None:
    tracker = PhaseTracker()
    tracker.feed("(EngineCore_DP0 pid=94) INFO 03-09 12:57:38 [gpu_worker.py:424] Available KV cache memory: 7.73 GiB")
    tracker.feed("(APIServer pid=1) INFO:     Application startup complete.")
    assert (tracker.phase, tracker.ready, tracker.flavor) == ("serving", True, "vllm")


def test_batch_lines_only_name_the_phase_of_a_window_that_begins_mid_run() -> None:
    mid = PhaseTracker()
    mid.feed("[2025-08-08 03:35:19] Decode batch. #running-req: 1, #token: 87, token usage: 0.00, cuda graph: True")
    assert (mid.phase, mid.ready) == ("serving", False)
    warm = PhaseTracker()
    warm.feed("[2025-01-23 19:35:27] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    warm.feed("[2025-01-23 19:35:28 TP0] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00")
    assert warm.phase == "warmup"


@pytest.mark.parametrize(
    ("message", "phase"),
    [
        ("Capture draft cuda graph begin. This can take up to several minutes. avail mem=20.10 GB", "cuda_graph_capture"),
        ("Capture target decode CUDA graph begin. backend=full, avail mem=30.00 GB", "cuda_graph_capture"),
        ("KV Cache is allocated. #tokens: 104273, K size: 5.57 GB, V size: 5.57 GB", "kv_cache_alloc"),
        ("GPU KV cache size: 1,587,648 tokens", "kv_cache_alloc"),
        ("Starting vLLM API server 0 on http://0.0.0.0:8000", "serving"),
        ("Capture cuda graph failed: CUDA out of memory.", None),
        # vLLM v1's loader reports it before processing the weights it read; the runner's report ends the step, and
        # what vLLM does next is size the KV cache (its compile and profiling run)
        ("Loading weights took 79.39 seconds", "weight_loading"),
        ("Model loading took 3.85 GiB memory and 80.081264 seconds", "kv_cache_alloc"),
        ("Loading model weights took 14.9927 GB", "kv_cache_alloc"),
    ],
)
def test_phase_of_message(message: str, phase: str | None) -> None:
    rule = phase_of_message(message)
    assert (rule[0] if rule else None) == phase


@pytest.mark.parametrize(
    ("frames", "phase"),
    [
        ([("scheduler.py", "run_scheduler_process"), ("model_runner.py", "load_model"), ("qwen2.py", "load_weights")], "weight_loading"),
        ([("model_runner.py", "init_cuda_graphs"), ("cuda_graph_runner.py", "capture_one_batch_size"), ("deepseek_v2.py", "forward")], "cuda_graph_capture"),
        ([("core.py", "_initialize_kv_caches"), ("kv_cache_utils.py", "_check_enough_kv_cache_memory")], "kv_cache_alloc"),
        ([("model_runner.py", "init_torch_distributed"), ("pynccl.py", "__init__"), ("pynccl_wrapper.py", "NCCL_CHECK")], "nccl_init"),
        ([("scheduler.py", "event_loop_overlap"), ("cuda_graph_runner.py", "replay"), ("graphs.py", "replay")], "serving"),
        ([("gpu_worker.py", "compile_or_warm_up_model"), ("gpu_model_runner.py", "capture_model")], "cuda_graph_capture"),
        ([("x.py", "<module>")], None),
    ],
)
def test_phase_from_frames(frames: list[tuple[str, str]], phase: str | None) -> None:
    assert phase_from_frames(frames) == phase


def test_phase_names_are_the_documented_ones() -> None:
    assert PHASES == ("nccl_init", "weight_loading", "kv_cache_alloc", "cuda_graph_capture", "warmup", "serving", "startup_other", "unknown")
