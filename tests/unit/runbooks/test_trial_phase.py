"""The phase and signature of a failed trial: timeline first, frames where it names no step, never serving before
ready."""

from pathlib import Path

import pytest

from workbench.phases import track
from workbench.trials import classify, failure_phase, related, signature_of

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runbooks"


def test_a_warmup_failure_is_warmup_though_its_frames_say_serving():
    text = (FIXTURES / "sim_warmup_nonetype.log").read_text()
    info = classify(text)
    # the diagnosis reads warmup off the log itself now (a failure before readiness is never serving)
    assert info["exception_type"] == "AttributeError" and info["phase"] == "warmup"
    tracker = next(iter(track(text).values()))
    timeline = tracker.failure.phase if tracker.failure else tracker.phase
    assert failure_phase(timeline, info["phase"], ready_seen=tracker.ready) == "warmup"


@pytest.mark.parametrize(("timeline", "frames", "ready", "want"), [
    ("cuda_graph_capture", "weight_loading", False, "cuda_graph_capture"),  # the timeline wins (issue 16)
    ("unknown", "kv_cache_alloc", False, "kv_cache_alloc"),
    ("weight_loading", "unknown", False, "weight_loading"),  # the timeline where the root cause names nothing
    ("weight_loading", "startup_other", False, "weight_loading"),  # a named step beats "between the steps"
    ("cuda_graph_capture", "serving", False, "cuda_graph_capture"),
    ("unknown", "serving", False, "warmup"),  # a scheduler-loop frame before ready: the warmup
    ("unknown", "startup_other", False, "startup_other"),
    (None, "serving", False, "warmup"),  # never serving before readiness
    ("serving", None, False, "warmup"),
    ("serving", "serving", True, "serving"),
    ("startup_other", None, False, "startup_other"),
    ("startup_other", "weight_loading", False, "weight_loading"),
    (None, None, False, "unknown"),  # only when nothing tells
])
def test_failure_phase_rules(timeline, frames, ready, want):
    assert failure_phase(timeline, frames, ready_seen=ready) == want


def test_signatures_carry_the_phase_in_words_and_id():
    words_a, id_a = signature_of("AttributeError", "'NoneType' object has no attribute 'topk_ids'", "cuda_graph_capture")
    _, id_b = signature_of("AttributeError", "'NoneType' object has no attribute 'topk_ids'", "warmup")
    assert words_a == "AttributeError: 'NoneType' object has no attribute 'topk_ids' in cuda_graph_capture"
    assert id_a != id_b and id_a.startswith("AttributeError@")
    # numbers are normalised: the same OOM with another size is the same signature
    assert signature_of("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.50 GiB", "warmup") == \
        signature_of("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 7.00 GiB", "warmup")


def test_related_pairs_the_same_exception_in_other_phases():
    sigs = [("AttributeError", "x", "cuda_graph_capture"), ("RuntimeError", "y", "cuda_graph_capture"),
            ("AttributeError", "x", "warmup")]
    assert related(sigs) == [[0, 2]]


def test_a_trial_keeps_the_root_causes_ranks_and_where_for_the_report():
    text = (FIXTURES / "sim_warmup_nonetype.log").read_text()
    info = classify(text)
    assert info["ranks"] and all(r.startswith("TP") for r in info["ranks"])
    assert info["where"].endswith(")") and ".py:" in info["where"]
