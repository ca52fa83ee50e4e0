"""The A/B runbook on a Slurm cluster: ``workbench run ab -p host slurm:NAME``.

Where the A/B's one host is ``slurm:NAME`` it comes here: arm A is the job script ``base_unit``
(plus ``a_edits``), arm B the script plus ``edits``, each submitted as a job the scheduler places
(``max_parallel`` 1: A, then B; 2: both at once).  Once an arm's job is ready its server is swept
from the node the job runs on, reached by SSH as a Slurm user reaches the node of a running job
(:func:`workbench.runbooks.measure.sweep_unit`: load, GPU samples, ``/metrics``), and then the job
is cancelled (:func:`workbench.slurm.trial.run_job_trial` ``while_ready``).  A B that does not start
is the answer, classified like a bisect trial.  The result is the A/B's (speedup with intervals,
verdict), each arm's ``start`` with its job, node and wait in the queue apart from its start time.
Jobs are named ``wb-<run id>-ab-A|B``; whatever ends the run, those still pending or running are
cancelled on the way out (:func:`workbench.slurm.runbook.leave_none`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.hosts import closed_on
from workbench.runbooks.schemas import ABResult
from workbench.runbooks.skeleton import RunbookRun
from workbench.runs import Run
from workbench.slurm.cluster import SlurmCluster
from workbench.slurm.facts import JobInfo
from workbench.slurm.runbook import job_tag, leave_none, open_cluster, trial_line
from workbench.slurm.script import JobScript
from workbench.slurm.trial import JobTrial, in_flight, run_job_trial
from workbench.variants import EditValue, describe_edits, normalize_edits


def ab_run(params: Any, *, progress: Callable[[str], None] = print) -> tuple[Run, dict[str, Any]]:
    """The A/B runbook's ``run`` for ``params.hosts == ["slurm:NAME"]`` (``params``: its ABParams)."""
    from workbench.runbooks import measure
    from workbench.runbooks.ab import RUNBOOK, _HostRun, _keep, _outcome

    edits = list(normalize_edits(params.edits))
    a_edits = list(normalize_edits(params.a_edits)) if params.a_edits else []
    spec = params.hosts[0]
    hr = _HostRun(spec, params.repeats, 0)
    cluster: SlurmCluster | None = None
    lock = threading.Lock()
    with RunbookRun(RUNBOOK, params, ABResult, progress=progress, host_restored=True) as rr:
        try:
            cluster = open_cluster(params)
            script = cluster.read_script(params.base_unit)
            hr.provenance = {"host": spec, "scheduler": "slurm", "cluster": cluster.name,
                             "partition": cluster.partition or "", "max_parallel": params.max_parallel}
            hr.diff = f"B: {describe_edits(edits)}" + (f"; A: {describe_edits(a_edits)}" if a_edits else "")

            def arm(item: tuple[str, list[tuple[str, EditValue]]], stop: threading.Event | None) -> JobTrial:
                name, arm_edits = item
                variant: JobScript = script.with_edits(arm_edits)
                label = f"{name}: {describe_edits(arm_edits) or 'base'}"

                def sweep(info: JobInfo) -> None:  # the job is ready: measure its server from its node
                    # a job over several nodes: its server answers on the first (task 0's)
                    # stopped: its connections drop, however long the server takes to go (A then B: no
                    # stop, Ctrl-C reaches this thread itself)
                    with closed_on(cluster.node_host(info.head, ssh_config=params.ssh_config or None), stop) as node:
                        shape = measure.with_model(measure.server_shape(variant.argv), node, variant.argv, params)
                        rr.tell(f"{spec}: sweeping {name} on {info.head} (job {info.job_id}), "
                                f"{params.points_words()} x {params.repeats}")
                        series: list[pd.DataFrame] = []
                        out = measure.sweep_unit(node, shape.port, params, {"variant": label}, repeats=params.repeats,
                                                 series=series, stop=stop)
                        with lock:
                            hr.shapes[name] = shape
                            _keep(hr, name, out, series)

                rr.tell(f"{spec}: submitting {label}")
                trial = run_job_trial(cluster, script, arm_edits, job_name=f"{job_tag(rr.run.id)}-ab-{name}",
                                      stop=stop, timeout=params.start_timeout, health_path=params.health_path,
                                      while_ready=sweep)
                rr.tell(trial_line(trial))
                with lock:
                    hr.starts += 1
                    hr.arms[name] = {"unit": f"{params.base_unit} (job {trial.job_id})", "started": True,
                                     "start": {"outcome": trial.outcome, "phase": trial.phase,
                                               "seconds": round(trial.run_seconds, 2)},
                                     "job_id": trial.job_id, "node": trial.node,
                                     "queue_seconds": trial.queue_seconds}
                    if name == "B":
                        hr.variant = f"{params.base_unit} + {describe_edits(edits)} (job {trial.job_id})"
                        hr.arms["B"]["failure"] = None if trial.ok else {
                            "exception_type": trial.exception_type, "message": trial.message, "phase": trial.phase,
                            "signature": trial.signature}
                return trial

            items = [("A", a_edits), ("B", edits)]
            if params.max_parallel == 1:  # here, so Ctrl-C reaches the trial (which cancels its job)
                trials = [arm(items[0], None)]
                if trials[0].ok:  # an A that does not start leaves nothing to compare B with
                    trials.append(arm(items[1], None))
            else:
                trials = in_flight(arm, items, max_parallel=min(2, params.max_parallel),
                                   on_stop=lambda: leave_none(cluster, rr.run.id, rr.tell))
            if not trials[0].ok:
                hr.error = f"base_failed: A ({describe_edits(a_edits) or params.base_unit}) does not start: " \
                           f"{trials[0].outcome} in {trials[0].phase}"
        except WorkbenchError as exc:
            hr.error = f"error: {type(exc).__name__}: {exc}"
        finally:
            left = leave_none(cluster, rr.run.id, rr.tell)
            hr.restored = not left
            fields, failure, words = _outcome(params, rr.run, [hr], edits)
            rr.set(**fields, jobs_left=left,
                   queue_seconds=round(sum(a.get("queue_seconds") or 0.0 for a in hr.arms.values()), 2))
        if failure is not None:
            rr.fail(failure["kind"], failure["message"])
        if failure is None or fields["speedup"]:
            rr.conclude(words)
    return rr.run, rr.result
