"""The sweep runbook: which configuration serves best under the SLOs — crash-aware, host restored.

``run(params)`` expands the grid (:func:`workbench.configsweep.expand_grid`), and in one host
session (locked, recorded, restored) starts each configuration as a variant of the base unit
(:meth:`HostSession.serve_variant`), sweeps the concurrency ladder (or the ``request_rate`` ladder) with repeats
(:func:`workbench.runbooks.measure.sweep_unit`: load from the host, GPU telemetry), and stops it.
A configuration that does not start is recorded with its signature and phase and the sweep
goes on; a configuration that holds a culprit an earlier bisect of this base found (the
ledger of the data dir) is skipped with that culprit as the reason.

With ``slo_search`` each configuration that serves is then searched for its SLO limit — the
highest concurrency (or request rate) that still meets the SLOs, vLLM's ``serve_sla`` question:
bisection between the highest ladder point that met them and the lowest that missed, each point
measured with the repeats, at most ``slo_search_points`` points (:mod:`workbench.slosearch`).
``best`` is then picked among the limits: the configuration with the highest throughput at the
highest load it holds its SLOs at.

``result.json``::

    {"runbook": "sweep", "status": "ok"|"failed", "host": str, "base_unit": str, "grid": {flag: [values]},
     "slo": {"ttft_p99_ms": float|null, "tpot_p99_ms": float|null},
     "configs": [{"edits": [[flag, value]], "outcome": "ready"|"failed"|"timeout"|"skipped",
                  "signature": str|null (readable), "signature_id": str|null, "exception_type": str|null, "phase": str|null, "reason": str|null,
                  "points": [{"concurrency": int|null, "rate": float (rate ladder only), "repeats": int,
                              "output_tok_s": float,
                              "output_tok_s_lo": float, "output_tok_s_hi": float, "ttft_p99_ms": float,
                              "tpot_p99_ms": float, "tok_s_per_user": float, "tok_s_per_gpu": float,
                              "gpus": int, "slo_met": bool, "search": bool (slo_search's points)}],
                  "slo_limit": {"variable": "concurrency"|"rate", "value": number|null, "failing": number|null,
                                "bound": "exact"|"within"|"at_least"|"none", "probes": [number],
                                "output_tok_s": float|null, "words": str} (slo_search only)}],
     "pareto": [{"config": int, "concurrency": int|null, "rate": float (rate ladder), "tok_s_per_user": float,
                 "tok_s_per_gpu": float}],
     "best": {"config": int, "edits": [...], "concurrency": int, "output_tok_s": float,
              "output_tok_s_lo": float, "output_tok_s_hi": float, "slo_limit": {...} (slo_search), ...}|null,
     "server_starts": int, "host_restored": bool, "conclusion": str, "failure": {...}|null, ...}
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import Field, field_validator, model_validator

from workbench.bench import charts
from workbench.configsweep import (
    Slo,
    best_under_slo,
    expand_grid,
    holds_culprit,
    pareto_front,
)
from workbench.errors import HostError, LockHeld
from workbench.hosts import Host
from workbench.provenance import collect as collect_provenance
from workbench.runbooks import measure
from workbench.runbooks.abverdict import point_words
from workbench.runbooks.params import RunbookParams
from workbench.runbooks.schemas import SweepResult
from workbench.runbooks.skeleton import RunbookRun
from workbench.runbooks.sweeppoints import Tables, measure_config
from workbench.runs import Run
from workbench.services import exec_argv
from workbench.session import HostSession
from workbench.trials import judge_failure
from workbench.variants import describe_edits


class _Target(RunbookParams):
    host: str = Field(min_length=1, description="ssh_config alias of the GPU host")
    base_unit: str = Field(min_length=1, description="the working unit every configuration varies")
    grid: dict[str, list[str | int | float | bool | None]] = Field(
        description='flag -> values to try, e.g. {"--cuda-graph-max-bs": ["64","128"], "--enable-nccl-nvls": [false, true]}')
    slo_ttft_p99_ms: float | None = Field(None, gt=0, description="SLO: p99 time to first token (ms); null: none")
    slo_tpot_p99_ms: float | None = Field(None, gt=0, description="SLO: p99 time per output token (ms); null: none")
    slo_search: bool = Field(False, description="per configuration, bisect between the highest point that met the SLOs "
                                                "and the lowest that missed for the highest concurrency (or request "
                                                "rate) that still meets them (vLLM's serve_sla); best is picked there")
    slo_search_points: int = Field(4, ge=1, le=16, description="with slo_search: search points per configuration, at "
                                                               "most (each measured `repeats` times)")
    slo_search_tolerance: float = Field(0.05, gt=0, lt=1, description="with slo_search on a request_rate ladder: stop "
                                                                      "when the gap is at most this fraction of the "
                                                                      "rate that missed (concurrency: a gap of 1)")
    skip_known_culprits: bool = Field(True, description="skip configurations that hold a culprit an earlier bisect found")
    health_path: str = Field("/health", description="readiness endpoint of the server")
    start_timeout: float = Field(900.0, gt=0, description="seconds a configuration may take to become ready")
    lock_wait: float = Field(0.0, ge=0, description="seconds to wait while another session holds the host")
    # Slurm (host slurm:NAME: base_unit is a job script, each configuration a job; workbench.slurm.sweep)
    max_parallel: int = Field(1, ge=1, le=64, description="slurm: configuration jobs in flight (measured at once)")
    partition: str = Field("", description="slurm: sbatch --partition (empty: the cluster's default)")
    account: str = Field("", description="slurm: sbatch --account (empty: none)")
    qos: str = Field("", description="slurm: sbatch --qos (empty: none)")

    @field_validator("grid")
    @classmethod
    def _grid(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        expand_grid(v)  # raises a ConfigError (a ValueError) naming what is wrong
        return v


class SweepParams(measure.LoadParams, _Target):
    """The base, the grid and the SLOs first, then the load shape."""

    @model_validator(mode="after")
    def _search(self) -> SweepParams:
        changed = [k for k in ("slo_search_points", "slo_search_tolerance")
                   if getattr(self, k) != type(self).model_fields[k].default]
        if not self.slo_search and changed:
            raise ValueError(f"{', '.join(changed)} shape(s) the SLO search: set slo_search true, or leave them")
        if self.slo_search and self.slo_ttft_p99_ms is None and self.slo_tpot_p99_ms is None:
            raise ValueError("slo_search needs an SLO to search against: give slo_ttft_p99_ms and/or slo_tpot_p99_ms")
        if self.slo_search and not self.request_rate and "slo_search_tolerance" in changed:
            raise ValueError("slo_search_tolerance applies to a request_rate ladder; a concurrency is searched to a "
                             "gap of 1")
        return self


def known_culprits(data_dir: str | Path, host: str, base_unit: str) -> list[list[tuple[str, Any]]]:
    """Culprits of finished bisect runs of ``base_unit`` on ``host`` in the data dir's runs."""
    out: list[list[tuple[str, Any]]] = []
    for path in sorted(Path(data_dir, "runs").glob("*/result.json")):
        try:
            res = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if res.get("runbook") != "bisect" or res.get("status") != "ok":
            continue
        if res.get("base_unit") != base_unit or res.get("host") != host:
            continue
        for c in res.get("culprits") or []:
            out.append([(str(f), v) for f, v in c.get("edits") or []])
    return out


def run(params: SweepParams, *, progress: Callable[[str], None] = print) -> tuple[Run, dict[str, Any]]:
    """Sweep ``params.grid`` over ``params.base_unit`` on ``params.host``; returns the run and its result."""
    if params.host.startswith("slurm:"):  # each configuration a job on a Slurm cluster
        from workbench.slurm.sweep import sweep_run

        return sweep_run(params, progress=progress)
    configs = expand_grid(params.grid)
    slo = Slo(params.slo_ttft_p99_ms, params.slo_tpot_p99_ms)
    kinds = ((LockHeld, "host_locked"), (HostError, "ssh_lost"))
    with RunbookRun("sweep", params, SweepResult, kinds=kinds, progress=progress) as rr:
        culprits = known_culprits(params.data_dir, params.host, params.base_unit) if params.skip_known_culprits else []
        rows: list[dict[str, Any]] = []
        tables = Tables()
        rr.provenance = {"host": params.host}
        rr.set(host=params.host, base_unit=params.base_unit, grid=params.grid,
               slo={"ttft_p99_ms": slo.ttft_p99_ms, "tpot_p99_ms": slo.tpot_p99_ms},
               concurrency=[] if params.request_rate else params.concurrency, request_rate=params.request_rate,
               repeats=params.repeats, configs=rows, server_starts=0)
        try:
            host = rr.connect(params.host)
            with rr.session(host, lock_wait=params.lock_wait) as s:
                rr.provenance = collect_provenance(host, s.svc.unit_text(params.base_unit))
                for i, config in enumerate(configs):
                    rows.append(_config(rr, s, host, params, i, len(configs), list(config), culprits, slo, tables))
                    tables.save(rr)
        finally:  # what was measured is kept, whatever ended the sweep
            best = _summary(rr, rows, tables, slo)
        rr.conclude(conclusion(rows, best, slo, None))
    return rr.run, rr.result


def _config(rr: RunbookRun, s: HostSession, host: Host, params: SweepParams, i: int, n: int,
            edits: list[tuple[str, Any]], culprits: list[list[tuple[str, Any]]], slo: Slo,
            tables: Tables) -> dict[str, Any]:
    """One configuration: skipped (a known culprit), failed to start (its signature), or measured."""
    row: dict[str, Any] = {"edits": [[f, v] for f, v in edits], "outcome": "", "signature": None,
                           "signature_id": None, "exception_type": None, "phase": None, "reason": None, "points": []}
    hit = holds_culprit(tuple(edits), culprits)
    if hit is not None:
        row.update(outcome="skipped", reason=f"holds the culprit {describe_edits(hit)} found by an earlier bisect")
        rr.tell(f"[{i + 1}/{n}] {describe_edits(edits)}: skipped ({row['reason']})")
        return row
    rr.tell(f"[{i + 1}/{n}] starting {describe_edits(edits)}")
    with s.serve_variant(params.base_unit, edits, health_path=params.health_path,
                         timeout=params.start_timeout) as trial:
        rr.set(server_starts=rr.fields["server_starts"] + 1)
        out = trial.outcome
        if not out.ok:
            info, _ = judge_failure(s.svc, trial)
            row.update(outcome=out.outcome, signature=info["signature"], signature_id=info["signature_id"],
                       exception_type=info["exception_type"], phase=info["phase"],
                       reason=(info["message"] or out.reason or "")[:300])
            rr.tell(f"    did not start: {info['signature']}")
            return row
        shape = measure.server_shape(exec_argv(trial.unit_text, trial.variant))
        rr.tell(f"    ready in {out.seconds:.1f} s")
        pts, limit = measure_config(host, shape.port, params, i, shape.tp or int(rr.provenance.get("gpu_count") or 1),
                                    slo, tables, rr.tell)
        row.update(outcome="ready", phase="serving", points=pts)
        if limit is not None:
            row["slo_limit"] = limit
        peak = max((p["output_tok_s"] for p in row["points"]), default=0)
        rr.tell(f"    peak {peak:.0f} tok/s" + (f"; {limit['words']}" if limit else ""))
    return row


def _summary(rr: RunbookRun, rows: list[dict[str, Any]], tables: Tables, slo: Slo) -> dict[str, Any] | None:
    """The run tables, the Pareto front and the best point under the SLOs, into the result; the best."""
    tables.save(rr)
    flat = [{"config": i, **p} for i, r in enumerate(rows) for p in r["points"]]
    front = [{"config": flat[j]["config"], "concurrency": flat[j]["concurrency"],
              **({"rate": flat[j]["rate"]} if "rate" in flat[j] else {}),
              "tok_s_per_user": flat[j]["tok_s_per_user"], "tok_s_per_gpu": flat[j]["tok_s_per_gpu"]}
             for j in pareto_front(flat)]
    b = best_at_limits(rows, flat) if any(r.get("slo_limit") for r in rows) else best_under_slo(flat, slo)
    best = {**flat[b], "edits": rows[flat[b]["config"]]["edits"]} if b is not None else None
    if best is not None and rows[best["config"]].get("slo_limit"):
        best["slo_limit"] = rows[best["config"]]["slo_limit"]
    rr.set(pareto=front, best=best)
    return best


def best_at_limits(rows: list[dict[str, Any]], flat: list[dict[str, Any]]) -> int | None:
    """Index in ``flat`` of the highest-throughput point among the configurations' SLO limits (the
    highest load each holds its SLOs at, below the lowest that missed); ties: the higher limit."""
    at = []
    for j, p in enumerate(flat):
        lim = rows[p["config"]].get("slo_limit") or {}
        if lim.get("value") is not None and float(p[lim["variable"]]) == float(lim["value"]):
            at.append(j)
    return max(at, key=lambda j: (flat[j]["output_tok_s"], float(flat[j].get("rate") or flat[j]["concurrency"] or 0)),
               default=None)


def conclusion(rows: list[dict[str, Any]], best: dict[str, Any] | None, slo: Slo,
               failure: dict[str, str] | None) -> str:
    if failure is not None:
        return f"Run failed: {failure['message']}"
    failed = [r for r in rows if r["outcome"] not in ("ready", "skipped")]
    skipped = [r for r in rows if r["outcome"] == "skipped"]
    parts = []
    if best is not None:
        ci = ""
        at = " (its SLO limit, found by the search)" if best.get("slo_limit") else ""
        if best.get("output_tok_s_lo") == best.get("output_tok_s_lo"):  # not NaN
            ci = f" (95% CI {best['output_tok_s_lo']:.0f}-{best['output_tok_s_hi']:.0f})"
        parts.append(f"Best under {slo.words()}: {describe_edits([tuple(e) for e in best['edits']])} at "
                     f"{point_words(best)}{at}: {best['output_tok_s']:.0f} tok/s{ci}, "
                     f"{best['tok_s_per_gpu']:.0f} tok/s per GPU.")
    else:
        parts.append(f"No configuration met {slo.words()}.")
    limits = [(r, r["slo_limit"]) for r in rows if r.get("slo_limit")]
    if limits:
        parts.append("SLO limits: " + "; ".join(f"{describe_edits([tuple(e) for e in r['edits']])}: {lim['words']}"
                                                for r, lim in limits) + ".")
    if failed:
        parts.append(f"{len(failed)} of {len(rows)} configurations did not start: " + "; ".join(
            f"{describe_edits([tuple(e) for e in r['edits']])} -> {r['exception_type'] or r['outcome']} in {r['phase']}"
            for r in failed) + ".")
    if skipped:
        parts.append(f"{len(skipped)} skipped as holding a known culprit.")
    return " ".join(parts)


# -- what the notebook shows ----------------------------------------------------------


def configs_frame(result: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame([{"config": i, "edits": describe_edits([tuple(e) for e in r["edits"]]),
                          "outcome": r["outcome"], "phase": r["phase"], "exception_type": r["exception_type"],
                          "best_tok_s": max((p["output_tok_s"] for p in r["points"]), default=None)}
                         for i, r in enumerate(result.get("configs") or [])])


def limits_frame(result: dict[str, Any]) -> pd.DataFrame:
    """Per configuration that served, its SLO limit (``slo_search``): empty when the search was off."""
    rows = []
    for i, r in enumerate(result.get("configs") or []):
        lim = r.get("slo_limit")
        if lim:
            rows.append({"config": i, "edits": describe_edits([tuple(e) for e in r["edits"]]),
                         lim["variable"]: lim["value"], "missed at": lim["failing"], "bound": lim["bound"],
                         "search points": len(lim["probes"]), "output_tok_s": lim["output_tok_s"],
                         "in words": lim["words"]})
    return pd.DataFrame(rows)


def pareto_chart(result: dict[str, Any]) -> Any:
    """tok/s per user vs tok/s per GPU for every measured point, the Pareto front drawn as a line, the
    SLO met or not as the shape (:func:`workbench.bench.charts.pareto_chart`, as the panel draws it)."""
    from workbench.bench import charts

    frame = points_table(result)
    if frame.empty:
        return None
    key = "rate" if "rate" in frame else "concurrency"  # the ladder's column
    return charts.pareto_chart(frame, "gpus", color="edits", point=key, shape="slo_met",
                               tooltip=["output_throughput", "ttft_p99_ms", "tpot_p99_ms"]).properties(
        title="Pareto front: interactivity vs cost")


def points_table(result: dict[str, Any]) -> pd.DataFrame:
    """Every measured point of the result, one row each, in the columns of a sweep's results table."""
    rows = [{"config": i, "edits": describe_edits([tuple(e) for e in r["edits"]]), **p,
             "output_throughput": p["output_tok_s"]}
            for i, r in enumerate(result.get("configs") or []) for p in r["points"]]
    frame = pd.DataFrame(rows)
    if not frame.empty and "tpot_p50_ms" not in frame:
        frame["tpot_p50_ms"] = float("nan")
    return frame


def show_charts(run: Run, result: dict[str, Any]) -> None:
    from IPython.display import display

    chart = pareto_chart(result)
    if chart is not None:
        display(chart)
    for cdf in cdf_charts(measure.tables(run.dir), result).values():
        display(cdf)


def cdf_charts(tables: dict[str, pd.DataFrame], result: dict[str, Any]) -> dict[str, Any]:
    """The TTFT and ITL CDFs per configuration at the ladder's points (one panel each; the search's
    points left out), from the run's ``requests`` and ``itl`` tables."""
    key = "rate" if result.get("request_rate") else "concurrency"
    ladder = list(result.get("request_rate") or result.get("concurrency") or [])

    def on_ladder(frame: pd.DataFrame | None) -> pd.DataFrame | None:
        return None if frame is None or key not in frame else frame[frame[key].isin(ladder)]

    return charts.load_charts(pd.DataFrame(), on_ladder(tables.get("requests")), on_ladder(tables.get("itl")),
                              point=key, facet=key)


def notebook() -> Any:
    from workbench.runbooks.notebooks import runbook

    return runbook(
        "sweep",
        "Sweep: which configuration serves best under the SLOs?",
        "Start every configuration of the grid as a variant of the working unit, benchmark the concurrency "
        "ladder with repeats, and restore the host. A configuration that crashes is recorded with its "
        "signature and the sweep goes on; one that holds a culprit an earlier bisect found is skipped. "
        "With `slo_search`, each configuration's SLO limit (the highest concurrency or rate that still meets "
        "the SLOs) is found by bisection. Result: the table, the Pareto front of tok/s per user vs tok/s per GPU, "
        "and the best configuration under the SLOs with its 95% interval.",
        SweepParams,
        ["rb.configs_frame(result)", "rb.limits_frame(result)"],
        [("md", "## Pareto front and latency CDFs\n\nEvery measured point; the dashed line joins the points no other "
                "beats on both axes. Then TTFT and inter-chunk latency CDFs per configuration at the ladder's points.", []),
         ("code", "rb.show_charts(run, result)", [])],
    )
