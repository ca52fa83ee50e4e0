"""A start that systemd failed in its own exec step, before the server's command ran (219/CGROUP,
systemd/systemd#20939, seen on the testbed's nspawn hosts: a base restored after an A/B, a worker node)
is not the server's verdict: the watch asks for it once more and says so.  Fakes at the watch's own
seam (``_watch_once``), with the unit status systemd reports (``systemctl show``'s fields)."""

from __future__ import annotations

from typing import Any

import pytest

from workbench import watch
from workbench.systemd import UnitStatus
from workbench.watch import Outcome, watch_start

FAILED_219 = UnitStatus.from_show({"Id": "u.service", "LoadState": "loaded", "ActiveState": "activating",
                                   "SubState": "auto-restart", "Result": "exit-code", "ExecMainCode": "1",
                                   "ExecMainStatus": "219"})
FAILED_1 = UnitStatus.from_show({"Id": "u.service", "LoadState": "loaded", "ActiveState": "failed",
                                 "SubState": "failed", "Result": "exit-code", "ExecMainCode": "1",
                                 "ExecMainStatus": "1"})


def _fake(monkeypatch: pytest.MonkeyPatch, first: UnitStatus) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def once(svc: Any, unit: str, **kw: Any) -> Outcome:
        calls.append(kw)
        if len(calls) == 1:
            return Outcome(unit, "failed", "unknown", "inv1", 0.5, "auto-restart after exit-code", first)
        return Outcome(unit, "ready", "serving", "inv2", 4.0, "/health 200")

    monkeypatch.setattr(watch, "_watch_once", once)
    return calls


class _Stops:
    """The one call the retry makes of the service backend itself: the stop that cancels systemd's own pending
    Restart= retry (the testbed test of watch_start's retry shows why, on a real unit)."""

    def __init__(self) -> None:
        self.stopped: list[str] = []

    def stop(self, unit: str) -> None:
        self.stopped.append(unit)


def test_a_start_systemd_failed_219_cgroup_before_it_ran_is_asked_for_once_more(monkeypatch):
    calls = _fake(monkeypatch, FAILED_219)
    svc = _Stops()
    out = watch_start(svc, "u.service", timeout=60)  # type: ignore[arg-type]
    assert out.ok and len(calls) == 2 and all(c["timeout"] == 60 and c["start"] for c in calls)
    assert svc.stopped == ["u.service"]  # its auto-restart cancelled: the second start is the watch's own
    assert "started a second time: systemd failed the first start 219/CGROUP before its command ran" in out.reason
    assert watch._failed(FAILED_219, FAILED_219, None) == "auto-restart after exit-code, status=219/CGROUP"


@pytest.mark.parametrize("first, start", [(FAILED_1, True), (FAILED_219, False)])
def test_the_servers_own_failure_or_a_start_it_did_not_ask_for_is_not_repeated(monkeypatch, first, start):
    calls = _fake(monkeypatch, first)
    out = watch_start(object(), "u.service", start=start)  # type: ignore[arg-type]
    assert out.outcome == "failed" and len(calls) == 1
