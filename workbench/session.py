"""Sessions: change a host, then leave it exactly as it was found — whatever happens.

``with HostSession(host) as s:`` takes the host's lock (refused at once, with
the holder's details, if another session holds it), finishes the restore of a
session that died without one (its record is still on the host), and restores
on the way out: normal end, exception, Ctrl-C, SIGTERM, SIGHUP.  Before its first
change it arms a guard on the host (:mod:`workbench.guard`): if the controller is
killed, loses power or its SSH link, the host restores itself from the record
within a bound (``guard.bound_text()``), with no later session needed.  A record
left anyway (a guard that could not finish) is finished by the next session or by
``workbench restore HOST``; a base that changed since it was recorded is never
guessed at (:class:`~workbench.errors.StaleRecord` says what changed and how to go on).

The record (``<state_dir>/session.json`` on the host) is written *before* each
change it describes, so there is never a change without a record:
the base units' snapshots (file hashes, drop-ins, active and unit-file state),
every variant unit created, and the undo steps (:func:`undo_steps`) that both the
restore here and the guard on the host run.  After a restore the host is checked: no
variant loaded or on disk, base files byte-identical, base units back in their
prior state (restarted and ready if they were running).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench import gpus, inflight, signals
from workbench.errors import (
    CommandTimeout,
    ConnectError,
    GpuBusy,
    HostError,
    HostUnresponsive,
    RestoreError,
    SessionFenced,
    StaleRecord,
    WorkbenchError,
)
from workbench.guard import RECORD, Guard, bound_text
from workbench.hosts import Host
from workbench.inputs import check_edits, check_timeout
from workbench.journal.read import invocation_text
from workbench.lock import HostLock
from workbench.services import Services, services_for
from workbench.variants import EditValue, Variant
from workbench.watch import Outcome, watch_start


@dataclass
class Snapshot:
    unit: str
    running: bool
    active_state: str
    unit_file_state: str
    files: dict[str, str]  # path -> sha256 (fragment and drop-ins)


@dataclass
class Trial:
    """One variant start and what became of it."""

    variant: str
    base: str
    edits: list[tuple[str, Any]]
    outcome: Outcome
    exit_status: int | None
    exit_code: str
    changed: bool  # False when the identical runtime unit was already in place
    unit_text: str = ""
    stopped_base: bool = False
    log_text: str | None = None  # a failed start's invocation text, when run_variant read it (``read_log``)


@dataclass
class Record:
    owner: dict[str, Any] = field(default_factory=dict)
    started: float = 0.0
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    id: str = ""
    undo: list[dict[str, Any]] = field(default_factory=list)  # undo_steps() as of the last write
    guard: dict[str, Any] = field(default_factory=dict)
    fenced_by: dict[str, Any] | None = None  # set by a restorer that took the session over (workbench.inflight)


def undo_steps(record: Record, svc: Services) -> list[dict[str, Any]]:
    """What puts the host back, in order, as the backend's own commands: remove every variant,
    then return each base unit to its recorded run state.  The session's restore and the guard
    on the host (:mod:`workbench.hostguard`) both follow these steps."""
    steps: list[dict[str, Any]] = [{"do": "remove", "unit": n, "argv": svc.remove_variant_argv(n)}
                                   for n in record.created]
    for snap in record.snapshots.values():
        steps.append({"do": "start" if snap.running else "stop", "unit": snap.unit,
                      "argv": svc.start_argv(snap.unit) if snap.running else svc.stop_argv(snap.unit),
                      "check": svc.running_argv(snap.unit)})
    return steps


def record_path(svc: Services) -> str:
    return f"{svc.state_dir}/{RECORD}"


def _parse_record(raw: dict[str, Any]) -> Record:
    snaps = {k: Snapshot(**v) for k, v in raw.get("snapshots", {}).items()}
    return Record(owner=raw.get("owner", {}), started=raw.get("started", 0.0), snapshots=snaps,
                  created=list(raw.get("created", [])), id=str(raw.get("id", "")), undo=list(raw.get("undo", [])),
                  guard=dict(raw.get("guard") or {}), fenced_by=raw.get("fenced_by") or None)


class HostSession:
    """A locked, recorded, self-restoring stretch of work on one host."""

    def __init__(
        self,
        host: Host,
        *,
        services: Services | None = None,
        purpose: str = "",
        ready_timeout: float = 900.0,
        gpu_memory_threshold_mib: float = 1024.0,
        lock_wait: float = 0.0,
        guard: bool = True,
    ) -> None:
        check_timeout(ready_timeout, "ready_timeout")
        self.host = host
        self.svc = services or services_for(host)
        self.lock = HostLock(host, purpose=purpose, wait=lock_wait,
                             lock_dir=self.svc.lock_dir)
        self.record = Record()
        self.ready_timeout = ready_timeout
        self.gpu_memory_threshold_mib = gpu_memory_threshold_mib
        self.recovered: list[str] = []
        self.restored = False
        self.use_guard = guard
        self._host_gone = False
        self.guard: Guard | None = None
        self.fence: inflight.Fence | None = None  # this session's commands fenced from its first record on
        self.fenced: dict[str, Any] = {}  # what fencing a dead session's commands off did (a leftover)
        self._wrote = False  # whether this session wrote a record (and so may have made the state dir)
        self._texts: dict[str, str] = {}

    # -- record ----------------------------------------------------------
    @property
    def record_path(self) -> str:
        return record_path(self.svc)

    def _check_still_ours(self) -> None:
        """Refuse to change anything more once the host may have been handed to the guard."""
        if self.guard is not None and self.guard.took_over:
            raise HostUnresponsive(
                f"{self.host.name}: host stopped answering: no heartbeat acknowledged for "
                f"{self.guard.silent_for:.0f} s; its guard restores it ({bound_text(self.guard.stale_s)}); "
                "changing nothing more", host=self.host.name, waited=self.guard.silent_for, restored="guard")
        if self.lock._stream is not None and not self.lock.held:
            raise HostUnresponsive(f"{self.host.name}: this session lost its lock on the host (its SSH channel "
                                   "ended); changing nothing more", host=self.host.name, restored="guard")

    def _save(self) -> None:
        """Write the record (before the change it describes); the first write arms the guard."""
        self._check_still_ours()
        if self.use_guard and self.guard is None:
            self.guard = Guard(self.host, self.svc, session_id=self.record.id, record_path=self.record_path,
                               lock=self.lock)
            self.record.guard = self.guard.info()
        self.record.undo = undo_steps(self.record, self.svc)
        data = asdict(self.record)
        self.host.put(json.dumps(data, indent=1).encode(), self.record_path, 0o600)
        self._wrote = True
        if self.fence is None:  # from now on no command of ours can land after a restore by another
            self.fence = inflight.Fence(self.svc.state_dir, self.record_path, self.record.id)
            inflight.apply(self.host, self.fence)
        if self.guard is not None and not self.guard.armed:
            self.guard.arm()  # after the record it reads, before the change it describes

    def _load(self) -> Record | None:
        res = self.host.run(["cat", "--", self.record_path], timeout=30)
        if not res.ok:
            return None
        try:
            return _parse_record(json.loads(res.stdout))
        except (ValueError, TypeError):
            return None

    # -- context ---------------------------------------------------------
    def __enter__(self) -> HostSession:
        self.lock.acquire()
        try:
            leftover = self._load()
            if leftover is not None:
                self.record = leftover
                self.fence_off(leftover)
                self.record = self._load() or leftover  # as its last in-flight command left it
                self.recovered = list(self.record.created)
                self.restore()
            self.record = Record(owner=dict(self.lock.owner_info or {}), started=time.time(), id=uuid.uuid4().hex)
            self.restored = False
        except BaseException:
            self.lock.release()
            raise
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        with signals.shielded():
            self._exit(exc)

    def _exit(self, exc: BaseException | None) -> None:
        try:
            try:
                self.restore()
            except (HostUnresponsive, CommandTimeout, ConnectError) as err:  # the host does not answer
                raise self._unanswered(err) from err
            except SessionFenced as err:  # a restorer took the host over: it restores, not we
                raise self._fenced_off(err) from err
            except RestoreError:
                self._disarm()  # the guard would find what we found: the record stays for `workbench restore`
                raise
            self._disarm()
            if self._wrote and self.restored:  # no empty state dir behind a session (nobody else writes there
                # without the lock, which we hold)
                self.host.run(["rmdir", "--ignore-fail-on-non-empty", "--", self.svc.state_dir], timeout=30)
            if isinstance(exc, HostUnresponsive) and self.record.snapshots and not exc.restored:
                raise HostUnresponsive(f"{exc}; the host was restored when it answered again", host=exc.host,
                                       waited=exc.waited, restored="restored") from exc
        finally:
            inflight.apply(self.host, None)  # the host object may serve another session next
            self.fence = None
            if self.lock.held and not self._host_gone:
                with contextlib.suppress(HostError):
                    self.lock.release()
            elif self.lock._stream is not None:  # no round trip to a host that does not answer
                with contextlib.suppress(Exception):
                    self.lock._stream.close()
                self.lock._stream = None

    def fence_off(self, leftover: Record) -> dict[str, Any]:
        """Before restoring from a dead session's record: wait for (at most ``FENCE_WAIT_S``, then end)
        its commands still running on the host, and refuse any later one (:mod:`workbench.inflight`)."""
        if not leftover.id:
            return {}
        argv = inflight.fence_argv(record=self.record_path, lock=inflight.lock_path(self.svc.state_dir, leftover.id),
                                   session_id=leftover.id, by=self.lock.purpose or "a later session",
                                   why="its lock was free and its record left: its controller was gone")
        res = self.host.run(argv, input=inflight.script(), timeout=60)
        try:
            self.fenced = dict(json.loads(res.stdout.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            self.fenced = {}
        if not res.ok:
            raise RestoreError(f"{self.host.name}: could not fence off the dead session's commands before "
                               f"restoring (exit {res.exited}): {res.tail(3)}; nothing restored yet",
                               host=self.host.name, details=[res.tail(3)])
        return self.fenced

    def _fenced_off(self, err: SessionFenced) -> SessionFenced:
        """Our commands are refused: a restorer (our guard, which found us gone) took the host over.
        Stop beating, read who took it and why, and take away the in-flight lock file our refused
        commands made again; the restorer puts the host back and removes the rest."""
        if self.guard is not None:
            self.guard.stop_beat()
            self.guard.armed = False  # it is the restorer now: it ends by itself when done
        inflight.apply(self.host, None)
        why, by = err.why, "a restorer"
        with contextlib.suppress(HostError):
            res = self.host.run(["cat", "--", self.record_path], timeout=30)
            try:
                record = json.loads(res.stdout) if res.ok else {}
            except ValueError:
                record = {}
            record = record if isinstance(record, dict) else {}
            mark = (record.get(inflight.MARK) or {}) if record.get("id") == self.record.id else {}
            why, by = str(mark.get("why") or why), str(mark.get("by") or by)
            self.host.run(["rm", "-f", "--", inflight.lock_path(self.svc.state_dir, self.record.id)], timeout=30)
            if not res.ok:  # the restorer is done: no empty state dir behind us either
                self.host.run(["rmdir", "--ignore-fail-on-non-empty", "--", self.svc.state_dir], timeout=30)
        said = f" ({why})" if why else ""
        return SessionFenced(f"{self.host.name}: this session was taken over on the host by {by}{said}; it restores "
                             f"the host, and nothing more of this session ran there; `workbench status "
                             f"{self.host.name}` shows it", host=self.host.name, result=err.result, why=why)

    def _disarm(self) -> None:
        """Stop the guard after our own restore; one that cannot be stopped finds no record and exits."""
        if self.guard is not None:
            with contextlib.suppress(HostError):
                self.guard.disarm()

    def _unanswered(self, err: HostError) -> HostUnresponsive:
        """The restore could not reach the host: say how long we waited and that the guard restores it."""
        self._host_gone = True
        waited = getattr(err, "waited", None) or (self.guard.silent_for if self.guard else None)
        base = str(err).split("; the host", 1)[0]
        if self.guard is not None and self.guard.armed:
            self.guard.abandon()
            return HostUnresponsive(f"{base}; not restored from here: the guard on {self.host.name} restores it "
                                    f"({bound_text(self.guard.stale_s)}); `workbench status {self.host.name}` shows it",
                                    host=self.host.name, waited=waited, restored="guard")
        if not self.record.snapshots and not self.record.created:
            return HostUnresponsive(f"{base}; nothing had been changed on it", host=self.host.name, waited=waited)
        return HostUnresponsive(f"{base}; the host was NOT restored (no guard armed): run "
                                f"`workbench restore {self.host.name}` when it answers", host=self.host.name,
                                waited=waited, restored="not restored")

    # -- snapshots ---------------------------------------------------------
    def protect(self, unit: str) -> Snapshot:
        """Record ``unit``'s state before the first change that could touch it."""
        if unit in self.record.snapshots:
            return self.record.snapshots[unit]
        st = self.svc.status(unit)
        if st.missing:
            from workbench.errors import UnitNotFound

            raise UnitNotFound(f"{self.host.name}: unit {st.unit} is {st.load_state}", host=self.host.name, unit=st.unit)
        snap = Snapshot(st.unit, st.running, st.active_state, st.unit_file_state, self.svc.definition(st))
        self.record.snapshots[st.unit] = snap
        self._save()
        return snap

    def make_room(self, units: list[str] | tuple[str, ...]) -> list[str]:
        """Stop ``units`` for the session (another server holding the GPUs or the port); they are
        recorded first and restarted by the restore.  Returns the ones that were running."""
        stopped = []
        for unit in units:
            self.protect(unit)
            if self.svc.stop_if_running(unit):
                stopped.append(unit)
        return stopped

    def check_gpus(self, allow_units: tuple[str, ...]) -> None:
        inv = gpus.inventory(self.host)
        if inv.error:
            return
        inv = self.svc.attribute_gpus(inv, list(allow_units))
        problem = inv.busy_message(self.host.name, allow_units=allow_units,
                                   memory_threshold_mib=self.gpu_memory_threshold_mib)
        if problem:
            raise GpuBusy(problem, host=self.host.name)

    # -- trials ------------------------------------------------------------
    def base_text(self, base: str) -> str:
        """The base unit's effective text, read once per session (we hold the lock; nobody edits it)."""
        if base not in self._texts:
            self._texts[base] = self.svc.unit_text(base)
        return self._texts[base]

    def variant(self, base: str, edits: dict[str, EditValue] | list[tuple[str, EditValue]] | None = None,
                env: dict[str, str | None] | None = None, *, runtime_max_sec: int | None = None) -> Variant:
        """The variant ``base`` + ``edits`` as it would be placed on this host (nothing changes)."""
        text = self.base_text(base)
        if runtime_max_sec:
            return Variant.build(base, text, edits or {}, env, runtime_max_sec=runtime_max_sec)
        return Variant.build(base, text, edits or {}, env)

    def _start_variant(self, base: str, edits: dict[str, EditValue] | list[tuple[str, EditValue]],
                       env: dict[str, str | None] | None, *, health_path: str, timeout: float | None,
                       runtime_max_sec: int | None, on_event: Any, on_line: Any,
                       stop: threading.Event | None = None) -> tuple[Variant, Trial]:
        """Record, check the GPUs, place, stop the base, start and watch: the one way a variant starts."""
        check_edits(edits, allow_empty=True)  # bad input fails before the host is touched
        if timeout is not None:
            check_timeout(timeout)
        snap = self.protect(base)
        variant = self.variant(base, edits, env, runtime_max_sec=runtime_max_sec)
        allow = (snap.unit, *self.record.created, variant.name)
        # The GPU check (it only reads) runs on a second channel beside the record write and the
        # verified placement; nothing starts before both are done, and a variant placed for busy
        # GPUs is removed again.
        with ThreadPoolExecutor(1, thread_name_prefix="gpu-check") as pool:
            gpu_check = pool.submit(self.check_gpus, allow_units=allow)
            try:
                if variant.name not in self.record.created:
                    self.record.created.append(variant.name)
                    self._save()  # the record first: never a change without one
                changed = self.svc.install_variant(variant)  # verified before it is placed
            finally:
                busy = gpu_check.exception()
        if isinstance(busy, GpuBusy):
            self._remove(variant.name)
        if busy is not None:
            raise busy
        stopped_base = self.svc.stop_if_running(base)
        text = variant.render()
        outcome = watch_start(self.svc, variant.name, timeout=timeout or self.ready_timeout, unit_text=text,
                              health_path=health_path, on_event=on_event, on_line=on_line, stop=stop)
        st = outcome.status
        trial = Trial(variant.name, base, list(variant.edits), outcome, st.exit_status if st else None,
                      st.exit_code if st else "", changed, text, stopped_base)
        return variant, trial

    def _remove(self, name: str) -> None:
        """Remove a variant.  The record on the host keeps listing it until the next write (the next
        trial's): removing a variant that is gone is a no-op, so the record stays a safe superset,
        and a trial costs one record write."""
        self.svc.remove_variant(name)
        if name in self.record.created:
            self.record.created.remove(name)

    def run_variant(
        self,
        base: str,
        edits: dict[str, EditValue] | list[tuple[str, EditValue]],
        env: dict[str, str | None] | None = None,
        *,
        health_path: str = "/health",
        timeout: float | None = None,
        keep: bool = False,
        runtime_max_sec: int | None = None,
        on_event: Any = None,
        on_line: Any = None,
        read_log: bool = False,
        stop: threading.Event | None = None,
    ) -> Trial:
        """Start ``base`` + ``edits`` as a variant, watch it to ready/failed/timeout, stop it (and
        remove it unless ``keep``).  A failed start keeps the exit status systemd reported.
        ``read_log``: a start that failed by itself has its invocation's text read
        (:func:`~workbench.journal.read.invocation_text`) into ``trial.log_text``: on a second channel
        while the variant is removed where the backend's journal outlives the removal (journald: the
        invocation has ended, removing it adds nothing to it), else before the removal.
        ``stop``: set while the start is watched, the watch raises :class:`~workbench.errors.Stopped` (the
        variant left running for the session's restore, as after a Ctrl-C)."""
        variant, trial = self._start_variant(base, edits, env, health_path=health_path, timeout=timeout,
                                             runtime_max_sec=runtime_max_sec, on_event=on_event, on_line=on_line,
                                             stop=stop)
        out = trial.outcome
        if out.ok or out.outcome == "timeout":
            final = self.svc.stop(variant.name)
            trial.exit_status, trial.exit_code = final.exit_status, final.exit_code
        elif read_log and out.invocation_id:
            if not self.svc.journal_outlives_removal(variant.name):
                trial.log_text = invocation_text(self.svc, variant.name, out.invocation_id)  # before the removal
            else:
                with ThreadPoolExecutor(1, thread_name_prefix="log-read") as pool:
                    text = pool.submit(invocation_text, self.svc, variant.name, out.invocation_id)
                    try:
                        if not keep:
                            self._remove(variant.name)
                    finally:
                        text.exception()  # the read ends (or fails) before either error is raised
                trial.log_text = text.result()
                return trial
        if not keep:
            self._remove(variant.name)
        return trial

    @contextlib.contextmanager
    def serve_variant(
        self,
        base: str,
        edits: dict[str, EditValue] | list[tuple[str, EditValue]],
        env: dict[str, str | None] | None = None,
        *,
        health_path: str = "/health",
        timeout: float | None = None,
        runtime_max_sec: int | None = None,
        on_event: Any = None,
    ) -> Iterator[Trial]:
        """Start ``base`` + ``edits`` as a variant and keep it serving inside the block (to measure
        it); stopped and removed on the way out.  ``trial.outcome.ok`` says whether it became ready.
        A crash inside the block leaves the record, so this session's restore (or the next
        session) removes the variant."""
        variant, trial = self._start_variant(base, edits, env, health_path=health_path, timeout=timeout,
                                             runtime_max_sec=runtime_max_sec, on_event=on_event, on_line=None)
        try:
            yield trial
        finally:
            self.svc.stop(variant.name)
            self._remove(variant.name)

    # -- restore -----------------------------------------------------------
    def changed_since_record(self) -> dict[str, list[str]]:
        """Base units whose files or enablement differ from the record: unit -> what changed."""
        changes: dict[str, list[str]] = {}
        for snap in self.record.snapshots.values():
            st = self.svc.status(snap.unit)
            files = self.svc.definition(st)
            what = [f"{p} changed ({_digest_kind(p)} {snap.files[p][:12]} -> {files[p][:12]})"
                    for p in sorted(set(snap.files) & set(files)) if snap.files[p] != files[p]]
            what += [f"{p} removed" for p in sorted(set(snap.files) - set(files))]
            what += [f"{p} added" for p in sorted(set(files) - set(snap.files))]
            if st.unit_file_state != snap.unit_file_state:
                what.append(f"unit-file state {snap.unit_file_state} -> {st.unit_file_state}")
            if what:
                changes[snap.unit] = what
        return changes

    def _accept_current(self, units: list[str]) -> list[str]:
        """Take ``units``' current files and enablement as the state found (the operator said so)."""
        actions = []
        for unit in units:
            snap = self.record.snapshots[unit]
            st = self.svc.status(unit)
            snap.files, snap.unit_file_state = self.svc.definition(st), st.unit_file_state
            actions.append(f"accepted the current files and unit-file state of {unit} as found")
        return actions

    def restore(self, *, accept_current: bool = False) -> list[str]:
        """Put the host back as recorded, following :func:`undo_steps`; what was done, in words.

        Variants are always removed (they are ours).  A base unit that changed since it was
        recorded is left as it is and :class:`StaleRecord` raised (record kept), unless
        ``accept_current``: then its current files count as found.  ``RestoreError`` (record
        kept) if the host is not as found afterwards."""
        if self.restored:
            return []
        actions: list[str] = []
        changes = self.changed_since_record() if self.record.snapshots else {}
        if changes and accept_current:
            actions += self._accept_current(sorted(changes))
            changes = {}
        for step in undo_steps(self.record, self.svc):
            unit = step["unit"]
            if step["do"] == "remove":
                self.svc.remove_variant(unit)
                actions.append(f"removed variant {unit} (stopped, unit file deleted)")
                continue
            if unit in changes:
                actions.append(f"left {unit} as it is: it changed since the record")
                continue
            st = self.svc.status(unit)
            if step["do"] == "start" and not st.running:
                out = watch_start(self.svc, unit, timeout=self.ready_timeout)
                actions.append(f"started {unit} (it was running when found): {out.outcome} in {out.seconds:.1f} s")
                if not out.ok:
                    raise RestoreError(f"{self.host.name}: {unit} did not come back: {out.describe()}",
                                       host=self.host.name, details=actions)
            elif step["do"] == "stop" and st.running:
                self.svc.stop(unit)
                actions.append(f"stopped {unit} (it was not running when found)")
            else:
                actions.append(f"{unit}: already {'running' if st.running else 'stopped'} as found")
        self.record.created.clear()
        if changes:
            self._save_kept()
            raise self._stale(changes, actions)
        problems = self.verify()
        if problems:
            self._save_kept()
            raise RestoreError(f"{self.host.name}: not restored: " + "; ".join(problems), host=self.host.name,
                               details=problems)
        ended = self.fenced.get("ended_groups") if self.fenced else None
        if ended:
            actions.insert(0, f"ended {len(ended)} command(s) the dead session still ran on the host")
        beat = [str(self.record.guard["beat"])] if self.record.guard.get("beat") else []  # a leftover's guard
        if self.guard is not None:
            self.guard.stop_beat()  # the heartbeat ends with the record it guards
        self.host.run(["rm", "-f", "--", self.record_path, inflight.lock_path(self.svc.state_dir, self.record.id),
                       *beat], timeout=30, check=True)
        inflight.apply(self.host, None)
        self.fence = None
        self.restored = True
        return actions

    def _save_kept(self) -> None:
        """Keep the record (no variants left in it) for whoever finishes the restore; arms nothing."""
        self.record.undo = undo_steps(self.record, self.svc)
        self.host.put(json.dumps(asdict(self.record), indent=1).encode(), self.record_path, 0o600)

    def _stale(self, changes: dict[str, list[str]], actions: list[str]) -> StaleRecord:
        owner = self.record.owner or {}
        lines = [f"  {unit}: {'; '.join(what)}" for unit, what in changes.items()]
        states = {u: self.record.snapshots[u] for u in changes}
        found = ", ".join(f"{u} was {'running' if s.running else 'stopped'}" for u, s in states.items())
        return StaleRecord(
            f"{self.host.name}: the session record (from {owner.get('since', '?')}, "
            f"{owner.get('purpose') or 'no purpose'}) no longer matches the base, which changed since:\n"
            + "\n".join(lines) + f"\nThe variants are removed; when found, {found}; nothing else was touched.\n"
            f"If the current files are right, run `workbench restore {self.host.name} --accept-current` "
            f"(puts the run state back with the current files); otherwise put the files back as they were, "
            f"then `workbench restore {self.host.name}`.",
            host=self.host.name, details=actions, changes=changes)

    def verify(self) -> list[str]:
        """What differs from the recorded state (empty: the host is as found)."""
        problems = []
        leftovers = self.svc.variant_files()
        if leftovers:
            problems.append(f"variant files left: {sorted(leftovers)}")
        for snap in self.record.snapshots.values():
            st = self.svc.status(snap.unit)
            files = self.svc.definition(st)
            if files != snap.files:
                problems.append(f"{snap.unit}: unit files changed ({snap.files} -> {files})")
            if st.running != snap.running:
                problems.append(f"{snap.unit}: {'running' if st.running else 'not running'}, was "
                                f"{'running' if snap.running else 'not running'}")
            if st.unit_file_state != snap.unit_file_state:
                problems.append(f"{snap.unit}: unit-file state {st.unit_file_state}, was {snap.unit_file_state}")
        return problems


def _digest_kind(where: str) -> str:
    return "id" if where.startswith("container:") else "sha256"


def leftover_record(host: Host, services: Services | None = None) -> dict[str, Any] | None:
    """The record of a session that died on ``host`` without restoring (None if there is none)."""
    svc = services or services_for(host)
    res = host.run(["cat", "--", f"{svc.state_dir}/session.json"], timeout=30)
    if not res.ok:
        return None
    try:
        return dict(json.loads(res.stdout))
    except ValueError as exc:
        raise WorkbenchError(f"{host.name}: unreadable session record: {exc}") from exc


@dataclass
class RestoreReport:
    """What ``workbench restore HOST`` found and did."""

    host: str
    found: bool  # whether a session record was there
    owner: dict[str, Any] = field(default_factory=dict)
    actions: list[str] = field(default_factory=list)
    guard: dict[str, Any] = field(default_factory=dict)  # what the guard had tried, if it ran


def restore_host(host: Host, *, services: Services | None = None, accept_current: bool = False,
                 lock_wait: float = 0.0) -> RestoreReport:
    """Restore ``host`` by hand from the record a session left (takes the lock; nothing to do without
    a record).  ``accept_current``: a base that changed since the record is taken as found."""
    s = HostSession(host, services=services, purpose="workbench restore", lock_wait=lock_wait, guard=False)
    s.lock.acquire()
    try:
        leftover = s._load()
        if leftover is None:
            return RestoreReport(host.name, False)
        s.fence_off(leftover)
        s.record = s._load() or leftover  # as its last in-flight command left it
        actions = s.restore(accept_current=accept_current)
        beat = leftover.guard.get("beat")
        if beat:
            host.run(["rm", "-f", "--", str(beat)], timeout=30)
        return RestoreReport(host.name, True, leftover.owner, actions, leftover.guard)
    finally:
        inflight.apply(host, None)
        s.lock.release()


@dataclass(frozen=True)
class Plan:
    """What a variant run would do, computed without changing anything."""

    variant: str
    path: str
    unit_text: str
    diff: str
    commands: list[str]

    def __str__(self) -> str:
        return f"# {self.variant} -> {self.path}\n{self.diff}\n# commands:\n" + "\n".join(self.commands)


def plan(
    host: Host,
    base: str,
    edits: dict[str, EditValue] | list[tuple[str, EditValue]],
    env: dict[str, str | None] | None = None,
    *,
    services: Services | None = None,
) -> Plan:
    """The unit diff and the exact commands a variant run would issue (the backend's, from the builders
    that run them); reads only."""
    svc = services or services_for(host)
    v = Variant.build(base, svc.unit_text(base), edits, env)
    path, cmds = svc.plan(v)
    return Plan(v.name, path, v.render(), v.diff(), cmds)
