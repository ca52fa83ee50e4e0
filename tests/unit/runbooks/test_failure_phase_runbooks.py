"""Every runbook names a failed start's phase by one precedence (:func:`workbench.trials.failure_phase`).

The watch's timeline where it names a step, else the root cause's phase, never ``serving`` before the
log said ready.  Each real log below is fed, as the watch would have seen the start, through
the code path of the bisect/factorial trial, the A/B's arm B and the sweep's configuration; before the
shared function the three disagreed on each of them (noted per case).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from workbench.phases import track
from workbench.runbooks import ab as abtest
from workbench.runbooks import sweep as sweeprb
from workbench.session import Trial
from workbench.trials import run_trial
from workbench.watch import Outcome, PhaseEvent

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
UNIT_TEXT = "[Service]\nExecStart=/usr/bin/python -m sglang.launch_server --port 30000\n"

CASES = [
    # vLLM: torch.compile (startup_other on the timeline), then _initialize_kv_caches raises.
    # The sweep took the timeline's startup_other; the root cause says kv_cache_alloc.
    ("tracebacks/corpus/dev/vllm_enginecore_kv_caches_cut_18730.log", "kv_cache_alloc"),
    # SGLang: a scheduler-loop frame in a log that never said ready: the warmup request.
    # The A/B and the sweep said serving.
    ("tracebacks/corpus/dev/sglang_tp6_nvfp4_event_loop_overlap_cut_19081.log", "warmup"),
    # vLLM: "Engine core initialization failed" with only start-up frames, no step on the timeline.
    # The bisect's trial said unknown, dropping what the root cause said.
    ("tracebacks/corpus/dev/vllm_apiserver_engine_core_init_failed_23176.log", "startup_other"),
    # The simulator's EP8 NoneType: everything agrees (cuda_graph_capture).
    ("runbooks/sim_ep8_variant.log", "cuda_graph_capture"),
]


def watched(text: str, unit: str = "base-wb-1.service") -> Outcome:
    """The watch's verdict on a failed start whose log is ``text``: the real tracker fed every line."""
    (tracker,) = track(text).values()
    phase = tracker.failure.phase if tracker.failure else tracker.phase
    timeline = [PhaseEvent(t.phase, t.started_at, float(i), t.line) for i, t in enumerate(tracker.transitions)]
    return Outcome(unit, "failed", phase, "", 5.0, "exited with status 1", None, timeline, tail=text.splitlines())


class FakeSession:
    """A host session at our own seam: the variant start is the watched log; no invocation id,
    so every runbook reads the log from the outcome's tail."""

    def __init__(self, text: str) -> None:
        self.outcome = watched(text)
        self.host = SimpleNamespace(name="gpu-a")
        self.svc = SimpleNamespace()

    def _trial(self, base: str, edits: Any) -> Trial:
        return Trial(self.outcome.unit, base, list(edits), self.outcome, 1, "exited", True, UNIT_TEXT)

    def base_text(self, base: str) -> str:
        return UNIT_TEXT

    def run_variant(self, base: str, edits: Any, **kw: Any) -> Trial:
        return self._trial(base, edits)

    @contextlib.contextmanager
    def serve_variant(self, base: str, edits: Any, **kw: Any) -> Iterator[Trial]:
        yield self._trial(base, edits)


EDITS = [("--ep-size", "8")]


def trial_phase(text: str) -> str:
    return run_trial(FakeSession(text), "base.service", EDITS).phase  # type: ignore[arg-type]


def ab_phase(text: str) -> dict[str, Any]:
    hr = abtest._HostRun("gpu-a", 2, 0)
    p = SimpleNamespace(base_unit="base.service", health_path="/health", start_timeout=60.0)
    abtest._arm_b(FakeSession(text), None, p, hr, EDITS, lambda line: None)  # type: ignore[arg-type]
    return hr.arms["B"]


def sweep_row(text: str) -> dict[str, Any]:
    rr = SimpleNamespace(tell=lambda line: None, fields={"server_starts": 0})
    rr.set = rr.fields.update
    p = SimpleNamespace(base_unit="base.service", health_path="/health", start_timeout=60.0)
    return sweeprb._config(rr, FakeSession(text), None, p, 0, 1, EDITS, [], None, [])  # type: ignore[arg-type]


@pytest.mark.parametrize(("log", "want"), CASES, ids=[Path(c[0]).stem[:40] for c in CASES])
def test_bisect_ab_and_sweep_name_the_same_phase(log, want):
    text = (FIXTURES / log).read_text()
    assert trial_phase(text) == want
    arm = ab_phase(text)
    assert arm["failure"]["phase"] == want
    row = sweep_row(text)
    assert row["phase"] == want and row["outcome"] == "failed"


def test_the_saved_fields_keep_their_names():
    text = (FIXTURES / CASES[0][0]).read_text()
    arm = ab_phase(text)
    assert set(arm) == {"unit", "started", "start", "failure"}
    assert set(arm["failure"]) == {"exception_type", "message", "phase", "signature", "signature_id"}
    assert set(arm["start"]) == {"outcome", "phase", "seconds"}
    assert set(sweep_row(text)) == {"edits", "outcome", "signature", "signature_id", "exception_type", "phase",
                                    "reason", "points"}


@pytest.mark.parametrize(("log", "want"), CASES, ids=[Path(c[0]).stem[:40] for c in CASES])
def test_bisect_ab_and_sweep_give_one_readable_signature(log, want):
    """One judge of a failed start (trials.judge_failure): the same words and id in every runbook."""
    text = (FIXTURES / log).read_text()
    t = run_trial(FakeSession(text), "base.service", EDITS)  # type: ignore[arg-type]
    arm, row = ab_phase(text)["failure"], sweep_row(text)
    assert (t.signature, t.signature_id) == (arm["signature"], arm["signature_id"]) == (row["signature"],
                                                                                      row["signature_id"])
    assert t.signature.endswith(f"in {want}") and "@" not in t.signature and "@" in t.signature_id
