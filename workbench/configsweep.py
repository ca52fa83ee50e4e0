"""A configuration sweep as data (pure; no I/O): the grid, the Pareto front, the best under SLOs.

* :func:`expand_grid` — flag → list of values into configurations (edits), every flag set
  explicitly in every configuration (``true`` adds a boolean flag, ``false``/``null`` removes
  it, anything else is the flag's value);
* :func:`holds_culprit` — whether a configuration contains a culprit a bisect found (then it is
  skipped, with the culprit as the reason);
* :func:`pareto_front` — the points no other point beats on both tok/s per user (interactivity)
  and tok/s per GPU (cost), the two axes of ``vllm bench sweep``'s and InferenceMAX's plots;
* :func:`best_under_slo` — the highest total throughput among points whose p99 TTFT and TPOT
  meet the SLOs, with a Student-t 95% interval over the repeats.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.bench.pareto import pareto_mask
from workbench.errors import ConfigError
from workbench.tinterval import mean_interval, t_quantile
from workbench.variants import EditValue, normalize_edits

MAX_CONFIGS = 64


Config = tuple[tuple[str, EditValue], ...]


def _value(flag: str, v: Any) -> EditValue:
    if v is True or (isinstance(v, str) and v.lower() == "true"):
        return True
    if v is False or v is None or (isinstance(v, str) and v.lower() in ("false", "null", "none")):
        return None
    if isinstance(v, int | float) and not isinstance(v, bool):
        return str(v)
    if isinstance(v, str):
        return v
    raise ConfigError(f"grid value for {flag}: {v!r} is not a string, number or boolean")


def expand_grid(grid: Mapping[str, Sequence[Any]]) -> list[Config]:
    """Every combination of the grid's values, flags in the grid's order."""
    if not grid:
        raise ConfigError("the grid is empty: give at least one flag with its values")
    axes = []
    for flag, values in grid.items():
        if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
            raise ConfigError(f"grid {flag}: give a non-empty list of values")
        vals = [_value(flag, v) for v in values]
        if len(set(map(repr, vals))) != len(vals):
            raise ConfigError(f"grid {flag}: a value is listed twice ({list(values)})")
        normalize_edits([(flag, vals[0])])  # the flag itself is checked here
        axes.append([(flag, v) for v in vals])
    configs = [tuple(c) for c in itertools.product(*axes)]
    if len(configs) > MAX_CONFIGS:
        raise ConfigError(f"the grid gives {len(configs)} configurations (at most {MAX_CONFIGS}); narrow it")
    return configs


def holds_culprit(config: Config, culprits: Sequence[Sequence[tuple[str, EditValue]]]) -> list[tuple[str, EditValue]] | None:
    """The first culprit whose every edit is in ``config`` (a removal matches a removal)."""
    have = {(f, repr(v)) for f, v in config}
    for c in culprits:
        if c and all((f, repr(v)) in have for f, v in c):
            return list(c)
    return None


def t95(n: int) -> float:
    """The two-sided 95% t quantile for ``n`` repeats (``n - 1`` degrees of freedom)."""
    return t_quantile(0.975, n - 1) if n >= 2 else math.nan


def mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and its 95% t-interval (NaN bounds for a single value)."""
    xs = [float(x) for x in values if x == x]
    if not xs:
        return math.nan, math.nan, math.nan
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else math.nan
    return (m, *mean_interval(m, sd, len(xs)))


def pareto_front(points: Sequence[Mapping[str, Any]], x: str = "tok_s_per_user", y: str = "tok_s_per_gpu") -> list[int]:
    """Indices of the points not dominated on (``x``, ``y``), both to maximise, by ``x``
    (:func:`workbench.bench.pareto.pareto_mask`: one front for the sweep and the benchmarks)."""
    nan = math.nan
    mask = pareto_mask([float(p[x]) if _num(p.get(x)) else nan for p in points],
                       [float(p[y]) if _num(p.get(y)) else nan for p in points])
    return sorted((i for i in range(len(points)) if mask[i]), key=lambda i: points[i][x])


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and v == v


@dataclass(frozen=True)
class Slo:
    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None

    def met(self, p: Mapping[str, Any]) -> tuple[bool, str]:
        for key, bound in (("ttft_p99_ms", self.ttft_p99_ms), ("tpot_p99_ms", self.tpot_p99_ms)):
            if bound is None:
                continue
            v = p.get(key)
            if not isinstance(v, int | float) or isinstance(v, bool) or v != v:
                return False, f"{key} not measured"
            if v > bound:
                return False, f"{key} {v:.1f} > {bound:g}"
        return True, ""

    def words(self) -> str:
        parts = [f"TTFT p99 <= {self.ttft_p99_ms:g} ms" if self.ttft_p99_ms is not None else "",
                 f"TPOT p99 <= {self.tpot_p99_ms:g} ms" if self.tpot_p99_ms is not None else ""]
        return " and ".join(p for p in parts if p) or "no SLO"


def best_under_slo(points: Sequence[Mapping[str, Any]], slo: Slo) -> int | None:
    """Index of the point with the highest ``output_tok_s`` among those meeting ``slo``."""
    fit = [i for i, p in enumerate(points) if slo.met(p)[0] and _num(p.get("output_tok_s"))]
    return max(fit, key=lambda i: points[i]["output_tok_s"]) if fit else None
