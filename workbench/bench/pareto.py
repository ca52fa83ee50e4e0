"""The Pareto front of serving configurations: tokens/s per user against tokens/s per GPU.

A point (one configuration at one concurrency or rate) is on the front when no other point is at
least as good on both axes and better on one: the trade-off curve between interactivity (how fast
each user's text streams) and cost (how much the fleet serves per GPU). Definitions:

- ``tok_s_per_gpu`` = ``output_throughput`` / number of GPUs serving;
- ``tok_s_per_user`` = 1000 / ``tpot_p50_ms`` (the median request's decode speed, as InferenceMAX
  and ``vllm bench sweep`` plots read "interactivity"), or, with ``per_user="throughput"``,
  ``output_throughput`` / ``concurrency_achieved`` (each request's share, TTFT included).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

PER_USER = ("tpot", "throughput")


def per_gpu_and_user(results: pd.DataFrame, n_gpus: int | pd.Series, *, per_user: str = "tpot") -> pd.DataFrame:
    """``results`` with ``tok_s_per_gpu`` and ``tok_s_per_user`` added (see the module's definitions)."""
    if per_user not in PER_USER:
        raise ValueError(f"per_user must be one of {PER_USER}, not {per_user!r}")
    out = results.copy()
    out["tok_s_per_gpu"] = out["output_throughput"] / n_gpus
    if per_user == "tpot":
        out["tok_s_per_user"] = 1000.0 / out["tpot_p50_ms"]
    else:
        out["tok_s_per_user"] = out["output_throughput"] / out["concurrency_achieved"]
    return out


def pareto_mask(x: pd.Series | np.ndarray | Sequence[float], y: pd.Series | np.ndarray | Sequence[float]) -> np.ndarray:
    """True where (x, y) is not dominated (both maximised); NaN points are never on the front;
    equal points on the front are all on it (neither dominates the other)."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = ~(np.isnan(xs) | np.isnan(ys))
    mask = np.zeros(len(xs), dtype=bool)
    best_y, last = -np.inf, (np.nan, np.nan)
    # sweep by x descending (ties: larger y first); a point is on the front if its y beats every point to its right
    for i in sorted(np.flatnonzero(ok), key=lambda i: (-xs[i], -ys[i])):
        if ys[i] > best_y or (xs[i], ys[i]) == last:
            mask[i] = True
            best_y, last = ys[i], (xs[i], ys[i])
    return mask


def pareto_front(df: pd.DataFrame, x: str = "tok_s_per_user", y: str = "tok_s_per_gpu") -> pd.DataFrame:
    """The rows of ``df`` on the front, ordered by ``x``."""
    return df[pareto_mask(df[x], df[y])].sort_values(x)
