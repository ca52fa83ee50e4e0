"""The bisect runbook: which flag edits break a working unit, in the fewest server starts.

``run(params)`` takes the host's lock, finds every minimal culprit with
:func:`workbench.bisect.bisect` (each oracle call is one variant start,
classified by :func:`workbench.trials.run_trial`, or a trial reused from the
ledger), restores the host, and writes ``result.json`` and ``trials.parquet``
into the run directory (trials after every start, so a run that dies can be
resumed: rerunning it reuses what was recorded).

``result.json``::

    {"runbook": "bisect", "status": "ok"|"failed", "host": str, "base_unit": str, "edits": [[flag, value], ...],
     "culprits": [{"edits": [[flag, value], ...], "signature": str, "exception_type": str|null, "phase": str,
                   "message": str|null}],
     "trials": [{"edits": [...], "outcome": "ready"|"failed"|"timeout", "phase": str, "exception_type": str|null,
                 "signature": str|null, "seconds": float, "reused": bool}],
     "server_starts": int, "wall_seconds": float, "host_restored": bool,
     "conclusion": str, "failure": {"kind": str, "message": str}|null, "started": float, "finished": float}
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pandas as pd
from pydantic import Field

from workbench.bisect import Verdict, bisect
from workbench.errors import WorkbenchError
from workbench.hosts import connect
from workbench.provenance import collect as collect_provenance
from workbench.redact import Redactor, clip
from workbench.runbooks.outcome import caught_failure
from workbench.runbooks.params import Edits, RunbookParams
from workbench.runs import Ledger, Run
from workbench.session import HostSession
from workbench.trials import TrialRecord, failure_words, host_fingerprint, run_trial, unit_hash
from workbench.unitfile import UnitFile, split_environment
from workbench.variants import EditValue, Variant, describe_edits, edits_key, normalize_edits

SEEDS_EDITS: dict[str, str | bool | None] = {
    "--ep-size": "8",
    "--enable-nccl-nvls": True,
    "--enable-flashinfer-allreduce-fusion": True,
}


class BisectParams(RunbookParams):
    host: str = Field("gpu-a", description="ssh_config alias of the GPU host")
    base_unit: str = Field("sglang-k26-ddtree.service", description="a unit that works")
    edits: Edits = Field(default_factory=lambda: dict(SEEDS_EDITS),
                                                description="flag edits under which it fails")
    health_path: str = Field("/health", description="readiness endpoint")
    start_timeout: float = Field(900.0, gt=0, description="seconds to wait for ready or failure, per start")
    rerun: bool = Field(False, description="start again even where the ledger has the trial")
    secret_env: list[str] = Field(default_factory=list,
                                  description="names of controller environment variables whose values must never appear")
    stop_units: list[str] = Field(default_factory=list,
                                  description="units to stop for the run (another server holding the GPUs or the port)")
    lock_wait: float = Field(0.0, ge=0, description="seconds to wait while another session holds the host (0: fail at once)")


def _record_from_ledger(hit: dict[str, Any]) -> TrialRecord:
    fields = TrialRecord.__dataclass_fields__
    rec = TrialRecord(**{k: v for k, v in hit.items() if k in fields})
    rec.reused = True
    return rec


def conclusion(culprits: list[dict[str, Any]], trials: list[TrialRecord]) -> str:
    if not trials:
        return "No trial ran."
    if not culprits:
        return "The unit starts with all the edits together: nothing to bisect."
    parts = []
    for c in culprits:
        what = describe_edits([(e[0], e[1]) for e in c["edits"]])
        parts.append(f"{what} -> {failure_words(c['exception_type'], c.get('message'))} during {c['phase']}")
    return f"{len(culprits)} minimal culprit(s): " + "; ".join(parts) + "."


def run(params: BisectParams, *, progress: Callable[[str], None] = print) -> tuple[Run, dict[str, Any]]:
    """Bisect ``params.edits`` on ``params.host``; returns the run and its result."""
    redactor = Redactor.for_params(params.model_dump())
    run_ = Run.create("bisect", data_dir=params.data_dir, run_id=params.run_id, redactor=redactor)
    edits = list(normalize_edits(params.edits))
    started = time.time()
    trials: list[TrialRecord] = []
    culprits: list[dict[str, Any]] = []
    provenance: dict[str, Any] = {"host": params.host}
    failure: dict[str, str] | None = None
    restored = False
    host = connect(params.host, ssh_config=params.ssh_config or None)
    ledger = Ledger(params.data_dir)

    def tell(line: str) -> None:
        progress(redactor.text(line))

    def save() -> None:
        if trials:
            run_.table("trials", pd.DataFrame([t.row() for t in trials]))

    try:
        session = HostSession(host, purpose=f"bisect {run_.id}", ready_timeout=params.start_timeout,
                              lock_wait=params.lock_wait)
        with session:
            for unit in session.make_room(params.stop_units):
                progress(f"  stopped {unit} for the run (restarted at the end)")
            base_text = session.base_text(params.base_unit)
            for value in UnitFile.parse(base_text).get_all("Service", "Environment"):
                redactor.add_env(dict(split_environment(value)))
            fingerprint = host_fingerprint(host)
            uhash = unit_hash(base_text)
            provenance = collect_provenance(host, base_text)
            provenance["unit_diff"] = Variant.build(params.base_unit, base_text, edits).diff()
            by_subset: dict[str, TrialRecord] = {}

            def oracle(subset: tuple[tuple[str, EditValue], ...]) -> Verdict:
                key = edits_key(subset)
                hit = None if params.rerun else ledger.find_trial(host=params.host, fingerprint=fingerprint,
                                                                  unit_hash=uhash, edits_key=redactor.text(key))
                if hit is not None:
                    rec = _record_from_ledger(hit)
                    tell(f"  reused: {describe_edits(subset)} -> {rec.outcome} ({rec.exception_type or rec.phase})")
                else:
                    tell(f"  start:  {describe_edits(subset)}")
                    rec = run_trial(session, params.base_unit, list(subset), health_path=params.health_path,
                                    timeout=params.start_timeout, fingerprint=fingerprint)
                    tell(f"          {rec.outcome} in {rec.phase} after {rec.seconds:.1f} s"
                         + (f": {rec.exception_type}" if rec.exception_type else ""))
                trials.append(rec)
                by_subset[key] = rec
                save()
                if rec.outcome == "ready":
                    return Verdict.passed()
                return Verdict.failed(rec.signature or f"{rec.outcome}:{rec.phase}")

            search = bisect(edits, oracle)
            for c in search.culprits:
                rec = by_subset[edits_key(c.items)]
                culprits.append({"edits": [[f, v] for f, v in c.items], "signature": c.signature,
                                 "exception_type": rec.exception_type, "phase": rec.phase, "message": rec.message})
        restored = session.restored
    except WorkbenchError as exc:
        failure = caught_failure(exc)
    except KeyboardInterrupt:
        failure = {"kind": "interrupted", "message": "interrupted (the host was restored on the way out)"}
    finished = time.time()
    save()
    result = {
        "status": "ok" if failure is None else "failed",
        "host": params.host,
        "base_unit": params.base_unit,
        "edits": [[f, v] for f, v in edits],
        "culprits": culprits,
        "trials": [{"edits": t.edits, "outcome": t.outcome, "phase": t.phase, "exception_type": t.exception_type,
                    "signature": t.signature, "seconds": t.seconds, "reused": t.reused} for t in trials],
        "server_starts": sum(1 for t in trials if not t.reused),
        "wall_seconds": round(finished - started, 2),
        "host_restored": restored,
        "conclusion": conclusion(culprits, trials) if failure is None else f"Run failed: {failure['message']}",
        "failure": failure,
        "started": started,
        "finished": finished,
        "params": params.model_dump(),
        "provenance": provenance,
    }
    run_.write_result(result)
    if failure and failure["kind"] == "interrupted":
        raise KeyboardInterrupt
    return run_, run_.result() or result  # as written: redacted, with its run id


# -- what the notebook shows ----------------------------------------------------


def trials_frame(result: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for i, t in enumerate(result.get("trials", []), 1):
        rows.append({"#": i, "edits": describe_edits([(e[0], e[1]) for e in t["edits"]]), "outcome": t["outcome"],
                     "phase": t["phase"], "exception": t["exception_type"] or "", "signature": t["signature"] or "",
                     "seconds": t["seconds"], "reused": t["reused"]})
    return pd.DataFrame(rows)


def culprits_frame(result: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame([{"edits": describe_edits([(e[0], e[1]) for e in c["edits"]]),
                          "exception": c["exception_type"] or "", "phase": c["phase"],
                          "signature": c["signature"], "message": clip(c.get("message"), 160)}
                         for c in result.get("culprits", [])])


def notebook() -> Any:
    from workbench.runbooks.notebooks import runbook

    return runbook(
        'bisect',
        "Bisect: which flag edits break a working unit?",
        "Given a host, a base unit that works and flag edits under which it fails, find every minimal set of "
        "edits that still fails, each with its failure signature, in the fewest server starts. Trials already "
        "in the ledger for the same host, unit text and edits are reused. The host is left as it was found.",
        BisectParams,
        ['rb.culprits_frame(result)'],
        [
            ('md', '## Trials', []),
            ('code', 'rb.trials_frame(result)', []),
            ('code', 'rb.timeline_chart(run)', []),
        ],
    )


def timeline_chart(run: Run) -> Any:
    """One bar per start, coloured by the phases the watch saw, the outcome marked at its end."""
    from workbench import plots
    from workbench.runs import read_table

    path = run.dir / "trials.parquet"
    if not path.exists():
        return None
    t = read_table(path)
    t = t[~t["reused"].astype(bool)].reset_index(drop=True)
    if t.empty:
        return None
    trials, phases = [], []
    for i, (_, row) in enumerate(t.iterrows(), 1):
        label = f"{i}. {describe_edits([(e[0], e[1]) for e in row['edits']])}"
        start, end = float(row["started_at"]), float(row["started_at"]) + float(row["seconds"])
        trials.append({"trial": label, "start": start, "end": end, "outcome": row["outcome"]})
        events = list(row["timeline"] or [])
        for j, ev in enumerate(events):
            nxt = float(events[j + 1]["seconds"]) if j + 1 < len(events) else float(row["seconds"])
            phases.append({"trial": label, "phase": ev["phase"], "start": start + float(ev["seconds"]),
                           "end": start + max(nxt, float(ev["seconds"]))})
    return plots.trial_timeline(pd.DataFrame(trials), pd.DataFrame(phases) if phases else None)
