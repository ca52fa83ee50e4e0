"""Hosts and services: units with live status, start / stop / restart with confirmation, the lock holder."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from workbench.errors import CommandFailed, ConfigError
from workbench.lock import HostLock
from workbench.services import ServiceInfo, Services, inventory
from workbench.watch import Outcome, PhaseEvent, watch_start
from workbench.widgets.background import Task, TaskBar, TaskContext, guarded
from workbench.widgets.context import CURRENT, Invocation, PanelContext
from workbench.widgets.render import esc, table

COLUMNS = ("unit", "active", "sub", "result", "invocation", "restarts", "gpus", "main_pid")
ACTIONS = ("start", "stop", "restart")


# Prints "held" when an flock is on the file's inode (field 6 of /proc/locks is MAJ:MIN:INODE).
PROBE = ('ino=$(stat -c %i -- "$1" 2>/dev/null) || { echo free; exit 0; }; '
         'awk -v i="$ino" \'$2 == "FLOCK" { n = split($6, a, ":"); if (a[n] == i) f = 1 } '
         'END { print (f ? "held" : "free") }\' /proc/locks')


def lock_text(held: bool, owner: dict[str, Any]) -> str:
    who = ", ".join(f"{k}={v}" for k, v in owner.items() if v not in (None, "")) or "holder unknown"
    return f"lock: held by {who}" if held else "lock: free"


def lock_state(lock: HostLock) -> tuple[bool, dict[str, Any]]:
    """Whether someone holds ``lock`` now, and who (when held).

    Read from ``/proc/locks`` (an flock on the lock file's inode), never by trying the lock:
    a probe that took it for an instant could make someone else's session be refused."""
    res = lock.host.run(["sh", "-c", PROBE, "probe", lock.path], timeout=lock.timeout)
    held = res.stdout.strip() == "held"
    return held, (lock.owner() if held else {})


def _inventory(svc: Services, pattern: str) -> list[ServiceInfo]:
    try:
        return inventory(svc, pattern)
    except CommandFailed as exc:
        # ``systemctl list-unit-files PATTERN`` exits 1, printing nothing, when no unit file matches.
        if exc.result is not None and exc.result.exited == 1 and not exc.result.stdout.strip():
            return []
        raise


class ServicesTab:
    """Units matching ``pattern`` on the chosen host; actions run under the host lock, confirmed first."""

    def __init__(self, ctx: PanelContext, *, pattern: str = "sglang* vllm*",
                 watch: Callable[..., Outcome] = watch_start) -> None:
        self.ctx = ctx
        self._watch = watch
        self.rows: list[dict[str, Any]] = []
        self.lock_owner: dict[str, Any] = {}
        self.lock_held = False
        self.pending: tuple[str, str] | None = None
        self.last_outcome: Outcome | None = None
        self.bar = TaskBar("services")
        self.pattern = widgets.Text(value=pattern, description="units", layout=widgets.Layout(width="320px"))
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.refresh_button.add_class("wb-services-refresh")
        self.table = widgets.HTML(value="<i>press Refresh</i>")
        self.table.add_class("wb-services-table")
        self.lock_info = widgets.HTML(value="")
        self.lock_info.add_class("wb-services-lock")
        self.unit = widgets.Dropdown(options=[], description="unit", layout=widgets.Layout(width="420px"))
        self.unit.add_class("wb-services-unit")
        self.buttons: dict[str, widgets.Button] = {}
        for action in ACTIONS:
            b = widgets.Button(description=action.capitalize(), button_style="warning" if action != "start" else "")
            b.add_class(f"wb-services-{action}")
            b.on_click(guarded(self.bar.error, lambda _b, a=action: self.request(a)))
            self.buttons[action] = b
        self.question = widgets.HTML(value="")
        self.question.add_class("wb-services-question")
        self.confirm_button = widgets.Button(description="Confirm", button_style="danger")
        self.confirm_button.add_class("wb-services-confirm")
        self.dismiss_button = widgets.Button(description="Cancel")
        self.confirm_box = widgets.HBox([self.question, self.confirm_button, self.dismiss_button],
                                        layout=widgets.Layout(display="none"))
        self.outcome = widgets.HTML(value="")
        self.outcome.add_class("wb-services-outcome")
        self.refresh_button.on_click(guarded(self.bar.error, lambda _b: self.refresh()))
        self.confirm_button.on_click(guarded(self.bar.error, lambda _b: self.confirm()))
        self.dismiss_button.on_click(guarded(self.bar.error, lambda _b: self.dismiss()))
        self.widget = widgets.VBox([
            widgets.HBox([self.pattern, self.refresh_button]), self.lock_info, self.table,
            widgets.HBox([self.unit, *self.buttons.values()]), self.confirm_box, self.outcome, self.bar.widget])

    # -- status -------------------------------------------------------------------
    def refresh(self) -> Task | None:
        """Read the units' status and the lock holder of the chosen host (in the background)."""
        host_name = self.ctx.current

        def work(tc: TaskContext) -> tuple[list[dict[str, Any]], dict[str, Any]]:
            tc.progress(0.1, f"reading units on {host_name}")
            return self._read(host_name, tc)

        return self.bar.submit(f"refresh {host_name}", work, on_done=lambda r: self._show(host_name, *r))

    def _read(self, host_name: str, tc: TaskContext | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        svc = self.ctx.services(host_name)
        patterns = self.pattern.value.split() or ["*"]
        rows: list[dict[str, Any]] = []
        for i, pat in enumerate(patterns):
            if tc is not None:
                tc.check()
                tc.progress(0.1 + 0.7 * i / len(patterns))
            seen = {r["unit"] for r in rows}
            rows += [info.row() for info in _inventory(svc, pat) if info.status.unit not in seen]
        held, owner = lock_state(self.ctx.lock("status", host_name))
        self.lock_held = held
        return rows, owner

    def _show(self, host_name: str, rows: list[dict[str, Any]], owner: dict[str, Any]) -> None:
        self.rows, self.lock_owner = rows, owner
        for r in rows:
            r["invocation"] = str(r.get("invocation") or "")
            if r["invocation"]:
                self.ctx.add_invocation(Invocation(host_name, str(r["unit"]), r["invocation"], CURRENT))
        shown = [{**r, "invocation": r["invocation"][:12]} for r in rows]
        self.table.value = table(shown, COLUMNS, css="wb-units", empty=f"no units match on {host_name}")
        self.lock_info.value = f"<b>{esc(host_name)}</b> — {esc(lock_text(self.lock_held, owner))}"
        units = [str(r["unit"]) for r in rows]
        keep = self.unit.value if self.unit.value in units else (units[0] if units else None)
        self.unit.options = units
        self.unit.value = keep

    # -- actions --------------------------------------------------------------------
    def request(self, action: str, unit: str | None = None) -> None:
        """Ask for confirmation of ``action`` on ``unit`` (nothing runs until :meth:`confirm`)."""
        if action not in ACTIONS:
            raise ConfigError(f"unknown action {action!r}")
        unit = unit or self.unit.value
        if not unit:
            raise ConfigError("pick a unit first (Refresh lists them)")
        self.pending = (action, unit)
        self.question.value = (f"<b>{html.escape(action)}</b> {html.escape(unit)} on "
                               f"<b>{html.escape(self.ctx.current)}</b>?")
        self.confirm_box.layout.display = "flex"

    def dismiss(self) -> None:
        self.pending = None
        self.confirm_box.layout.display = "none"

    def confirm(self) -> Task | None:
        """Run the pending action under the host lock; a start is watched to ready or failed."""
        if self.pending is None:
            raise ConfigError("nothing to confirm")
        action, unit = self.pending
        self.dismiss()
        host_name = self.ctx.current
        self.outcome.value = ""

        def act(tc: TaskContext) -> str:
            svc = self.ctx.services(host_name)
            tc.progress(0.05, f"taking the lock of {host_name}")
            with self.ctx.lock(f"panel: {action} {unit}", host_name):
                tc.check()
                if action in ("stop", "restart"):
                    tc.progress(0.2, f"stopping {unit}")
                    st = svc.stop(unit)
                    if action == "stop":
                        return st.describe()
                tc.progress(0.3, f"starting {unit}")

                def event(ev: PhaseEvent) -> None:
                    tc.progress(None, f"{unit}: {ev.phase} ({ev.seconds or 0:.1f} s)")

                def line(_entry: Any) -> None:
                    tc.check()

                out = self._watch(svc, unit, timeout=self.ctx.ready_timeout, on_event=event, on_line=line)
                self.last_outcome = out
                if out.invocation_id:
                    self.ctx.add_invocation(Invocation(host_name, unit, out.invocation_id, f"{action}: {out.outcome}"))
                return out.describe()

        def work(tc: TaskContext) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
            text = act(tc)
            self.outcome.value = f"<span class='wb-outcome-text'>{esc(text)}</span>"
            tc.progress(0.95, "reading the status")
            return (text, *self._read(host_name))

        def done(r: tuple[str, list[dict[str, Any]], dict[str, Any]]) -> None:
            self._show(host_name, r[1], r[2])

        return self.bar.submit(f"{action} {unit}", work, on_done=done)

    def wait(self, timeout: float | None = 600.0) -> Task | None:
        return self.bar.wait(timeout)
