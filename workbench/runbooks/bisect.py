"""The bisect runbook: which flag edits break a working unit, in the fewest server starts.

``run(params)`` takes the host's lock, finds every minimal culprit with
:func:`workbench.bisect.bisect` (each oracle call is one variant start,
classified by :func:`workbench.trials.run_trial`, or a trial reused from the
ledger), restores the host, and writes ``result.json`` and ``trials.parquet``
into the run directory (trials after every start, so a run that dies can be
resumed: rerunning it reuses what was recorded).

Several equal hosts (``hosts``) run independent trials of the search at the same time, one per
host, each host locked, recorded and restored on its own (:class:`workbench.fleet.Fleet`).  A host
that would idle while the batch's slowest start runs takes a *spare* (``Search.spare``: what the search
would start next unless the model changes); a spare is a normal trial, listed in ``trials`` with its
host, and its verdict goes to the search between batches, which never starts that set again.
When ``base_unit`` is a deployment's unit and ``hosts`` are its nodes, a trial is a start of the
whole deployment instead (:mod:`workbench.deployment.runner` tells the two apart).
Trials of earlier runs on the same hosts (fingerprint) and unit text are given to the search up
front, so they cost no start and inform every choice.

``result.json``::

    {"runbook": "bisect", "status": "ok"|"failed", "host": str, "hosts": [str], "base_unit": str,
     "edits": [[flag, value], ...],
     "culprits": [{"edits": [[flag, value], ...], "exception_type": str|null, "phase": str,
                   "signature": "Type: normalised message in phase", "signature_id": "Type@hash",
                   "message": str|null, "blockers": [[flag, value], ...], "related": [signature_id, ...]}],
     "guarantee": {"complete": bool, "statement": str, "sets_tested": int, "sets_total": int,
                   "untested": [[[flag, value], ...], ...], "unexplained": [[[flag, value], ...], ...]},
     "trials": [{"edits": [...], "outcome": "ready"|"failed"|"timeout", "phase": str, "exception_type": str|null,
                 "signature": str|null, "signature_id": str|null, "seconds": float, "reused": bool, "host": str}],
     "server_starts": int, "wall_seconds": float, "host_restored": bool,
     "conclusion": str, "failure": {"kind": str, "message": str}|null, "started": float, "finished": float}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
from pydantic import Field, field_validator, model_validator

from workbench.bisect import Search, Verdict, bisect
from workbench.deployment.runner import TrialRunner, trial_runner
from workbench.errors import ConfigError
from workbench.fleet import HostReport
from workbench.provenance import collect as collect_provenance
from workbench.redact import Redactor, clip
from workbench.runbooks.hostlist import check_deployment, expand_param
from workbench.runbooks.outcome import CAUGHT_KINDS
from workbench.runbooks.params import Edits, RunbookParams
from workbench.runbooks.schemas import BisectResult
from workbench.runbooks.skeleton import RunbookRun
from workbench.runs import Ledger, Run
from workbench.session import HostSession
from workbench.trials import TrialRecord, failure_words, related, unit_hash
from workbench.unitfile import UnitFile, split_environment
from workbench.variants import EditValue, Variant, describe_edits, edits_key, normalize_edits

RUNBOOK = "bisect"


class BisectParams(RunbookParams):
    host: str = Field(description="ssh_config alias of the GPU host (slurm:NAME: a Slurm cluster; "
                      "with hosts given: the first of them)")
    hosts: list[str] = Field(default_factory=list,
                             description="several equal hosts run independent trials at once (empty: host alone)")
    _hosts = field_validator("hosts", mode="before")(expand_param)
    max_starts: int = Field(0, ge=0, description="stop after this many server starts (0: no limit; "
                            "the guarantee then lists the sets left untested)")
    base_unit: str = Field(min_length=1, description="a unit that works")
    edits: Edits = Field(description="flag edits under which it fails")
    health_path: str = Field("/health", description="readiness endpoint")
    start_timeout: float = Field(900.0, gt=0, description="seconds to wait for ready or failure, per start")
    rerun: bool = Field(False, description="start again even where the ledger has the trial")
    secret_env: list[str] = Field(default_factory=list,
                                  description="names of controller environment variables whose values must never appear")
    stop_units: list[str] = Field(default_factory=list,
                                  description="units to stop for the run (another server holding the GPUs or the port)")
    lock_wait: float = Field(0.0, ge=0, description="seconds to wait while another session holds the host (0: fail at once)")
    # Slurm (host slurm:NAME: base_unit is a job script, trials are jobs; workbench.slurm.runbook)
    max_parallel: int = Field(1, ge=1, le=64, description="slurm: trial jobs in flight at once")
    partition: str = Field("", description="slurm: sbatch --partition (empty: the cluster's default)")
    account: str = Field("", description="slurm: sbatch --account (empty: none)")
    qos: str = Field("", description="slurm: sbatch --qos (empty: none)")

    @model_validator(mode="before")
    @classmethod
    def _host_from_hosts(cls, data: Any) -> Any:
        """``hosts`` alone names the host too (the first of them, filled in below); neither is missing."""
        if isinstance(data, dict) and data.get("host") is None and data.get("hosts"):
            data = {**data, "host": ""}
        return data

    @model_validator(mode="after")
    def _first_host(self) -> BisectParams:
        if not self.host:
            if not self.hosts:
                raise ValueError("host: give a host (or hosts)")
            self.host = self.hosts[0]
        check_deployment(self.hosts or [self.host], self.base_unit, self.ssh_config)
        return self


def _record_from_ledger(hit: dict[str, Any]) -> TrialRecord:
    fields = TrialRecord.__dataclass_fields__
    rec = TrialRecord(**{k: v for k, v in hit.items() if k in fields})
    rec.reused = True
    return rec


def conclusion(culprits: list[dict[str, Any]], trials: list[TrialRecord],
               guarantee: dict[str, Any] | None = None) -> str:
    if not trials:
        return "No trial ran."
    if not culprits:
        return "The unit starts with all the edits together: nothing to bisect."
    parts = []
    for c in culprits:
        what = describe_edits([(e[0], e[1]) for e in c["edits"]])
        extra = f" (the same failure as in {len(c['related'])} other phase(s))" if c.get("related") else ""
        parts.append(f"{what} -> {failure_words(c['exception_type'], c.get('message'))} during {c['phase']}{extra}")
    text = f"{len(culprits)} minimal culprit(s): " + "; ".join(parts) + "."
    if guarantee is not None:
        text += (" Complete: no fault of two edits or fewer (one of them absent at most) is left untested."
                 if guarantee.get("complete") else " Not complete: see the guarantee.")
    return text


def _verdict(rec: TrialRecord) -> Verdict:
    if rec.outcome == "ready":
        return Verdict.passed()
    return Verdict.failed(rec.signature_id or rec.signature or f"{rec.outcome}:{rec.phase}", rec.phase)


def _subset_of(rec: TrialRecord) -> tuple[tuple[str, EditValue], ...]:
    return tuple((f, tuple(v) if isinstance(v, list) else v) for f, v in rec.edits)


def culprit_entries(search: Any, by_sig: dict[str, TrialRecord]) -> list[dict[str, Any]]:
    """One result.json entry per culprit; ``related``: the signature ids of the same exception in other phases."""
    out = []
    for c in search.culprits:
        rec = by_sig[c.signature]
        out.append({"edits": [[f, v] for f, v in c.items], "exception_type": rec.exception_type, "phase": rec.phase,
                    "signature": rec.signature, "signature_id": c.signature, "message": rec.message,
                    "blockers": [[f, v] for f, v in c.blockers], "related": [],
                    **({"ranks": list(rec.ranks)} if rec.ranks else {}),
                    **({"where": rec.where} if rec.where else {})})
    keys = [(e["exception_type"], e["message"], e["phase"]) for e in out]
    for group in related(keys):
        for i in group:
            out[i]["related"] = sorted({out[j]["signature_id"] for j in group if out[j]["phase"] != out[i]["phase"]})
    return out


def guarantee_entry(search: Any) -> dict[str, Any]:
    g = search.guarantee if search is not None else None
    if g is None:
        return {"complete": False, "statement": "The search did not finish.", "sets_tested": 0, "sets_total": 0,
                "untested": [], "unexplained": []}
    return {"complete": g.complete, "statement": g.statement, "sets_tested": g.tested, "sets_total": g.total,
            "untested": [[[f, v] for f, v in s] for s in g.untested],
            "unexplained": [[[f, v] for f, v in s] for s in g.unexplained]}


def run(params: BisectParams, *, progress: Callable[[str], None] = print) -> tuple[Run, dict[str, Any]]:
    """Bisect ``params.edits`` on ``params.host`` (or on ``params.hosts`` at once); returns the run and its result."""
    if params.host.startswith("slurm:") and not params.hosts:  # trials as jobs on a Slurm cluster
        from workbench.slurm.runbook import bisect_run

        return bisect_run(params, progress=progress)
    names = list(dict.fromkeys(params.hosts)) if params.hosts else [params.host]
    edits = list(normalize_edits(params.edits))
    trials: list[TrialRecord] = []
    ledger = Ledger(params.data_dir)
    texts: dict[str, str] = {}
    fleet: TrialRunner | None = None
    with RunbookRun(RUNBOOK, params, BisectResult, kinds=CAUGHT_KINDS, progress=progress,
                    host_restored=False) as rr:
        rr.set(host=names[0], hosts=names, base_unit=params.base_unit, edits=[[f, v] for f, v in edits],
               culprits=[], guarantee=guarantee_entry(None))
        rr.provenance["host"] = names[0]

        def save() -> None:
            rr.table("trials", pd.DataFrame([t.row() for t in trials]))

        def setup(session: HostSession, report: HostReport, base_text: str) -> None:
            for unit in session.make_room(params.stop_units):
                rr.tell(f"  {session.host.name}: stopped {unit} for the run (restarted at the end)")
            for value in UnitFile.parse(base_text).get_all("Service", "Environment"):
                rr.redactor.add_env(dict(split_environment(value)))
            texts[session.host.name] = base_text
            if session.host.name == names[0]:
                report.provenance = collect_provenance(session.host, base_text)

        try:
            hosts = [rr.connect(h) for h in names]
            fleet = trial_runner(hosts, params.base_unit, ssh_config=params.ssh_config or None,
                                 purpose=f"{RUNBOOK} {rr.run.id}", health_path=params.health_path,
                                 timeout=params.start_timeout, lock_wait=params.lock_wait, setup=setup)
            with fleet:
                _search(rr, params, fleet, names, edits, texts, trials, ledger, save)
            if any(r.error for r in fleet.reports):
                bad = [r for r in fleet.reports if r.error]
                rr.tell("  host(s) lost during the run: " + "; ".join(f"{r.host}: {r.error}" for r in bad))
            rr.set(host_restored=all(r.restored for r in fleet.reports))
        except BaseException:
            rr.set(host_restored=bool(fleet) and all(r.restored for r in fleet.reports if r.fingerprint)
                   if fleet else False)
            raise
        finally:
            save()
            rr.set(trials=[{"edits": t.edits, "outcome": t.outcome, "phase": t.phase,
                            "exception_type": t.exception_type, "signature": t.signature,
                            "signature_id": t.signature_id, "seconds": t.seconds, "reused": t.reused,
                            "host": t.host} for t in trials],
                   server_starts=sum(1 for t in trials if not t.reused))
    return rr.run, rr.result  # as written: redacted, with its run id


def _search(rr: RunbookRun, params: BisectParams, fleet: TrialRunner, names: list[str],
            edits: list[tuple[str, EditValue]], texts: dict[str, str], trials: list[TrialRecord],
            ledger: Ledger, save: Callable[[], None]) -> None:
    """The search itself, on the fleet's sessions (locked and recorded; restored when the fleet ends)."""
    if getattr(fleet, "equal_hosts", True) and len(set(texts.values())) > 1:
        raise ConfigError(f"the hosts {', '.join(names)} have different {params.base_unit} unit texts: "
                          "a fleet bisect needs equal hosts")
    base_text = next(iter(texts.values()))
    uhash = unit_hash(base_text)
    prints = {r.host: r.fingerprint for r in fleet.reports if not r.error}
    found = next((r.provenance for r in fleet.reports if r.provenance), None)
    if found is not None:
        rr.provenance = dict(found)
    rr.provenance["unit_diff"] = Variant.build(params.base_unit, base_text, edits).diff()
    rr.provenance["hosts"] = names
    known = [] if params.rerun else _ledger_known(ledger, prints, uhash, edits, rr.redactor)
    trials.extend(known)
    if known:
        rr.tell(f"  reused from the ledger: {len(known)} trial(s)")
    by_sig: dict[str, TrialRecord] = {rec.signature_id or "": rec for rec in known if rec.signature_id}

    def test_many(batch: list[tuple[tuple[str, EditValue], ...]]) -> list[Verdict]:
        for subset in batch:
            rr.tell(f"  start:  {describe_edits(subset)}")
        recs = fleet.run(batch) if fleet else []
        for subset, rec in zip(batch, recs, strict=True):
            rr.tell(f"          {describe_edits(subset)}: {rec.outcome} in {rec.phase} after {rec.seconds:.1f} s"
                    + (f" on {rec.host}" if len(names) > 1 else "")
                    + (f": {rec.exception_type}" if rec.exception_type else ""))
            trials.append(rec)
            if rec.signature_id:
                by_sig.setdefault(rec.signature_id, rec)
        save()
        return [_verdict(r) for r in recs]

    spares = fleet.width > 1  # with one host, none idles beside a batch

    def take(wait: bool = False) -> list[tuple[tuple[tuple[str, EditValue], ...], Verdict]]:
        """Spares (trials an idle host ran beside a batch) finished since (``wait``: and those still running):
        into the trials, their verdicts out to the search."""
        out = []
        for subset, rec in fleet.take_spares(wait=wait) if spares else []:
            rr.tell(f"  spare:  {describe_edits(subset)}: {rec.outcome} in {rec.phase} after {rec.seconds:.1f} s"
                    f" on {rec.host}" + (f": {rec.exception_type}" if rec.exception_type else ""))
            trials.append(rec)
            if rec.signature_id:
                by_sig.setdefault(rec.signature_id, rec)
            out.append((subset, _verdict(rec)))
        if out:
            save()
        return out

    def started(search: Search[tuple[str, EditValue]]) -> None:
        if spares:
            fleet.set_spares(search.spare)

    try:
        search = bisect(edits, test_many=test_many, width=fleet.width,
                        known=[(_subset_of(r), _verdict(r)) for r in known],
                        max_starts=params.max_starts or None, started=started, extras=take)
    finally:
        if spares:
            fleet.set_spares(None)  # the search is over (or failed): no spare starts after it
    take(wait=True)  # normally none: the search waits for its spares before its answer
    if fleet.spare_errors:
        rr.tell(f"  spares stopped: {fleet.spare_errors[0]!r} (the search went on with its batches alone)")
    culprits = culprit_entries(search, by_sig)
    guarantee = guarantee_entry(search)
    rr.set(culprits=culprits, guarantee=guarantee)
    rr.conclude(conclusion(culprits, trials, guarantee))


def _ledger_known(ledger: Ledger, prints: dict[str, str], uhash: str, edits: list[tuple[str, EditValue]],
                  redactor: Redactor) -> list[TrialRecord]:
    """Trials of earlier runs on these hosts (same fingerprint and unit text) of subsets of ``edits``, newest
    per subset; only those recorded with phase-carrying signatures (``signature_id``)."""
    if len(edits) > 12:
        return []
    subsets = [tuple(e for i, e in enumerate(edits) if mask >> i & 1) for mask in range(1, 2 ** len(edits))]
    return known_trials(ledger, prints, uhash, subsets, redactor)


def known_trials(ledger: Ledger, prints: dict[str, str], uhash: str, subsets: Sequence[Sequence[tuple[str, EditValue]]],
                 redactor: Redactor, *, host_of: Callable[[str], str] = str) -> list[TrialRecord]:
    """The ledger's trials of these edit sets on these hosts (``prints``: host -> fingerprint, a row's
    host read through ``host_of``) with this unit text, newest per set, in the order of ``subsets``;
    only ready ones and failures recorded with phase-carrying signatures (``signature_id``)."""
    frame = ledger.trials()
    if frame.empty or "signature_id" not in frame.columns:
        return []
    keys = {redactor.text(edits_key(tuple(s))): tuple(s) for s in subsets}
    hosts = frame["host"].map(lambda h: host_of(str(h)))
    ok = (hosts.map(lambda h: h in prints) & (frame["fingerprint"] == hosts.map(prints))
          & (frame["unit_hash"] == uhash) & frame["edits_key"].isin(list(keys)) & ~frame["reused"].astype(bool)
          & (frame["outcome"].eq("ready") | frame["signature_id"].notna()))
    hits = frame[ok]
    out: dict[str, TrialRecord] = {}
    for row in hits.sort_values("started_at").to_dict("records"):
        # a missing value reads back from Parquet as NaN: it is None in a trial (and in result.json)
        rec = _record_from_ledger({str(k): None if isinstance(v, float) and math.isnan(v) else v
                                   for k, v in row.items()})
        out[rec.edits_key] = rec
    return [out[k] for k in keys if k in out]


# -- what the notebook shows ----------------------------------------------------


def trials_frame(result: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for i, t in enumerate(result.get("trials", []), 1):
        rows.append({"#": i, "edits": describe_edits([(e[0], e[1]) for e in t["edits"]]), "outcome": t["outcome"],
                     "phase": t["phase"], "exception": t["exception_type"] or "", "signature": t["signature"] or "",
                     "seconds": t["seconds"], "reused": t["reused"], "host": t.get("host", "")})
    return pd.DataFrame(rows)


def guarantee_text(result: dict[str, Any]) -> str:
    """What the search proved, in words, with the sets left untested or unexplained (if any)."""
    g = result.get("guarantee") or {}
    lines = [str(g.get("statement", "")), f"Sets started or known: {g.get('sets_tested', 0)} of "
             f"{g.get('sets_total', 0)} (the full factorial)."]
    for key, words in (("untested", "Untested sets that could still show a culprit"),
                       ("unexplained", "Trials no fault of the guarantee's shape explains")):
        sets = g.get(key) or []
        if sets:
            lines.append(f"{words}: " + "; ".join(describe_edits([(e[0], e[1]) for e in s]) or "(none)"
                                                  for s in sets))
    return "\n".join(line for line in lines if line)


def culprits_frame(result: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame([{"edits": describe_edits([(e[0], e[1]) for e in c["edits"]]),
                          "exception": c["exception_type"] or "", "phase": c["phase"],
                          "signature": c["signature"], "signature_id": c.get("signature_id", ""),
                          "related": ", ".join(c.get("related") or []),
                          "blockers": describe_edits([(e[0], e[1]) for e in c.get("blockers") or []]),
                          "message": clip(c.get("message"), 160)}
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
        ['rb.culprits_frame(result)', 'print(rb.guarantee_text(result))'],
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
