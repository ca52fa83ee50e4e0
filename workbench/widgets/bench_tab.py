"""Benchmark: a concurrency sweep with repeats, live throughput, Pareto, TTFT/ITL CDF, the server's own
``/metrics`` series and GPU charts, saved to the ledger."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import ipywidgets as widgets
import pandas as pd

from workbench import plots, servermetrics
from workbench.bench import LoadSpec, SweepResult, host_runner, run_sweep
from workbench.bench.charts import itl_frame
from workbench.errors import ConfigError
from workbench.runbooks.measure import server_shape
from workbench.runs import Run
from workbench.services import exec_argv
from workbench.telemetry import GpuSampler, join_telemetry, parse_nvidia_smi
from workbench.watch import server_port
from workbench.widgets.background import Task, TaskBar, TaskContext, guarded
from workbench.widgets.context import PanelContext
from workbench.widgets.livecharts import LiveCharts
from workbench.widgets.render import chart_svg, esc, records, table

SHOWN = ("concurrency", "repeat", "completed", "failed", "output_throughput", "request_throughput", "ttft_p50_ms",
         "tpot_p50_ms", "gpu_power_w_mean", "gpu_util_gpu_pct_mean")


def parse_concurrencies(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.replace(" ", ",").split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"concurrencies must be comma-separated integers, not {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise ConfigError(f"give at least one concurrency >= 1, not {text!r}")
    return values


def gpu_chart(samples: pd.DataFrame) -> Any:
    return plots.gpu_timeline(samples)


class BenchTab:
    """Sweep a running server of the chosen host; the load runs on the host, next to the server."""

    def __init__(self, ctx: PanelContext, *, unit: str = "sglang-k26-ddtree.service",
                 sweep: Callable[..., SweepResult] = run_sweep, runner_for: Callable[[Any], Any] = host_runner,
                 sampler_for: Callable[[Any], Any] | None = lambda host: GpuSampler(host, 500),
                 metrics_for: Callable[[str], Any] | None = lambda url: servermetrics.MetricsSampler(url, 0.5)) -> None:
        self.ctx = ctx
        self._sweep, self._runner_for, self._sampler_for = sweep, runner_for, sampler_for
        self._metrics_for = metrics_for  # the server's /metrics, polled through the host's tunnel
        self.results = pd.DataFrame()
        self.per_request = pd.DataFrame()  # one row per request (TTFT)
        self.gaps = pd.DataFrame()  # one row per gap between output chunks (ITL)
        self.n_gpus = 1
        self.samples = pd.DataFrame()
        self.server_metrics = pd.DataFrame()  # the server's /metrics over the run (workbench.servermetrics)
        self.run_record: Run | None = None
        self.bar = TaskBar("bench")
        self.unit = widgets.Text(value=unit, description="server unit", layout=widgets.Layout(width="380px"))
        self.unit.add_class("wb-bench-unit")
        self.concurrencies = widgets.Text(value="1,4,16", description="concurrency")
        self.concurrencies.add_class("wb-bench-concurrency")
        self.repeats = widgets.BoundedIntText(value=1, min=1, max=20, description="repeats",
                                              layout=widgets.Layout(width="160px"))
        self.repeats.add_class("wb-bench-repeats")
        self.requests = widgets.BoundedIntText(value=16, min=1, max=100_000, description="requests/pt",
                                               layout=widgets.Layout(width="190px"))
        self.requests.add_class("wb-bench-requests")
        self.output_len = widgets.BoundedIntText(value=64, min=1, max=100_000, description="output len",
                                                 layout=widgets.Layout(width="190px"))
        self.output_len.add_class("wb-bench-outputlen")
        self.run_button = widgets.Button(description="Run benchmark", icon="play", button_style="primary")
        self.run_button.add_class("wb-bench-run")
        self.throughput = widgets.HTML(value="")
        self.throughput.add_class("wb-bench-throughput")
        self.gpu = widgets.HTML(value="")
        self.gpu.add_class("wb-bench-gpu")
        self.server = widgets.HTML(value="")
        self.server.add_class("wb-bench-server")
        self.table = widgets.HTML(value="")
        self.table.add_class("wb-bench-table")
        self.saved = widgets.HTML(value="")
        self.saved.add_class("wb-bench-saved")
        self.live = LiveCharts("bench")  # Pareto, TTFT and ITL CDFs: the reports' builder, redrawn per point
        self.run_button.on_click(guarded(self.bar.error, lambda _b: self.run()))
        self.widget = widgets.VBox([
            widgets.HBox([self.unit, self.concurrencies]),
            widgets.HBox([self.repeats, self.requests, self.output_len, self.run_button]),
            self.bar.widget, self.saved, self.table, self.throughput, self.live.widget, self.server, self.gpu])

    def run(self) -> Task | None:
        """Sweep the concurrencies (each ``repeats`` times) under the host lock; charts update per point."""
        host_name, unit = self.ctx.current, self.unit.value.strip()
        points = parse_concurrencies(self.concurrencies.value)
        repeats, n, out_len = int(self.repeats.value), int(self.requests.value), int(self.output_len.value)
        self.results, self.samples, self.run_record = pd.DataFrame(), pd.DataFrame(), None
        self.per_request, self.gaps, self.server_metrics = pd.DataFrame(), pd.DataFrame(), pd.DataFrame()
        self.throughput.value = self.gpu.value = self.table.value = self.saved.value = self.server.value = ""
        self.live.clear()

        def work(tc: TaskContext) -> Run:
            svc = self.ctx.services(host_name)
            host = svc.host
            started = time.time()
            with self.ctx.lock(f"panel: benchmark {unit}", host_name):
                st = svc.status(unit)
                if not st.running:
                    raise ConfigError(f"{host_name}: {unit} is not running ({st.active_state}); start it in "
                                      "Hosts and services first")
                argv = exec_argv(svc.unit_text(unit), unit)
                port = server_port(argv)
                self.n_gpus = server_shape(argv).tp or 1
                base = LoadSpec(url=f"http://127.0.0.1:{port}", num_requests=n, output_len=out_len, input_len=64,
                                warmup=1)
                sampler = self._sampler_for(host) if self._sampler_for else None
                if sampler is not None:
                    sampler.start()
                    sampler.wait_for_sample(10.0)
                frames: list[pd.DataFrame] = []
                requests: list[pd.DataFrame] = []
                gaps: list[pd.DataFrame] = []
                stack = contextlib.ExitStack()
                metrics = None
                try:
                    if self._metrics_for is not None:
                        local = stack.enter_context(host.tunnel(port))
                        metrics = self._metrics_for(f"http://127.0.0.1:{local}").start()
                        stack.callback(metrics.stop)
                    for i, c in enumerate(points):
                        tc.check()
                        tc.progress(i / len(points), f"concurrency {c} ({i + 1}/{len(points)})")
                        res = self._sweep(replace(base, concurrency=c), [c], repeats=repeats,
                                          runner=self._runner_for(host), labels={"variant": unit})
                        frames.append(res.results)
                        requests.append(res.requests)
                        gaps.append(itl_frame(res.records))
                        self.per_request = pd.concat(requests, ignore_index=True)
                        self.gaps = pd.concat(gaps, ignore_index=True)
                        self._update(pd.concat(frames, ignore_index=True), sampler, metrics)
                finally:
                    samples = sampler.stop() if sampler is not None else pd.DataFrame()
                    stack.close()
                    self.server_metrics = metrics.frame if metrics is not None else pd.DataFrame()
            results = pd.concat(frames, ignore_index=True)
            if not samples.empty:
                results = join_telemetry(results, samples)
            self.samples = samples
            self._update(results, None)
            tc.progress(1.0, "saving to the ledger")
            run = Run.create("bench", data_dir=self.ctx.data_dir)
            run.table("results", results)
            for name, frame in (("requests", self.per_request), ("itl", self.gaps)):
                if not frame.empty:
                    run.table(name, frame)
            if not samples.empty:
                run.table("telemetry", samples)
            if not self.server_metrics.empty:
                run.table("server_metrics", self.server_metrics)
            best = results.sort_values("output_throughput").iloc[-1] if "output_throughput" in results else None
            run.write_result({
                "status": "ok", "host": host_name, "unit": unit, "started": started,
                "wall_seconds": round(time.time() - started, 2),
                "params": {"concurrencies": points, "repeats": repeats, "num_requests": n, "output_len": out_len},
                "conclusion": (f"peak output throughput {best['output_throughput']:.1f} tok/s at concurrency "
                               f"{int(best['concurrency'])}" if best is not None else "no results")})
            return run

        def done(run: Run) -> None:
            self.run_record = run
            self.saved.value = f"saved to the ledger: run <code class='wb-bench-runid'>{esc(run.id)}</code>"

        return self.bar.submit(f"benchmark {unit}", work, on_done=done)

    def _update(self, results: pd.DataFrame, sampler: Any, metrics: Any = None) -> None:
        self.results = results
        cols = [c for c in SHOWN if c in results]
        self.table.value = table(records(results[cols]), cols, css="wb-bench-results")
        if "output_throughput" in results and not results.empty:
            self.throughput.value = chart_svg(plots.throughput_vs_concurrency(results))
        self.live.update(results, self.per_request, self.gaps, n_gpus=self.n_gpus)
        samples = self.samples
        if sampler is not None and getattr(sampler, "lines", None):
            samples = parse_nvidia_smi(list(sampler.lines), sampler.fields, utc_offset_s=sampler.utc_offset_s,
                                       strict=False)
        if not samples.empty and "time_unix" in samples:
            self.gpu.value = chart_svg(gpu_chart(samples))
        series = servermetrics.series_frame(list(metrics.rows)) if metrics is not None else self.server_metrics
        chart = plots.server_series_chart(series)
        if chart is not None:  # the reports' chart of the server's own view (running, queued, KV cache, ...)
            self.server.value = chart_svg(chart)

    def wait(self, timeout: float | None = 600.0) -> Task | None:
        return self.bar.wait(timeout)
