"""The A/B verdict: speedup of B over A per concurrency with a bootstrap interval, and the words.

Pure: a results table (one row per arm, concurrency and repeat) in, rows and sentences out.
Speedup = mean B / mean A of ``metric`` with a 95% percentile-bootstrap interval over the repeats
(:func:`workbench.plots.speedup_table`).  **better** when the interval lies above 1, **worse**
below, else **no significant difference**; *undetermined* without an interval (one repeat).
Overall: better (or worse) when some concurrency is and none goes the other way, *mixed* when
both happen.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from workbench import plots
from workbench.trials import failure_words
from workbench.variants import describe_edits

CONFIDENCE = 0.95  # plots.speedup_table's percentile interval (2.5 %, 97.5 %)
METRIC = "output_throughput"
FEW_REPEATS = 5  # below this, say that the interval is optimistic



def verdict_of(lo: float | None, hi: float | None) -> str:
    """``better`` if the interval lies above 1, ``worse`` below, else no significant difference."""
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return "undetermined"
    if lo > 1.0:
        return "better"
    if hi < 1.0:
        return "worse"
    return "no significant difference"


def overall_verdict(verdicts: list[str]) -> str:
    better, worse = "better" in verdicts, "worse" in verdicts
    if better and worse:
        return "mixed"
    if better or worse:
        return "better" if better else "worse"
    if verdicts and all(v == "undetermined" for v in verdicts):
        return "undetermined"
    return "no significant difference"


def speedups(results: pd.DataFrame, *, metric: str = METRIC, n_boot: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """B over A per concurrency (per ``rate`` for a request-rate ladder), with the bootstrap interval and
    the verdict (arm column ``arm``)."""
    if results.empty or not {"A", "B"} <= set(results["arm"]):
        return []
    by = "rate" if "rate" in results and results["rate"].notna().any() else "concurrency"
    table = plots.speedup_table(results, "A", metric=metric, color="arm", n_boot=n_boot, seed=seed, by=by)
    rows = []
    for _, r in table[table["arm"] == "B"].sort_values(by).iterrows():
        lo, hi = (None if pd.isna(r["lo"]) else round(float(r["lo"]), 4)), (None if pd.isna(r["hi"]) else round(float(r["hi"]), 4))
        point = {"rate": float(r["rate"])} if by == "rate" else {"concurrency": int(r["concurrency"])}
        rows.append({**point, "speedup": round(float(r["speedup"]), 4), "lo": lo, "hi": hi,
                     "repeats": int(r["repeats"]), "verdict": verdict_of(lo, hi)})
    return rows


def point_words(row: dict[str, Any]) -> str:
    """``c=4`` or ``rate=2/s``: which point of the ladder a row is."""
    return f"rate={row['rate']:g}/s" if row.get("rate") is not None else f"c={row['concurrency']}"


def _interval(row: dict[str, Any]) -> str:
    if row["lo"] is None:
        return f"{row['speedup']:.3f}x (no interval)"
    return f"{row['speedup']:.3f}x [{row['lo']:.3f}, {row['hi']:.3f}]"


def conclusion(base: str, edits: list[tuple[str, Any]], rows: list[dict[str, Any]], verdict: str | None, *,
               b_failure: dict[str, Any] | None = None, confidence: float = CONFIDENCE) -> str:
    what = f"{base} + {describe_edits(edits)}"
    if b_failure is not None:
        return (f"B ({what}) does not start: {failure_words(b_failure.get('exception_type'), b_failure.get('message'))}"
                f" during {b_failure.get('phase')}.")
    if not rows:
        return "Nothing to compare: no point of the ladder was measured on both arms."
    per = "; ".join(f"{point_words(r)}: {_interval(r)} {r['verdict']}" for r in rows)
    reps = min(r["repeats"] for r in rows)
    words = (f"B ({describe_edits(edits)}) vs A ({base}), output tok/s B/A with {confidence:.0%} bootstrap "
             f"intervals over {reps}+ repeats per arm — {per}. Overall: {verdict}.")
    if reps < FEW_REPEATS:
        words += (f" (With {reps} repeats a bootstrap interval understates the spread: repeat before acting on a "
                  "difference of a few percent.)")
    return words


def split_repeats(repeats: int, n_hosts: int) -> list[tuple[int, int]]:
    """(repeats, first repeat index) per host: ``repeats`` spread as evenly as possible."""
    out, offset = [], 0
    for i in range(n_hosts):
        k = repeats // n_hosts + (1 if i < repeats % n_hosts else 0)
        out.append((k, offset))
        offset += k
    return out

