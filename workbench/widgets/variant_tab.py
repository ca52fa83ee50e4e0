"""Variant: a base unit plus flag edits (as data), the plan (diff and commands), a watched run, restore."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from workbench.errors import ConfigError
from workbench.session import Plan, Trial, leftover_record, plan
from workbench.variants import EditValue, normalize_edits
from workbench.watch import PhaseEvent
from workbench.widgets.background import Cancelled, Task, TaskBar, TaskContext, guarded
from workbench.widgets.context import Invocation, PanelContext
from workbench.widgets.render import esc, pre, table

EDIT_ACTIONS = ("set", "add", "remove")


def edit_value(action: str, value: str) -> EditValue:
    """What an edit row means: ``set`` a value, ``add`` a boolean flag, ``remove`` the flag."""
    if action == "set":
        if not value.strip():
            raise ConfigError("set needs a value (use add for a flag without one)")
        parts = value.split()
        return parts[0] if len(parts) == 1 else parts
    if action == "add":
        return True
    if action == "remove":
        return None
    raise ConfigError(f"unknown edit action {action!r}; one of {EDIT_ACTIONS}")


def describe_edit(flag: str, value: EditValue) -> str:
    if value is None:
        return f"remove {flag}"
    if value is True:
        return f"add {flag}"
    shown = " ".join(value) if isinstance(value, list | tuple) else str(value)
    return f"set {flag} {shown}"


def timeline_html(events: list[PhaseEvent], final: str = "") -> str:
    rows = [{"phase": ev.phase, "at (s)": f"{ev.seconds:.1f}" if ev.seconds is not None else "",
             "line": ev.line[:140]} for ev in events]
    if final:
        rows.append({"phase": final, "at (s)": "", "line": ""})
    return table(rows, ("phase", "at (s)", "line"), css="wb-timeline", empty="no phase yet")


class VariantTab:
    """Edit flags of a base unit, see the plan, run the variant in a restoring session."""

    def __init__(self, ctx: PanelContext, *, plan_fn: Callable[..., Plan] = plan) -> None:
        self.ctx = ctx
        self._plan = plan_fn
        self.edit_list: list[tuple[str, EditValue]] = []
        self.plan: Plan | None = None
        self.trial: Trial | None = None
        self.events: list[PhaseEvent] = []
        self.restore_notes: list[str] = []
        self.bar = TaskBar("variant")
        self.base = widgets.Combobox(value="sglang-k26-ddtree.service", options=[], description="base unit",
                                     ensure_option=False, layout=widgets.Layout(width="420px"))
        self.base.add_class("wb-variant-base")
        self.flag = widgets.Text(placeholder="--ep-size", description="flag", layout=widgets.Layout(width="240px"))
        self.flag.add_class("wb-variant-flag")
        self.value = widgets.Text(placeholder="8", description="value", layout=widgets.Layout(width="200px"))
        self.value.add_class("wb-variant-value")
        self.action = widgets.Dropdown(options=EDIT_ACTIONS, value="set", layout=widgets.Layout(width="90px"))
        self.action.add_class("wb-variant-action")
        self.add_button = widgets.Button(description="Add edit", icon="plus")
        self.add_button.add_class("wb-variant-add")
        self.edits_view = widgets.Select(options=[], rows=4, description="edits", layout=widgets.Layout(width="420px"))
        self.edits_view.add_class("wb-variant-edits")
        self.drop_button = widgets.Button(description="Remove edit", icon="minus")
        self.plan_button = widgets.Button(description="Plan", icon="list")
        self.plan_button.add_class("wb-variant-plan")
        self.run_button = widgets.Button(description="Run variant", icon="play", button_style="warning")
        self.run_button.add_class("wb-variant-run")
        self.restore_button = widgets.Button(description="Restore host", icon="undo")
        self.restore_button.add_class("wb-variant-restore")
        self.plan_view = widgets.HTML(value="")
        self.plan_view.add_class("wb-variant-planview")
        self.timeline = widgets.HTML(value="")
        self.timeline.add_class("wb-variant-timeline")
        self.outcome = widgets.HTML(value="")
        self.outcome.add_class("wb-variant-outcome")
        err = self.bar.error
        self.add_button.on_click(guarded(err, lambda _b: self.add_edit(self.flag.value, self.value.value,
                                                                      self.action.value)))
        self.drop_button.on_click(guarded(err, lambda _b: self.drop_edit(self.edits_view.value or "")))
        self.plan_button.on_click(guarded(err, lambda _b: self.show_plan()))
        self.run_button.on_click(guarded(err, lambda _b: self.run()))
        self.restore_button.on_click(guarded(err, lambda _b: self.restore()))
        self.widget = widgets.VBox([
            self.base,
            widgets.HBox([self.flag, self.value, self.action, self.add_button]),
            widgets.HBox([self.edits_view, self.drop_button]),
            widgets.HBox([self.plan_button, self.run_button, self.restore_button]),
            self.bar.widget, self.outcome, self.timeline, self.plan_view])

    # -- edits as data ---------------------------------------------------------------
    @property
    def edits(self) -> list[tuple[str, EditValue]]:
        return list(self.edit_list)

    def add_edit(self, flag: str, value: str = "", action: str = "set") -> list[tuple[str, EditValue]]:
        """Add (or replace) the edit of ``flag``; validated like every variant edit."""
        flag = flag.strip()
        if flag and not flag.startswith("-"):
            flag = f"--{flag}"
        new = (flag, edit_value(action, value))
        edits = [e for e in self.edit_list if e[0] != flag] + [new]
        self.edit_list = list(normalize_edits(edits))
        self._show_edits()
        self.flag.value = self.value.value = ""
        return self.edits

    def drop_edit(self, flag: str) -> list[tuple[str, EditValue]]:
        self.edit_list = [e for e in self.edit_list if e[0] != flag]
        self._show_edits()
        return self.edits

    def clear_edits(self) -> None:
        self.edit_list = []
        self._show_edits()

    def _show_edits(self) -> None:
        self.edits_view.options = [(describe_edit(f, v), f) for f, v in self.edit_list]
        self.plan = None
        self.plan_view.value = ""

    # -- plan, run, restore ---------------------------------------------------------
    def show_plan(self) -> Task | None:
        """The unit diff and the commands a run would issue (reads only)."""
        base, edits, host_name = self.base.value, self.edits, self.ctx.current

        def work(tc: TaskContext) -> Plan:
            tc.progress(0.2, f"reading {base} on {host_name}")
            return self._plan(self.ctx.host(host_name), base, edits, services=self.ctx.services(host_name))

        def done(p: Plan) -> None:
            self.plan = p
            self.plan_view.value = (f"<b>{esc(p.variant)}</b> → {esc(p.path)}" + pre(p.diff or "(no change)")
                                    + "<b>commands</b>" + pre("\n".join(p.commands)))

        return self.bar.submit(f"plan {base}", work, on_done=done)

    def run(self) -> Task | None:
        """Run the variant in a host session (lock, record, restore), the phase timeline live."""
        base, edits, host_name = self.base.value, self.edits, self.ctx.current
        if not edits:
            raise ConfigError("add at least one edit first")
        self.events, self.trial = [], None
        self.timeline.value, self.outcome.value = timeline_html([]), ""

        def work(tc: TaskContext) -> Trial:
            tc.progress(0.05, f"taking the lock of {host_name}")

            def event(ev: PhaseEvent) -> None:
                self.events.append(ev)
                self.timeline.value = timeline_html(self.events)
                tc.progress(min(0.9, 0.1 + 0.13 * len(self.events)), f"{ev.phase} ({ev.seconds or 0:.1f} s)")

            def line(_entry: Any) -> None:
                tc.check()  # a cancel ends the watch; the session restores the host on the way out

            try:
                with self.ctx.session(f"panel: variant of {base}", host_name) as session:
                    tc.progress(0.1, "starting the variant")
                    trial = session.run_variant(base, edits, timeout=self.ctx.ready_timeout, on_event=event,
                                                on_line=line)
            except Cancelled:  # the session has put the host back by now (or raised instead)
                during = f"during {self.events[-1].phase}" if self.events else "before the first phase"
                self.restore_notes = ["host restored"]
                self.outcome.value = ("<div class='wb-outcome-cancelled' style='border-left:4px solid #ef6c00;"
                                      f"padding:4px 8px'><b>cancelled {esc(during)}</b>; variant stopped and "
                                      "removed, host restored</div>")
                raise
            self.restore_notes = ["host restored"]
            return trial

        def done(trial: Trial) -> None:
            self.trial = trial
            out = trial.outcome
            self.timeline.value = timeline_html(out.timeline, "" if out.ok else f"{out.outcome} in {out.phase}")
            self.events = list(out.timeline)
            if out.invocation_id:
                label = f"variant {' '.join(describe_edit(f, v) for f, v in trial.edits)}: {out.outcome} in {out.phase}"
                self.ctx.add_invocation(Invocation(host_name, trial.variant, out.invocation_id, label))
            color = "#2e7d32" if out.ok else "#c62828"
            tail = "" if out.ok else pre("\n".join(out.tail[-12:]))
            self.outcome.value = (f"<div style='border-left:4px solid {color};padding:4px 8px'>"
                                  f"<b class='wb-outcome-text'>{html.escape(out.describe())}</b><br>"
                                  f"exit status {esc(trial.exit_status)}; host restored</div>{tail}")

        return self.bar.submit(f"variant of {base}", work, on_done=done)

    def restore(self) -> Task | None:
        """Finish the restore a session left behind on the host (its record is still there)."""
        host_name = self.ctx.current

        def work(tc: TaskContext) -> list[str]:
            svc = self.ctx.services(host_name)
            if leftover_record(svc.host, svc) is None:
                return [f"{host_name}: nothing to restore (no session record)"]
            tc.progress(0.2, "restoring")
            with self.ctx.session("panel: restore", host_name) as s:
                return [f"{host_name}: restored; removed {', '.join(s.recovered) or 'nothing'}"]

        def done(notes: list[str]) -> None:
            self.restore_notes = notes
            self.outcome.value = "<br>".join(esc(n) for n in notes)

        return self.bar.submit(f"restore {host_name}", work, on_done=done)

    def cancel(self) -> None:
        self.bar.cancel()

    def wait(self, timeout: float | None = 600.0) -> Task | None:
        return self.bar.wait(timeout)
