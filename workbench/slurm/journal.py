"""A job's output file(s) as a journal frame: ``workbench journal slurm:NAME JOBID|SCRIPT``.

Slurm keeps no journal: a job's record is its output file (``StdOut``, and ``StdErr`` where it
is apart).  Each line becomes a row: ``unit`` the job's name, ``invocation`` the job id (so a
frame of several jobs splits per job as a unit's does per invocation), ``host`` the node that
wrote it (the task's node under ``srun --label``, task N on the job's N-th node), ``rank`` the
server's own prefix (``TP3``...) else ``task N`` from the label.  The file has no per-line
times: every row carries the job's start time plus its line number in microseconds (order kept).

:func:`follow_job` is ``journal -f``: the job's output as it is written, until the job ends.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Generator

import pandas as pd
import pyarrow as pa

from workbench.errors import UnitNotFound
from workbench.journal.frame import RAW_FIELDS, JournalFrame, build_frame
from workbench.slurm.base import base_job_name
from workbench.slurm.cluster import LOG_TAIL_BYTES, SlurmCluster
from workbench.slurm.facts import JobInfo

POLL_S = 1.0  # how often a followed job's state is asked while its output is quiet
DRAIN_S = 1.0  # after the job ended: lines still arriving within this long are shown
BATCH_LINES = 500  # a burst of output is shown in frames of at most this many lines

_LABEL = re.compile(r"^ {0,3}(\d+): ")


def jobs_for(cluster: SlurmCluster, target: str) -> list[JobInfo]:
    """The job ``target`` (an id), or every job Slurm still knows of script ``target`` (base job,
    variants and trials alike are named after nothing else: the base job's name only)."""
    if target.isdigit():
        job = cluster.job(target)
        if job.source == "sacct":
            raise UnitNotFound(f"{cluster.name}: job {target} {job.name} ended ({job.state}, exit {job.exit_status}) "
                               "and the controller has purged it: the accounting database records no output "
                               f"path (Slurm 22.05); the script's --output under {job.fields.get('WorkDir') or '?'} "
                               "holds it", host=cluster.host.name, unit=target)
        return [job]
    cluster.script_path(target)  # a bad name is refused before the scheduler is asked
    name = base_job_name(target)
    found = [j for j in cluster.jobs() if j.name == name]
    if not found:
        raise UnitNotFound(f"{cluster.name}: Slurm knows no job {name} (give the job id)",
                           host=cluster.host.name, unit=target)
    return found


def job_rows(job: JobInfo, text: str, *, first: int = 0, labelled: bool | None = None) -> dict[str, list[object]]:
    """The raw journal rows (:data:`RAW_FIELDS`) of one job's output (``first``: the number of the
    text's first line in the file; ``labelled``: ``srun --label`` lines, else guessed from the text)."""
    if labelled is None:
        labelled = len(job.nodes) > 1 or (bool(text) and all(_LABEL.match(x) for x in text.splitlines()[:20] if x))
    start = int(job.start_time.timestamp() * 1_000_000) if job.start_time else 0
    cols: dict[str, list[object]] = {k: [] for k in RAW_FIELDS}
    for i, line in enumerate(text.splitlines(), first):
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
    return _frame(cols, jobs[0].name if jobs else None)


def follow_job(cluster: SlurmCluster, job_id: str, *, stop: threading.Event | None = None, poll: float = POLL_S,
               on_event: Callable[[str, str], None] | None = None) -> Generator[JournalFrame, None, None]:
    """``journal -f``: frames of the job's output as it is written, until the job ends.

    The first frame is what the file held when following began (at most its last 8 MiB; the
    caller keeps the last N lines of it), each later one the lines written since.  A pending job
    is waited for (``on_event("pending", ...)``); once the job has ended (``on_event("ended",
    ...)``) lines still arriving within ``DRAIN_S`` are shown, then the iterator ends.  An ended
    job gives its whole output as one frame.  Only the job's standard output is followed."""
    halt = stop or threading.Event()
    emit = on_event or (lambda kind, text: None)
    job, said = cluster.job(job_id), None
    while not (job.running or job.finished):
        if (job.reason or "-") != said:  # once, and again when the reason it waits for changes
            said = job.reason or "-"
            emit("pending", f"job {job.job_id} {job.name} pending ({said})")
        if halt.wait(poll):
            return
        job = cluster.job(job_id)
    if job.finished or not job.stdout or job.stdout == "/dev/null":
        yield job_frame(cluster, [job])
        emit("ended", job.describe())
        return
    labelled = len(job.nodes) > 1
    size = _size(cluster, job.stdout)
    skip = max(0, size - LOG_TAIL_BYTES)  # where the stream starts: as log() reads an ended job's file
    stream = cluster.host.stream(["sh", "-c", 'exec tail -c "$1" -F -- "$2" 2>/dev/null', "tail", f"+{skip + 1}",
                                  job.stdout], tether=True)
    lines: list[str] = []
    seen, index, cut, backlog = 0, 0, skip > 0, True  # backlog: the lines the file held when following began
    asked, ended = time.monotonic(), None

    def frame() -> JournalFrame:
        nonlocal index, lines
        out = _frame(job_rows(job, "\n".join(lines), first=index, labelled=labelled), job.name)
        index, lines = index + len(lines), []
        return out

    try:
        while not halt.is_set():
            try:
                line = stream.readline(timeout=min(poll, 0.2))
            except EOFError:  # tail ended (the submit host went away): what came is shown
                break
            if line is not None:
                seen += len(line.encode("utf-8", "replace")) + 1
                if cut:  # the first line of a cut file is the end of one: dropped
                    cut = False
                    continue
                lines.append(line)
            if backlog:  # until the stream is past what the file held (or quiet: a last line not ended yet)
                if line is not None and seen < size - skip:
                    continue
                backlog = False
                yield frame()
            elif lines and (line is None or len(lines) >= BATCH_LINES):
                yield frame()
            now = time.monotonic()
            if ended is None and now - asked >= poll:
                job, asked = cluster.job(job_id), now
                ended = now if job.finished else None
            if ended is not None and line is None and now - ended >= DRAIN_S:
                break
    finally:
        stream.close()
    if lines:
        yield frame()
    if job.finished:
        emit("ended", job.describe())


def _size(cluster: SlurmCluster, path: str) -> int:
    """The file's size in bytes (0 where it is not there yet)."""
    res = cluster.host.run(["stat", "-c", "%s", "--", path], timeout=30)
    out = res.stdout.strip()
    return int(out) if res.ok and out.isdigit() else 0


def _frame(cols: dict[str, list[object]], unit: str | None) -> JournalFrame:
    table = pa.table({k: pa.array(cols[k], t) for k, t in RAW_FIELDS.items()})
    frame = build_frame(table, unit=unit)
    tasks = pd.Series(cols["identifier"], dtype="object", index=frame.index) if len(frame) == len(cols["identifier"]) \
        else None
    if tasks is not None:  # no server prefix: the srun --label task is the line's rank
        missing = frame["rank"].isna() & tasks.str.startswith("task ")
        frame["rank"] = frame["rank"].astype("object").where(~missing, tasks)
    return frame
