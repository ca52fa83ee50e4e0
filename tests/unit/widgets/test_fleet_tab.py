"""Fleet tab: every host's units, GPUs and lock holder in one table, refreshed in the background."""

from __future__ import annotations

from workbench.errors import ConnectError
from workbench.widgets.fleet_tab import FleetTab

from .fakes import FakeContext


def test_every_host_in_one_table(tmp_path) -> None:
    tab = FleetTab(FakeContext(tmp_path, lock="held"))
    rows = tab.refresh()
    assert {r["host"] for r in rows} == {"gpu-a", "gpu-b"}
    assert all(r["lock"].startswith("held by") and "alice" in r["lock"] for r in rows)
    units = [r for r in rows if r["host"] == "gpu-b"]
    assert units and all(r["unit"].endswith(".service") for r in units)
    assert "gpu-a" in tab.table.value and "gpu-b" in tab.table.value and "alice" in tab.table.value


def test_an_unreachable_host_gets_a_row_and_the_others_still_show(tmp_path) -> None:
    ctx = FakeContext(tmp_path)
    real = ctx.services

    def services(name=None):
        if (name or ctx.current) == "gpu-a":
            raise ConnectError("gpu-a: connection refused", host="gpu-a")
        return real(name)

    ctx.services = services  # type: ignore[method-assign]
    rows = FleetTab(ctx).refresh()
    down = [r for r in rows if r["host"] == "gpu-a"]
    assert len(down) == 1 and down[0]["active"] == "unreachable" and "refused" in down[0]["sub"]
    assert any(r["host"] == "gpu-b" and r["unit"].endswith(".service") for r in rows)


def test_watch_refreshes_until_stopped(tmp_path) -> None:
    tab = FleetTab(FakeContext(tmp_path), refresh_s=3600)
    tab.watch_button.click()
    task = tab.bar.task
    assert task is not None
    tab.stop_button.click()
    assert tab.wait(30).state in ("done", "cancelled")
    assert tab.rounds >= 1 and tab.rows
