"""A dead vLLM engine exits 0: the watch and the log readers must still call it a failure.

Real case (tests/fixtures/captured/vllm/systemd_sigkill_worker.journal.txt): SIGKILL of the
worker while serving; vLLM logs the death, shuts down "cleanly" and exits 0, and the unit
ends ``inactive (dead)`` with ``Result=success``, which ``systemctl is-failed`` calls fine.
"""

from __future__ import annotations

from pathlib import Path

from workbench.phases import PhaseTracker
from workbench.systemd import UnitStatus
from workbench.tracebacks import analyze
from workbench.watch import _failed

JOURNAL = Path(__file__).resolve().parents[2] / "fixtures/captured/vllm/systemd_sigkill_worker.journal.txt"


def status(active: str, sub: str, **extra: str) -> UnitStatus:
    return UnitStatus.from_show({"Id": "vllm-tiny.service", "LoadState": "loaded", "ActiveState": active,
                                 "SubState": sub, "InvocationID": "inv1", **extra})


def test_the_watch_calls_exit_0_of_a_started_server_a_failure() -> None:
    before = status("active", "running", Result="success", MainPID="50")
    # the state systemd reported at the end of the captured run
    after = status("inactive", "dead", Result="success", ExecMainCode="1", ExecMainStatus="0")
    assert not after.failed  # what systemd says ...
    assert _failed(before, after, "inv1") == "exited (success)"  # ... and what the watch says


def test_the_journal_shows_the_failure_and_its_cause() -> None:
    text = JOURNAL.read_text()
    tracker = PhaseTracker()
    for line in text.splitlines():
        tracker.feed(line)
    assert tracker.ready and tracker.failure is not None and tracker.failure.phase == "serving"
    assert "Deactivated successfully" in text and "Failed with result" not in text
    cause = analyze(text).root_cause
    assert cause is not None and cause.kind == "log_line"
    assert "Worker proc VllmWorker-0 died unexpectedly" in cause.message
