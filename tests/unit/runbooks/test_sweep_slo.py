"""The sweep's SLO search as the runbook does it: the ladder, then bisection per configuration through
the same measurement (a fake ``measure.sweep_unit`` whose TTFT grows with load), the limit and the best
picked there in result.json (its typed model), the words, and the parameters refused before any host."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest
from pydantic import ValidationError

from workbench.bench.sweep import SweepResult as LoadSweep
from workbench.configsweep import Slo
from workbench.runbooks import measure, sweeppoints
from workbench.runbooks import sweep as sweeprb
from workbench.runbooks.schemas import SweepResult, validate_result

GRID = {"--cuda-graph-max-bs": ["64", "128"]}


def fake_server(knee: dict[int, float], calls: list[tuple[int, list[Any], list[Any]]]):
    """Config i meets TTFT p99 <= 1000 ms up to load ``knee[i]`` (concurrency or req/s), then misses."""

    def sweep_unit(host: Any, port: int, p: Any, labels: dict[str, Any], **_: Any) -> LoadSweep:
        i = labels["config"]
        calls.append((i, list(p.concurrency if not p.request_rate else []), list(p.request_rate)))
        rows = []
        for x in (p.request_rate or p.concurrency):
            for rep in range(p.repeats):
                ttft = 1000.0 * x / knee[i] - rep  # > 1000 past the knee
                rows.append({"config": i, "concurrency": None if p.request_rate else x,
                             "rate": x if p.request_rate else None, "repeat": rep,
                             "output_throughput": 100.0 * x * (1 + i), "ttft_p99_ms": ttft, "tpot_p99_ms": 20.0,
                             "ttft_p50_ms": ttft / 2, "tpot_p50_ms": 10.0 + x / 10})
        return LoadSweep(pd.DataFrame(rows), pd.DataFrame())

    return sweep_unit


def params(**kw: Any) -> sweeprb.SweepParams:
    base = {"host": "gpu-b", "base_unit": "base.service", "grid": GRID, "slo_ttft_p99_ms": 1000.0,
            "repeats": 2, "telemetry": False, "concurrency": [1, 16, 64], "slo_search": True}
    return sweeprb.SweepParams(**{**base, **kw})


def measure_all(monkeypatch, p: sweeprb.SweepParams, knee: dict[int, float]):
    calls: list[tuple[int, list[Any], list[Any]]] = []
    monkeypatch.setattr(measure, "sweep_unit", fake_server(knee, calls))
    slo = Slo(p.slo_ttft_p99_ms, p.slo_tpot_p99_ms)
    tables = sweeppoints.Tables()
    lines: list[str] = []
    rows = []
    for i in range(len(knee)):
        pts, limit = sweeppoints.measure_config(None, 30010, p, i, 8, slo, tables, lines.append)  # type: ignore[arg-type]
        rows.append({"edits": [["--cuda-graph-max-bs", ["64", "128"][i]]], "outcome": "ready", "signature": None,
                     "signature_id": None, "exception_type": None, "phase": "serving", "reason": None,
                     "points": pts, **({"slo_limit": limit} if limit else {})})
    return rows, tables, calls, lines


class _RR:
    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}
        self.tables: dict[str, pd.DataFrame] = {}

    def set(self, **kw: Any) -> None:
        self.fields.update(kw)

    def table(self, name: str, frame: pd.DataFrame) -> None:
        self.tables[name] = frame


def test_each_configuration_is_searched_to_its_limit_and_best_is_picked_there(monkeypatch) -> None:
    p = params(slo_search_points=6)
    rows, frames, calls, lines = measure_all(monkeypatch, p, {0: 23.0, 1: 10.0})
    lim0, lim1 = rows[0]["slo_limit"], rows[1]["slo_limit"]
    assert (lim0["value"], lim0["failing"], lim0["bound"]) == (23, 24, "exact")
    assert (lim1["value"], lim1["failing"], lim1["bound"]) == (10, 11, "exact")
    # the ladder once, then one single-point sweep per probe, each with the repeats
    assert calls[0] == (0, [1, 16, 64], []) and all(len(c[1]) == 1 for c in calls[1:] if c[0] == 0)
    assert [c[1][0] for c in calls if c[0] == 0][1:] == lim0["probes"] == [40, 28, 22, 25, 23, 24]
    pts = rows[0]["points"]
    assert [pt["concurrency"] for pt in pts] == sorted(pt["concurrency"] for pt in pts)
    assert sum(pt.get("search", False) for pt in pts) == 6 and all(pt["repeats"] == 2 for pt in pts)
    assert any("search concurrency=40: missed" in line for line in lines)
    table = frames.frame("results")
    assert table[table["config"] == 0]["search"].sum() == 12  # 6 probes x 2 repeats, marked in the results table
    assert lim1["probes"] == [8, 12, 10, 11]  # config 1 from its own bracket (1 met, 16 missed)

    rr = _RR()
    best = sweeprb._summary(rr, rows, frames, Slo(1000.0, None))  # type: ignore[arg-type]
    # config 1 has twice the tok/s per request but holds only to c=10: 10*200 < 23*100? no: 2000 < 2300
    assert best is not None and best["config"] == 0 and best["concurrency"] == 23
    assert best["slo_limit"]["value"] == 23 and best["edits"] == [["--cuda-graph-max-bs", "64"]]
    words = sweeprb.conclusion(rows, best, Slo(1000.0, None), None)
    assert "at c=23 (its SLO limit, found by the search)" in words
    assert "SLO limits: --cuda-graph-max-bs 64: TTFT p99 <= 1000 ms held up to c=23 and missed at c=24" in words
    result = {"run_id": "x", "runbook": "sweep", "status": "ok", "configs": rows, "conclusion": words,
              **rr.fields}
    typed = validate_result(json.loads(json.dumps(result)))
    assert isinstance(typed, SweepResult) and typed.configs[0].slo_limit is not None
    assert typed.configs[0].slo_limit.bound == "exact"
    frame = sweeprb.limits_frame(result)
    assert list(frame["concurrency"]) == [23, 10] and list(frame["missed at"]) == [24, 11]


def test_a_rate_ladder_is_searched_in_requests_per_second(monkeypatch) -> None:
    p = params(concurrency=[1, 4, 16, 64], request_rate=[1.0, 8.0], slo_search_tolerance=0.1)
    rows, _frames, calls, _ = measure_all(monkeypatch, p, {0: 5.3})
    lim = rows[0]["slo_limit"]
    assert lim["variable"] == "rate" and lim["bound"] == "exact" and lim["value"] <= 5.3 < lim["failing"]
    assert all(c[2] and len(c[2]) == 1 for c in calls[1:])
    assert all(pt["concurrency"] is None for pt in rows[0]["points"])


def test_without_the_search_nothing_changes(monkeypatch) -> None:
    p = params(slo_search=False)
    rows, frames, calls, _ = measure_all(monkeypatch, p, {0: 23.0})
    assert "slo_limit" not in rows[0] and len(calls) == 1 and "search" not in frames.frame("results")
    rr = _RR()
    best = sweeprb._summary(rr, rows, frames, Slo(1000.0, None))  # type: ignore[arg-type]
    assert best is not None and best["concurrency"] == 16 and "slo_limit" not in best


@pytest.mark.parametrize(("kw", "says"), [
    ({"slo_ttft_p99_ms": None}, "needs an SLO"),
    ({"slo_search": False, "slo_search_points": 8}, "set slo_search true"),
    ({"slo_search_tolerance": 0.2}, "applies to a request_rate ladder"),
    ({"slo_search_points": 0}, "greater than or equal to 1"),
    ({"slo_search_points": 17}, "less than or equal to 16"),
])
def test_bad_search_parameters_are_refused_before_any_host(kw, says) -> None:
    with pytest.raises(ValidationError, match=says):
        params(**kw)


def test_the_report_draws_the_sweep_with_the_panels_builders(monkeypatch) -> None:
    p = params(slo_search_points=6)
    rows, tables, _calls, _ = measure_all(monkeypatch, p, {0: 23.0, 1: 10.0})
    result = {"configs": rows, "concurrency": [1, 16, 64]}
    spec = sweeprb.pareto_chart(result).to_dict()
    dots = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "point")
    assert dots["encoding"]["shape"]["field"] == "slo_met"  # the SLO met or not, as the shape
    pts = spec["datasets"][dots["data"]["name"]]
    assert len(pts) == len(rows[0]["points"]) + len(rows[1]["points"])  # the search's points too
    assert {p["edits"] for p in pts} == {"--cuda-graph-max-bs 64", "--cuda-graph-max-bs 128"}
    assert all(p["tok_s_per_gpu"] == pytest.approx(p["output_throughput"] / 8) for p in pts)
    # the CDFs: only the ladder's points, one panel each (the search's points left out)
    frame = tables.frame("results")
    frame = frame.assign(variant="config " + frame["config"].astype(str))
    reqs = frame[["variant", "concurrency"]].assign(ttft_s=0.01, ok=True, phase="measure")
    itl = frame[["variant", "concurrency"]].assign(itl_s=0.02)
    cdfs = sweeprb.cdf_charts({"requests": reqs, "itl": itl}, result)
    assert sorted(cdfs) == ["itl", "ttft"]
    for chart in cdfs.values():
        d = chart.to_dict()
        assert {v["concurrency"] for v in d["datasets"][d["data"]["name"]]} == {1, 16, 64}
