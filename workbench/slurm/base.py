"""The base job: a cluster's job script run as the long-lived server, as a unit is on a host.

``workbench start slurm:NAME SCRIPT`` submits the script unchanged (its ``#SBATCH`` headers,
its own ``--time``) under the name ``wb-base-SCRIPT``, so that ``stop``, ``status`` and the
variants know it: a variant is a job of its own and leaves the base job alone unless told to
replace it (``variant --replace-base``: the base job is cancelled for the variant's verdict and
submitted again after).  ``stop`` cancels only that name's live jobs, or the one job id given.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from workbench.errors import ServiceError, UnitNotFound
from workbench.slurm.cluster import JOB_PREFIX, SlurmCluster
from workbench.slurm.facts import JobInfo
from workbench.slurm.trial import JobTrial, run_job_trial


class BaseJobRunning(ServiceError):
    """The script already has a live base job (``restart`` replaces it)."""


def base_job_name(script: str) -> str:
    """``wb-base-sglang-k26-ddtree.sbatch`` for ``/opt/jobs/sglang-k26-ddtree.sbatch``."""
    return JOB_PREFIX + "base-" + re.sub(r"[^A-Za-z0-9_.+-]", "_", posixpath.basename(script))


def base_jobs(cluster: SlurmCluster, script: str) -> list[JobInfo]:
    """The script's base jobs Slurm has not ended (pending, running, completing)."""
    name = base_job_name(script)
    return [j for j in cluster.jobs() if j.name == name and not j.ended]


def start_base(cluster: SlurmCluster, script: str, *, wait: bool = False, timeout: float = 900.0,
               health_path: str = "/health", on_event: Callable[[str, str], None] | None = None) -> JobTrial | str:
    """Submit the script as its base job: the job id, or with ``wait`` the verdict on its start
    (a ready job is left running; one that failed or timed out is cancelled)."""
    live = base_jobs(cluster, script)
    if live:
        raise BaseJobRunning(f"{cluster.name}: {script} already has base job {live[0].job_id} ({live[0].state}); "
                             "restart replaces it", host=cluster.host.name, unit=script)
    job = cluster.read_script(script)
    name = base_job_name(script)
    if not wait:
        return cluster.submit(job, job_name=name, time_limit=None)
    return run_job_trial(cluster, job, [], job_name=name, time_limit=None, timeout=timeout,
                         health_path=health_path, on_event=on_event, keep=True)


def stop_base(cluster: SlurmCluster, target: str) -> list[JobInfo]:
    """Cancel the base job of script ``target``, or the job ``target`` (an id): their last states."""
    if target.isdigit():
        job = cluster.job(target)  # JobNotFound (exit 2) for an unknown id
        return cluster.cancel([job.job_id]) if not job.ended else [job]
    cluster.script_path(target)  # a bad name is refused before the scheduler is asked
    live = base_jobs(cluster, target)
    if not live:
        raise UnitNotFound(f"{cluster.name}: no live base job of {target} (job {base_job_name(target)})",
                           host=cluster.host.name, unit=target)
    return cluster.cancel([j.job_id for j in live])
