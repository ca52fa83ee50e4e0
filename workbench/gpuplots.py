"""Charts of GPU samples (``nvidia-smi`` through :mod:`workbench.telemetry`): charts are values.

:func:`gpu_panels` draws, per GPU over time, the four readings an engineer looks at when a
server is slower than it should be — power against the power limit (the seeds' "360 W of
1,100 W"), utilisation, memory used against the total, SM and memory clocks — with the limits
as rules, so a power-starved or memory-full GPU shows at a glance.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

PANELS = (
    ("power_w", "power (W)", "power_limit_w"),
    ("util_gpu_pct", "utilization.gpu (%)", None),
    ("mem_used_mib", "memory used (MiB)", "mem_total_mib"),
    ("clock_sm_mhz", "SM clock (MHz)", None),
    ("clock_mem_mhz", "memory clock (MHz)", None),
)


def gpu_panels(samples: pd.DataFrame, *, time_col: str = "time_unix", width: int = 560) -> Any:
    """One panel per reading present in ``samples``; the limit of a reading as a dashed rule."""
    if samples.empty or time_col not in samples:
        raise ValueError("no GPU samples to draw")
    t0 = float(samples[time_col].min())
    df = samples.assign(t=samples[time_col] - t0, gpu=samples["gpu"].astype(int).astype(str))
    panels = []
    for col, title, limit in PANELS:
        if col not in df or not df[col].notna().any():
            continue
        layers: list[Any] = [alt.Chart(df).mark_line().encode(
            x=alt.X("t:Q", title="seconds"), y=alt.Y(f"{col}:Q", title=title),
            color=alt.Color("gpu:N", title="GPU"),
            tooltip=["gpu", alt.Tooltip("t:Q", format=".1f"), alt.Tooltip(f"{col}:Q", format=".0f")])]
        if limit and limit in df and df[limit].notna().any():
            lim = df.groupby("gpu", as_index=False)[limit].max()
            layers.append(alt.Chart(lim).mark_rule(strokeDash=[5, 4], color="gray").encode(
                y=f"{limit}:Q", tooltip=["gpu", alt.Tooltip(f"{limit}:Q", title="limit")]))
        panels.append(alt.layer(*layers).properties(width=width, height=120, title=title))
    return alt.vconcat(*panels).properties(title="GPUs")


def gpu_summary(samples: pd.DataFrame) -> pd.DataFrame:
    """Latest reading per GPU, with power as a share of its limit (the panel's table)."""
    if samples.empty:
        return pd.DataFrame()
    last = samples.sort_values("time_unix").groupby("gpu").tail(1).sort_values("gpu")
    cols = [c for c in ("gpu", "power_w", "power_limit_w", "util_gpu_pct", "mem_used_mib", "mem_total_mib",
                        "clock_sm_mhz", "clock_mem_mhz") if c in last]
    out = last[cols].reset_index(drop=True)
    if "power_w" in out and "power_limit_w" in out:
        out["power_frac"] = (out["power_w"] / out["power_limit_w"]).round(3)
    return out
