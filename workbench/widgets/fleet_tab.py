"""Fleet: every host of the inventory at a glance — its units with state and GPUs held, and who
holds its lock — refreshed in the background until stopped.

Each round reads every host the way the Hosts tab reads one (``inventory`` and the lock
probe of ``/proc/locks``, never taking the lock); a host that cannot be reached gets one row
that says why, and the others are still shown.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from workbench.errors import WorkbenchError
from workbench.widgets.background import Task, TaskBar, TaskContext, guarded
from workbench.widgets.context import PanelContext
from workbench.widgets.render import table
from workbench.widgets.services_tab import _inventory, lock_state, lock_text

COLUMNS = ("host", "unit", "active", "sub", "restarts", "gpus", "lock")


class FleetTab:
    """``refresh()`` reads every host once; ``watch()`` keeps refreshing every ``refresh_s`` until ``stop()``."""

    def __init__(self, ctx: PanelContext, *, pattern: str = "sglang* vllm*", refresh_s: float = 10.0) -> None:
        self.ctx = ctx
        self.refresh_s = refresh_s
        self.rows: list[dict[str, Any]] = []
        self.rounds = 0
        self.bar = TaskBar("fleet")
        self.pattern = widgets.Text(value=pattern, description="units", layout=widgets.Layout(width="320px"))
        self.watch_button = widgets.Button(description="Watch the fleet", icon="eye")
        self.watch_button.add_class("wb-fleet-watch")
        self.stop_button = widgets.Button(description="Stop", icon="stop")
        self.stop_button.add_class("wb-fleet-stop")
        self.table = widgets.HTML(value="<i>press Watch the fleet</i>")
        self.table.add_class("wb-fleet-table")
        self.watch_button.on_click(guarded(self.bar.error, lambda _b: self.watch()))
        self.stop_button.on_click(guarded(self.bar.error, lambda _b: self.stop()))
        self.widget = widgets.VBox([widgets.HBox([self.pattern, self.watch_button, self.stop_button]),
                                    self.bar.widget, self.table])

    def read_host(self, name: str) -> list[dict[str, Any]]:
        """One host's rows (its units, or one row saying why it could not be read)."""
        try:
            svc = self.ctx.services(name)
            rows: list[dict[str, Any]] = []
            for pat in self.pattern.value.split() or ["*"]:
                seen = {r["unit"] for r in rows}
                rows += [info.row() for info in _inventory(svc, pat) if info.status.unit not in seen]
            held, owner = lock_state(self.ctx.lock("status", name))  # reads /proc/locks, never takes it
        except WorkbenchError as exc:
            return [{"host": name, "unit": "-", "active": "unreachable", "sub": str(exc)[:120], "restarts": "",
                     "gpus": "", "lock": ""}]
        lock = lock_text(held, owner).removeprefix("lock: ")
        if not rows:
            return [{"host": name, "unit": "(no unit matches)", "active": "", "sub": "", "restarts": "", "gpus": "",
                     "lock": lock}]
        return [{"host": name, "unit": r["unit"], "active": r["active"], "sub": r["sub"], "restarts": r["restarts"],
                 "gpus": ",".join(str(g) for g in r["gpus"]) if r.get("gpus") else "-", "lock": lock} for r in rows]

    def refresh(self) -> list[dict[str, Any]]:
        """Read every host once (inline) and show the table."""
        rows = [row for name in self.ctx.hosts for row in self.read_host(name)]
        self.rows = rows
        self.rounds += 1
        self.table.value = table(rows, COLUMNS, css="wb-fleet", empty="no hosts")
        return rows

    def watch(self) -> Task | None:
        def work(tc: TaskContext) -> int:
            while True:
                tc.progress(None, f"round {self.rounds + 1} over {len(self.ctx.hosts)} hosts")
                self.refresh()
                if tc.wait(self.refresh_s):
                    return self.rounds

        return self.bar.submit("fleet", work)

    def stop(self) -> None:
        self.bar.cancel()

    def wait(self, timeout: float | None = 600.0) -> Task | None:
        return self.bar.wait(timeout)
