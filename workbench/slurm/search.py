"""Bisect and factorial over a Slurm cluster: every trial a job, the scheduler places it.

:func:`bisect_jobs` drives :func:`workbench.bisect.bisect` with an oracle whose every call is
one job (:func:`workbench.slurm.trial.run_job_trial`); :func:`factorial_jobs` runs every
subset of the edits with up to ``max_parallel`` jobs in flight.  Cancelling (Ctrl-C, an
error) cancels the jobs in flight: each trial cancels its own job on the way out, and the
pool is shut down with its queued trials dropped.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.bisect import Verdict, bisect
from workbench.errors import ConfigError
from workbench.slurm.cluster import SlurmCluster
from workbench.slurm.trial import JobTrial, in_flight, run_job_trial
from workbench.trials import TrialRecord, signature_of
from workbench.variants import EditValue, describe_edits, normalize_edits


@dataclass
class JobSearch:
    """What a search over jobs found and what it cost."""

    cluster: str
    base: str
    edits: list[list[Any]]
    culprits: list[dict[str, Any]]
    trials: list[JobTrial]
    wall_seconds: float
    jobs_left: list[str] = field(default_factory=list)  # workbench jobs still pending or running after the search
    guarantee: dict[str, Any] = field(default_factory=dict)  # what the bisect proved (workbench.bisect)

    @property
    def starts(self) -> int:
        return len(self.trials)

    @property
    def queue_seconds(self) -> float:
        return sum(t.queue_seconds or 0.0 for t in self.trials)

    def conclusion(self) -> str:
        if not self.culprits:
            return f"no culprit: every failing set was explained away ({self.starts} jobs)"
        parts = [f"{describe_edits([tuple(e) for e in c['edits']])} -> {c['exception_type'] or 'failure'} "
                 f"in {c['phase']}" for c in self.culprits]
        return (f"{len(self.culprits)} culprit(s) in {self.starts} jobs on slurm:{self.cluster}: "
                + "; ".join(parts) + f" (queue wait {self.queue_seconds:.1f} s, wall {self.wall_seconds:.1f} s)")


def _left(cluster: SlurmCluster, job_ids: set[str]) -> list[str]:
    return [j.job_id for j in cluster.jobs() if j.job_id in job_ids and not j.ended]


def bisect_jobs(
    cluster: SlurmCluster,
    base: str,
    edits: Sequence[tuple[str, EditValue]] | dict[str, EditValue],
    *,
    max_parallel: int = 1,
    max_starts: int | None = None,
    on_trial: Callable[[JobTrial], None] | None = None,
    on_start: Callable[[tuple[tuple[str, EditValue], ...]], None] | None = None,
    tag: str = "",
    known: Sequence[TrialRecord] = (),
    **trial_kwargs: Any,
) -> JobSearch:
    """Every minimal culprit of ``edits`` on the job script ``base``, one job per trial, up to
    ``max_parallel`` jobs in flight (the search's independent trials of one step go out together).
    ``known``: trials of earlier runs (the ledger's) that cost no job.

    Jobs are named ``wb-[TAG-]bisect-N``; an interruption cancels the jobs in flight (see
    :func:`~workbench.slurm.trial.in_flight`)."""
    if max_parallel < 1:
        raise ConfigError(f"max_parallel must be >= 1 (got {max_parallel})")
    norm = normalize_edits(edits)
    if not norm:
        raise ConfigError("bisect needs at least one edit")
    script = cluster.read_script(base)
    started = time.monotonic()
    trials: list[JobTrial] = []
    by_sig: dict[str, JobTrial | TrialRecord] = {}
    given: list[tuple[tuple[tuple[str, EditValue], ...], Verdict]] = []
    for rec in known:
        subset = tuple((str(e[0]), tuple(e[1]) if isinstance(e[1], list) else e[1]) for e in rec.edits)
        if rec.outcome == "ready":
            given.append((subset, Verdict.passed()))
            continue
        key = f"{rec.signature}|{rec.phase}"
        by_sig.setdefault(key, rec)
        given.append((subset, Verdict.failed(key, rec.phase)))

    prefix = f"{tag}-bisect" if tag else "bisect"

    def one(item: tuple[int, tuple[tuple[str, EditValue], ...]], stop: Any) -> JobTrial:
        n, subset = item
        if on_start:
            on_start(subset)
        return run_job_trial(cluster, script, list(subset), job_name=f"{prefix}-{n}", stop=stop, **trial_kwargs)

    def test_many(batch: list[tuple[tuple[str, EditValue], ...]]) -> list[Verdict]:
        first = len(trials) + 1
        done = in_flight(one, list(enumerate(batch, first)), max_parallel=max_parallel)
        verdicts = []
        for trial in done:
            trials.append(trial)
            if on_trial:
                on_trial(trial)
            if trial.ok:
                verdicts.append(Verdict.passed())
                continue
            # the same exception in another phase is another failure; the words of the trial's record
            # (runbook.record_of), so that a failure known from the ledger is the same one
            key = f"{signature_of(trial.exception_type, trial.message or trial.signature, trial.phase)[0]}|{trial.phase}"
            by_sig.setdefault(key, trial)
            verdicts.append(Verdict.failed(key, trial.phase))
        return verdicts

    search = bisect(norm, test_many=test_many, width=max_parallel, max_starts=max_starts, known=given)
    culprits = []
    for c in search.culprits:
        t = by_sig[c.signature]
        culprits.append({"edits": [[f, v] for f, v in c.items], "signature": t.signature, "phase": t.phase,
                         "exception_type": t.exception_type, "message": t.message,
                         "blockers": [[f, v] for f, v in c.blockers],
                         **({"ranks": list(t.ranks)} if t.ranks else {}), **({"where": t.where} if t.where else {})})
    return JobSearch(cluster.name, base, [[f, v] for f, v in norm], culprits, trials,
                     time.monotonic() - started, _left(cluster, {t.job_id for t in trials}),
                     guarantee=_guarantee(search))


def _guarantee(search: Any) -> dict[str, Any]:
    g = getattr(search, "guarantee", None)
    if g is None:
        return {}
    return {k: getattr(g, k) for k in ("complete", "statement") if hasattr(g, k)}


def factorial_jobs(
    cluster: SlurmCluster,
    base: str,
    edits: Sequence[tuple[str, EditValue]] | dict[str, EditValue],
    *,
    max_parallel: int = 1,
    tag: str = "",
    **trial_kwargs: Any,
) -> JobSearch:
    """Every non-empty subset of ``edits`` as a job, ``max_parallel`` in flight."""
    if max_parallel < 1:
        raise ConfigError(f"max_parallel must be >= 1 (got {max_parallel})")
    norm = normalize_edits(edits)
    if not norm or len(norm) > 10:
        raise ConfigError(f"a factorial takes 1 to 10 edits (got {len(norm)}: 2^n - 1 jobs)")
    script = cluster.read_script(base)
    subsets = [s for r in range(1, len(norm) + 1) for s in itertools.combinations(norm, r)]
    started = time.monotonic()
    prefix = f"{tag}-factorial" if tag else "factorial"
    trials = in_flight(lambda item, stop: run_job_trial(cluster, script, list(item[1]), job_name=f"{prefix}-{item[0]}",
                                                        stop=stop, **trial_kwargs),
                       list(enumerate(subsets, 1)), max_parallel=max_parallel)
    failing = {tuple(map(tuple, t.edits)): t for t in trials if not t.ok}
    culprits = []
    for key, t in sorted(failing.items(), key=lambda kv: len(kv[0])):
        sig = (t.signature, t.phase)
        smaller = [k for k, o in failing.items() if set(k) < set(key) and (o.signature, o.phase) == sig]
        if not smaller:
            culprits.append({"edits": [list(e) for e in key], "signature": t.signature, "phase": t.phase,
                             "exception_type": t.exception_type, "message": t.message})
    return JobSearch(cluster.name, base, [[f, v] for f, v in norm], culprits, trials,
                     time.monotonic() - started, _left(cluster, {t.job_id for t in trials}))
