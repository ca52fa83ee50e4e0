"""The one skeleton of every runbook: params validated → redactor → run dir → host session(s) →
typed result → report.

::

    with RunbookRun("benchmark", params, BenchmarkResult, kinds=((LockHeld, "host_locked"),)) as rr:
        rr.set(host=params.host, unit=params.unit)
        host = rr.connect(params.host)                 # closed on the way out
        with rr.session(host, lock_wait=params.lock_wait) as s:   # locked, recorded, restored
            ...
        rr.table("results", frame)
        rr.conclude("what it found, in words", points=pts)
    return rr.run, rr.result

``params`` arrive validated (the runbook's pydantic model, checked before the kernel).  The
redactor knows their secrets; the run directory is made at once.  A :class:`WorkbenchError`
raised in the block is the run's failure (its kind from ``kinds``, else ``error``) and is not
raised further; Ctrl-C records ``interrupted`` and is raised on (the sessions restored their
hosts on the way out).  Either way ``result.json`` is written once, on the way out: the common
keys (status, conclusion — "Run failed: ..." on a failure — failure, started, finished,
wall_seconds, params, provenance) plus the runbook's own, checked against the runbook's typed
model (:mod:`workbench.runbooks.schemas`, whose JSON Schemas are in ``docs/schemas/``).  The
report is ``workbench run``'s last step (:mod:`workbench.runbooks.execute`), from the notebook
and this result.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.hosts import Host, connect
from workbench.redact import Redactor
from workbench.runbooks.outcome import caught_failure
from workbench.runbooks.params import RunbookParams
from workbench.runbooks.schemas import RunResult
from workbench.runs import Run
from workbench.session import HostSession

Kinds = tuple[tuple[type[WorkbenchError], str], ...]


class RunbookRun:
    """One run of a runbook, from its validated parameters to its typed ``result.json``."""

    def __init__(self, runbook: str, params: RunbookParams, model: type[RunResult], *, kinds: Kinds = (),
                 progress: Callable[[str], None] = print, host_restored: bool | None = None) -> None:
        self.runbook = runbook
        self.params = params
        self.model = model
        self.kinds = kinds
        self.redactor = Redactor.for_params(params.model_dump())
        self.run = Run.create(runbook, data_dir=params.data_dir, run_id=params.run_id, redactor=self.redactor)
        self.started = time.time()
        self.failure: dict[str, Any] | None = None
        self.conclusion = ""
        self.provenance: dict[str, Any] = {}
        self.fields: dict[str, Any] = {} if host_restored is None else {"host_restored": host_restored}
        self.result: dict[str, Any] = {}
        self._progress = progress
        self._lock = threading.Lock()
        self._hosts: list[Host] = []
        self._sessions: list[HostSession] = []

    # -- inside the block ------------------------------------------------------------------------
    def tell(self, line: str) -> None:
        """A progress line, redacted (safe from several threads)."""
        with self._lock:
            self._progress(self.redactor.text(line))

    def connect(self, name: str) -> Host:
        """The host by its ssh_config alias; closed when the run ends."""
        host = connect(name, ssh_config=self.params.ssh_config or None)
        with self._lock:
            self._hosts.append(host)
        return host

    def session(self, host: Host, **kwargs: Any) -> HostSession:
        """A session on ``host`` named for this run (its purpose says which run holds the lock)."""
        s = HostSession(host, purpose=f"{self.runbook} {self.run.id}", **kwargs)
        with self._lock:
            self._sessions.append(s)
        return s

    def table(self, name: str, frame: pd.DataFrame) -> None:
        """Save a table (redacted) in the run directory; an empty one is not saved."""
        if not frame.empty:
            self.run.table(name, frame)

    def set(self, **fields: Any) -> None:
        """The runbook's own result keys (written on the way out, whatever happens next)."""
        self.fields.update(fields)

    def fail(self, kind: str, message: str) -> None:
        """Record a failure the runbook found without an exception (a host that failed, an incomplete run)."""
        self.failure = {"kind": kind, "message": message}

    def conclude(self, words: str, **fields: Any) -> None:
        self.conclusion = words
        self.fields.update(fields)

    # -- the way out -----------------------------------------------------------------------------
    def __enter__(self) -> RunbookRun:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if isinstance(exc, WorkbenchError):
            self.failure = caught_failure(exc, self.kinds)
        elif isinstance(exc, KeyboardInterrupt):
            self.failure = {"kind": "interrupted", "message": "interrupted (hosts restored on the way out)"}
        for host in self._hosts:
            host.close()
        if exc is None or isinstance(exc, WorkbenchError | KeyboardInterrupt):
            self._write()
        return isinstance(exc, WorkbenchError)  # the failure is in the result; Ctrl-C and bugs go on

    def _write(self) -> None:
        finished = time.time()
        result: dict[str, Any] = {"host_restored": all(s.restored for s in self._sessions) if self._sessions else None,
                                  **self.fields}
        if result["host_restored"] is None:
            result.pop("host_restored")
        words = self.conclusion
        if self.failure is not None:
            words = f"Run failed: {self.failure['message']}" + (f" (partial: {words})" if words else "")
        result.update({
            "status": "ok" if self.failure is None else "failed", "conclusion": words, "failure": self.failure,
            "started": self.started, "finished": finished, "wall_seconds": round(finished - self.started, 2),
            "params": self.params.model_dump(), "provenance": {**self.provenance, **result.get("provenance", {})},
        })
        # typed: a result that does not fit its model is a bug of the runbook, raised here (pydantic)
        self.model.model_validate({"run_id": self.run.id, "runbook": self.runbook, **self.redactor.obj(result)})
        self.run.write_result(result)
        self.result = self.run.result() or result
