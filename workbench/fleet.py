"""Trials spread over several hosts of the same kind, in parallel, each host restored on its own.

One worker thread per host holds that host's :class:`~workbench.session.HostSession`
(lock, record, restore) and takes subsets from a shared queue, so ``n`` hosts
run ``n`` starts at a time.  A host that fails (lost link, restore error) stops
taking work; the others finish the queue.  Reuse from the ledger is the
caller's business (``lookup``), so a rerun starts nothing it already knows.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import WorkbenchError
from workbench.hosts import Host
from workbench.session import HostSession
from workbench.trials import TrialRecord, host_fingerprint, run_trial, unit_hash
from workbench.variants import EditValue, edits_key

Subset = tuple[tuple[str, EditValue], ...]


@dataclass
class HostReport:
    host: str
    restored: bool = False
    error: str | None = None
    trials: int = 0
    fingerprint: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)


def run_many(
    hosts: Sequence[Host],
    base: str,
    subsets: Sequence[Subset],
    *,
    lookup: Callable[[str, str, str, Subset], TrialRecord | None] | None = None,
    on_trial: Callable[[TrialRecord], None] | None = None,
    health_path: str = "/health",
    timeout: float = 900.0,
    purpose: str = "",
    before: Callable[[HostSession, HostReport, str], None] | None = None,
    lock_wait: float = 0.0,
) -> tuple[dict[Subset, TrialRecord], list[HostReport]]:
    """Run every subset once (or take it from ``lookup``); return results by subset and per-host reports."""
    work: queue.Queue[Subset] = queue.Queue()
    for s in subsets:
        work.put(s)
    results: dict[Subset, TrialRecord] = {}
    lock = threading.Lock()
    reports = [HostReport(h.name) for h in hosts]

    def worker(host: Host, report: HostReport) -> None:
        try:
            session = HostSession(host, purpose=purpose, ready_timeout=timeout, lock_wait=lock_wait)
            with session:
                text = session.svc.unit_text(base)
                report.fingerprint = host_fingerprint(host)
                uhash = unit_hash(text)
                if before:
                    before(session, report, text)
                while True:
                    try:
                        subset = work.get_nowait()
                    except queue.Empty:
                        break
                    rec = lookup(host.name, report.fingerprint, uhash, subset) if lookup else None
                    if rec is None:
                        try:
                            rec = run_trial(session, base, list(subset), health_path=health_path, timeout=timeout,
                                            fingerprint=report.fingerprint)
                        except BaseException:
                            work.put(subset)  # someone else may still run it
                            raise
                        report.trials += 1
                    with lock:
                        results[subset] = rec
                        if on_trial:
                            on_trial(rec)
            report.restored = session.restored
        except WorkbenchError as exc:
            report.error = f"{type(exc).__name__}: {exc}"

    threads = [threading.Thread(target=worker, args=(h, r), name=f"fleet-{h.name}", daemon=True)
               for h, r in zip(hosts, reports, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, reports


def key_of(subset: Subset) -> str:
    return edits_key(subset)


class Fleet:
    """Equal hosts, each held in its own :class:`HostSession` by one worker thread for a whole search.

    ``run(subsets)`` starts up to one trial per host at the same time and returns the records in the
    order given; each host is restored on its own when the fleet closes (or when its worker fails).
    A host that fails stops taking work and its trial goes back to the others; when none is left,
    ``run`` raises the first host's error (so a caller maps it to a failure kind as for one host).
    ``setup(session, report, base_text)`` runs on each host once its session is open, ``teardown(session)``
    before it closes.  Hosts are locked one after the other in name order (never two waits at once), so
    two fleets, or a fleet and a two-host test, that want the same hosts cannot hold one each and wait.
    """

    def __init__(self, hosts: Sequence[Host], base: str, *, purpose: str = "", health_path: str = "/health",
                 timeout: float = 900.0, lock_wait: float = 0.0,
                 setup: Callable[[HostSession, HostReport, str], None] | None = None,
                 teardown: Callable[[HostSession], None] | None = None) -> None:
        self.hosts = list(hosts)
        self.teardown = teardown
        order = sorted(range(len(self.hosts)), key=lambda i: self.hosts[i].name)
        self._turn = {self.hosts[i].name: k for k, i in enumerate(order)}  # lock order: by name
        self._opened = [threading.Event() for _ in self.hosts]
        self.base = base
        self.purpose, self.health_path, self.timeout, self.lock_wait = purpose, health_path, timeout, lock_wait
        self.setup = setup
        self.reports = [HostReport(h.name) for h in self.hosts]
        self.errors: list[BaseException] = []
        self._jobs: queue.Queue[tuple[int, Subset] | None] = queue.Queue()
        self._done: dict[int, TrialRecord] = {}
        self._cond = threading.Condition()
        self._ready = 0
        self._alive = 0
        self._threads: list[threading.Thread] = []
        self._next = 0

    @property
    def width(self) -> int:
        return max(self._alive, 1)

    def __enter__(self) -> Fleet:
        for h, r in zip(self.hosts, self.reports, strict=True):
            t = threading.Thread(target=self._worker, args=(h, r), name=f"fleet-{h.name}", daemon=True)
            self._threads.append(t)
            t.start()
        with self._cond:
            self._cond.wait_for(lambda: self._ready == len(self.hosts))
        if not self._alive:
            self.close()
            raise self.errors[0]
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)
        for t in self._threads:
            t.join()

    def run(self, subsets: Sequence[Subset]) -> list[TrialRecord]:
        with self._cond:
            start = self._next
            ids = list(range(start, start + len(subsets)))
            self._next = start + len(subsets)
        for k, s in zip(ids, subsets, strict=True):
            self._jobs.put((k, s))
        with self._cond:
            self._cond.wait_for(lambda: all(k in self._done for k in ids) or not self._alive)
            if not all(k in self._done for k in ids):
                raise self.errors[0]
            return [self._done.pop(k) for k in ids]

    def _worker(self, host: Host, report: HostReport) -> None:
        opened = False
        turn = self._turn[host.name]
        try:
            if turn:
                self._opened[turn - 1].wait()  # the host before this one (by name) is locked or given up
            session = HostSession(host, purpose=self.purpose, ready_timeout=self.timeout, lock_wait=self.lock_wait)
            try:
                session.__enter__()
            finally:
                self._opened[turn].set()
            with _Entered(session):
                text = session.base_text(self.base)
                report.fingerprint = host_fingerprint(host)
                if self.setup:
                    self.setup(session, report, text)
                with self._cond:
                    self._ready += 1
                    self._alive += 1
                    opened = True
                    self._cond.notify_all()
                while True:
                    job = self._jobs.get()
                    if job is None:
                        break
                    k, subset = job
                    try:
                        rec = run_trial(session, self.base, list(subset), health_path=self.health_path,
                                        timeout=self.timeout, fingerprint=report.fingerprint)
                    except BaseException:
                        self._jobs.put(job)  # another host may still run it
                        raise
                    report.trials += 1
                    with self._cond:
                        self._done[k] = rec
                        self._cond.notify_all()
                if self.teardown:
                    self.teardown(session)
            report.restored = session.restored
        except BaseException as exc:  # kept for the caller; a worker thread has no one else to tell
            self._opened[turn].set()
            report.error = f"{type(exc).__name__}: {exc}"
            with self._cond:
                self.errors.append(exc)
                if opened:
                    self._alive -= 1
                else:
                    self._ready += 1
                self._cond.notify_all()


class _Entered:
    """Exit (restore, unlock) a session that was entered already."""

    def __init__(self, session: HostSession) -> None:
        self.session = session

    def __enter__(self) -> HostSession:
        return self.session

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.session.__exit__(exc_type, exc, tb)
