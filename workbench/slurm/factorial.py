"""The factorial runbook on a Slurm cluster: ``workbench run factorial -p host slurm:NAME``.

Where the factorial's one host is ``slurm:NAME`` it comes here: the base is a job script of the
cluster, every combination of the factors (the base itself included) is one job the scheduler
places, ``max_parallel`` in flight (:func:`workbench.slurm.trial.in_flight`), and the result has
the factorial's shape (matrix, causes, factors without effect), each row with its job's wait in the
queue apart from its run time.  Jobs are named ``wb-<run id>-factorial-N``: whatever ends the run
(Ctrl-C, SIGTERM, an error), the run's jobs still pending or running are cancelled on the way out
(:func:`workbench.slurm.runbook.leave_none`), and ``host_restored`` says none is left.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pandas as pd

from workbench.runbooks.schemas import FactorialResult
from workbench.runbooks.skeleton import RunbookRun
from workbench.runs import Run
from workbench.slurm.cluster import SlurmCluster
from workbench.slurm.runbook import (
    job_tag,
    leave_none,
    ledger_trials,
    open_cluster,
    record_of,
    trial_line,
)
from workbench.slurm.trial import in_flight, run_job_trial
from workbench.trials import TrialRecord
from workbench.variants import EditValue, describe_edits, edits_key, normalize_edits

Subset = tuple[tuple[str, EditValue], ...]


def factorial_run(params: Any, *, progress: Callable[[str], None] = print) -> tuple[Run, dict[str, Any]]:
    """The factorial runbook's ``run`` for ``params.hosts == ["slurm:NAME"]`` (``params``: its FactorialParams)."""
    from workbench.runbooks.factorial import RUNBOOK, _matrix, analyse, combinations

    factors = normalize_edits(params.factors)
    cluster: SlurmCluster | None = None
    lock = threading.Lock()
    records: list[tuple[TrialRecord, float | None]] = []
    with RunbookRun(RUNBOOK, params, FactorialResult, progress=progress, host_restored=True) as rr:
        rr.set(hosts=params.hosts, base_unit=params.base_unit, factors=[[f, v] for f, v in factors])
        try:
            cluster = open_cluster(params)
            script = cluster.read_script(params.base_unit)
            rr.provenance.update({"host": params.hosts[0], "scheduler": "slurm", "cluster": cluster.name,
                                  "partition": cluster.partition or "", "max_parallel": params.max_parallel})
            subsets = combinations(factors)
            name = cluster.name
            fingerprint, known = ledger_trials(params, cluster, params.hosts[0], script.text, subsets, rr.redactor,
                                               rr.tell)
            rr.provenance["fingerprint"] = fingerprint
            by_key = {rec.edits_key: rec for rec in known}
            results: dict[Subset, TrialRecord] = {}
            for subset in subsets:  # a combination the ledger has costs no job
                hit = by_key.get(rr.redactor.text(edits_key(subset)))
                if hit is not None:
                    results[subset] = hit
                    records.append((hit, None))
                    rr.tell(f"  reused: {describe_edits(subset) or '(base)'}: {hit.outcome} in {hit.phase} "
                            f"(job {hit.invocation} on {hit.host})")

            def save() -> None:
                rr.table("trials", pd.DataFrame([{**r.row(), "queue_seconds": q} for r, q in records]))

            def one(item: tuple[int, Subset], stop: threading.Event) -> TrialRecord:
                n, subset = item
                rr.tell(f"  submit: {describe_edits(subset) or '(base)'}")
                trial = run_job_trial(cluster, script, list(subset), job_name=f"{job_tag(rr.run.id)}-factorial-{n}",
                                      stop=stop, timeout=params.start_timeout, health_path=params.health_path)
                rec = record_of(trial, base=params.base_unit, base_text=script.text, cluster=name,
                                fingerprint=fingerprint)
                rr.tell(trial_line(trial))
                with lock:
                    records.append((rec, trial.queue_seconds))
                    save()
                return rec

            if records:
                save()

            todo = [(n, s) for n, s in enumerate(subsets, 1) if s not in results]
            done = in_flight(one, todo, max_parallel=params.max_parallel)
            results.update({s: rec for (_, s), rec in zip(todo, done, strict=True)})
        finally:
            left = leave_none(cluster, rr.run.id, rr.tell)
            rr.set(host_restored=not left, jobs_left=left, server_starts=sum(not r.reused for r, _ in records),
                   queue_seconds=round(sum(q or 0.0 for _, q in records), 2))
        waits = {id(r): q for r, q in records}
        matrix = _matrix(factors, results)
        for row, subset in zip(matrix, subsets, strict=True):
            row["queue_seconds"] = waits.get(id(results[subset]))
            row["job_id"] = results[subset].invocation
        causes, no_effect, words = analyse(factors, results)
        rr.set(matrix=matrix)
        rr.conclude(words, causes=causes, no_effect=no_effect)
    return rr.run, rr.result
