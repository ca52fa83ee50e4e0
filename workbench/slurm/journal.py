"""A job's output file(s) as a journal frame: ``workbench journal slurm:NAME JOBID|SCRIPT``.

Slurm keeps no journal: a job's record is its output file (``StdOut``, and ``StdErr`` where it
is apart).  Each line becomes a row: ``unit`` the job's name, ``invocation`` the job id (so a
frame of several jobs splits per job as a unit's does per invocation), ``host`` the node that
wrote it (the task's node under ``srun --label``, task N on the job's N-th node), ``rank`` the
server's own prefix (``TP3``...) else ``task N`` from the label.  The file has no per-line
times: every row carries the job's start time plus its line number in microseconds (order kept).
"""

from __future__ import annotations

import re

import pandas as pd
import pyarrow as pa

from workbench.errors import UnitNotFound
from workbench.journal.frame import RAW_FIELDS, JournalFrame, build_frame
from workbench.slurm.base import base_job_name
from workbench.slurm.cluster import SlurmCluster
from workbench.slurm.facts import JobInfo

_LABEL = re.compile(r"^ {0,3}(\d+): ")


def jobs_for(cluster: SlurmCluster, target: str) -> list[JobInfo]:
    """The job ``target`` (an id), or every job Slurm still knows of script ``target`` (base job,
    variants and trials alike are named after nothing else: the base job's name only)."""
    if target.isdigit():
        return [cluster.job(target)]
    cluster.script_path(target)  # a bad name is refused before the scheduler is asked
    name = base_job_name(target)
    found = [j for j in cluster.jobs() if j.name == name]
    if not found:
        raise UnitNotFound(f"{cluster.name}: Slurm knows no job {name} (give the job id)",
                           host=cluster.host.name, unit=target)
    return found


def job_rows(job: JobInfo, text: str) -> dict[str, list[object]]:
    """The raw journal rows (:data:`RAW_FIELDS`) of one job's output."""
    labelled = len(job.nodes) > 1 or (bool(text) and all(_LABEL.match(x) for x in text.splitlines()[:20] if x))
    start = int(job.start_time.timestamp() * 1_000_000) if job.start_time else 0
    cols: dict[str, list[object]] = {k: [] for k in RAW_FIELDS}
    for i, line in enumerate(text.splitlines()):
        m = _LABEL.match(line) if labelled else None
        task = int(m.group(1)) if m else 0
        node = job.nodes[task] if task < len(job.nodes) else job.node_list
        row = {"usec": start + i, "cursor": f"{job.job_id}:{i}", "message": line[m.end():] if m else line,
               "pid": None, "priority": None, "identifier": f"task {task}" if m else "job",
               "host": node or None, "unit": job.name, "invocation": job.job_id, "origin": "unit",
               "message_id": None, "line_break": None, "stream": f"{job.job_id}/{task}", "n_dropped": 0}
        for k, v in row.items():
            cols[k].append(v)
    return cols


def job_frame(cluster: SlurmCluster, jobs: list[JobInfo]) -> JournalFrame:
    """The jobs' output as one frame, job after job (each job's lines in file order)."""
    cols: dict[str, list[object]] = {k: [] for k in RAW_FIELDS}
    for job in jobs:
        for k, v in job_rows(job, cluster.log(job)).items():
            cols[k].extend(v)
    table = pa.table({k: pa.array(cols[k], t) for k, t in RAW_FIELDS.items()})
    frame = build_frame(table, unit=jobs[0].name if jobs else None)
    tasks = pd.Series(cols["identifier"], dtype="object", index=frame.index) if len(frame) == len(cols["identifier"]) \
        else None
    if tasks is not None:  # no server prefix: the srun --label task is the line's rank
        missing = frame["rank"].isna() & tasks.str.startswith("task ")
        frame["rank"] = frame["rank"].astype("object").where(~missing, tasks)
    return frame
