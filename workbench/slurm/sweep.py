"""The sweep runbook on a Slurm cluster: ``workbench run sweep -p host slurm:NAME``.

Where the sweep's host is ``slurm:NAME`` it comes here: every configuration of the grid is the job
script ``base_unit`` with its edits, submitted as a job the scheduler places (``max_parallel`` in
flight); once a job is ready its server is swept from the node it runs on (reached by SSH, as a
Slurm user reaches the node of a running job: :func:`workbench.runbooks.measure.sweep_unit`), then
the job is cancelled (:func:`workbench.slurm.trial.run_job_trial` ``while_ready``).  A
configuration that does not start is recorded with its signature and the sweep goes on; one that
holds a culprit an earlier bisect of this script on this cluster found is skipped.  Each
configuration's row has its job, node and wait in the queue apart from its start time.  Jobs are
named ``wb-<run id>-sweep-N``; whatever ends the run, those still pending or running are cancelled
on the way out (:func:`workbench.slurm.runbook.leave_none`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from workbench.configsweep import Slo, expand_grid, holds_culprit
from workbench.hosts import closed_on
from workbench.runbooks.schemas import SweepResult
from workbench.runbooks.skeleton import RunbookRun
from workbench.runs import Run
from workbench.slurm.cluster import SlurmCluster
from workbench.slurm.facts import JobInfo
from workbench.slurm.runbook import job_tag, leave_none, open_cluster, trial_line
from workbench.slurm.trial import in_flight, run_job_trial
from workbench.variants import describe_edits


def sweep_run(params: Any, *, progress: Callable[[str], None] = print) -> tuple[Run, dict[str, Any]]:
    """The sweep runbook's ``run`` for ``params.host == "slurm:NAME"`` (``params``: its SweepParams)."""
    from workbench.runbooks import measure
    from workbench.runbooks.sweep import _summary, conclusion, known_culprits
    from workbench.runbooks.sweeppoints import Tables, measure_config

    configs = [list(c) for c in expand_grid(params.grid)]
    slo = Slo(params.slo_ttft_p99_ms, params.slo_tpot_p99_ms)
    cluster: SlurmCluster | None = None
    lock = threading.Lock()
    rows: list[dict[str, Any]] = [{"edits": [[f, v] for f, v in c], "outcome": "", "signature": None,
                                   "exception_type": None, "phase": None, "reason": None, "points": []}
                                  for c in configs]
    tables = Tables()
    with RunbookRun("sweep", params, SweepResult, progress=progress, host_restored=True) as rr:
        culprits = known_culprits(params.data_dir, params.host, params.base_unit) if params.skip_known_culprits else []
        rr.set(host=params.host, base_unit=params.base_unit, grid=params.grid,
               slo={"ttft_p99_ms": slo.ttft_p99_ms, "tpot_p99_ms": slo.tpot_p99_ms},
               concurrency=[] if params.request_rate else params.concurrency, request_rate=params.request_rate,
               repeats=params.repeats, configs=rows, server_starts=0)
        n = len(configs)
        try:
            cluster = open_cluster(params)
            script = cluster.read_script(params.base_unit)
            rr.provenance = {"host": params.host, "scheduler": "slurm", "cluster": cluster.name,
                             "partition": cluster.partition or "", "max_parallel": params.max_parallel}

            def one(i: int, stop: threading.Event) -> None:
                edits, row = configs[i], rows[i]
                hit = holds_culprit(tuple(edits), culprits)
                if hit is not None:
                    row.update(outcome="skipped", reason=f"holds the culprit {describe_edits(hit)} found by an earlier bisect")
                    rr.tell(f"[{i + 1}/{n}] {describe_edits(edits)}: skipped ({row['reason']})")
                    return
                variant = script.with_edits(edits)

                def sweep(info: JobInfo) -> None:  # the job is ready: measure its server from its node
                    # a job over several nodes: its server answers on the first (task 0's)
                    # stopped (Ctrl-C, SIGTERM): its connections drop, however long the server takes to go
                    with closed_on(cluster.node_host(info.head, ssh_config=params.ssh_config or None), stop) as node:
                        shape = measure.server_shape(variant.argv)
                        rr.tell(f"[{i + 1}/{n}] sweeping {describe_edits(edits)} on {info.head} (job {info.job_id})")
                        pts, limit = measure_config(node, shape.port, params, i, shape.tp or 1, slo, tables, rr.tell,
                                                    stop=stop)
                        row.update(points=pts, **({"slo_limit": limit} if limit else {}))

                rr.tell(f"[{i + 1}/{n}] submitting {describe_edits(edits)}")
                trial = run_job_trial(cluster, script, edits, job_name=f"{job_tag(rr.run.id)}-sweep-{i + 1}", stop=stop,
                                      timeout=params.start_timeout, health_path=params.health_path, while_ready=sweep)
                rr.tell(trial_line(trial))
                with lock:
                    rr.set(server_starts=rr.fields["server_starts"] + 1)
                row.update(outcome=trial.outcome, phase=trial.phase, job_id=trial.job_id, node=trial.node,
                           queue_seconds=trial.queue_seconds, start_seconds=round(trial.run_seconds, 2))
                if not trial.ok:
                    row.update(signature=trial.signature, exception_type=trial.exception_type,
                               reason=(trial.message or trial.reason or "")[:300])

            in_flight(one, list(range(n)), max_parallel=params.max_parallel,
                      on_stop=lambda: leave_none(cluster, rr.run.id, rr.tell))
        finally:  # what was measured is kept, whatever ended the sweep; no job of the run is left
            left = leave_none(cluster, rr.run.id, rr.tell)
            if not all(r["outcome"] for r in rows):  # interrupted: the configurations reached, as the unit sweep
                rows = [r for r in rows if r["outcome"]]
                rr.set(configs=rows)
            rr.set(host_restored=not left, jobs_left=left,
                   queue_seconds=round(sum(r.get("queue_seconds") or 0.0 for r in rows), 2))
            best = _summary(rr, rows, tables, slo)
        rr.conclude(conclusion(rows, best, slo, None))
    return rr.run, rr.result
