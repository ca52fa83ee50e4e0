"""What became of a run: failure kinds and exit codes, the completed result, the host restored.

After the kernel, :func:`classify` tells the failure apart from what papermill
raised and what the runbook wrote; :func:`complete_result` gives every run a
``result.json`` (one is made for a kernel that died before writing it, with the
trials recorded so far); :func:`finish_restore` finishes the restore of a host
left with a session record; :func:`recover_incomplete` gives a result and a
report to runs whose controller was killed.

=====================================================  ====
failure kind                                           exit
=====================================================  ====
none (the run succeeded)                               0
``cell_error`` (an exception in a cell), ``error``,    1
``restore_failed``, ``server_crash``, ``host_failed``,
``incomplete``, ``no_result``
``bad_parameters`` (also raised before the run)        2
``kernel_died``, ``ssh_lost``, ``host_locked``,        3  (rerunning resumes from the ledger)
``timeout``, ``controller_killed``
``interrupted`` (Ctrl-C, SIGTERM)                      130
=====================================================  ====
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import DeploymentMismatch, HostError, LockHeld, RestoreError, WorkbenchError
from workbench.redact import Redactor
from workbench.runbooks.params import RunbookParams
from workbench.runbooks.report import export_html
from workbench.runs import DEFAULT_DATA_DIR, Run, read_table

NOTEBOOK_NAME = "notebook.ipynb"
MARKER_NAME = ".execute.json"  # present while a controller runs the run; left behind if it was killed
RESTORE_LOCK_WAIT = 60.0
EXIT_OK, EXIT_FAILED, EXIT_BAD_PARAMETERS, EXIT_LOST, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
TRANSIENT = frozenset({"kernel_died", "ssh_lost", "host_locked", "timeout", "controller_killed"})
# The failure kind a runbook records for an error it caught: the first class that matches, else "error".
CAUGHT_KINDS: tuple[tuple[type[WorkbenchError], str], ...] = (
    (LockHeld, "host_locked"), (RestoreError, "restore_failed"), (HostError, "ssh_lost"))


def caught_failure(exc: WorkbenchError, kinds: tuple[tuple[type[WorkbenchError], str], ...] = CAUGHT_KINDS,
                   ) -> dict[str, str]:
    """The ``failure`` entry of ``result.json`` for an error a runbook caught (kinds: the table above).
    A deployment whose nodes do not fit it is bad input whatever the runbook (exit 2, before a trial)."""
    if isinstance(exc, DeploymentMismatch):
        return {"kind": "bad_parameters", "message": str(exc)}
    return {"kind": next((kind for cls, kind in kinds if isinstance(exc, cls)), "error"), "message": str(exc)}


@dataclass
class RunOutcome:
    """What became of one run: its directory, the completed result, the notebook and report paths."""

    runbook: str
    run_id: str
    run_dir: Path
    result: dict[str, Any]
    notebook: Path
    report: Path | None

    @property
    def ok(self) -> bool:
        return self.result.get("status") == "ok"

    @property
    def kind(self) -> str | None:
        return None if self.ok else str((self.result.get("failure") or {}).get("kind") or "error")

    @property
    def conclusion(self) -> str:
        return str(self.result.get("conclusion") or "")

    @property
    def exit_code(self) -> int:
        return exit_code(self.kind)


def exit_code(kind: str | None) -> int:
    if kind is None:
        return EXIT_OK
    if kind == "bad_parameters":
        return EXIT_BAD_PARAMETERS
    if kind == "interrupted":
        return EXIT_INTERRUPTED
    return EXIT_LOST if kind in TRANSIENT else EXIT_FAILED


def classify(error: BaseException | None, result: dict[str, Any] | None) -> dict[str, Any] | None:
    """The run's failure from what papermill raised and what the runbook wrote (None: it succeeded)."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    own = (result or {}).get("failure")
    if error is None:
        if result is None:
            return {"kind": "no_result", "message": "the runbook finished without writing result.json"}
        return dict(own) if own else None
    if isinstance(error, PapermillExecutionError):
        if own:  # the runbook recorded its failure, then re-raised (Ctrl-C in the kernel)
            return dict(own)
        if error.ename == "KeyboardInterrupt":
            return {"kind": "interrupted", "message": "interrupted (Ctrl-C)"}
        kind = "bad_parameters" if error.ename == "ConfigError" else "cell_error"
        return {"kind": kind, "message": f"{error.ename}: {error.evalue}", "ename": error.ename,
                "evalue": error.evalue, "cell": error.exec_count}
    if isinstance(error, DeadKernelError) or "kernel died" in str(error).lower():
        return {"kind": "kernel_died", "message": "the kernel died (killed, out of memory or crashed)"}
    if isinstance(error, CellTimeoutError | TimeoutError):
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return {"kind": "timeout", "message": f"a cell ran past the execution timeout ({first})"}
    if isinstance(error, KeyboardInterrupt):
        return {"kind": "interrupted", "message": "interrupted (Ctrl-C)"}
    return {"kind": "error", "message": f"{type(error).__name__}: {error}"}


def _recorded_trials(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "trials.parquet"
    if not path.exists():
        return []
    keep = ("edits", "outcome", "phase", "exception_type", "signature", "seconds", "reused", "host")
    frame = read_table(path)
    return [{k: row[k] for k in keep if k in row} for row in frame.to_dict("records")]


def complete_result(run: Run, params: RunbookParams, failure: dict[str, Any] | None,
                    started: float) -> dict[str, Any]:
    """The runbook's result.json with the controller's findings, or one made for a run that wrote none."""
    result = run.result()
    if result is None:
        trials = _recorded_trials(run.dir)
        result = {"status": "failed", "trials": trials, "server_starts": sum(1 for t in trials if not t.get("reused")),
                  "host_restored": None, "started": started, "params": params.model_dump(), "provenance": {}}
        result.update({k: v for k, v in (("host", getattr(params, "host", None)),
                                         ("hosts", getattr(params, "hosts", None))) if v is not None})
    if failure is not None:
        result["status"] = "failed"
        result["failure"] = failure
        if not str(result.get("conclusion", "")).startswith("Run failed"):
            n = len(result.get("trials") or [])
            result["conclusion"] = f"Run failed ({failure['kind']}): {failure['message']}" + (
                f" — {n} trial(s) recorded; rerun to resume." if n and failure["kind"] != "bad_parameters" else "")
    result.setdefault("finished", time.time())
    result.setdefault("wall_seconds", round(result["finished"] - started, 2))
    return result


def _ours(record: dict[str, Any] | None, run_id: str) -> bool:
    return bool(record and run_id and run_id in str((record.get("owner") or {}).get("purpose", "")))


def finish_restore(hosts: list[str], *, ssh_config: str = "", run_id: str = "",
                   ready_timeout: float = 900.0) -> tuple[bool, list[str]]:
    """Finish the restore of every host that still has a session record; (all restored, notes).

    A record left by this run's session (its purpose names the run) is restored, waiting up to
    ``RESTORE_LOCK_WAIT`` for the dead session's lock to go.  A record of another session means this
    run's record is gone (there is one per host; a session restores a leftover when it starts): it is
    finished too if its session is dead, left alone if it holds the lock."""
    from workbench.hosts import connect
    from workbench.session import HostSession, leftover_record

    ok, notes = True, []
    for name in hosts:
        if name.startswith("slurm:"):  # a cluster: cancel what the run left in the queue
            from workbench.slurm.runbook import finish

            done, note = finish(name, run_id, ssh_config=ssh_config)
            ok = ok and done
            notes.append(note)
            continue
        try:
            host = connect(name, ssh_config=ssh_config or None)
        except WorkbenchError as exc:
            ok = False
            notes.append(f"{name}: not reachable: {exc}")
            continue
        try:
            record = leftover_record(host)
            if record is None:
                continue
            ours = _ours(record, run_id)
            with HostSession(host, purpose=f"finish restore of {run_id}", lock_wait=RESTORE_LOCK_WAIT if ours else 0,
                             ready_timeout=ready_timeout) as s:
                notes.append(f"{name}: restore finished ({len(s.recovered)} variant(s) removed)")
        except LockHeld as exc:
            still = _ours(leftover_record(host), run_id)
            ok = ok and not still
            notes.append(f"{name}: {'this run' if still else 'another session'} holds the record: {exc}")
        except WorkbenchError as exc:
            ok = False
            notes.append(f"{name}: restore failed: {exc}")
        finally:
            with contextlib.suppress(Exception):
                host.close()
    return ok, notes


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover_incomplete(data_dir: str | Path = DEFAULT_DATA_DIR) -> list[Path]:
    """Give a result and a report to runs whose controller was killed (marker left, no result.json)."""
    done = []
    for marker in sorted((Path(data_dir) / "runs").glob(f"*/{MARKER_NAME}")):
        run_dir = marker.parent
        try:
            info = json.loads(marker.read_text())
        except (OSError, ValueError):
            info = {}
        if _pid_alive(int(info.get("pid", 0))) and int(info.get("pid", 0)) != os.getpid():
            continue  # still running
        if not (run_dir / "result.json").exists():
            run = Run(str(info.get("runbook", "?")), run_dir.name, run_dir, Redactor(), float(info.get("started", 0)))
            trials = _recorded_trials(run_dir)
            run.write_result({
                "status": "failed", "host": info.get("host"), "hosts": info.get("hosts"), "trials": trials,
                "server_starts": sum(1 for t in trials if not t.get("reused")), "host_restored": False,
                "failure": {"kind": "controller_killed", "message": f"the controller (pid {info.get('pid')}) "
                            "died mid-run; the next session on the host finishes the restore"},
                "conclusion": f"Run failed (controller_killed) — {len(trials)} trial(s) recorded; rerun to resume.",
                "started": info.get("started"), "params": info.get("params", {}), "provenance": {}})
            if (run_dir / NOTEBOOK_NAME).exists():
                export_html(run_dir / NOTEBOOK_NAME, run_dir)
        marker.unlink(missing_ok=True)
        done.append(run_dir)
    return done
