"""Concurrency (or Poisson rate) sweeps with repeats: one results row per (point, repeat).

``run_sweep(base, [1, 4, 16, 64])`` (or ``rates=[1, 2, 4]``) runs ``base`` (a ``LoadSpec``) once
per point and repeat with a *runner* — ``local_runner()`` (httpx from this machine; give it a tunnelled URL
from ``Host.tunnel`` to reach a remote server) or ``host_runner(host)`` (the host client on the
GPU host) — and returns a ``SweepResult``: the results table (canonical metrics of
``workbench.bench.metrics`` + the client self-check + ``labels``), the per-request table and the
raw records. ``write_sweep`` stores them as Parquet plus the raw records as JSONL. With ``gpu_host`` the GPUs
are sampled during the sweep and joined per point; with ``server_url`` the server's counters too.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from workbench.bench.client import run_local
from workbench.bench.loadcore import LoadSpec
from workbench.bench.metrics import PERCENTILES, SLO, request_frame, summarize
from workbench.bench.remote import HostLike, run_on_host
from workbench.errors import ConfigError, HostError, Stopped
from workbench.telemetry import GpuSampler, join_telemetry, server_window, snapshot_server

T = TypeVar("T")
Runner = Callable[[LoadSpec], tuple[list[dict[str, Any]], dict[str, Any]]]


@dataclass
class SweepResult:
    """What a sweep produced; ``records`` holds the raw request and run records, annotated."""

    results: pd.DataFrame
    requests: pd.DataFrame
    records: list[dict[str, Any]] = field(default_factory=list)
    gpu: pd.DataFrame = field(default_factory=pd.DataFrame)  # nvidia-smi samples, when sampled


def local_runner(progress: bool = True) -> Runner:
    return lambda spec: run_local(spec, progress=progress)


def host_runner(host: HostLike, *, python: str = "python3", progress: bool = True) -> Runner:
    return lambda spec: run_on_host(host, spec, python=python, progress=progress)


def run_sweep(base: LoadSpec, concurrencies: Sequence[int] = (), *, rates: Sequence[float] = (), repeats: int = 1,
              runner: Runner | None = None, labels: dict[str, Any] | None = None, slo: SLO | None = None,
              requests_per_concurrency: int | None = None, server_url: str | None = None,
              gpu_host: HostLike | None = None, gpu_interval_ms: int = 500,
              percentiles: Sequence[float] = PERCENTILES, stop: threading.Event | None = None) -> SweepResult:
    """Run ``base`` at each concurrency (closed loop), or at each Poisson ``rate`` (requests/s,
    in-flight capped by ``base.concurrency``), ``repeats`` times. Each point has
    ``base.num_requests`` measured requests, or ``requests_per_concurrency * c`` if larger.

    ``server_url`` (reachable from this machine): ``/metrics`` and ``/server_info`` are read
    around each point's measured requests (its warmup then runs as a separate run first), and
    ``workbench.telemetry.server_window`` adds the server's view: token counters, its TTFT,
    speculative acceptance for that point alone.

    ``gpu_host``: sample its GPUs with nvidia-smi for the whole sweep (``SweepResult.gpu``) and
    join each point's measured window (``workbench.telemetry.join_telemetry``: power, utilization,
    energy per token).

    ``base.flush_cache``: the server's prefix cache is flushed once before each point (its warmup
    included). ``percentiles``: the latency percentiles of every row (``{metric}_p{q}_ms``).

    ``stop``: once set, the sweep raises :class:`~workbench.errors.Stopped` before its next load
    run or scrape (a run or scrape in flight ends with its connection: close the host, see
    :func:`workbench.hosts.closed_on`).
    """
    if bool(concurrencies) == bool(rates):
        raise ConfigError("give concurrencies or Poisson rates (one of the two)")
    if any(c < 1 for c in concurrencies) or any(r <= 0 for r in rates) or repeats < 1:
        raise ConfigError(f"need concurrencies >= 1, rates > 0, repeats >= 1; got {list(concurrencies)}, "
                          f"{list(rates)} x {repeats}")
    runner = runner or local_runner()
    labels = dict(labels or {})
    sampler = GpuSampler(gpu_host, gpu_interval_ms).start() if gpu_host is not None else None
    try:
        if sampler is not None and not sampler.wait_for_sample():
            raise HostError(f"nvidia-smi on {sampler.host.name} produced no sample: {' | '.join(sampler.lines[-3:])}",
                            host=sampler.host.name)
        result = _sweep(base, concurrencies, rates, repeats, runner, labels, slo, requests_per_concurrency, server_url,
                        percentiles, _checkpoint(stop))
    finally:
        samples = sampler.stop() if sampler is not None else pd.DataFrame()
    if not samples.empty and not result.results.empty:
        result.results = join_telemetry(result.results, samples)
    result.gpu = samples
    return result


def _sweep(base: LoadSpec, concurrencies: Sequence[int], rates: Sequence[float], repeats: int, runner: Runner,
           labels: dict[str, Any], slo: SLO | None, requests_per_concurrency: int | None,
           server_url: str | None, percentiles: Sequence[float],
           step: Callable[[Callable[[], Any]], Any]) -> SweepResult:
    rows: list[dict[str, Any]] = []
    frames: list[pd.DataFrame] = []
    raw: list[dict[str, Any]] = []
    spec = base
    points: list[tuple[int | None, float | None]] = [(c, None) for c in concurrencies]
    points = points or [(base.concurrency, r) for r in rates]
    for c, rate in points:
        for rep in range(repeats):
            n = max(base.num_requests, (requests_per_concurrency or 0) * (c or 1))
            point = replace(spec, concurrency=c, rate=rate, num_requests=n, seed=base.seed + rep)
            records, run, server = _run_point(point, runner, server_url, step)
            # reuse what the first run learnt (model name, prompt calibration)
            learnt = run.get("spec") or {}
            spec = replace(spec, model=learnt.get("model") or spec.model,
                           tokens_per_word=tuple(learnt["tokens_per_word"]) if learnt.get("tokens_per_word") else spec.tokens_per_word)
            tags = {**labels, "concurrency": c, "rate": rate, "repeat": rep}
            summary = summarize(records, run, slo=slo, percentiles=percentiles)
            measured = [r for r in records if r["phase"] == "measure"]
            window = {"start_unix": min((r["start_unix"] for r in measured), default=None),
                      "end_unix": max((r["start_unix"] + r["e2e_s"] for r in measured), default=None),
                      "input_len": point.input_len, "output_len": point.output_len, "api": point.api,
                      "burstiness": point.burstiness if rate else None, "duration_limit_s": point.duration_s,
                      "dataset_items": len(point.dataset)}
            rows.append({**tags, **window, **summary, **server})
            frames.append(request_frame(records).assign(**{k: v for k, v in tags.items()}))
            raw.extend({**r, **tags} for r in [*records, run])
    requests = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return SweepResult(pd.DataFrame(rows), requests, raw)


def _checkpoint(stop: threading.Event | None) -> Callable[[Callable[[], T]], T]:
    """``step(call)``: ``call()``, unless ``stop`` is set before it or comes while it runs (a run
    cut short by its closed connection is no measurement): then :class:`Stopped`."""
    def step(call: Callable[[], T]) -> T:
        if stop is not None and stop.is_set():
            raise Stopped("the sweep was stopped")
        try:
            out = call()
        except Exception as exc:
            if stop is not None and stop.is_set():
                raise Stopped(f"the sweep was stopped ({type(exc).__name__}: {exc})") from exc
            raise
        if stop is not None and stop.is_set():
            raise Stopped("the sweep was stopped")
        return out
    return step


def _run_point(point: LoadSpec, runner: Runner, server_url: str | None, step: Callable[[Callable[[], Any]], Any]
               ) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    if server_url is None:
        records, run = step(lambda: runner(point))
        return records, run, {}
    warm: list[dict[str, Any]] = []
    if point.warmup:  # warm up outside the server window, then measure alone
        warm, learnt = step(lambda: runner(replace(point, num_requests=point.warmup, warmup=0, seed=point.seed + 10_000)))
        warm = [{**r, "phase": "warmup", "id": -1 - i} for i, r in enumerate(warm)]
        point = replace(point, warmup=0, model=learnt["spec"]["model"], flush_cache=False,
                        tokens_per_word=tuple(learnt["spec"]["tokens_per_word"]))
    before = step(lambda: snapshot_server(server_url))
    records, run = step(lambda: runner(point))
    after = step(lambda: snapshot_server(server_url))
    return [*warm, *records], run, server_window(before, after)


def write_sweep(result: SweepResult, out_dir: str | Path) -> dict[str, Path]:
    """Write ``results.parquet``, ``requests.parquet`` and ``records.jsonl`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"results": out / "results.parquet", "requests": out / "requests.parquet", "records": out / "records.jsonl"}
    result.results.to_parquet(paths["results"], index=False)
    result.requests.to_parquet(paths["requests"], index=False)
    if not result.gpu.empty:
        paths["gpu"] = out / "gpu.parquet"
        result.gpu.to_parquet(paths["gpu"], index=False)
    with paths["records"].open("w") as f:
        for rec in result.records:
            f.write(json.dumps(rec, default=str) + "\n")
    return paths


def read_sweep(out_dir: str | Path) -> SweepResult:
    """Read back what ``write_sweep`` wrote."""
    out = Path(out_dir)
    with (out / "records.jsonl").open() as f:
        records = [json.loads(line) for line in f if line.strip()]
    gpu = pd.read_parquet(out / "gpu.parquet") if (out / "gpu.parquet").exists() else pd.DataFrame()
    return SweepResult(pd.read_parquet(out / "results.parquet"), pd.read_parquet(out / "requests.parquet"), records, gpu)
