"""Runs: the ledger's runs, a run's report, and a rerun of a runbook with the same parameters —
with the run's Pareto and TTFT/ITL CDFs (the reports' charts), redrawn while a rerun measures."""

from __future__ import annotations

import html
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pandas as pd

from workbench.errors import ConfigError
from workbench.runs import Ledger, new_run_id
from workbench.widgets.background import Task, TaskBar, TaskContext, guarded
from workbench.widgets.context import PanelContext
from workbench.widgets.livecharts import LiveCharts
from workbench.widgets.render import esc, records, table

COLUMNS = ("run_id", "runbook", "status", "host", "wall_seconds", "server_starts", "report")
NOT_RERUNNABLE = {"bench"}  # made by the panel's Benchmark tab, not by a runbook


def _default_execute(runbook: str, params: dict[str, Any], *, data_dir: str | Path, run_id: str = "") -> Any:
    from workbench.runbooks.execute import execute

    return execute(runbook, params, data_dir=data_dir, progress=False, run_id=run_id)


def rerun_params(result: dict[str, Any]) -> dict[str, Any]:
    """A run's parameters for a new run (its own run id and data dir left out)."""
    params = dict(result.get("params") or {})
    for key in ("run_id", "data_dir"):
        params.pop(key, None)
    return params


class RunsTab:
    """List runs, show one's report inline, rerun its runbook (confirmed, in the background)."""

    def __init__(self, ctx: PanelContext, *, execute: Callable[..., Any] = _default_execute,
                 poll_s: float = 2.0) -> None:
        self.ctx = ctx
        self._execute = execute
        self.poll_s = poll_s  # how often a running rerun's tables are looked at
        self.runs = pd.DataFrame()
        self.last_outcome: Any = None
        self.bar = TaskBar("runs")
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.refresh_button.add_class("wb-runs-refresh")
        self.data_dir = widgets.Text(value=str(ctx.data_dir), description="data dir", continuous_update=False,
                                     layout=widgets.Layout(width="520px"))
        self.data_dir.add_class("wb-runs-datadir")
        self.data_dir.observe(guarded(self.bar.error, lambda ch: self.use_data_dir(ch["new"])), names="value")
        self.table = widgets.HTML(value="")
        self.table.add_class("wb-runs-table")
        self.run_id = widgets.Dropdown(options=[], description="run", layout=widgets.Layout(width="520px"))
        self.run_id.add_class("wb-runs-pick")
        self.report_button = widgets.Button(description="Open report", icon="file")
        self.report_button.add_class("wb-runs-report")
        self.rerun_button = widgets.Button(description="Rerun", icon="repeat", button_style="warning")
        self.rerun_button.add_class("wb-runs-rerun")
        self.question = widgets.HTML(value="")
        self.confirm_button = widgets.Button(description="Confirm rerun", button_style="danger")
        self.confirm_button.add_class("wb-runs-confirm")
        self.confirm_box = widgets.HBox([self.question, self.confirm_button], layout=widgets.Layout(display="none"))
        self.detail = widgets.HTML(value="")
        self.detail.add_class("wb-runs-detail")
        self.report = widgets.HTML(value="")
        self.report.add_class("wb-runs-reportview")
        self.live = LiveCharts("runs")
        err = self.bar.error
        self.refresh_button.on_click(guarded(err, lambda _b: self.refresh()))
        self.report_button.on_click(guarded(err, lambda _b: self.open_report(self.run_id.value)))
        self.rerun_button.on_click(guarded(err, lambda _b: self.request_rerun(self.run_id.value)))
        self.confirm_button.on_click(guarded(err, lambda _b: self.rerun(self.run_id.value)))
        self.widget = widgets.VBox([
            widgets.HBox([self.data_dir, self.refresh_button]), self.table, widgets.HBox([self.run_id, self.report_button, self.rerun_button]),
            self.confirm_box, self.bar.widget, self.detail, self.live.widget, self.report])

    def use_data_dir(self, path: str | Path) -> pd.DataFrame:
        """List the runs of another data directory (e.g. where ``workbench run`` wrote them)."""
        chosen = Path(str(path)).expanduser()
        if not chosen.is_dir():
            raise ConfigError(f"{chosen} is not a directory; give the data dir that holds runs/")
        self.ctx.data_dir = chosen
        self.data_dir.value = str(chosen)
        return self.refresh()

    def refresh(self) -> pd.DataFrame:
        """Read the ledger of the data dir field (local files: fast, done inline)."""
        if self.data_dir.value and Path(self.data_dir.value).expanduser() != self.ctx.data_dir:
            return self.use_data_dir(self.data_dir.value)
        self.runs = Ledger(self.ctx.data_dir).runs()
        rows = records(self.runs.sort_values("run_id", ascending=False)) if not self.runs.empty else []
        for r in rows:
            r["report"] = "yes" if r.get("report") else "-"
        self.table.value = table(rows, COLUMNS, css="wb-runs", empty=f"no runs under {self.ctx.data_dir}/runs")
        ids = [str(r["run_id"]) for r in rows]
        self.run_id.options = ids
        self.run_id.value = ids[0] if ids else None
        return self.runs

    def _result(self, run_id: str) -> tuple[Path, dict[str, Any]]:
        if not run_id:
            raise ConfigError("pick a run (Refresh lists them)")
        run_dir = self.ctx.data_dir / "runs" / run_id
        try:
            import json

            return run_dir, dict(json.loads((run_dir / "result.json").read_text()))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"run {run_id} has no readable result.json: {exc}") from exc

    def open_report(self, run_id: str) -> Path | None:
        """Show the run's conclusion and its report.html inline (it is self-contained); its path."""
        run_dir, result = self._result(run_id)
        self.detail.value = (f"<b>{esc(run_id)}</b>: {esc(result.get('status'))} — "
                             f"<span class='wb-runs-conclusion'>{esc(result.get('conclusion', ''))}</span>")
        self.live.clear()
        self.live.from_run_dir(run_dir)
        path = run_dir / "report.html"
        if not path.exists():
            self.report.value = "<i>this run has no report.html</i>"
            return None
        self.report.value = (f"<iframe style='width:100%;height:520px;border:1px solid #ddd' "
                             f"srcdoc=\"{html.escape(path.read_text(errors='replace'), quote=True)}\"></iframe>")
        return path

    def request_rerun(self, run_id: str) -> None:
        _run_dir, result = self._result(run_id)
        runbook = str(result.get("runbook") or "")
        if not runbook or runbook in NOT_RERUNNABLE:
            raise ConfigError(f"run {run_id} was not made by a runbook ({runbook or 'unknown'}); nothing to rerun")
        self.question.value = (f"rerun <b>{esc(runbook)}</b> with {esc(rerun_params(result))}? "
                               "It changes the hosts it names (and restores them).")
        self.confirm_box.layout.display = "flex"

    def rerun(self, run_id: str) -> Task | None:
        """Run the run's runbook again with its parameters (a new run id), in the background."""
        _run_dir, result = self._result(run_id)
        self.confirm_box.layout.display = "none"
        runbook, params = str(result.get("runbook") or ""), rerun_params(result)
        if not runbook or runbook in NOT_RERUNNABLE:
            raise ConfigError(f"run {run_id} was not made by a runbook; nothing to rerun")

        run_id = new_run_id(runbook)
        run_dir = self.ctx.data_dir / "runs" / run_id
        self.live.clear()

        def work(tc: TaskContext) -> Any:
            tc.progress(None, f"running {runbook} ({run_id})")
            done = threading.Event()
            watcher = threading.Thread(target=self._watch, args=(run_dir, done, tc), daemon=True)
            watcher.start()
            try:
                return self._execute(runbook, params, data_dir=self.ctx.data_dir, run_id=run_id)
            finally:
                done.set()
                watcher.join(30)
                self.live.from_run_dir(run_dir)

        def done(outcome: Any) -> None:
            self.last_outcome = outcome
            self.detail.value = (f"new run <b>{esc(getattr(outcome, 'run_id', ''))}</b>: "
                                 f"{esc(getattr(outcome, 'conclusion', ''))}")
            self.refresh()

        return self.bar.submit(f"rerun {runbook}", work, on_done=done)

    def _watch(self, run_dir: Path, done: threading.Event, tc: TaskContext) -> None:
        """Redraw the live charts whenever the running run rewrites its tables (a sweep: per configuration)."""
        while not done.wait(self.poll_s):
            try:
                drawn = self.live.from_run_dir(run_dir)
            except Exception as exc:  # a chart that cannot be drawn yet must not end the run
                tc.log(f"live charts: {type(exc).__name__}: {exc}")
                continue
            if drawn:
                tc.log(f"live charts: {', '.join(drawn)} redrawn")

    def wait(self, timeout: float | None = 600.0) -> Task | None:
        return self.bar.wait(timeout)
