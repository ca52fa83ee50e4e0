"""GPU: live charts of the chosen host's GPUs (power with its limit, utilization, memory, clocks),
sampled from ``nvidia-smi`` on the host while the user works.

Sampling is a background task of the tab's bar (Cancel or Stop ends it, and the samples are
stored in the ledger as a ``gpu`` run, so they sit beside any run that was going on); every ``refresh_s``
the lines received so far are parsed (:func:`workbench.telemetry.parse_nvidia_smi`) and the
chart (:func:`workbench.plots.gpu_dashboard`, the last ``window_s`` seconds) is redrawn as
inline SVG.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import pandas as pd

from workbench import plots
from workbench.runs import Run
from workbench.telemetry import GpuSampler, parse_nvidia_smi
from workbench.widgets.background import Task, TaskBar, TaskContext, guarded
from workbench.widgets.context import PanelContext
from workbench.widgets.render import chart_svg


class GpuTab:
    """Start/Stop live GPU sampling of the current host; ``samples`` holds what was sampled."""

    def __init__(self, ctx: PanelContext, *, sampler_for: Callable[[Any], Any] = lambda host: GpuSampler(host, 500),
                 refresh_s: float = 2.0, window_s: float = 120.0) -> None:
        self.ctx = ctx
        self.sampler_for = sampler_for
        self.refresh_s = refresh_s
        self.window_s = window_s
        self.sampler: Any = None
        self.samples = pd.DataFrame()
        self.saved: Run | None = None  # the ledger run the last samples were stored in
        self.bar = TaskBar("gpu")
        self.start_button = widgets.Button(description="Start sampling", icon="play")
        self.start_button.add_class("wb-gpu-start")
        self.stop_button = widgets.Button(description="Stop", icon="stop")
        self.stop_button.add_class("wb-gpu-stop")
        self.summary = widgets.HTML(value="<i>not sampling</i>")
        self.summary.add_class("wb-gpu-summary")
        # Inline SVG in an HTML widget, as the Benchmark tab: an Output widget does not take
        # displays from the sampling thread, and the SVG needs no renderer extension.
        self.chart = widgets.HTML(value="")
        self.chart.add_class("wb-gpu-chart")
        self.start_button.on_click(guarded(self.bar.error, lambda _b: self.start()))
        self.stop_button.on_click(guarded(self.bar.error, lambda _b: self.stop()))
        self.widget = widgets.VBox([widgets.HBox([self.start_button, self.stop_button]), self.bar.widget,
                                    self.summary, self.chart])

    def start(self) -> Task | None:
        host_name = self.ctx.current

        def work(tc: TaskContext) -> pd.DataFrame:
            self.sampler = self.sampler_for(self.ctx.host(host_name))
            self.sampler.start()
            tc.progress(None, f"sampling {host_name}")
            try:
                while not tc.wait(self.refresh_s):
                    self.update()
            finally:
                self.samples = self.sampler.stop()
                self.update(self.samples)
                self.saved = self._save(host_name, self.samples)
            return self.samples

        return self.bar.submit(f"GPU samples of {host_name}", work)

    def stop(self) -> None:
        self.bar.cancel()

    def _save(self, host_name: str, samples: pd.DataFrame) -> Run | None:
        """Store the samples as a ``gpu`` run in the ledger (its ``telemetry`` table, the time span in
        ``result.json``), so they sit beside the runs that were going on while they were taken."""
        if samples.empty or "time_unix" not in samples:
            return None
        run = Run.create("gpu", data_dir=self.ctx.data_dir)
        run.table("telemetry", samples)
        t0, t1 = float(samples["time_unix"].min()), float(samples["time_unix"].max())
        frac = ""
        if "power_w" in samples and "power_limit_w" in samples and samples["power_limit_w"].notna().any():
            frac = (f"; mean power {samples['power_w'].mean():.0f} W of a "
                    f"{samples['power_limit_w'].max():.0f} W limit")
        run.write_result({"status": "ok", "host": host_name, "started": t0, "finished": t1,
                          "wall_seconds": round(t1 - t0, 2),
                          "conclusion": f"{len(samples)} samples of {samples['gpu'].nunique()} GPU(s) over "
                                        f"{t1 - t0:.0f} s{frac}"})
        return run

    def current(self) -> pd.DataFrame:
        """What the sampler received so far, parsed (lines still arriving are skipped, not errors)."""
        if self.sampler is None:
            return pd.DataFrame()
        lines = list(self.sampler.lines)
        return parse_nvidia_smi(lines, self.sampler.fields, utc_offset_s=self.sampler.utc_offset_s, strict=False)

    def update(self, samples: pd.DataFrame | None = None) -> Any:
        """Redraw the chart and the summary line; returns the chart (None before the first sample)."""
        df = self.current() if samples is None else samples
        if df.empty or "time_unix" not in df:
            return None
        self.samples = df
        latest = df[df["time_unix"] == df["time_unix"].max()]
        parts = []
        for _, r in latest.iterrows():
            limit = f" of {r['power_limit_w']:.0f} W" if pd.notna(r.get("power_limit_w")) else ""
            parts.append(f"GPU {r['gpu']}: {r.get('power_w', float('nan')):.0f} W{limit}, "
                         f"{r.get('util_gpu_pct', float('nan')):.0f}% busy, {r.get('mem_used_mib', 0):.0f} MiB")
        self.summary.value = "<br>".join(parts)
        chart = plots.gpu_dashboard(df, last_s=self.window_s)
        self.chart.value = chart_svg(chart)
        return chart

    def wait(self, timeout: float | None = 600.0) -> Task | None:
        return self.bar.wait(timeout)
