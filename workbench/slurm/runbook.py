"""The bisect runbook on a Slurm cluster: ``workbench run bisect -p host slurm:NAME``.

Where the bisect runbook's host is ``slurm:NAME`` it comes here: the base is a job script of
the cluster (``base_unit``: ``sglang-k26-ddtree.sbatch``), every trial is a job the scheduler
places (:func:`workbench.slurm.search.bisect_jobs`, ``max_parallel`` in flight), and the result
has the bisect runbook's shape (``result.json``, ``trials.parquet``).  A host is "restored" when
none of the run's jobs is pending or running any more: the jobs are named ``wb-<run id>-...`` so
that an interrupted run (Ctrl-C, SIGTERM, a killed kernel) can cancel exactly its own
(:func:`cancel_run_jobs`, also called by ``workbench run`` after the kernel is gone).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.redact import Redactor
from workbench.runbooks.outcome import caught_failure
from workbench.runs import Run
from workbench.slurm.cluster import JOB_PREFIX, SlurmCluster
from workbench.slurm.clusters import connect_cluster
from workbench.slurm.search import bisect_jobs
from workbench.slurm.trial import JobTrial
from workbench.trials import TrialRecord, signature_of
from workbench.variants import EditValue, describe_edits, normalize_edits


def job_tag(run_id: str) -> str:
    """The part of a job name that says which run submitted it."""
    return run_id


def run_jobs(cluster: SlurmCluster, run_id: str) -> list[str]:
    """The run's jobs Slurm still has pending or running."""
    prefix = f"{JOB_PREFIX}{job_tag(run_id)}-"
    return [j.job_id for j in cluster.jobs() if j.name.startswith(prefix) and not j.ended]


def cancel_run_jobs(cluster: SlurmCluster, run_id: str) -> list[str]:
    """Cancel what the run left pending or running; the ids that are still not ended after."""
    left = run_jobs(cluster, run_id)
    if left:
        cluster.cancel(left)
    return run_jobs(cluster, run_id)


def finish(spec: str, run_id: str, *, ssh_config: str = "") -> tuple[bool, str]:
    """``workbench run``'s clean-up of a ``slurm:NAME`` host after the kernel ended: (nothing left, note)."""
    try:
        cluster = connect_cluster(spec, ssh_config=ssh_config or None)
        left = cancel_run_jobs(cluster, run_id)
    except WorkbenchError as exc:
        return False, f"{spec}: could not cancel the run's jobs: {exc}"
    return not left, f"{spec}: " + (f"jobs still not ended: {', '.join(left)}" if left else "no job of the run left")


def open_cluster(params: Any) -> SlurmCluster:
    """The cluster of a runbook's ``slurm:NAME`` host with the run's ``partition``/``account``/``qos``."""
    spec = params.host if isinstance(getattr(params, "host", None), str) else params.hosts[0]
    cluster = connect_cluster(spec, ssh_config=params.ssh_config or None)
    for opt in ("partition", "account", "qos"):
        if getattr(params, opt, ""):
            setattr(cluster, opt, getattr(params, opt))
    return cluster


def leave_none(cluster: SlurmCluster | None, run_id: str, tell: Callable[[str], None]) -> list[str]:
    """Cancel whatever of the run is still pending or running; the ids still not ended (``["?"]``: unknown)."""
    if cluster is None:
        return []
    try:
        return cancel_run_jobs(cluster, run_id)
    except WorkbenchError as exc:
        tell(f"  could not check the run's jobs: {exc}")
        return ["?"]


def trial_line(trial: JobTrial) -> str:
    """One progress line for a trial job: outcome, phase, run time, job, node, and its wait in the queue apart."""
    wait = f", {trial.queue_seconds:.1f} s in the queue" if trial.queue_seconds is not None else ""
    return (f"          {describe_edits([tuple(e) for e in trial.edits]) or '(base)'}: {trial.outcome} in {trial.phase} "
            f"after {trial.run_seconds:.1f} s as job {trial.job_id} on {trial.node or '-'}{wait}"
            + (f": {trial.exception_type}" if trial.exception_type else ""))


def record_of(trial: JobTrial, *, base: str, base_text: str, cluster: str, fingerprint: str = "") -> TrialRecord:
    """The trial as a :class:`TrialRecord` (the signature in the runbooks' words, ids from it)."""
    return _record(trial, base=base, base_text=base_text, cluster=cluster, ended_at=time.time(),
                   fingerprint=fingerprint)


def _record(trial: JobTrial, *, base: str, base_text: str, cluster: str, ended_at: float,
            fingerprint: str = "") -> TrialRecord:
    rec = trial.record(base=base, base_text=base_text, cluster=cluster, fingerprint=fingerprint)
    rec.started_at = ended_at - trial.run_seconds
    if not trial.ok:
        rec.signature, rec.signature_id = signature_of(trial.exception_type, trial.message or trial.signature,
                                                       trial.phase)
    return rec


def cluster_host(host: str) -> str:
    """The ledger's host of a trial job: ``slurm:NAME`` of ``slurm:NAME/<node list>`` (the node the
    scheduler picked is no part of the key: the cluster's fingerprint covers its partition's nodes)."""
    return host.split("/", 1)[0]


def ledger_trials(params: Any, cluster: SlurmCluster, spec: str, base_text: str, subsets: Any,
                  redactor: Redactor, tell: Callable[[str], None]) -> tuple[str, list[TrialRecord]]:
    """The cluster's fingerprint and the trials of earlier runs of these edit sets on it with this script
    text (none with ``rerun``): the same keys as a host's trials (host, fingerprint, unit text, edits)."""
    from workbench.runbooks.bisect import known_trials
    from workbench.runs import Ledger
    from workbench.trials import unit_hash

    fingerprint = cluster.fingerprint()
    if params.rerun:
        return fingerprint, []
    known = known_trials(Ledger(params.data_dir), {spec: fingerprint}, unit_hash(base_text), subsets, redactor,
                         host_of=cluster_host)
    if known:
        tell(f"  reused from the ledger: {len(known)} trial(s)")
    return fingerprint, known


def bisect_run(params: Any, *, progress: Callable[[str], None] = print) -> tuple[Run, dict[str, Any]]:
    """The bisect runbook's ``run`` for ``params.host == "slurm:NAME"`` (``params``: its BisectParams)."""
    from workbench.runbooks.bisect import conclusion

    redactor = Redactor.for_params(params.model_dump())
    run_ = Run.create("bisect", data_dir=params.data_dir, run_id=params.run_id, redactor=redactor)
    edits = list(normalize_edits(params.edits))
    started = time.time()
    records: list[TrialRecord] = []
    reused: list[TrialRecord] = []  # earlier runs' trials of the same script on the same cluster (the ledger)
    queued: list[float] = []  # each trial's wait in the queue (apart from its run time)
    culprits: list[dict[str, Any]] = []
    guarantee: dict[str, Any] = {"complete": False, "statement": "The search did not finish.", "sets_tested": 0,
                                 "sets_total": 2 ** len(edits) - 1, "untested": [], "unexplained": []}
    failure: dict[str, str] | None = None
    cluster: SlurmCluster | None = None
    left: list[str] = []
    base_text = ""
    provenance: dict[str, Any] = {"host": params.host, "scheduler": "slurm"}

    def tell(line: str) -> None:
        progress(redactor.text(line))

    def save() -> None:
        if records or reused:
            run_.table("trials", pd.DataFrame([r.row() for r in reused + records]))

    def on_start(subset: tuple[tuple[str, EditValue], ...]) -> None:
        tell(f"  submit: {describe_edits(subset) or '(base)'}")

    fingerprint = ""

    def on_trial(trial: JobTrial) -> None:
        rec = _record(trial, base=params.base_unit, base_text=base_text, cluster=cluster.name if cluster else "",
                      ended_at=time.time(), fingerprint=fingerprint)
        records.append(rec)
        queued.append(trial.queue_seconds or 0.0)
        tell(trial_line(trial))
        save()

    try:
        cluster = open_cluster(params)
        base_text = cluster.read_script(params.base_unit).text
        provenance.update({"cluster": cluster.name, "partition": cluster.partition or "",
                           "max_parallel": params.max_parallel})
        subsets = [tuple(e for i, e in enumerate(edits) if m >> i & 1) for m in range(1, 2 ** len(edits))] \
            if len(edits) <= 12 else []
        fingerprint, known = ledger_trials(params, cluster, params.host, base_text, subsets, redactor, tell)
        provenance["fingerprint"] = fingerprint
        reused.extend(known)
        found = bisect_jobs(cluster, params.base_unit, edits, max_parallel=params.max_parallel, known=known,
                            max_starts=params.max_starts or None, on_trial=on_trial, on_start=on_start,
                            tag=job_tag(run_.id), timeout=params.start_timeout, health_path=params.health_path)
        for c in found.culprits:
            words, sig_id = signature_of(c["exception_type"], c["message"] or c["signature"], c["phase"])
            culprits.append({**c, "signature": words, "signature_id": sig_id, "related": []})
        g = found.guarantee
        guarantee = {**guarantee, "complete": bool(g.get("complete")), "statement": g.get("statement", ""),
                     "sets_tested": found.starts}
        left = found.jobs_left
    except WorkbenchError as exc:
        failure = caught_failure(exc)
    except KeyboardInterrupt:
        failure = {"kind": "interrupted", "message": "interrupted (the run's jobs were cancelled on the way out)"}
    if cluster is not None and (failure is not None or left):
        left = leave_none(cluster, run_.id, tell)
    finished = time.time()
    save()
    result = {
        "status": "ok" if failure is None else "failed",
        "host": params.host,
        "hosts": [params.host],
        "base_unit": params.base_unit,
        "edits": [[f, v] for f, v in edits],
        "culprits": culprits,
        "guarantee": guarantee,
        "trials": [{"edits": r.edits, "outcome": r.outcome, "phase": r.phase, "exception_type": r.exception_type,
                    "signature": r.signature, "signature_id": r.signature_id, "seconds": r.seconds,
                    "reused": r.reused, "host": r.host} for r in reused + records],
        "server_starts": len(records),
        "wall_seconds": round(finished - started, 2),
        "host_restored": cluster is not None and not left,
        "jobs_left": left,
        "queue_seconds": round(sum(queued), 2),
        "conclusion": conclusion(culprits, reused + records, guarantee) if failure is None else f"Run failed: {failure['message']}",
        "failure": failure,
        "started": started,
        "finished": finished,
        "params": params.model_dump(),
        "provenance": provenance,
    }
    run_.write_result(result)
    if failure and failure["kind"] == "interrupted":
        raise KeyboardInterrupt
    return run_, run_.result() or result
