"""Trials spread over several hosts of the same kind, in parallel, each host restored on its own.

One worker thread per host holds that host's :class:`~workbench.session.HostSession`
(lock, record, restore) and takes subsets from a shared queue, so ``n`` hosts
run ``n`` starts at a time.  A host that fails (lost link, restore error) stops
taking work; the others finish the queue.  Reuse from the ledger is the
caller's business (``lookup``), so a rerun starts nothing it already knows.
:class:`Fleet` also runs *spares*: a host with nothing of the current batch
to start asks the search (``set_spares``) for a set worth starting anyway.
"""

from __future__ import annotations

import functools
import queue
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench import signals
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
    """Run every subset once (or take it from ``lookup``); return results by subset and per-host reports.
    Interrupted (Ctrl-C, SIGTERM), it starts no more trials, tells the running ones to stop (``run_trial``'s
    ``stop``) and waits for each host's session to restore it before raising."""
    work: queue.Queue[Subset] = queue.Queue()
    for s in subsets:
        work.put(s)
    results: dict[Subset, TrialRecord] = {}
    lock = threading.Lock()
    reports = [HostReport(h.name) for h in hosts]

    stop = threading.Event()  # set when the caller is interrupted: no trial starts, the running ones stop

    def worker(host: Host, report: HostReport) -> None:
        session: HostSession | None = None
        try:
            made = HostSession(host, purpose=purpose, ready_timeout=timeout, lock_wait=lock_wait)
            with made:
                session = made
                text = made.svc.unit_text(base)
                report.fingerprint = host_fingerprint(host)
                uhash = unit_hash(text)
                if before:
                    before(made, report, text)
                while not stop.is_set():
                    try:
                        subset = work.get_nowait()
                    except queue.Empty:
                        break
                    rec = lookup(host.name, report.fingerprint, uhash, subset) if lookup else None
                    if rec is None:
                        try:
                            rec = run_trial(made, base, list(subset), health_path=health_path, timeout=timeout,
                                            fingerprint=report.fingerprint, stop=stop)
                        except BaseException:
                            if not stop.is_set():
                                work.put(subset)  # someone else may still run it
                            raise
                        report.trials += 1
                    with lock:
                        results[subset] = rec
                        if on_trial:
                            on_trial(rec)
            report.restored = made.restored
        except WorkbenchError as exc:
            report.error = f"{type(exc).__name__}: {exc}"
            report.restored = session is not None and session.restored  # its exit restored it (a stopped trial)

    signals.run_all([(f"fleet-{h.name}", functools.partial(worker, h, r)) for h, r in zip(hosts, reports, strict=True)],
                    on_interrupt=stop.set)  # Ctrl-C, SIGTERM: the running trials stop, each host restored by its session
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

    Spares: with a source set (``set_spares``), a host that finds no job while ``run`` waits asks it for a
    set (called under the fleet's lock with the sets queued, running or done and not yet handed back) and
    runs it as a normal trial (same ``run_trial``, the host restored at the end as always).  ``run`` never
    starts again a set running or done as a spare: it waits for that trial and returns its record;
    ``take_spares()`` hands back the other finished spares.  ``close()`` stops asking and waits for a
    running spare like any trial.  The source is asked only while ``run`` waits for a trial not yet done,
    so a search suspended on its batch (``Search.spare``) is never asked while it computes, and a host that
    ends the batch's last trial takes the next batch, not a spare.
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
        self.spare_errors: list[BaseException] = []  # a source that raised (it is not asked again)
        self._queue: deque[int] = deque()  # job ids waiting for a host
        self._subset: dict[int, Subset] = {}  # every job not yet handed back: queued, running or done
        self._spares: dict[Subset, int] = {}  # spares not claimed by run: running or done, not yet taken
        self._done: dict[int, TrialRecord] = {}
        self._source: Callable[[list[Subset]], Subset | None] | None = None
        self._waiting: list[int] = []  # the jobs run() waits for: the source is asked only while one is not done
        self._closing = False
        self._stop = threading.Event()  # set by an interrupted close: the trials running stop watching
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
            signals.wait_for(self._cond, lambda: self._ready == len(self.hosts))
        if not self._alive:
            self.close()
            raise self.errors[0]
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(drop_queued=exc[0] is not None)

    def close(self, *, drop_queued: bool = False) -> None:
        """No new spare; the queued jobs and the running trials (spares too) finish, then each host is
        restored. ``drop_queued`` (the search was interrupted or failed): no queued job starts, and the
        running trials stop watching their starts at once (``run_trial``'s ``stop``): no server is
        started after a Ctrl-C, and none is waited for."""
        with self._cond:
            self._source = None
            self._closing = True
            if drop_queued:
                self._stop.set()
                for k in self._queue:
                    self._subset.pop(k, None)
                self._queue.clear()
            self._cond.notify_all()
        for t in self._threads:
            t.join()

    def set_spares(self, source: Callable[[list[Subset]], Subset | None] | None) -> None:
        """Where a host that would idle gets a spare set (None: nowhere; set it so before the search ends)."""
        with self._cond:
            self._source = source
            self._cond.notify_all()

    def take_spares(self, *, wait: bool = False) -> list[tuple[Subset, TrialRecord]]:
        """The spares finished and not claimed by ``run``, in start order, each handed back once; ``wait``:
        first wait for the running ones (while a host is left)."""
        with self._cond:
            if wait:
                self._cond.wait_for(lambda: all(k in self._done for k in self._spares.values()) or not self._alive)
            out = []
            for s, k in sorted(self._spares.items(), key=lambda item: item[1]):
                if k in self._done:
                    del self._spares[s]
                    self._subset.pop(k, None)
                    out.append((s, self._done.pop(k)))
            return out

    def run(self, subsets: Sequence[Subset]) -> list[TrialRecord]:
        with self._cond:
            ids = []
            for s in subsets:
                k = self._spares.pop(s, None)  # running or done as a spare: its trial is this one
                if k is None:
                    k = self._next
                    self._next += 1
                    self._subset[k] = s
                    self._queue.append(k)
                ids.append(k)
            self._waiting = ids
            self._cond.notify_all()
            try:  # (a wait a Ctrl-C another thread received can cut short)
                signals.wait_for(self._cond, lambda: all(k in self._done for k in ids) or not self._alive)
            finally:
                self._waiting = []
            if not all(k in self._done for k in ids):
                raise self.errors[0]
            for k in ids:
                self._subset.pop(k, None)
            return [self._done.pop(k) for k in ids]

    def _take(self) -> tuple[int, Subset, bool] | None:
        """The next job for a free host (under the lock): a queued one, else a spare while run waits, else wait."""
        while True:
            if self._queue:
                k = self._queue.popleft()
                return k, self._subset[k], False
            if self._closing:
                return None
            if self._source is not None and any(k not in self._done for k in self._waiting):
                # run waits for a trial still running (a host that ends the batch's last one takes no spare)
                try:
                    s = self._source(list(self._subset.values()))
                except Exception as exc:  # a broken source costs the spares, never a host
                    self.spare_errors.append(exc)
                    self._source = None
                    s = None
                if s is not None and s not in self._spares and s not in self._subset.values():
                    k = self._next
                    self._next += 1
                    self._subset[k] = s
                    self._spares[s] = k
                    return k, s, True
            self._cond.wait()

    def _worker(self, host: Host, report: HostReport) -> None:
        opened = False
        turn = self._turn[host.name]
        session: HostSession | None = None  # once entered (locked, its record read)
        try:
            if turn:
                self._opened[turn - 1].wait()  # the host before this one (by name) is locked or given up
            made = HostSession(host, purpose=self.purpose, ready_timeout=self.timeout, lock_wait=self.lock_wait)
            try:
                made.__enter__()
                session = made
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
                    with self._cond:
                        job = self._take()
                    if job is None:
                        break
                    k, subset, spare = job
                    try:
                        rec = run_trial(session, self.base, list(subset), health_path=self.health_path,
                                        timeout=self.timeout, fingerprint=report.fingerprint, stop=self._stop)
                    except BaseException:
                        with self._cond:
                            if self._stop.is_set():  # stopped: nobody runs it again
                                self._subset.pop(k, None)
                            elif spare and self._spares.get(subset) == k:  # nobody waits for it: drop it
                                del self._spares[subset]
                                self._subset.pop(k, None)
                            else:
                                self._queue.appendleft(k)  # another host may still run it
                            self._cond.notify_all()
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
            report.restored = session is not None and session.restored  # its exit restored it (a stopped trial)
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
