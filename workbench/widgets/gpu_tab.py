"""GPUs: live power (against the limit), utilisation, memory and clocks of the chosen host's GPUs.

Sampling runs in the background (``nvidia-smi --query-gpu ... -lms``, one stream over the
host's connection) while the user works in the other tabs; the charts refresh as samples come
in, and Stop saves the samples to the ledger as a ``gpu`` run (so a trial or benchmark that was
going on has its GPU picture next to it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import pandas as pd

from workbench.gpuplots import gpu_panels, gpu_summary
from workbench.runs import Run
from workbench.telemetry import GpuSampler, parse_nvidia_smi
from workbench.widgets.background import Task, TaskBar, TaskContext, guarded
from workbench.widgets.context import PanelContext
from workbench.widgets.render import chart_svg, esc, records, table

REFRESH_S = 2.0


class GpuTab:
    """Start/Stop sampling the current host's GPUs; charts and a table of the latest readings."""

    def __init__(self, ctx: PanelContext, *, interval_ms: int = 500,
                 sampler_for: Callable[[Any, int], Any] = GpuSampler) -> None:
        self.ctx = ctx
        self._sampler_for = sampler_for
        self.samples = pd.DataFrame()
        self.run_record: Run | None = None
        self._stop = threading.Event()
        self.bar = TaskBar("gpu")
        self.interval = widgets.BoundedIntText(value=interval_ms, min=100, max=10_000, step=100,
                                               description="every (ms)", layout=widgets.Layout(width="190px"))
        self.interval.add_class("wb-gpu-interval")
        self.start_button = widgets.Button(description="Start sampling", icon="play", button_style="primary")
        self.start_button.add_class("wb-gpu-start")
        self.stop_button = widgets.Button(description="Stop and save", icon="stop")
        self.stop_button.add_class("wb-gpu-stop")
        self.table = widgets.HTML(value="<i>press Start sampling</i>")
        self.table.add_class("wb-gpu-table")
        self.chart = widgets.HTML(value="")
        self.chart.add_class("wb-gpu-chart")
        self.saved = widgets.HTML(value="")
        self.saved.add_class("wb-gpu-saved")
        self.start_button.on_click(guarded(self.bar.error, lambda _b: self.start()))
        self.stop_button.on_click(guarded(self.bar.error, lambda _b: self.stop()))
        self.widget = widgets.VBox([widgets.HBox([self.interval, self.start_button, self.stop_button]),
                                    self.bar.widget, self.saved, self.table, self.chart])

    def start(self) -> Task | None:
        """Sample until Stop (or Cancel); refresh the view every couple of seconds."""
        host_name, interval = self.ctx.current, int(self.interval.value)
        self.samples, self.run_record, self.saved.value = pd.DataFrame(), None, ""
        self._stop.clear()

        def work(tc: TaskContext) -> pd.DataFrame:
            sampler = self._sampler_for(self.ctx.host(host_name), interval)
            sampler.start()
            try:
                if not sampler.wait_for_sample(15.0):
                    raise RuntimeError(f"{host_name}: nvidia-smi gave no sample in 15 s (is it installed?)")
                tc.progress(None, f"sampling {host_name} every {interval} ms")
                while not self._stop.wait(REFRESH_S) and not tc.cancelled:
                    self._show(parse_nvidia_smi(list(sampler.lines), sampler.fields,
                                                utc_offset_s=sampler.utc_offset_s, strict=False))
            finally:
                samples = sampler.stop()
            self._show(samples)
            return samples

        def done(samples: pd.DataFrame) -> None:
            self._save(host_name, samples)

        task = self.bar.submit(f"GPUs of {host_name}", work, on_done=done)
        return task

    def stop(self) -> Task | None:
        """Stop sampling and save the samples (Cancel stops without saving)."""
        self._stop.set()
        task = self.bar.task
        if task is not None:
            task.wait(30)
        return task

    def _show(self, samples: pd.DataFrame) -> None:
        if samples.empty or "time_unix" not in samples:
            return
        self.samples = samples
        summary = gpu_summary(samples)
        self.table.value = table(records(summary), list(summary.columns), css="wb-gpu-summary")
        self.chart.value = chart_svg(gpu_panels(samples))

    def _save(self, host_name: str, samples: pd.DataFrame) -> None:
        if samples.empty:
            return
        run = Run.create("gpu", data_dir=self.ctx.data_dir)
        run.table("telemetry", samples)
        s = gpu_summary(samples)
        words = (f"{len(samples)} samples of {samples['gpu'].nunique()} GPUs; last power "
                 f"{s['power_w'].mean():.0f} W of {s['power_limit_w'].mean():.0f} W limit on average"
                 if "power_limit_w" in s else f"{len(samples)} samples")
        run.write_result({"status": "ok", "host": host_name, "conclusion": words,
                          "params": {"interval_ms": int(self.interval.value)}})
        self.run_record = run
        self.saved.value = f"saved to the ledger: run <code class='wb-gpu-runid'>{esc(run.id)}</code>"

    def wait(self, timeout: float | None = 60.0) -> Task | None:
        return self.bar.wait(timeout)
