"""Hosts and services tab: status from captured systemctl output, confirmed actions under the lock."""

from __future__ import annotations

from workbench.watch import Outcome, PhaseEvent
from workbench.widgets.services_tab import ServicesTab

from .fakes import BASE, FakeContext


def fake_watch(calls):
    def watch(svc, unit, *, timeout, on_event, on_line):
        calls.append(unit)
        on_event(PhaseEvent("weight_loading", None, 1.0, "Load weight begin"))
        return Outcome(unit, "ready", "serving", "abc123", 2.5, "/health 200 under invocation abc123")
    return watch


def test_refresh_shows_units_state_invocation_restarts_and_lock(tmp_path):
    ctx = FakeContext(tmp_path, lock="held")
    tab = ServicesTab(ctx, pattern="sglang* ssh* vllm*")  # no vllm unit here: none listed, no error
    ctx.select("gpu-b")
    tab.refresh()
    assert tab.wait(10).state == "done"
    units = {r["unit"]: r for r in tab.rows}
    assert set(units) == {BASE, "ssh.service"}
    assert units[BASE]["sub"] == "auto-restart" and units[BASE]["restarts"] == 53
    assert "auto-restart" in tab.table.value and "073240dcf7bc" in tab.table.value
    assert tab.lock_held and "alice" in tab.lock_info.value and "gpu-b" in tab.lock_info.value
    assert tab.unit.options == (BASE, "ssh.service")
    # the units' current invocations are offered to the other tabs
    assert any(i.invocation == "073240dcf7bc47c1b4087426ffb09c06" for i in ctx.invocations)


def test_free_lock_is_shown_free(tmp_path):
    ctx = FakeContext(tmp_path, lock="free")
    tab = ServicesTab(ctx)
    tab.refresh()
    tab.wait(10)
    assert "lock: free" in tab.lock_info.value and not tab.lock_held


def test_stop_asks_first_then_runs_under_the_lock(tmp_path):
    ctx = FakeContext(tmp_path)
    tab = ServicesTab(ctx)
    tab.refresh()
    tab.wait(10)
    tab.buttons["stop"].click()
    assert tab.pending == ("stop", BASE)
    assert tab.confirm_box.layout.display == "flex" and "stop" in tab.question.value
    svc = ctx.fake_services["gpu-a"]
    assert svc.calls == []  # nothing happens before the confirmation
    tab.confirm_button.click()
    assert tab.wait(10).state == "done"
    assert svc.calls == [("stop", BASE)]
    assert ctx.events == [f"lock panel: stop {BASE}", "unlock"]
    assert tab.confirm_box.layout.display == "none" and "auto-restart" in tab.outcome.value


def test_dismiss_cancels_the_request(tmp_path):
    ctx = FakeContext(tmp_path)
    tab = ServicesTab(ctx)
    tab.request("restart", BASE)
    tab.dismiss_button.click()
    assert tab.pending is None and tab.confirm_box.layout.display == "none"
    tab.confirm_button.click()  # nothing pending: a message, not an exception
    assert "nothing to confirm" in tab.bar.error.value


def test_start_is_watched_and_its_invocation_published(tmp_path):
    ctx = FakeContext(tmp_path)
    watched: list[str] = []
    tab = ServicesTab(ctx, watch=fake_watch(watched))
    tab.request("start", BASE)
    tab.confirm()
    assert tab.wait(10).state == "done"
    assert watched == [BASE] and "READY" in tab.outcome.value
    assert any(i.invocation == "abc123" and "start: ready" in i.label for i in ctx.invocations)


def test_request_without_a_unit_is_a_message(tmp_path):
    tab = ServicesTab(FakeContext(tmp_path))
    tab.buttons["start"].click()
    assert "pick a unit" in tab.bar.error.value
