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
