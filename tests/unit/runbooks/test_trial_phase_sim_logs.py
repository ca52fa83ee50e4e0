"""Each startup phase named right on real simulator logs: the watch's timeline, the root cause, the phase rule.

The logs are whole starts of the simulated SGLang server (8 ranks) captured on a local testbed host
with faults in every phase (tests/fixtures/runbooks/README.md): the same path a bisect trial takes --
the timeline the watch builds from the lines, :func:`classify` on the text, :func:`failure_phase`.
"""

from pathlib import Path

import pytest

from workbench.phases import track
from workbench.trials import classify, failure_phase, signature_of

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runbooks"

CASES = [
    ("sim_nccl_init_nccl.log", "nccl_init", "RuntimeError"),
    ("sim_weight_loading_cuda_oom.log", "weight_loading", "torch.OutOfMemoryError"),
    ("sim_kv_cache_alloc_mem_fraction.log", "kv_cache_alloc", "torch.OutOfMemoryError"),
    ("sim_kv_cache_alloc_not_enough_memory.log", "kv_cache_alloc", "RuntimeError"),  # the simulator's own, no fault
    ("sim_cuda_graph_capture_oom_one_rank.log", "cuda_graph_capture", "torch.OutOfMemoryError"),
    ("sim_warmup_after_capture_rank5.log", "warmup", "torch.AcceleratorError"),
    ("sim_warmup_no_graphs_cublas.log", "warmup", "RuntimeError"),
]


@pytest.mark.parametrize(("name", "phase", "exception"), CASES)
def test_the_phase_of_a_real_failed_start(name, phase, exception):
    text = (FIXTURES / name).read_text()
    tracker = next(iter(track(text).values()))
    assert not tracker.ready
    timeline = tracker.failure.phase if tracker.failure else tracker.phase
    assert timeline == phase  # what the watch saw is the phase, on its own
    info = classify(text)
    assert info["exception_type"] == exception
    assert failure_phase(timeline, info["phase"], ready_seen=tracker.ready) == phase


def test_one_exception_in_two_phases_is_two_signatures_on_real_logs():
    # a CUBLAS error in warmup (graphs off) and the same kind of error raised during capture (the seeds'
    # EP8 + NVLS): one exception type, two phases, two signatures
    warm = classify((FIXTURES / "sim_warmup_no_graphs_cublas.log").read_text())
    capture = classify((FIXTURES / "sim_ep8_nvls_variant.log").read_text())
    assert warm["exception_type"] == capture["exception_type"] == "RuntimeError"
    assert signature_of(warm["exception_type"], warm["message"], "warmup")[1] != \
        signature_of(capture["exception_type"], capture["message"], "cuda_graph_capture")[1]
