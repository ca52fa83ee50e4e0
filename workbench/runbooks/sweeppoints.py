"""One configuration of a sweep measured: the ladder's points, its SLO limit, the run tables.

:func:`measure_config` sweeps a running configuration's server (:func:`workbench.runbooks.measure.sweep_unit`)
over the ladder and, with ``slo_search``, bisects for its SLO limit (:mod:`workbench.slosearch`: the
oracle is one more single-point sweep with the repeats); :class:`Tables` gathers what was measured
for the report and the panel. Used by the sweep runbook on a host and on a Slurm cluster alike.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from workbench.bench import charts
from workbench.bench.sweep import SweepResult as LoadSweep
from workbench.configsweep import Slo, mean_ci
from workbench.hosts import Host
from workbench.runbooks import measure
from workbench.runbooks.skeleton import RunbookRun
from workbench.slosearch import SloLimit, search

if TYPE_CHECKING:
    from workbench.runbooks.sweep import SweepParams


def points(results: pd.DataFrame, gpus: int, slo: Slo, ladder: str = "concurrency") -> list[dict[str, Any]]:
    """Per point of the ladder (``concurrency``, or ``rate``: then ``concurrency`` is the cap, null if none)."""
    pts = []
    for key, g in results.groupby(ladder, sort=True):
        tok, lo, hi = mean_ci(g["output_throughput"].astype(float).tolist())
        cap = g["concurrency"].iloc[0] if "concurrency" in g else None
        point: dict[str, Any] = {"concurrency": int(str(key))} if ladder == "concurrency" else \
            {"concurrency": None if cap is None or cap != cap else int(cap), "rate": float(str(key))}
        row: dict[str, Any] = {**point, "repeats": len(g), "output_tok_s": round(tok, 2),
                               "output_tok_s_lo": round(lo, 2), "output_tok_s_hi": round(hi, 2), "gpus": gpus}
        for col in ("ttft_p99_ms", "tpot_p99_ms", "ttft_p50_ms", "tpot_p50_ms"):
            if col in g and g[col].notna().any():
                row[col] = round(float(g[col].astype(float).max() if col.endswith("p99_ms") else g[col].mean()), 3)
        for col in ("input_throughput", "total_token_throughput", "goodput_rps", "good_fraction"):
            if col in g and g[col].notna().any():
                row[col] = round(float(g[col].astype(float).mean()), 4)
        tpot = row.get("tpot_p50_ms")
        row["tok_s_per_user"] = round(1000.0 / tpot, 2) if tpot else None
        row["tok_s_per_gpu"] = round(tok / gpus, 2) if gpus else None
        row["slo_met"], why = slo.met(row)
        if why:
            row["slo_miss"] = why
        pts.append(row)
    return pts


class Tables:
    """The sweep's run tables as they grow (safe from several threads): ``results`` (one row per
    point and repeat, with the configuration's ``gpus`` and, with the search, ``search``),
    ``requests`` (one row per request) and ``itl`` (one row per chunk gap), for the report's
    charts and the panel's live ones (:func:`workbench.bench.charts.load_charts`)."""

    NAMES = ("results", "requests", "itl")

    def __init__(self) -> None:
        self.frames: dict[str, list[pd.DataFrame]] = {n: [] for n in self.NAMES}
        self._lock = threading.Lock()

    def add(self, out: LoadSweep, ladder: str, **columns: Any) -> None:
        itl = charts.itl_frame(out.records, by=("variant", ladder))
        with self._lock:
            for name, frame in (("results", out.results), ("requests", out.requests), ("itl", itl)):
                if not frame.empty:
                    self.frames[name].append(frame.assign(**columns) if name == "results" else frame)

    def frame(self, name: str) -> pd.DataFrame:
        with self._lock:
            parts = list(self.frames[name])
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()

    def save(self, rr: RunbookRun) -> None:
        """Write them into the run directory (again after each configuration: the panel reads them live)."""
        for name in self.NAMES:
            rr.table(name, self.frame(name))


def measure_config(host: Host, port: int, params: SweepParams, i: int, gpus: int, slo: Slo, tables: Tables,
                   tell: Callable[[str], None], *, stop: threading.Event | None = None
                   ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Sweep configuration ``i``'s server on ``host:port``: the ladder's points, then (``slo_search``)
    the search for its SLO limit; everything measured goes into ``tables``. Its points (search
    points marked ``search``) and its ``slo_limit`` (None without the search). ``stop``: see
    :func:`workbench.runbooks.measure.sweep_unit`."""
    labels = {"variant": f"config {i}", "config": i}
    ladder = params.ladder
    out = measure.sweep_unit(host, port, params, labels, stop=stop)
    tables.add(out, ladder, gpus=gpus, **({"search": False} if params.slo_search else {}))
    pts = points(out.results, gpus, slo, ladder)
    if not params.slo_search:
        return pts, None

    def probe(value: float) -> bool:
        one = params.model_copy(update={"request_rate": [float(value)]} if ladder == "rate"
                                else {"concurrency": [int(value)]})
        got = measure.sweep_unit(host, port, one, labels, stop=stop)
        tables.add(got, ladder, gpus=gpus, search=True)
        new = [{**p, "search": True} for p in points(got.results, gpus, slo, ladder)]
        pts.extend(new)
        met = bool(new) and all(p["slo_met"] for p in new)
        tell(f"    search {ladder}={value:g}: {'met' if met else 'missed'} {slo.words()}")
        return met

    limit = search({float(p[ladder]): bool(p["slo_met"]) for p in pts}, probe, variable=ladder,  # type: ignore[arg-type]
                   max_points=params.slo_search_points,
                   tolerance=params.slo_search_tolerance if ladder == "rate" else 0.0)
    pts.sort(key=lambda p: float(p[ladder]))
    return pts, limit_record(limit, pts, slo)


def limit_record(limit: SloLimit, pts: list[dict[str, Any]], slo: Slo) -> dict[str, Any]:
    """The result's ``slo_limit`` of one configuration: the limit, its bound, the probes, the point there."""
    at = next((p for p in pts if limit.passing is not None and float(p[limit.variable]) == limit.passing), None)
    as_value: Callable[[float | None], float | int | None] = (
        (lambda v: None if v is None else int(v)) if limit.variable == "concurrency" else (lambda v: v))
    return {"variable": limit.variable, "value": as_value(limit.passing), "failing": as_value(limit.failing),
            "bound": limit.bound, "probes": [as_value(v) for v in limit.probes],
            "output_tok_s": at["output_tok_s"] if at else None, "words": limit.words(slo.words())}
