"""Fleet: every host of the panel at a glance — servers, state, GPUs held, who holds the lock.

Each host is read in its own thread (a slow or dead host shows as such and delays no other),
and the view refreshes in the background every ``every`` seconds while auto-refresh is on.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ipywidgets as widgets

from workbench.errors import WorkbenchError
from workbench.widgets.background import Task, TaskBar, TaskContext, guarded
from workbench.widgets.context import PanelContext
from workbench.widgets.render import table
from workbench.widgets.services_tab import _inventory, lock_state

COLUMNS = ("host", "unit", "active", "sub", "gpus", "invocation", "restarts", "lock")


class FleetTab:
    """One table over every host: the units matching ``pattern`` on each, and the host's lock."""

    def __init__(self, ctx: PanelContext, *, pattern: str = "sglang* vllm*", every: float = 15.0) -> None:
        self.ctx = ctx
        self.rows: list[dict[str, Any]] = []
        self.bar = TaskBar("fleet")
        self.pattern = widgets.Text(value=pattern, description="units", layout=widgets.Layout(width="320px"))
        self.every = widgets.BoundedFloatText(value=every, min=2, max=3600, description="every (s)",
                                              layout=widgets.Layout(width="180px"))
        self.auto = widgets.Checkbox(value=False, description="auto-refresh")
        self.auto.add_class("wb-fleet-auto")
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.refresh_button.add_class("wb-fleet-refresh")
        self.table = widgets.HTML(value="<i>press Refresh</i>")
        self.table.add_class("wb-fleet-table")
        self.updated = widgets.HTML(value="")
        self.updated.add_class("wb-fleet-updated")
        self.refresh_button.on_click(guarded(self.bar.error, lambda _b: self.refresh()))
        self.auto.observe(guarded(self.bar.error, lambda ch: self.refresh() if ch["new"] else self.bar.cancel()),
                          names="value")
        self.widget = widgets.VBox([widgets.HBox([self.pattern, self.refresh_button, self.auto, self.every]),
                                    self.bar.widget, self.updated, self.table])

    def read_host(self, name: str, pattern: str) -> list[dict[str, Any]]:
        """The rows of one host (an unreachable host is one row saying why)."""
        try:
            svc = self.ctx.services(name)
            held, owner = lock_state(self.ctx.lock("status", name))  # read, never taken
            who = (owner.get("purpose") or owner.get("user") or "someone") if held else "free"
            infos = []
            for pat in pattern.split():
                infos.extend(_inventory(svc, pat))
            if not infos:
                return [{"host": name, "unit": "(no unit matches)", "lock": who}]
            return [{"host": name, **{k: v for k, v in i.row().items() if k in COLUMNS}, "lock": who} for i in infos]
        except WorkbenchError as exc:
            return [{"host": name, "unit": "(unreachable)", "active": type(exc).__name__,
                     "sub": str(exc).splitlines()[0][:120], "lock": "?"}]

    def refresh(self) -> Task | None:
        """Read every host now (and again every ``every`` s while auto-refresh is on)."""
        hosts, pattern = list(self.ctx.hosts), self.pattern.value

        def work(tc: TaskContext) -> list[dict[str, Any]]:
            with ThreadPoolExecutor(max_workers=max(1, min(8, len(hosts)))) as pool:
                while True:
                    rows = [r for rs in pool.map(lambda h: self.read_host(h, pattern), hosts) for r in rs]
                    self.rows = rows
                    self.table.value = table(rows, COLUMNS, css="wb-fleet-rows")
                    self.updated.value = f"updated {time.strftime('%H:%M:%S')} ({len(hosts)} hosts)"
                    if not self.auto.value or tc.wait(float(self.every.value)):
                        return rows

        return self.bar.submit("fleet", work)

    def wait(self, timeout: float | None = 120.0) -> Task | None:
        return self.bar.wait(timeout)
