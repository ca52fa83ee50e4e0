"""Measuring a serving unit: the load shape the measuring runbooks share, one sweep through the
host with GPU telemetry and server counters joined, and the roofline verdict in words.

Used by the benchmark runbook (one running unit) and the A/B runbook (a base and a variant).
The server's port and shape (tensor parallel size, draft tokens verified per step) come from
the unit's command line; the load shape (the workload of ``workbench bench``) from
:class:`~workbench.runbooks.loadparams.LoadParams`; the GPU model from ``nvidia-smi`` (provenance), looked up in
:data:`workbench.bottleneck.GPUS`; the model description is a parameter (:data:`MODEL_SPECS`).
"""

from __future__ import annotations

import contextlib
import re
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from workbench import plots
from workbench.bench.loadcore import LoadSpec
from workbench.bench.sweep import SweepResult, host_runner, local_runner, run_sweep
from workbench.bottleneck import FAR_FROM_ROOF, GPUS, GpuSpec, ModelSpec, analyze_results
from workbench.errors import ConfigError, HostError
from workbench.hosts import Host
from workbench.modelarch import read_served_config
from workbench.runbooks.loadparams import MODEL_SPECS, LoadParams
from workbench.runs import read_table
from workbench.servermetrics import MetricsSampler
from workbench.watch import server_port

_TP_FLAGS = ("--tp-size", "--tp", "--tensor-parallel-size", "-tp")
_DRAFT_FLAGS = ("--speculative-num-draft-tokens",)


@dataclass(frozen=True)
class ServerShape:
    """What the command line says about the server: its port, TP size, tokens verified per step."""

    port: int
    tp: int | None = None
    draft_tokens: int | None = None
    model: ModelSpec | None = None  # the served model, from its config.json (model_spec "auto")
    model_note: str = ""  # why it is not known


def with_model(shape: ServerShape, host: Host, argv: list[str], p: LoadParams) -> ServerShape:
    """``shape`` with the served model read from its ``config.json`` on ``host`` (model_spec "auto")."""
    if p.model_spec != "auto":
        return shape
    try:
        arch = read_served_config(host, argv)
    except (ConfigError, HostError) as exc:
        return replace(shape, model_note=f"no roofline: {exc}")
    return replace(shape, model=arch.to_model_spec())


def flag_value(argv: list[str], names: tuple[str, ...]) -> str | None:
    """The value of the last of ``names`` in ``argv`` (``--x v`` or ``--x=v``), None if absent."""
    found = None
    for i, tok in enumerate(argv):
        name, eq, value = tok.partition("=")
        if name in names:
            found = value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
    return found


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def server_shape(argv: list[str]) -> ServerShape:
    return ServerShape(server_port(argv), _int(flag_value(argv, _TP_FLAGS)), _int(flag_value(argv, _DRAFT_FLAGS)))


def gpu_key(name: str | None) -> str | None:
    """The :data:`GPUS` key an nvidia-smi name belongs to (``NVIDIA B300 SXM6 AC`` -> ``B300``)."""
    text = " ".join((name or "").upper().split())
    hits = [k for k in GPUS if k.upper() in text]
    return max(hits, key=len) if hits else None


def load_spec(p: LoadParams, url: str) -> LoadSpec:
    """The base load spec of ``p``'s workload against ``url`` (headers from the environment)."""
    return p.spec(url)


def sweep_unit(host: Host, port: int, p: LoadParams, labels: dict[str, Any], *,
               repeats: int | None = None, series: list[pd.DataFrame] | None = None,
               stop: threading.Event | None = None) -> SweepResult:
    """Sweep the server on ``host:port``: load from the host (or through a tunnel), GPU samples
    joined per point, ``/metrics`` deltas (speculative acceptance per window) through a tunnel;
    with ``series`` (and ``p.server_metrics``) the server's ``/metrics`` time series over the whole
    sweep is appended to it (:mod:`workbench.servermetrics`, tagged with ``labels``). ``stop``: see
    :func:`workbench.bench.sweep.run_sweep` (with :func:`workbench.hosts.closed_on` around it, the
    sweep of a server that stopped answering ends at once)."""
    with host.tunnel(port) as local_port:
        server_url = f"http://127.0.0.1:{local_port}"
        if p.load_from == "host":
            url, runner = f"http://127.0.0.1:{port}", host_runner(host, progress=False)
        else:
            url, runner = server_url, local_runner(False)
        sampler = MetricsSampler(server_url, p.metrics_interval_ms / 1000) if series is not None and p.server_metrics \
            else None
        with sampler or contextlib.nullcontext():
            rates = p.request_rate
            out = run_sweep(load_spec(p, url), [] if rates else p.concurrency, rates=rates,
                            repeats=repeats or p.repeats, runner=runner, labels=labels,
                            requests_per_concurrency=p.workload().per_concurrency(rates),
                            slo=p.slo(), percentiles=p.percentiles_measured(),
                            server_url=server_url, gpu_host=host if p.telemetry else None,
                            gpu_interval_ms=p.gpu_interval_ms, stop=stop)
        if sampler is not None and series is not None and not sampler.frame.empty:
            series.append(sampler.frame.assign(**{k: v for k, v in labels.items() if isinstance(v, str | int)}))
        return out


# -- summaries and the roofline -----------------------------------------------------------------

POINT_COLUMNS = ("output_throughput", "request_throughput", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
                 "itl_p50_ms", "e2e_p50_ms", "tokens_per_chunk", "spec_accept_length", "gpu_power_w",
                 "gpu_power_frac", "gpu_util_pct", "gpu_energy_per_token_j")
# Kept per point when measured: input and total token throughput, goodput under the SLOs.
EXTRA_COLUMNS = ("input_throughput", "total_token_throughput", "goodput_rps", "goodput_output_throughput",
                 "good_fraction")
_PERCENTILE_COLUMN = re.compile(r"^(?:ttft|tpot|itl|e2e)_p[0-9.]+_ms$")  # the percentiles asked for


def _key(column: str, value: Any) -> Any:
    if value is None or value != value:  # NaN: an uncapped rate point has no concurrency
        return None
    return int(str(value)) if column == "concurrency" else float(value)


def points(results: pd.DataFrame, by: tuple[str, ...] = ("concurrency",)) -> list[dict[str, Any]]:
    """Per point (``by``: ``concurrency``, or ``rate`` for a rate ladder): means over repeats, the
    throughput range, failures and client-bound repeats; a rate point names its cap on requests in
    flight as ``concurrency`` (null: none)."""
    if results.empty:
        return []
    rows = []
    columns = [*POINT_COLUMNS, *(c for c in results.columns if _PERCENTILE_COLUMN.match(c) and c not in POINT_COLUMNS),
               *EXTRA_COLUMNS]
    for key, g in results.groupby(list(by), sort=True):
        keys = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = {k: _key(k, v) for k, v in zip(by, keys, strict=True)}
        if "concurrency" not in row and "concurrency" in g:
            row["concurrency"] = _key("concurrency", g["concurrency"].iloc[0])
        row["repeats"] = len(g)
        for col in columns:
            if col in g and g[col].notna().any():
                row[col] = round(float(g[col].astype(float).mean()), 4)
        row["output_throughput_min"] = round(float(g["output_throughput"].min()), 3)
        row["output_throughput_max"] = round(float(g["output_throughput"].max()), 3)
        row["failed"] = int(g["failed"].sum()) if "failed" in g else 0
        row["client_bound"] = int(g["client_bound"].astype(bool).sum()) if "client_bound" in g else 0
        if "spec_windowed" in g:
            row["spec_windowed"] = bool(g["spec_windowed"].fillna(False).astype(bool).all())
        rows.append(row)
    return rows


@dataclass
class Roofline:
    """The roofline analysis of a sweep, or why there is none."""

    analyzed: pd.DataFrame
    gpu: str | None
    n_gpus: int
    model: str
    note: str = ""
    dtype: str = "bf16"  # the tensor-core dtype the model's matmuls run in

    @property
    def spec(self) -> GpuSpec | None:
        return GPUS.get(self.gpu or "")


def roofline(results: pd.DataFrame, p: LoadParams, *, gpu_name: str | None, gpu_count: int,
             shape: ServerShape) -> Roofline:
    """``bottleneck.analyze_results`` on the model (``model_spec``; auto: ``shape.model``) and the host's GPU."""
    key = p.gpu or gpu_key(gpu_name)
    n = shape.tp or gpu_count or 1
    empty = pd.DataFrame()
    if not p.model_spec:
        return Roofline(empty, key, n, "", "no roofline: no model_spec given")
    spec = shape.model if p.model_spec == "auto" else MODEL_SPECS[p.model_spec]
    if spec is None:
        return Roofline(empty, key, n, "", shape.model_note or "no roofline: the served model's config.json was not read")
    name = spec.name if p.model_spec == "auto" else p.model_spec
    if key is None:
        return Roofline(empty, None, n, name, f"no roofline: GPU {gpu_name!r} is not in bottleneck.GPUS")
    if results.empty:
        return Roofline(empty, key, n, name, "no roofline: nothing was measured")
    if p.request_rate:
        return Roofline(empty, key, n, name, "no roofline: a request-rate ladder holds no fixed batch (the roofline "
                                             "is placed per concurrency)")
    ok = results[results["completed"] > 0] if "completed" in results else results
    analyzed = analyze_results(ok, spec, GPUS[key], n, tree_tokens=shape.draft_tokens)
    return Roofline(analyzed, key, n, name, dtype=spec.compute_dtype)


def roofline_rows(roof: Roofline) -> list[dict[str, Any]]:
    """Per concurrency (means over repeats): label, bandwidth fraction, headroom, the roofline."""
    a = roof.analyzed
    if a.empty:
        return []
    rows = []
    for c, g in a.groupby("concurrency", sort=True):
        rows.append({"concurrency": int(str(c)), "label": str(g["roof_label"].mode().iloc[0]),
                     "tok_s": round(float(g["roof_tok_s"].mean()), 2),
                     "bw_fraction": round(float(g["roof_bw_fraction"].mean()), 5),
                     "headroom": round(float(g["roof_headroom"].mean()), 3),
                     "roofline_tok_s": round(float(g["roof_roofline_tok_s"].mean()), 1),
                     "intensity": round(float(g["roof_intensity"].mean()), 3),
                     "ridge": round(float(g["roof_ridge"].mean()), 1)})
    return rows


_LABEL_WORDS = {"memory-bound": "HBM-bandwidth bound", "compute-bound": "compute bound",
                "launch-bound": "launch bound (GPUs idle between kernels)",
                "communication-bound": "communication bound"}


def bottleneck_words(rows: list[dict[str, Any]], pts: list[dict[str, Any]], *, gpu: GpuSpec | None = None,
                     n_gpus: int = 1) -> str:
    """The verdict in words: the label(s) at decode, how far below the bandwidth roofline, power."""
    if not rows:
        return ""
    labels = {r["label"] for r in rows}
    per = "; ".join(f"c={r['concurrency']}: {r['tok_s']:.0f} tok/s = {r['bw_fraction']:.1%} of peak HBM bandwidth, "
                    f"{r['headroom']:.1f}x below the bandwidth roofline ({r['roofline_tok_s']:.0f} tok/s)" for r in rows)
    where = f" on {n_gpus} x {gpu.name}" if gpu else ""
    if len(labels) == 1:
        (label,) = labels
        head = f"{_LABEL_WORDS.get(label, label)} at decode{where} ({label} at every concurrency measured)"
    else:
        head = "At decode" + where + ": " + ", ".join(
            f"{r['label']} at c={r['concurrency']}" for r in rows)
    words = [f"{head}: {per}."]
    if labels == {"memory-bound"} and max(r["bw_fraction"] for r in rows) < FAR_FROM_ROOF:
        words.append("Far below the bandwidth roof: the rest of each step goes to overhead (small kernels, "
                     "collectives, synchronisation), not to reading weights.")
    powered = [p for p in pts if p.get("gpu_power_w") is not None]
    if powered and gpu is not None:
        top = max(powered, key=lambda p: p["concurrency"])
        frac = top["gpu_power_w"] / gpu.power_limit_w
        util = f" at {top['gpu_util_pct']:.0f}% utilization" if top.get("gpu_util_pct") is not None else ""
        fits = (" — consistent with memory-bound kernels" if labels == {"memory-bound"} and frac < 0.6 else "")
        words.append(f"GPUs drew {top['gpu_power_w']:.0f} W = {frac:.0%} of {gpu.power_limit_w:.0f} W{util} "
                     f"at c={top['concurrency']}{fits}.")
    return " ".join(words)


# -- charts (values; nothing is drawn until displayed) ------------------------------------------


def ladder_of(results: pd.DataFrame) -> str:
    """``rate`` when the results come from a request-rate ladder, else ``concurrency``."""
    return "rate" if "rate" in results and results["rate"].notna().any() else "concurrency"


def window_phases(results: pd.DataFrame, color: str | None = None) -> pd.DataFrame:
    """One shaded span per measured window: ``phase`` (``c=4`` or ``rate=2.0``, with the arm when given), start, end."""
    if results.empty or "start_unix" not in results:
        return pd.DataFrame(columns=["phase", "start", "end"])
    label = ("rate=" + results["rate"].astype(str)) if ladder_of(results) == "rate" \
        else "c=" + results["concurrency"].astype(str)
    if color and color in results:
        label = results[color].astype(str) + " " + label
    return pd.DataFrame({"phase": label, "start": results["start_unix"], "end": results["end_unix"]})


def gpu_chart(samples: pd.DataFrame, results: pd.DataFrame, *, load_from: str = "host",
              color: str | None = None) -> Any:
    """GPU power and utilization over the sweep, each point's measured window shaded."""
    if samples.empty:
        return None
    time_col = "time_unix" if load_from == "host" or "time_local" not in samples else "time_local"
    return plots.gpu_timeline(samples, window_phases(results, color), time_col=time_col)


def roofline_chart(roof: Roofline, *, color: str = "variant") -> Any:
    if roof.analyzed.empty or roof.spec is None:
        return None
    return plots.roofline_chart(roof.analyzed, roof.spec, roof.n_gpus, dtype=roof.dtype,
                                color=color)


def tables(run_dir: Path) -> dict[str, pd.DataFrame]:
    """A run's Parquet tables by name (results, requests, telemetry, roofline, ...), those present."""
    return {p.stem: read_table(p) for p in sorted(run_dir.glob("*.parquet"))}


def sweep_charts(res: pd.DataFrame, samples: pd.DataFrame, bottleneck: dict[str, Any], roofline_table: pd.DataFrame,
                 *, load_from: str, color: str | None = None, timeline_results: pd.DataFrame | None = None) -> list[Any]:
    """Throughput vs concurrency (or request rate), latency vs throughput, the GPU timeline (over ``timeline_results``,
    default all of ``res``) and achieved vs roofline."""
    x = ladder_of(res)
    out: list[Any] = [plots.throughput_vs_concurrency(res, x=x), plots.latency_vs_throughput(res, x=x)]
    gpu = gpu_chart(samples, res if timeline_results is None else timeline_results, load_from=load_from, color=color)
    if gpu is not None:
        out.append(gpu)
    model = bottleneck.get("model") or ""
    dtype = bottleneck.get("compute_dtype") or (MODEL_SPECS[model].compute_dtype if model in MODEL_SPECS else "bf16")
    roof = Roofline(roofline_table, bottleneck.get("gpu"), int(bottleneck.get("n_gpus") or 1), model, dtype=dtype)
    chart = roofline_chart(roof, color=color) if color else roofline_chart(roof)
    if chart is not None:
        out.append(chart)
    return out
