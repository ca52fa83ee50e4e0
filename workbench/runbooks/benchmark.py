"""The benchmark runbook: sweep one running service, with GPU telemetry, and say what bounds it.

``run(params)`` holds the host's lock for the sweep (nobody stops the server under it; the
host is not changed), finds the unit's port from its command line, checks the server answers,
sweeps the concurrencies or request rates (:func:`workbench.runbooks.measure.sweep_unit`: the load from the host
by default, ``/metrics`` deltas per point, ``nvidia-smi`` samples joined per window), and labels
every point with :mod:`workbench.bottleneck` on the GPU that ``nvidia-smi`` names and the model
given.  It never starts or stops anything: a unit that is not running is a failed run.

Tables in the run directory: ``results.parquet`` (one row per point and repeat), ``requests.parquet``
(one row per request), ``itl.parquet`` (one row per gap between output chunks), ``telemetry.parquet`` (GPU samples), ``roofline.parquet`` (``roof_*`` columns),
``server_metrics.parquet`` (the server's ``/metrics`` polled over the sweep: :mod:`workbench.servermetrics`).

``result.json``::

    {"runbook": "benchmark", "status": "ok"|"failed", "host": str, "unit": str, "port": int,
     "load_from": "host"|"tunnel", "concurrency": [int] ([] with a rate ladder), "request_rate": [float], "repeats": int,
     "points": [{"concurrency": int|null (a rate point: its cap on requests in flight), "rate": float (a rate point),
                 "repeats": int, "output_throughput": float (mean tok/s),
                 "output_throughput_min": float, "output_throughput_max": float, "request_throughput": float,
                 "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "itl_p50_ms", "e2e_p50_ms": float,
                 "tokens_per_chunk": float, "spec_accept_length": float|absent, "spec_windowed": bool|absent,
                 "gpu_power_w", "gpu_power_frac", "gpu_util_pct", "gpu_energy_per_token_j": float|absent,
                 "ttft_p95_ms", ... (every percentile asked for, of ttft/tpot/itl/e2e): float,
                 "input_throughput", "total_token_throughput": float, "goodput_rps",
                 "goodput_output_throughput", "good_fraction": float|absent (goodput SLOs given),
                 "failed": int, "client_bound": int}],
     "bottleneck": {"gpu": str|null, "n_gpus": int, "model": str, "note": str,
                    "points": [{"concurrency", "label", "tok_s", "bw_fraction", "headroom", "roofline_tok_s",
                                "intensity", "ridge"}],
                    "verdict": str},
     "server_series": {"samples", "errors", "peak_running", "peak_queued", "peak_kv_cache_usage",
                       "mean_spec_accept_length", "peak_generation_tok_s"}|absent,
     "conclusion": str, "host_restored": true (nothing was changed), "server_starts": 0,
     "wall_seconds": float, "failure": {"kind": str, "message": str}|null, "started": float, "finished": float,
     "params": {...}, "provenance": {...}}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
from pydantic import Field

from workbench import plots, servermetrics
from workbench.bench import charts as bench_charts
from workbench.errors import HostError, LockHeld, ServiceError
from workbench.provenance import collect as collect_provenance
from workbench.runbooks import measure
from workbench.runbooks.params import RunbookParams
from workbench.runbooks.schemas import BenchmarkResult
from workbench.runbooks.skeleton import RunbookRun
from workbench.runs import Run
from workbench.services import exec_argv
from workbench.watch import watch_start


class _Target(RunbookParams):
    host: str = Field(min_length=1, description="ssh_config alias of the GPU host")
    unit: str = Field(min_length=1, description="the running unit to benchmark")
    health_path: str = Field("/health", description="readiness endpoint checked before the sweep")
    lock_wait: float = Field(0.0, ge=0, description="seconds to wait while another session holds the host")


class BenchmarkParams(measure.LoadParams, _Target):
    """Target first, then the load shape (the parameters cell keeps this order)."""


def _throughput_words(pts: list[dict[str, Any]]) -> str:
    return ", ".join(f"{p['output_throughput']:.0f} tok/s at "
                     + (f"{p['rate']:g} req/s" if p.get("rate") is not None else f"c={p['concurrency']}") for p in pts)


def run(params: BenchmarkParams, *, progress: Callable[[str], None] = print) -> tuple[Run, dict[str, Any]]:
    """Benchmark ``params.unit`` on ``params.host``; returns the run and its result."""
    kinds = ((LockHeld, "host_locked"), (HostError, "ssh_lost"), (ServiceError, "not_serving"))
    with RunbookRun("benchmark", params, BenchmarkResult, kinds=kinds, progress=progress) as rr:
        rr.provenance = {"host": params.host}
        rr.set(host=params.host, unit=params.unit, port=None, load_from=params.load_from,
               concurrency=[] if params.request_rate else params.concurrency, request_rate=params.request_rate,
               repeats=params.repeats, points=[], bottleneck=None,
               host_restored=True, server_starts=0)  # nothing is changed: the host is as found
        host = rr.connect(params.host)
        with rr.session(host, lock_wait=params.lock_wait) as session:
            svc = session.svc
            text = svc.unit_text(params.unit)
            argv = exec_argv(text, params.unit)
            shape = measure.with_model(measure.server_shape(argv), host, argv, params)
            rr.set(port=shape.port)
            st = svc.status(params.unit)
            if not st.running:
                raise ServiceError(f"{params.unit} is {st.active_state} on {params.host}; the benchmark never "
                                   "starts anything: start it (or run the A/B runbook) first",
                                   host=params.host, unit=params.unit)
            ready = watch_start(svc, params.unit, start=False, health_path=params.health_path, timeout=60)
            if not ready.ok:
                raise ServiceError(f"{params.unit} is running but not ready: {ready.describe()}",
                                   host=params.host, unit=params.unit)
            rr.provenance = collect_provenance(host, text)
            rr.tell(f"sweeping {params.unit} on {params.host}:{shape.port}: {params.points_words()} x {params.repeats}")
            series: list[pd.DataFrame] = []
            sweep = measure.sweep_unit(host, shape.port, params, {"variant": params.unit, "host": params.host},
                                       series=series)
        rr.table("results", sweep.results)
        if series:
            rr.table("server_metrics", series[0])
            rr.set(server_series=servermetrics.summary(series[0]))
        rr.table("requests", sweep.requests)
        rr.table("itl", bench_charts.itl_frame(sweep.records, by=("variant", params.ladder)))
        rr.table("telemetry", sweep.gpu)
        pts = measure.points(sweep.results, by=(params.ladder,))
        roof = measure.roofline(sweep.results, params, gpu_name=rr.provenance.get("gpu"),
                                gpu_count=int(rr.provenance.get("gpu_count") or 0), shape=shape)
        rr.table("roofline", roof.analyzed)
        rows = measure.roofline_rows(roof)
        verdict = measure.bottleneck_words(rows, pts, gpu=roof.spec, n_gpus=roof.n_gpus)
        bottleneck = {"gpu": roof.gpu, "n_gpus": roof.n_gpus, "model": roof.model, "compute_dtype": roof.dtype, "note": roof.note,
                      "points": rows, "verdict": verdict}
        words = f"{params.unit}: {_throughput_words(pts)}. " + (verdict or f"({roof.note})")
        rr.conclude(words, points=pts, bottleneck=bottleneck)
    return rr.run, rr.result


# -- what the notebook shows ----------------------------------------------------


def tables(run: Run) -> dict[str, pd.DataFrame]:
    """The run's Parquet tables by name (results, requests, telemetry, roofline), those present."""
    return measure.tables(run.dir)


def points_frame(result: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(result.get("points") or [])


def roofline_frame(result: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame((result.get("bottleneck") or {}).get("points") or [])


def charts(result: dict[str, Any], t: dict[str, pd.DataFrame]) -> list[Any]:
    """Throughput vs concurrency, latency percentiles vs throughput, GPU timeline, roofline, server /metrics,
    then the Pareto and the TTFT and ITL CDFs (:func:`workbench.bench.charts.load_charts`, as the panel draws them)."""
    res = t.get("results", pd.DataFrame())
    if res.empty:
        return []
    out = measure.sweep_charts(res, t.get("telemetry", pd.DataFrame()), result.get("bottleneck") or {},
                               t.get("roofline", pd.DataFrame()), load_from=result.get("load_from", "host"))
    server = plots.server_series_chart(t.get("server_metrics", pd.DataFrame()))
    n_gpus = int((result.get("bottleneck") or {}).get("n_gpus") or 1)
    load = bench_charts.load_charts(res, t.get("requests"), t.get("itl"), n_gpus=n_gpus, point=measure.ladder_of(res))
    return out + ([server] if server is not None else []) + list(load.values())


def show_charts(run: Run, result: dict[str, Any]) -> None:
    from IPython.display import display

    for chart in charts(result, tables(run)):
        display(chart)


def notebook() -> Any:
    from workbench.runbooks.notebooks import runbook

    return runbook(
        'benchmark',
        "Benchmark: how fast is a running service, and what bounds it?",
        "Sweep the concurrencies against a running unit (the load runs on the GPU host by default, so TTFT "
        "has no network in it), with GPU power and utilization sampled and the server's counters read per "
        "point; then label each point on the roofline of the host's GPUs. Nothing is started or stopped; the "
        "host's lock is held so nobody changes the server mid-sweep.",
        BenchmarkParams,
        ['rb.points_frame(result)', 'rb.roofline_frame(result)'],
        [
            ('md', "## Charts\n\nThroughput vs concurrency, latency percentiles vs throughput, GPU power and utilization over the sweep (each point's measured window shaded), achieved vs roofline.", []),
            ('code', 'rb.show_charts(run, result)', []),
        ],
    )
