"""Benchmark charts that need no runbook: Altair values built from a sweep's tables.

- ``pareto_chart(results, n_gpus)``: tok/s per user against tok/s per GPU, the front drawn;
- ``load_charts(results, requests, itl)``: that Pareto and the TTFT and ITL CDFs, those the tables
  allow: the reports' and the panel's one builder (the panel redraws them as points arrive);
- ``latency_cdf(requests, "ttft")`` / ``latency_cdf(itl_frame(records), "itl")``: empirical CDFs;
- ``vs_concurrency(results, ["output_throughput", "ttft_p99_ms"])``: means over repeats with
  95 % Student-t intervals, one panel per metric;
- ``gpu_power_chart(samples)``: power per GPU over the run with the power limit as a rule (and
  utilisation and memory panels when the samples have them).

Inputs are ``SweepResult.results`` / ``.requests`` / ``.records`` / ``.gpu`` (or the same columns
from anywhere); nothing is drawn until displayed, and ``workbench.plots.to_offline_html`` renders
any of them without a network.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from workbench.bench.pareto import pareto_mask, per_gpu_and_user
from workbench.roofline import LOW_POWER_FRACTION

# two-sided 95 % Student-t quantiles t(0.975, df) for df = 1..30 (standard tables)
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
CDF_POINTS = 400  # per group: enough for a smooth curve, small enough for a report
LABELS = {"output_throughput": "output tok/s", "input_throughput": "input tok/s",
          "total_token_throughput": "total tok/s", "request_throughput": "requests/s", "goodput_rps": "goodput (req/s)"}


def t975(df: int) -> float:
    """t(0.975, df): the table to 30, then 1.96 + 2.5/df (within 0.002 of the exact value)."""
    if df < 1:
        return math.nan
    return T975[df - 1] if df <= len(T975) else 1.96 + 2.5 / df


def mean_ci(df: pd.DataFrame, by: Sequence[str], y: str) -> pd.DataFrame:
    """Mean of ``y`` per group with a 95 % Student-t interval over its repeats (NaN bounds for one)."""
    g = df.groupby(list(by), dropna=False)[y].agg(["mean", "std", "count"]).reset_index()
    half = [t975(int(n) - 1) * s / math.sqrt(n) if n > 1 else math.nan for s, n in zip(g["std"], g["count"], strict=True)]
    g["lo"], g["hi"] = g["mean"] - half, g["mean"] + half
    return g.rename(columns={"mean": y, "count": "repeats"}).drop(columns="std")


def _label(col: str) -> str:
    if col in LABELS:
        return LABELS[col]
    if col.endswith("_ms"):
        name, _, q = col[:-3].rpartition("_")
        return f"{name.upper()} {q} (ms)" if name else col
    return col.replace("_", " ")


def _with_color(df: pd.DataFrame, color: str) -> pd.DataFrame:
    return df if color in df else df.assign(**{color: "run"})


def pareto_chart(results: pd.DataFrame, n_gpus: int | str, *, color: str = "variant", per_user: str = "tpot",
                 point: str = "concurrency", shape: str | None = None, tooltip: Sequence[str] = ()) -> alt.LayerChart:
    """Every (configuration, point) as tok/s per user against tok/s per GPU, means over repeats,
    with the Pareto front over all of them as a line (``pareto.per_gpu_and_user`` definitions).

    ``n_gpus``: the GPUs serving, or the name of a column that holds them per row (a sweep's
    configurations may differ). ``shape``: a column to draw as the marks' shape (e.g. ``slo_met``)
    instead of "on the front"; ``tooltip``: more columns to show (each row's first value per point)."""
    df = _with_color(results, color)
    gpus = df[n_gpus] if isinstance(n_gpus, str) else n_gpus
    df = per_gpu_and_user(df, gpus, per_user=per_user)
    extra = [c for c in dict.fromkeys([*([shape] if shape else []), *tooltip]) if c in df and c not in (color, point)]
    agg: dict[str, Any] = {"tok_s_per_user": "mean", "tok_s_per_gpu": "mean", **{c: "first" for c in extra}}
    pts = df.groupby([color, point], dropna=False, as_index=False).agg(agg)
    pts["front"] = pareto_mask(pts["tok_s_per_user"], pts["tok_s_per_gpu"])
    front = pts[pts["front"]].sort_values("tok_s_per_user")
    x = alt.X("tok_s_per_user:Q", title="tok/s per user" + (" (1000 / median TPOT)" if per_user == "tpot" else ""))
    y = alt.Y("tok_s_per_gpu:Q", title="output tok/s per GPU" + ("" if isinstance(n_gpus, str) else f" ({n_gpus} GPUs)"))
    tip = [color, point, alt.Tooltip("tok_s_per_user:Q", format=".1f"), alt.Tooltip("tok_s_per_gpu:Q", format=".1f"),
           "front", *[c for c in extra if c != shape or shape in tooltip]]
    mark = alt.Shape(f"{shape}:N", title=shape.replace("_", " ")) if shape and shape in pts else \
        alt.Shape("front:N", title="on the front")
    dots = alt.Chart(pts).mark_point(filled=True, size=70).encode(
        x=x, y=y, color=alt.Color(f"{color}:N"), shape=mark, tooltip=tip)
    line = alt.Chart(front).mark_line(color="black", strokeDash=[5, 3]).encode(x=x, y=y, order="tok_s_per_user:Q")
    text = alt.Chart(pts).mark_text(dx=8, dy=-8, fontSize=10).encode(x=x, y=y, text=f"{point}:N",
                                                                        color=alt.Color(f"{color}:N", legend=None))
    return (line + dots + text).properties(title="Pareto: per-user speed vs per-GPU throughput", width=480, height=320)


LOAD_CHARTS = ("pareto", "ttft", "itl")


def load_charts(results: pd.DataFrame, requests: pd.DataFrame | None = None, itl: pd.DataFrame | None = None, *,
                n_gpus: int | str = 1, color: str = "variant", point: str = "concurrency",
                facet: str | None = None) -> dict[str, Any]:
    """The Pareto and the TTFT and ITL CDFs of one run's tables (names in :data:`LOAD_CHARTS`), those
    its tables allow: what the benchmark and sweep reports show and what the panel redraws as each
    point arrives — one builder for both.

    ``results``: the sweep's rows so far; ``requests``: ``SweepResult.requests``; ``itl``:
    :func:`itl_frame` of the records (one row per chunk gap). ``n_gpus``: a count, or the column
    holding it. Without ``facet`` the CDFs draw one line per ``color`` and ``point`` (``c=4 config 1``;
just ``c=4`` when there is one ``color``)."""
    out: dict[str, Any] = {}
    if not results.empty and {"output_throughput", "tpot_p50_ms", point} <= set(results.columns) \
            and results["tpot_p50_ms"].notna().any():
        out["pareto"] = pareto_chart(results, n_gpus if not isinstance(n_gpus, str) or n_gpus in results else 1,
                                     color=color, point=point)
    for frame, metric in ((requests, "ttft"), (itl, "itl")):
        if frame is None or frame.empty or f"{metric}_s" not in frame or not frame[f"{metric}_s"].notna().any():
            continue
        lines = _with_color(frame, color)
        if not facet and point in lines:  # a line per point, named by it first (legends cut long names)
            label = ("c=" if point == "concurrency" else f"{point}=") + lines[point].astype(str)
            many = lines[color].nunique() > 1
            lines = lines.assign(**{color: label + " " + lines[color].astype(str) if many else label})
        out[metric] = latency_cdf(lines, metric, color=color, facet=facet)
    return out


def itl_frame(records: Iterable[dict[str, Any]], by: Sequence[str] = ("variant", "concurrency")) -> pd.DataFrame:
    """One row per inter-chunk gap (``itl_s``) of successful measured requests, with their ``by`` labels."""
    rows: list[dict[str, Any]] = []
    for r in records:
        chunks = r.get("chunk_s") or []
        if r.get("kind", "request") != "request" or r.get("phase") != "measure" or r.get("error") or len(chunks) < 2:
            continue
        tags = {k: r.get(k) for k in by}
        rows.extend({**tags, "itl_s": g} for g in np.diff(chunks))
    return pd.DataFrame(rows, columns=[*by, "itl_s"])


def ecdf(df: pd.DataFrame, value: str, by: Sequence[str], points: int = CDF_POINTS) -> pd.DataFrame:
    """Empirical CDF of ``value`` per group: ``value``, ``fraction`` (at most ``points`` rows each)."""
    parts = []
    for keys, g in df.dropna(subset=[value]).groupby(list(by), dropna=False):
        v = np.sort(g[value].to_numpy(float))
        frac = np.arange(1, v.size + 1) / v.size
        if v.size > points:  # keep evenly spaced ranks, always the last (fraction 1)
            idx = np.unique(np.linspace(0, v.size - 1, points).round().astype(int))
            v, frac = v[idx], frac[idx]
        keys = keys if isinstance(keys, tuple) else (keys,)
        parts.append(pd.DataFrame({**dict(zip(by, keys, strict=True)), value: v, "fraction": frac}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=[*by, value, "fraction"])


def latency_cdf(frame: pd.DataFrame, metric: str = "ttft", *, color: str = "variant",
                facet: str | None = "concurrency", log_x: bool = False) -> alt.Chart:
    """CDF of one latency (``ttft``, ``tpot``, ``e2e`` from ``SweepResult.requests``; ``itl`` from
    ``itl_frame(records)``), in ms, one line per ``color``, one panel per ``facet``."""
    col = f"{metric}_s"
    if col not in frame:
        raise ValueError(f"no column {col!r}: give the per-request table (ttft, tpot, e2e) or itl_frame(records)")
    df = _with_color(frame, color)
    if "ok" in df:
        df = df[df["ok"]]
    if "phase" in df:
        df = df[df["phase"] == "measure"]
    by = [color] + ([facet] if facet and facet in df else [])
    table = ecdf(df.assign(ms=df[col] * 1000), "ms", by)
    chart = alt.Chart(table).mark_line(interpolate="step-after").encode(
        x=alt.X("ms:Q", title=f"{metric.upper()} (ms)", scale=alt.Scale(type="log") if log_x else alt.Undefined),
        y=alt.Y("fraction:Q", title="fraction of requests" if metric != "itl" else "fraction of gaps",
                scale=alt.Scale(domain=[0, 1])),
        color=alt.Color(f"{color}:N"),
        tooltip=[*by, alt.Tooltip("ms:Q", format=".2f"), alt.Tooltip("fraction:Q", format=".3f")],
    ).properties(width=300, height=200, title=f"{metric.upper()} CDF")
    if len(by) > 1:
        return chart.facet(column=alt.Column(f"{facet}:O", title=facet))
    return chart


def vs_concurrency(results: pd.DataFrame, metrics: Sequence[str] = ("output_throughput", "ttft_p99_ms", "tpot_p50_ms"),
                   *, x: str = "concurrency", color: str = "variant", log_x: bool = True) -> alt.HConcatChart:
    """Each metric's mean per ``x`` (concurrency or rate) and ``color``, with 95 % t-intervals over repeats."""
    df = _with_color(results, color)
    missing = [m for m in metrics if m not in df]
    if missing:
        raise ValueError(f"results lack {missing}: run the sweep with those percentiles")
    panels = []
    for m in metrics:
        agg = mean_ci(df, [x, color], m)
        base = alt.Chart(agg).encode(
            x=alt.X(f"{x}:Q", title=x, scale=alt.Scale(type="log", base=2) if log_x else alt.Undefined),
            color=alt.Color(f"{color}:N"))
        band = base.mark_errorbar(ticks=True).encode(y=alt.Y("lo:Q", title=_label(m)), y2="hi:Q")
        line = base.mark_line(point=True).encode(
            y=alt.Y(f"{m}:Q", title=_label(m)),
            tooltip=[x, color, alt.Tooltip(f"{m}:Q", format=".2f"), alt.Tooltip("lo:Q", format=".2f"),
                     alt.Tooltip("hi:Q", format=".2f"), "repeats"])
        panels.append((band + line).properties(width=260, height=200, title=_label(m)))
    return alt.hconcat(*panels).properties(title=f"vs {x} (mean, 95% t-interval over repeats)")


def gpu_power_chart(samples: pd.DataFrame, *, power_limit_w: float | None = None, time_col: str = "time_unix",
                    windows: pd.DataFrame | None = None) -> alt.VConcatChart:
    """Power per GPU over time with the power limit as a rule, then utilisation and memory used.

    The limit is ``power_limit_w`` if given (e.g. ``GpuSpec.power_limit_w``), else the samples'
    ``power_limit_w`` (nvidia-smi ``power.limit``: one rule per distinct value); a dotted rule at
    ``LOW_POWER_FRACTION`` of it marks where a busy GPU reads as memory-bound (the roofline's
    power rule: compute-bound kernels draw near the limit). ``windows``
    (``label``, ``start``, ``end`` on the same clock) shades the benchmark points.
    """
    if samples.empty or "power_w" not in samples:
        raise ValueError("no GPU power samples (nvidia-smi power.draw) to chart")
    t0 = float(samples[time_col].min())
    df = samples.assign(t=samples[time_col] - t0)
    if power_limit_w is not None:
        values = [float(power_limit_w)]
    elif "power_limit_w" in df:
        values = [float(v) for v in sorted(df["power_limit_w"].dropna().unique())]
    else:
        values = []
    limits = pd.DataFrame({"limit_w": values, "label": [f"power limit {v:.0f} W" for v in values]})
    low = pd.DataFrame({"limit_w": [v * LOW_POWER_FRACTION for v in values],
                        "label": [f"{LOW_POWER_FRACTION:.0%} of the limit: below it, busy GPUs are memory-bound"
                                  for _ in values]})
    shade = []
    if windows is not None and not windows.empty:
        w = windows.assign(t=windows["start"] - t0, t2=windows["end"] - t0)
        shade = [alt.Chart(w).mark_rect(opacity=0.12, color="steelblue").encode(x="t:Q", x2="t2:Q", tooltip=["label"])]
    x = alt.X("t:Q", title="seconds")
    power = alt.Chart(df).mark_line().encode(x=x, y=alt.Y("power_w:Q", title="power (W)"), color=alt.Color("gpu:N"),
                                             tooltip=["gpu", alt.Tooltip("t:Q", format=".1f"), "power_w"])
    rule = alt.Chart(limits).mark_rule(color="firebrick", strokeDash=[6, 3]).encode(y="limit_w:Q", tooltip=["label"])
    low_rule = alt.Chart(low).mark_rule(color="gray", strokeDash=[2, 3]).encode(y="limit_w:Q", tooltip=["label"])
    label = alt.Chart(limits).mark_text(align="left", dx=4, dy=-6, color="firebrick").encode(
        y="limit_w:Q", x=alt.value(0), text="label:N")
    panels: list[Any] = [alt.layer(*shade, power, rule, low_rule, label).properties(
        width=600, height=170, title="GPU power (limit dashed)")]
    for col, title in (("util_gpu_pct", "utilization.gpu (%)"), ("mem_used_mib", "memory used (MiB)")):
        if col in df:
            panels.append(alt.layer(*shade, alt.Chart(df).mark_line().encode(
                x=x, y=alt.Y(f"{col}:Q", title=title), color=alt.Color("gpu:N"),
                tooltip=["gpu", alt.Tooltip("t:Q", format=".1f"), col])).properties(width=600, height=120))
    return alt.vconcat(*panels).properties(title="GPUs over the run")
