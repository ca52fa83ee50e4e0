"""Benchmark charts: Altair values built from DataFrames, rendered in JupyterLab or offline HTML.

Every function takes DataFrames (a sweep's ``results``, GPU samples, trials) and returns an
``alt.Chart``-like value; nothing is drawn until it is displayed. ``to_offline_html(chart)``
embeds the Vega libraries in the page (no CDN), so a report opens on an air-gapped machine.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import vl_convert as vlc

from workbench.bottleneck import GpuSpec
from workbench.tinterval import mean_interval

_REMOTE_SRC = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


def _mean_ci(df: pd.DataFrame, by: list[str], y: str, level: float = 0.95) -> pd.DataFrame:
    """Mean of ``y`` per group with a Student-t interval over repeats (``level``; NaN bounds for one
    repeat): with 3 repeats the half-width is 4.30 standard errors, not 1.96."""
    g = df.groupby(by, dropna=False)[y]
    out = g.agg(["mean", "std", "count"]).reset_index()
    bounds = [mean_interval(m, s, int(n), level) for m, s, n in zip(out["mean"], out["std"], out["count"], strict=True)]
    out["lo"] = [b[0] for b in bounds]
    out["hi"] = [b[1] for b in bounds]
    return out.rename(columns={"mean": y})


_AXIS = {"concurrency": ("concurrency (requests in flight)", "Throughput vs concurrency"),
         "rate": ("request rate (requests/s offered)", "Throughput vs request rate")}


def throughput_vs_concurrency(results: pd.DataFrame, *, y: str = "output_throughput", color: str = "variant",
                              x: str = "concurrency") -> alt.LayerChart:
    """Mean ``y`` per concurrency (``x="rate"``: per request rate) and variant, with 95% intervals over repeats."""
    df = results.assign(**({color: "run"} if color not in results else {}))
    agg = _mean_ci(df, [x, color], y)
    title, chart_title = _AXIS.get(x, (x, f"Throughput vs {x}"))
    base = alt.Chart(agg).encode(
        x=alt.X(f"{x}:Q", scale=alt.Scale(type="log", base=2), title=title),
        color=alt.Color(f"{color}:N"),
    )
    line = base.mark_line(point=True).encode(y=alt.Y(f"{y}:Q", title=y.replace("_", " ")),
                                             tooltip=[x, color, alt.Tooltip(y, format=".1f"), "count"])
    band = base.mark_errorbar().encode(y=alt.Y("lo:Q", title=y.replace("_", " ")), y2="hi:Q")
    return (band + line).properties(title=chart_title)


def speedup_table(results: pd.DataFrame, baseline: str, *, metric: str = "output_throughput",
                  color: str = "variant", n_boot: int = 2000, seed: int = 0, by: str = "concurrency") -> pd.DataFrame:
    """Speedup = mean(variant) / mean(baseline) per concurrency (``by="rate"``: per request rate), with a
    95% bootstrap interval over repeats (resampling each side's repeats; NaN bounds with a single repeat)."""
    rng = np.random.default_rng(seed)
    rows = []
    for c, at_c in results.groupby(by):
        base = at_c.loc[at_c[color] == baseline, metric].to_numpy(float)
        if base.size == 0:
            continue
        for variant, grp in at_c.groupby(color):
            v = grp[metric].to_numpy(float)
            ratio = v.mean() / base.mean()
            lo = hi = np.nan
            if v.size > 1 and base.size > 1:
                boot = (rng.choice(v, (n_boot, v.size)).mean(1) / rng.choice(base, (n_boot, base.size)).mean(1))
                lo, hi = np.percentile(boot, [2.5, 97.5])
            rows.append({by: c, color: variant, "speedup": ratio, "lo": lo, "hi": hi,
                         "repeats": int(v.size), "baseline": baseline})
    return pd.DataFrame(rows)


def speedup_chart(results: pd.DataFrame, baseline: str, *, metric: str = "output_throughput",
                  color: str = "variant", by: str = "concurrency") -> alt.LayerChart:
    """Speedup of each variant over ``baseline`` per concurrency (or request rate), with bootstrap intervals."""
    table = speedup_table(results, baseline, metric=metric, color=color, by=by)
    base = alt.Chart(table).encode(x=alt.X(f"{by}:O", title=by), xOffset=f"{color}:N",
                                   color=alt.Color(f"{color}:N"))
    bars = base.mark_bar().encode(y=alt.Y("speedup:Q", title=f"{metric.replace('_', ' ')} / {baseline}"),
                                  tooltip=[by, color, alt.Tooltip("speedup", format=".2f"),
                                           alt.Tooltip("lo", format=".2f"), alt.Tooltip("hi", format=".2f"), "repeats"])
    err = base.mark_errorbar(color="black").encode(y="lo:Q", y2="hi:Q")
    one = alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(y="y:Q")
    return (bars + err + one).properties(title=f"Speedup over {baseline}")


def latency_vs_throughput(results: pd.DataFrame, *, metrics: Sequence[str] = ("ttft", "tpot"),
                          percentiles: Sequence[int] = (50, 99), color: str = "variant",
                          x: str = "concurrency") -> alt.Chart:
    """The knee: latency percentiles against output throughput, one point per concurrency (``x="rate"``: rate)."""
    df = results.assign(**({color: "run"} if color not in results else {}))
    cols = [f"{m}_p{q}_ms" for m in metrics for q in percentiles if f"{m}_p{q}_ms" in df]
    long = df.melt(id_vars=[x, color, "output_throughput"], value_vars=cols, var_name="stat", value_name="ms")
    long["metric"] = long["stat"].str.split("_").str[0].str.upper()
    long["percentile"] = long["stat"].str.split("_").str[1]
    long = long.groupby([x, color, "metric", "percentile"], as_index=False)[["output_throughput", "ms"]].mean()
    return alt.Chart(long).mark_line(point=True).encode(
        x=alt.X("output_throughput:Q", title="output tok/s"),
        y=alt.Y("ms:Q", title="latency (ms)"),
        color=alt.Color(f"{color}:N"), strokeDash=alt.StrokeDash("percentile:N"), order=f"{x}:Q",
        tooltip=[x, color, "metric", "percentile", alt.Tooltip("ms", format=".1f"),
                 alt.Tooltip("output_throughput", format=".0f")],
    ).properties(width=260, height=200).facet(column=alt.Column("metric:N", title=None)).resolve_scale(y="independent")


def gpu_timeline(samples: pd.DataFrame, phases: pd.DataFrame | None = None, *, time_col: str = "time_unix") -> alt.VConcatChart:
    """Power (with the limit) and utilization per GPU over time, benchmark phases shaded.

    ``phases``: columns ``phase``, ``start``, ``end`` (same clock as ``time_col``).
    """
    t0 = float(samples[time_col].min())
    df = samples.assign(t=samples[time_col] - t0)
    panels = []
    for y, title in (("power_w", "power (W)"), ("util_gpu_pct", "utilization.gpu (%)")):
        layers: list[Any] = []
        if phases is not None and not phases.empty:
            ph = phases.assign(t=phases["start"] - t0, t2=phases["end"] - t0)
            layers.append(alt.Chart(ph).mark_rect(opacity=0.15).encode(
                x="t:Q", x2="t2:Q", color=alt.Color("phase:N", title="phase"), tooltip=["phase"]))
        layers.append(alt.Chart(df).mark_line().encode(
            x=alt.X("t:Q", title="seconds"), y=alt.Y(f"{y}:Q", title=title), detail="gpu:N",
            tooltip=["gpu", alt.Tooltip("t", format=".2f"), alt.Tooltip(y, format=".1f")]))
        if y == "power_w" and "power_limit_w" in df:
            layers.append(alt.Chart(df).mark_line(strokeDash=[4, 4], color="gray").encode(x="t:Q", y="power_limit_w:Q"))
        panels.append(alt.layer(*layers).properties(width=600, height=160))
    return alt.vconcat(*panels).properties(title="GPU power and utilization")


GPU_PANELS: tuple[tuple[str, str, str | None], ...] = (
    # (column, title, the column drawn as a rule: the ceiling the value is read against)
    ("power_w", "power (W)", "power_limit_w"),
    ("util_gpu_pct", "utilization.gpu (%)", None),
    ("mem_used_mib", "memory used (MiB)", "mem_total_mib"),
    ("clock_sm_mhz", "SM clock (MHz)", None),
    ("clock_mem_mhz", "memory clock (MHz)", None),
)


def gpu_dashboard(samples: pd.DataFrame, *, time_col: str = "time_unix", last_s: float | None = None,
                  width: int = 560, height: int = 110) -> alt.VConcatChart:
    """Per GPU over time: power with the power limit as a rule ("360 W of 1,100 W" at a glance),
    utilization, memory used with the total as a rule, SM and memory clocks; ``last_s`` keeps
    only the last seconds (a live view)."""
    df = samples.dropna(subset=[time_col])
    if last_s is not None and not df.empty:
        df = df[df[time_col] >= float(df[time_col].max()) - last_s]
    t0 = float(df[time_col].min()) if not df.empty else 0.0
    df = df.assign(t=df[time_col] - t0, gpu=df["gpu"].astype(str) if "gpu" in df else "0")
    panels = []
    for col, title, ceiling in GPU_PANELS:
        if col not in df:
            continue
        line = alt.Chart(df).mark_line().encode(
            x=alt.X("t:Q", title="seconds"), y=alt.Y(f"{col}:Q", title=title),
            color=alt.Color("gpu:N", title="GPU"),
            tooltip=["gpu", alt.Tooltip("t", format=".1f"), alt.Tooltip(col, format=".0f")])
        layers: list[Any] = [line]
        if ceiling and ceiling in df and df[ceiling].notna().any():
            rule = pd.DataFrame({"value": [float(df[ceiling].max())], "label": [f"{ceiling.split('_')[0]} "
                                 f"{'limit' if ceiling == 'power_limit_w' else 'total'} {df[ceiling].max():.0f}"]})
            layers.append(alt.Chart(rule).mark_rule(strokeDash=[4, 4], color="gray").encode(
                y="value:Q", tooltip=["label"]))
            layers.append(alt.Chart(rule).mark_text(align="left", dx=4, dy=-6, color="gray").encode(
                y="value:Q", text="label:N", x=alt.value(0)))
        panels.append(alt.layer(*layers).properties(width=width, height=height))
    return alt.vconcat(*panels).properties(title="GPUs")


def roofline_chart(analyzed: pd.DataFrame, gpu: GpuSpec, n_gpus: int, *, dtype: str = "bf16",
                   color: str = "variant") -> alt.LayerChart:
    """Achieved FLOP/s against arithmetic intensity under the bandwidth and compute roofs.

    ``analyzed``: the output of ``bottleneck.analyze_results`` (``roof_*`` columns).
    """
    bw, peak = gpu.hbm_bytes_per_s * n_gpus, gpu.peak_flops[dtype] * n_gpus
    lo = max(min(float(analyzed["roof_intensity"].min()) / 4, 0.1), 1e-3)
    xs = np.geomspace(lo, max(peak / bw * 8, float(analyzed["roof_intensity"].max()) * 4), 60)
    roof = pd.DataFrame({"intensity": xs, "tflops": np.minimum(peak, xs * bw) / 1e12})
    pts = analyzed.assign(intensity=analyzed["roof_intensity"],
                          tflops=analyzed["roof_flops_per_step"] * analyzed["roof_steps_per_s"] / 1e12,
                          **({color: "run"} if color not in analyzed else {}))
    x = alt.X("intensity:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (FLOP/byte)")
    y = alt.Y("tflops:Q", scale=alt.Scale(type="log"), title="TFLOP/s (all GPUs)")
    line = alt.Chart(roof).mark_line(color="black").encode(x=x, y=y)
    dots = alt.Chart(pts).mark_point(filled=True, size=80).encode(
        x=x, y=y, color=alt.Color(f"{color}:N"), shape=alt.Shape("roof_label:N", title="bound"),
        tooltip=["concurrency", color, "roof_label", alt.Tooltip("roof_bw_fraction", format=".1%"),
                 alt.Tooltip("roof_headroom", format=".1f"), "roof_evidence"])
    return (line + dots).properties(title=f"Roofline: {n_gpus} x {gpu.name} ({dtype})", width=520, height=320)


def trial_timeline(trials: pd.DataFrame, phases: pd.DataFrame | None = None) -> alt.LayerChart:
    """One bar per trial start, coloured by phase, with the outcome marked at its end.

    ``trials``: ``trial``, ``start``, ``end``, ``outcome``; ``phases`` (optional): ``trial``,
    ``phase``, ``start``, ``end``. Without phases each trial is one bar coloured by outcome.
    """
    t0 = float(trials["start"].min())
    tr = trials.assign(s=trials["start"] - t0, e=trials["end"] - t0)
    # labelLimit 0: the whole edit list of each trial, never cut to "--ep-size 8, --enable-nc…"
    y = alt.Y("trial:N", sort=alt.EncodingSortField("s", order="ascending"), title=None,
              axis=alt.Axis(labelLimit=0))
    if phases is not None and not phases.empty:
        seg = phases.assign(s=phases["start"] - t0, e=phases["end"] - t0)
        bars = alt.Chart(seg).mark_bar().encode(x=alt.X("s:Q", title="seconds"), x2="e:Q", y=y,
                                                color=alt.Color("phase:N"), tooltip=["trial", "phase", "s", "e"])
        marks = alt.Chart(tr).mark_point(filled=True, size=90, shape="diamond").encode(
            x="e:Q", y=y, fill=alt.Fill("outcome:N"), stroke=alt.value("black"), tooltip=["trial", "outcome"])
        return (bars + marks).resolve_scale(color="independent").properties(title="Trials")
    return alt.Chart(tr).mark_bar().encode(x=alt.X("s:Q", title="seconds"), x2="e:Q", y=y, color="outcome:N",
                                           tooltip=["trial", "outcome", "s", "e"]).properties(title="Trials")


SERVER_PANELS: tuple[tuple[str, str], ...] = (
    ("running", "running requests"), ("queued", "queued requests"), ("kv_cache_usage", "KV cache used (fraction)"),
    ("generation_tok_s", "generated tok/s (server)"), ("spec_accept_length", "spec accept length"),
)


def server_series_chart(frame: pd.DataFrame, *, time_col: str = "time_unix", color: str | None = None,
                        width: int = 600, height: int = 90) -> alt.VConcatChart | None:
    """The server's own view over the run (``workbench.servermetrics``): one panel per series it
    exports, seconds from the first poll; ``color`` splits by a column (``arm``, ``variant``)."""
    if frame.empty or time_col not in frame:
        return None
    df = frame.assign(t=frame[time_col] - float(frame[time_col].min()))
    panels = []
    for col, title in SERVER_PANELS:
        if col not in df or df[col].isna().all():
            continue
        enc: dict[str, Any] = {"x": alt.X("t:Q", title="seconds"), "y": alt.Y(f"{col}:Q", title=title),
                               "tooltip": [alt.Tooltip("t:Q", format=".1f"), alt.Tooltip(f"{col}:Q", format=".3g")]}
        if color and color in df:
            enc["color"] = alt.Color(f"{color}:N")
        panels.append(alt.Chart(df.dropna(subset=[col])).mark_line(interpolate="step-after").encode(**enc)
                      .properties(width=width, height=height))
    return alt.vconcat(*panels).properties(title="Server /metrics over the run") if panels else None


def to_offline_html(chart: alt.TopLevelMixin) -> str:
    """A self-contained HTML page of ``chart`` with the Vega libraries inlined (no network)."""
    html = vlc.vegalite_to_html(chart.to_dict(), vl_version=alt.SCHEMA_VERSION.lstrip("v").rsplit(".", 1)[0], bundle=True)
    check_offline(html)
    return html


def check_offline(html: str) -> None:
    """Raise ``ValueError`` if the page loads a script, style, image or frame from the network."""
    match = _REMOTE_SRC.search(html)
    if match:
        raise ValueError(f"HTML loads a remote resource: {match.group(0)[:120]}")
