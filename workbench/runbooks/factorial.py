"""The ``factorial`` runbook: the full factorial over a few flag edits, and which factor causes which failure.

Any flags: "isolate EP vs NVLS" (the seeds' incident) is its preset ``isolate-ep-vs-nvls``
(``presets/factorial.toml``; the old name ``isolate_ep_vs_nvls`` runs it).

Every combination of the edits (the base itself included) is started once —
spread over the given hosts in parallel — and classified.  The conclusion in
words comes from the matrix: for each failure signature, the minimal
combinations that show it (a factor alone, or an interaction of several), and
the factors that never change the outcome.

``result.json``: ``{"runbook": "factorial", "status", "hosts", "base_unit", "factors": [[flag, value]],
"matrix": [{"factors": {flag: bool}, "outcome", "phase", "exception_type", "signature", "seconds", "reused",
"host"}], "causes": [{"factors": [flag], "signature", "exception_type", "phase"}], "no_effect": [flag],
"conclusion": str, "server_starts", "wall_seconds", "host_restored", "failure"}``.
"""

from __future__ import annotations

import itertools
from typing import Any

import pandas as pd
from pydantic import Field, field_validator, model_validator

from workbench.deployment.runner import run_combinations
from workbench.errors import ConfigError
from workbench.fleet import Subset
from workbench.hosts import Host
from workbench.provenance import collect as collect_provenance
from workbench.runbooks.hostlist import check_deployment, expand_param
from workbench.runbooks.params import Edits, RunbookParams
from workbench.runbooks.schemas import FactorialResult
from workbench.runbooks.skeleton import RunbookRun
from workbench.runs import Ledger, Run
from workbench.session import HostSession
from workbench.trials import TrialRecord, failure_words
from workbench.unitfile import UnitFile, split_environment
from workbench.variants import Variant, describe_edits, edits_key, normalize_edits

RUNBOOK = "factorial"
MAX_FACTORS = 6


class FactorialParams(RunbookParams):
    hosts: list[str] = Field(description="ssh_config aliases; several hosts of one kind run combinations in parallel")
    _hosts = field_validator("hosts", mode="before")(expand_param)
    base_unit: str = Field(min_length=1, description="a unit that works")
    factors: Edits = Field(description="flag edits to combine (at most 6)")
    health_path: str = Field("/health", description="readiness endpoint")
    start_timeout: float = Field(900.0, gt=0, description="seconds to wait for ready or failure, per start")
    rerun: bool = Field(False, description="start again even where the ledger has the trial")
    secret_env: list[str] = Field(default_factory=list, description="controller env vars whose values must never appear")
    stop_units: list[str] = Field(default_factory=list,
                                  description="units to stop for the run (another server holding the GPUs or the port)")
    lock_wait: float = Field(0.0, ge=0, description="seconds to wait while another session holds a host (0: fail at once)")
    # Slurm (hosts ["slurm:NAME"]: base_unit is a job script, combinations are jobs; workbench.slurm.factorial)
    max_parallel: int = Field(1, ge=1, le=64, description="slurm: combination jobs in flight at once")
    partition: str = Field("", description="slurm: sbatch --partition (empty: the cluster's default)")
    account: str = Field("", description="slurm: sbatch --account (empty: none)")
    qos: str = Field("", description="slurm: sbatch --qos (empty: none)")

    @model_validator(mode="after")
    def _deployment(self) -> FactorialParams:
        check_deployment(self.hosts, self.base_unit, self.ssh_config)
        return self


def combinations(factors: Subset) -> list[Subset]:
    out: list[Subset] = []
    for k in range(len(factors) + 1):
        out.extend(tuple(c) for c in itertools.combinations(factors, k))
    return out


def analyse(factors: Subset, results: dict[Subset, TrialRecord]) -> tuple[list[dict[str, Any]], list[str], str]:
    """Causes per signature (minimal failing combinations), factors without effect, and the words."""
    names = [f for f, _ in factors]
    by_set = {frozenset(f for f, _ in s): r for s, r in results.items()}
    causes: list[dict[str, Any]] = []
    for s, r in sorted(by_set.items(), key=lambda kv: (len(kv[0]), sorted(kv[0]))):
        if r.outcome == "ready" or not r.signature:
            continue
        if any(o < s and q.outcome != "ready" and q.signature == r.signature for o, q in by_set.items()):
            continue
        causes.append({"factors": [n for n in names if n in s], "signature": r.signature,
                       "exception_type": r.exception_type, "phase": r.phase, "message": r.message,
                       "ranks": list(r.ranks)})
    no_effect = []
    for n in names:
        pairs = [(s, s | {n}) for s in by_set if n not in s and (s | {n}) in by_set]
        if pairs and all((by_set[a].outcome, by_set[a].signature) == (by_set[b].outcome, by_set[b].signature)
                         for a, b in pairs):
            no_effect.append(n)
    words = []
    base = by_set.get(frozenset())
    if base is not None and base.outcome != "ready":
        words.append(f"The base itself does not start ({base.exception_type or base.outcome}); every combination is suspect.")
    shown = dict(factors)
    for c in causes:
        what = " together with ".join(describe_edits([(f, shown[f])]) for f in c["factors"])
        alone = "alone " if len(c["factors"]) == 1 else ""
        words.append(f"{what} {alone}causes {failure_words(c['exception_type'], c['message'])} during {c['phase']}.")
    others = [n for n in names if n not in no_effect and not any(n in c["factors"] for c in causes)]
    if no_effect:
        verb = "never changes" if len(no_effect) == 1 else "never change"
        words.append(f"{', '.join(no_effect)} {verb} the outcome.")
    if others:
        words.append(f"{', '.join(others)} change which failure shows, without causing one alone.")
    if not causes and base is not None and base.outcome == "ready":
        words.append("Every combination starts.")
    return causes, no_effect, " ".join(words)


def run(params: FactorialParams) -> tuple[Run, dict[str, Any]]:
    factors = normalize_edits(params.factors)
    if not 1 <= len(factors) <= MAX_FACTORS:
        raise ConfigError(f"factors: give between 1 and {MAX_FACTORS} flag edits (2^n starts)")
    if not params.hosts:
        raise ConfigError("hosts: give at least one host")
    if any(h.startswith("slurm:") for h in params.hosts):  # combinations as jobs on a Slurm cluster
        if len(params.hosts) > 1:
            raise ConfigError("hosts: a Slurm cluster (slurm:NAME) is the only host of its run")
        from workbench.slurm.factorial import factorial_run

        return factorial_run(params)
    with RunbookRun(RUNBOOK, params, FactorialResult) as rr:
        rr.set(hosts=params.hosts, base_unit=params.base_unit, factors=[[f, v] for f, v in factors])
        hosts: list[Host] = [rr.connect(h) for h in params.hosts]
        ledger = Ledger(params.data_dir)
        trials: list[TrialRecord] = []

        def lookup(host: str, fingerprint: str, uhash: str, subset: Subset) -> TrialRecord | None:
            if params.rerun:
                return None
            hit = ledger.find_trial(host=host, fingerprint=fingerprint, unit_hash=uhash, edits_key=edits_key(subset))
            if hit is None:
                return None
            rec = TrialRecord(**{k: v for k, v in hit.items() if k in TrialRecord.__dataclass_fields__})
            rec.reused = True
            return rec

        def on_trial(rec: TrialRecord) -> None:
            trials.append(rec)
            rr.table("trials", pd.DataFrame([t.row() for t in trials]))

        def before(session: HostSession, report: Any, text: str) -> None:
            session.make_room(params.stop_units)
            for value in UnitFile.parse(text).get_all("Service", "Environment"):
                rr.redactor.add_env(dict(split_environment(value)))
            if not rr.provenance:
                rr.provenance.update(collect_provenance(session.host, text))
                rr.provenance["unit_diff"] = Variant.build(params.base_unit, text, factors).diff()

        # a fleet's hosts in parallel, or a deployment's nodes as one server (a start of the whole per combination)
        results, reports = run_combinations(hosts, params.base_unit, combinations(factors), lookup=lookup,
                                            on_trial=on_trial, health_path=params.health_path,
                                            timeout=params.start_timeout, purpose=f"{RUNBOOK} {rr.run.id}",
                                            before=before, lock_wait=params.lock_wait,
                                            ssh_config=params.ssh_config or None)
        failed_hosts = [r for r in reports if r.error]
        complete = len(results) == 2 ** len(factors)
        rr.set(matrix=_matrix(factors, results), causes=[], no_effect=[],
               server_starts=sum(1 for t in trials if not t.reused),
               host_restored=all(r.restored for r in reports),
               hosts_report=[{"host": r.host, "trials": r.trials, "restored": r.restored, "error": r.error}
                             for r in reports])
        if failed_hosts or not complete:
            rr.fail("host_failed" if failed_hosts else "incomplete",
                    "; ".join(f"{r.host}: {r.error}" for r in failed_hosts) or "not every combination ran")
        else:
            causes, no_effect, words = analyse(factors, results)
            rr.conclude(words, causes=causes, no_effect=no_effect)
    return rr.run, rr.result


def _matrix(factors: Subset, results: dict[Subset, TrialRecord]) -> list[dict[str, Any]]:
    names = [f for f, _ in factors]
    matrix = []
    for subset in combinations(factors):
        r = results.get(subset)
        present = {f for f, _ in subset}
        matrix.append({"factors": {n: n in present for n in names}, "outcome": r.outcome if r else "not run",
                       "phase": r.phase if r else None, "exception_type": r.exception_type if r else None,
                       "signature": r.signature if r else None, "seconds": r.seconds if r else None,
                       "reused": r.reused if r else False, "host": r.host if r else None,
                       "ranks": list(r.ranks) if r else []})  # node-qualified on a deployment: node1/TP9
    return matrix


def matrix_frame(result: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for m in result.get("matrix", []):
        row = {f: ("✓" if on else "–") for f, on in m["factors"].items()}
        row.update({"outcome": m["outcome"], "exception": m["exception_type"] or "", "phase": m["phase"] or "",
                    "signature": m["signature"] or "", "host": m["host"] or "", "seconds": m["seconds"],
                    "reused": m["reused"]})
        rows.append(row)
    return pd.DataFrame(rows)


def matrix_chart(result: dict[str, Any]) -> Any:
    """Outcome per combination as an Altair heat strip (one row per combination)."""
    import altair as alt

    rows = []
    for m in result.get("matrix", []):
        combo = describe_edits([(f, True) for f, on in m["factors"].items() if on]) or "(base)"
        label = m["outcome"] if m["outcome"] == "ready" else (m["exception_type"] or m["outcome"])
        rows.append({"combination": combo, "result": label, "phase": m["phase"] or "", "signature": m["signature"] or ""})
    return (alt.Chart(pd.DataFrame(rows)).mark_rect()
            .encode(y=alt.Y("combination:N", sort=None, title=None), x=alt.X("result:N", title="outcome"),
                    color=alt.Color("result:N"), tooltip=["combination", "result", "phase", "signature"])
            .properties(width=240, title="Outcome per combination"))


def notebook() -> Any:
    from workbench.runbooks.notebooks import runbook

    return runbook(
        'factorial',
        "Factorial: which flag, or which combination, causes which failure?",
        "Start every combination of a few flag edits (the full factorial, the base included), spread over the "
        "given hosts, and read the matrix: which factor alone, or which interaction, produces each failure "
        "signature, and which factors never change the outcome. Every host is left as it was found.",
        FactorialParams,
        ['rb.matrix_frame(result)'],
        [
            ('code', 'rb.matrix_chart(result)', []),
        ],
    )
