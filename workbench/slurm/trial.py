"""A trial as a Slurm job: submit the edited job script, watch it start, classify, cancel.

The scheduler places the job; the trial follows the job's output file as the server writes
it (one :class:`~workbench.phases.PhaseTracker`, the same phases as a unit's journal) and
the job's state from ``scontrol``.  Verdicts:

* ready — the server said it is ready (and, where a port is known, its health URL answered
  from the submit host);
* failed — the job ended (the server exited) before that; the log is classified by
  :func:`workbench.trials.classify`, its phase is the last one the log entered (never
  ``serving`` before readiness);
* timeout — neither within ``timeout`` seconds of the job *starting* (the wait in the queue
  is not counted; it is reported apart as ``queue_seconds``).

Whatever happens (an error, Ctrl-C), the job is cancelled before the trial returns: a trial
leaves no job behind, and the job's ``--time`` limit is the dead-man switch should the
controller die first.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from workbench import signals
from workbench.errors import ConfigError, ServiceError, Stopped
from workbench.phases import PhaseTracker, PhaseTransition
from workbench.slurm.cluster import SlurmCluster
from workbench.slurm.facts import JobInfo
from workbench.slurm.script import JobScript
from workbench.trials import TrialRecord, classify, failure_phase, signature_of, unit_hash
from workbench.variants import EditValue, edits_key, normalize_edits

POLL_S = 1.0  # how often the scheduler is asked about the job while its log is quiet
DEFAULT_TIME_LIMIT = "30"  # minutes: the dead-man switch of every trial job
T = TypeVar("T")
R = TypeVar("R")

_LABEL = re.compile(r"^ {0,3}(\d+): ")  # ``srun --label``: the task number before each line


class TaskPhases:
    """The phases of a job's tasks, one tracker per task (``srun --label`` lines: ``1: [...]``).

    A multi-node server is one task per node writing to the same output file: the job is ready
    when task 0 (the node that serves HTTP) says so, and a failure's phase is that of the first
    task whose log showed a failure (else task 0's)."""

    def __init__(self, *, labelled: bool = False) -> None:
        self.labelled = labelled
        self.trackers: dict[str, PhaseTracker] = {}
        self.first_failed: str | None = None

    def feed(self, line: str) -> tuple[str, PhaseTransition | None]:
        m = _LABEL.match(line) if self.labelled else None
        task, text = (m.group(1), line[m.end():]) if m else ("0", line)
        tracker = self.trackers.setdefault(task, PhaseTracker())
        tr = tracker.feed(text)
        if self.first_failed is None and tracker.failure is not None:
            self.first_failed = task
        return task, tr

    @property
    def main(self) -> PhaseTracker:
        return self.trackers.get("0") or self.trackers.setdefault("0", PhaseTracker())

    @property
    def ready(self) -> bool:
        return self.main.ready

    @property
    def phase(self) -> str:
        return self.trackers[self.first_failed].phase if self.first_failed is not None else self.main.phase

    def unlabel(self, text: str) -> str:
        """The job's log without the task labels (for the classifier)."""
        return re.sub(r"(?m)^ {0,3}\d+: ", "", text) if self.labelled else text


class TrialStopped(ServiceError, Stopped):
    """The trial was told to stop (another trial failed, or the run was interrupted); its job is cancelled."""


@dataclass
class JobTrial:
    """What one trial job did."""

    edits: list[list[Any]]
    outcome: str  # ready | failed | timeout
    phase: str
    job_id: str
    node: str
    queue_seconds: float | None
    run_seconds: float
    exception_type: str | None = None
    signature: str | None = None  # readable: type, normalised message, phase (trials.signature_of)
    signature_id: str | None = None  # its hash id
    message: str | None = None
    state: str = ""  # the job's Slurm state when the trial ended
    reason: str = ""
    timeline: list[dict[str, Any]] = field(default_factory=list)
    log_excerpt: str = ""
    ranks: list[str] = field(default_factory=list)  # the ranks the root cause was seen on
    where: str = ""  # the root cause's innermost frame: "function (file.py:line)"

    @property
    def ok(self) -> bool:
        return self.outcome == "ready"

    def record(self, *, base: str, base_text: str, cluster: str, fingerprint: str = "") -> TrialRecord:
        return TrialRecord(
            edits=self.edits, outcome=self.outcome, phase=self.phase, exception_type=self.exception_type,
            signature=self.signature, signature_id=self.signature_id, message=self.message,
            seconds=round(self.run_seconds, 3),
            host=f"slurm:{cluster}/{self.node}" if self.node else f"slurm:{cluster}", base_unit=base,
            unit_hash=unit_hash(base_text), fingerprint=fingerprint, edits_key=edits_key(normalize_edits([tuple(e) for e in self.edits])),
            variant=self.job_id, invocation=self.job_id, reason=self.reason, timeline=self.timeline,
            log_excerpt=self.log_excerpt, ranks=list(self.ranks), where=self.where,
        )


def _health(cluster: SlurmCluster, node: str, port: int, path: str) -> bool:
    """GET http://node:port/path from the submit host (python3 there; no curl needed)."""
    code = ("import sys, urllib.request\n"
            "try:\n  r = urllib.request.urlopen(sys.argv[1], timeout=5); sys.exit(0 if r.status == 200 else 1)\n"
            "except Exception:\n  sys.exit(1)\n")
    return cluster.host.run(["python3", "-c", code, f"http://{node}:{port}{path}"], timeout=15).ok


def server_port(argv: Sequence[str]) -> int | None:
    for i, tok in enumerate(argv):
        if tok == "--port" and i + 1 < len(argv) and argv[i + 1].isdigit():
            return int(argv[i + 1])
        if tok.startswith("--port=") and tok[7:].isdigit():
            return int(tok[7:])
    return None


def run_job_trial(
    cluster: SlurmCluster,
    base: JobScript,
    edits: Mapping[str, EditValue] | Sequence[tuple[str, EditValue]],
    *,
    job_name: str = "trial",
    time_limit: str | None = DEFAULT_TIME_LIMIT,
    timeout: float = 600.0,
    queue_timeout: float = 3600.0,
    health_path: str = "/health",
    env: Mapping[str, str] | None = None,
    on_event: Callable[[str, str], None] | None = None,
    stop: threading.Event | None = None,
    while_ready: Callable[[JobInfo], None] | None = None,
    keep: bool = False,
) -> JobTrial:
    """Submit ``base`` + ``edits`` as one job and judge its start (see the module docstring).

    ``stop``: once set, the trial cancels its job and raises :class:`TrialStopped` (within ``POLL_S``).
    ``while_ready``: called with the job's info once it is ready, before the job is cancelled (a
    measurement of the server the job runs: the A/B and sweep runbooks); what it raises is raised
    after the job is cancelled.
    ``keep``: a job that became ready is left running (the base job of ``workbench start``); a job
    that failed or timed out is cancelled all the same."""
    if not (0 < timeout < float("inf") and 0 < queue_timeout < float("inf")):
        raise ConfigError(f"timeouts must be > 0 seconds (got {timeout}, {queue_timeout})")
    norm = normalize_edits(edits)
    variant = base.with_edits(norm)
    port = server_port(variant.argv)
    halt = stop or threading.Event()
    if halt.is_set():
        raise TrialStopped(f"{cluster.name}: trial {job_name} stopped before it was submitted")

    def pause() -> None:
        if halt.wait(POLL_S):
            raise TrialStopped(f"{cluster.name}: trial {job_name} (job {job_id}) stopped; its job is cancelled")

    job_id = cluster.submit(variant, job_name=job_name, time_limit=time_limit, env=env)
    emit = on_event or (lambda kind, text: None)
    emit("submitted", f"job {job_id}")
    tracker = TaskPhases()
    timeline: list[dict[str, Any]] = []  # each phase the log entered, seconds after the job started
    submitted = time.monotonic()
    try:
        info = cluster.job(job_id)
    except BaseException:  # the job exists: never leave it behind
        cluster.cancel([job_id])
        raise
    started: float | None = None
    outcome = "timeout"
    stream = None
    try:
        # 1. the queue: only the scheduler can say when the job starts, so ask it.
        while not (info.running or info.finished):
            if time.monotonic() - submitted > queue_timeout:
                emit("queued", f"job {job_id} still pending ({info.reason}) after {queue_timeout:.0f} s")
                break
            pause()
            info = _again(cluster, info)
        if info.running or info.finished:
            started = time.monotonic()
            emit("running", f"job {job_id} on {info.node_list} after {started - submitted:.1f} s in the queue")
        # 2. the start: follow the log line by line; ask the scheduler whenever it is quiet.
        tracker.labelled = len(info.nodes) > 1  # a job over several nodes: srun --label tells their lines apart
        if info.running and info.stdout:
            stream = cluster.host.stream(["tail", "-n", "+1", "-F", "--", info.stdout], tether=True)
        fed = 0  # lines of the log the tracker has read

        def feed(line: str) -> None:
            task, tr = tracker.feed(line.rstrip("\n"))
            if tr is not None and task == "0" and started is not None:
                timeline.append({"phase": tr.phase, "seconds": round(time.monotonic() - started, 3)})
                emit("phase", tr.phase)

        while started is not None:
            if halt.is_set():
                pause()
            line = stream.readline(timeout=POLL_S) if stream is not None else None
            if line is not None:
                fed += 1
                feed(line)
                if not tracker.ready:
                    if time.monotonic() - started > timeout:  # a log that never stops: still a deadline
                        break
                    continue
                info = _again(cluster, info)
                if port is None or not info.nodes or _health(cluster, cluster.node_addr(info.nodes[0]), port,
                                                             health_path):
                    outcome = "ready"
                    if while_ready is not None:
                        if halt.is_set():  # stopped as it became ready: nothing to measure
                            pause()
                        while_ready(info)
                    break
                continue
            if stream is None:
                pause()  # no log file to follow: the job's state is all there is
            info = _again(cluster, info)
            if info.finished:  # the server is gone, whatever Slurm still reaps
                outcome = "failed"
                if stream is not None:  # what the job wrote that the follower had not delivered yet (its
                    for rest in cluster.output_after(info, fed).splitlines():  # last phases are the timeline's)
                        feed(rest)
                break
            if time.monotonic() - started > timeout:
                break
        if started is not None and outcome == "timeout":
            emit("timeout", f"job {job_id} still {info.state} after {timeout:.0f} s, in {tracker.phase}")
    finally:
        if stream is not None:
            stream.close()
        last = info if info.ended or (keep and outcome == "ready") else cluster.cancel([job_id])[0]
    run_seconds = time.monotonic() - started if started is not None else 0.0
    trial = JobTrial(
        edits=[[f, list(v) if isinstance(v, tuple) else v] for f, v in norm],
        outcome=outcome, phase="serving" if outcome == "ready" else tracker.phase,
        job_id=job_id, node=info.node_list, queue_seconds=info.queue_seconds, run_seconds=run_seconds,
        state=last.state, reason=last.reason or "",
        timeline=timeline,
    )
    if outcome != "ready" and started is not None:  # a failure, or a start past its deadline: the log's end says why
        text = tracker.unlabel(cluster.log(info))
        trial.log_excerpt = "\n".join(text.splitlines()[-80:])
    if outcome == "failed":
        got = classify(text)
        trial.exception_type, trial.message = got["exception_type"], got["message"]
        trial.ranks, trial.where = list(got.get("ranks") or []), str(got.get("where") or "")
        trial.phase = failure_phase(tracker.phase, got["phase"], ready_seen=tracker.ready)
        exc, what = ((got["exception_type"], got["message"]) if got["signature"]
                     else (None, f"job {info.state.lower()} (exit {info.exit_status})"))
        trial.signature, trial.signature_id = signature_of(exc, what, trial.phase)
    emit("done", f"job {job_id}: {trial.outcome} in {trial.phase}")
    return trial


def _again(cluster: SlurmCluster, last: JobInfo) -> JobInfo:
    """The job's record now, its output files kept from ``last`` where the new one names none: a job
    the controller purged (``MinJobAge`` after its end, reached when polls come late) is answered by
    sacct, which keeps no output paths, and its log would read as empty."""
    info = cluster.job(last.job_id)
    if info.stdout is None and last.stdout:
        info = replace(info, stdout=last.stdout, stderr=last.stderr)
    return info


def in_flight(work: Callable[[T, threading.Event], R], items: Sequence[T], *, max_parallel: int,
              on_stop: Callable[[], Any] | None = None) -> list[R]:
    """``work(item, stop)`` for every item, at most ``max_parallel`` at once; results in order.

    Should one fail, or the caller be interrupted (Ctrl-C, SIGTERM), ``stop`` is set: trials not
    started never start, and those in flight cancel their jobs and return within ``POLL_S``.
    ``on_stop`` is then called before waiting for them: a trial measuring its ready server does not
    look at ``stop``, so the runbooks cancel the run's jobs there (the measurement then ends at once)."""
    if max_parallel < 1:
        raise ConfigError(f"max_parallel must be >= 1 (got {max_parallel})")
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=max_parallel)
    futures: list[Future[R]] = []
    try:  # (an interrupt may come as soon as the first item runs)
        for item in items:
            futures.append(pool.submit(work, item, stop))
        # woken now and then: a SIGTERM or Ctrl-C that another thread of the process received runs its handler in
        # the main thread only between waits (one long wait for a trial that measures would hold it back for minutes)
        while futures_wait(futures, timeout=signals.WAKE_S, return_when=FIRST_EXCEPTION).not_done:
            if any(f.done() and f.exception() is not None for f in futures):
                break
        return [f.result() for f in futures]
    except BaseException:
        stop.set()
        for f in futures:
            f.cancel()
        if on_stop is not None:
            on_stop()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def run_many(
    cluster: SlurmCluster,
    base: JobScript,
    edit_sets: Sequence[Sequence[tuple[str, EditValue]]],
    *,
    max_parallel: int = 1,
    **kwargs: Any,
) -> list[JobTrial]:
    """Several trials as jobs, at most ``max_parallel`` in flight; results in the given order."""
    return in_flight(lambda edits, stop: run_job_trial(cluster, base, edits, stop=stop, **kwargs),
                     list(edit_sets), max_parallel=max_parallel)
