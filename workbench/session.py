"""Sessions: change a host, then leave it exactly as it was found — whatever happens.

``with HostSession(host) as s:`` takes the host's lock (refused at once, with
the holder's details, if another session holds it), finishes the restore of a
session that died without one (its record is still on the host), and restores
on the way out: normal end, exception, Ctrl-C, SIGTERM.  If the controller is
killed with SIGKILL or its SSH link drops, the lock frees itself, every variant
stops by its own ``RuntimeMaxSec=``, and the next session on that host finds
the record and completes the restore.

The record (``<state_dir>/session.json`` on the host) is written *before* each
change it describes, so there is never a change without a record:
the base units' snapshots (file hashes, drop-ins, active and unit-file state)
and every variant unit created.  After a restore the host is checked: no
variant loaded or on disk, base files byte-identical, base units back in their
prior state (restarted and ready if they were running).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench import gpus
from workbench.errors import GpuBusy, RestoreError, WorkbenchError
from workbench.hosts import Host
from workbench.inputs import check_edits, check_timeout
from workbench.lock import HostLock
from workbench.services import Services, services_for
from workbench.systemd import UnitStatus
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


@dataclass
class Record:
    owner: dict[str, Any] = field(default_factory=dict)
    started: float = 0.0
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)


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
    ) -> None:
        check_timeout(ready_timeout, "ready_timeout")
        self.host = host
        self.svc = services or services_for(host)
        self.lock = HostLock(host, purpose=purpose, wait=lock_wait,
                             lock_dir=self.svc.state_dir + "/lock" if self.svc.kind == "process" else "/run/lock")
        self.record = Record()
        self.ready_timeout = ready_timeout
        self.gpu_memory_threshold_mib = gpu_memory_threshold_mib
        self.recovered: list[str] = []
        self.restored = False
        self._texts: dict[str, str] = {}

    # -- record ----------------------------------------------------------
    @property
    def record_path(self) -> str:
        return f"{self.svc.state_dir}/session.json"

    def _save(self) -> None:
        data = asdict(self.record)
        self.host.put(json.dumps(data, indent=1).encode(), self.record_path, 0o600)

    def _load(self) -> Record | None:
        res = self.host.run(["cat", "--", self.record_path], timeout=30)
        if not res.ok:
            return None
        try:
            raw = json.loads(res.stdout)
        except ValueError:
            return None
        snaps = {k: Snapshot(**v) for k, v in raw.get("snapshots", {}).items()}
        return Record(owner=raw.get("owner", {}), started=raw.get("started", 0.0), snapshots=snaps,
                      created=list(raw.get("created", [])))

    # -- context ---------------------------------------------------------
    def __enter__(self) -> HostSession:
        self.lock.acquire()
        try:
            leftover = self._load()
            if leftover is not None:
                self.record = leftover
                self.recovered = list(leftover.created)
                self.restore()
            self.record = Record(owner=dict(self.lock.owner_info or {}), started=time.time())
            self.restored = False
        except BaseException:
            self.lock.release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.restore()
        finally:
            self.lock.release()

    # -- snapshots ---------------------------------------------------------
    def _files(self, st: UnitStatus) -> dict[str, str]:
        paths = [p for p in (st.fragment_path, *st.drop_in_paths) if p]
        if not paths:
            return {}
        res = self.host.run(["sha256sum", "--", *paths], timeout=30, check=True)
        out = {}
        for line in res.stdout.splitlines():
            digest, _, path = line.partition("  ")
            out[path] = digest
        return out

    def protect(self, unit: str) -> Snapshot:
        """Record ``unit``'s state before the first change that could touch it."""
        if unit in self.record.snapshots:
            return self.record.snapshots[unit]
        st = self.svc.status(unit)
        if st.missing:
            from workbench.errors import UnitNotFound

            raise UnitNotFound(f"{self.host.name}: unit {st.unit} is {st.load_state}", host=self.host.name, unit=st.unit)
        snap = Snapshot(st.unit, st.running, st.active_state, st.unit_file_state, self._files(st))
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
        if self.svc.kind == "process":
            statuses = self.svc.statuses([u for u in allow_units if u in self.svc.units()])
            inv = gpus.attribute(inv, {st.main_pid: st.unit for st in statuses if st.main_pid})
        reasons = inv.busy(allow_units=allow_units, memory_threshold_mib=self.gpu_memory_threshold_mib)
        if reasons:
            raise GpuBusy(f"{self.host.name}: GPUs are busy, not starting anything:\n  " + "\n  ".join(reasons),
                          host=self.host.name)

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
                       runtime_max_sec: int | None, on_event: Any, on_line: Any) -> tuple[Variant, Trial]:
        """Record, check the GPUs, place, stop the base, start and watch: the one way a variant starts."""
        check_edits(edits, allow_empty=True)  # bad input fails before the host is touched
        if timeout is not None:
            check_timeout(timeout)
        snap = self.protect(base)
        variant = self.variant(base, edits, env, runtime_max_sec=runtime_max_sec)
        self.check_gpus(allow_units=(snap.unit, *self.record.created, variant.name))
        if variant.name not in self.record.created:
            self.record.created.append(variant.name)
            self._save()  # the record first: never a change without one
        changed = self.svc.install_variant(variant)  # verified before it is placed
        stopped_base = self.svc.stop_if_running(base)
        text = variant.render()
        outcome = watch_start(self.svc, variant.name, timeout=timeout or self.ready_timeout, unit_text=text,
                              health_path=health_path, on_event=on_event, on_line=on_line)
        st = outcome.status
        trial = Trial(variant.name, base, list(variant.edits), outcome, st.exit_status if st else None,
                      st.exit_code if st else "", changed, text, stopped_base)
        return variant, trial

    def _remove(self, name: str) -> None:
        self.svc.remove_variant(name)
        if name in self.record.created:
            self.record.created.remove(name)
        self._save()

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
    ) -> Trial:
        """Start ``base`` + ``edits`` as a variant, watch it to ready/failed/timeout, stop it (and
        remove it unless ``keep``).  A failed start keeps the exit status systemd reported."""
        variant, trial = self._start_variant(base, edits, env, health_path=health_path, timeout=timeout,
                                             runtime_max_sec=runtime_max_sec, on_event=on_event, on_line=on_line)
        if trial.outcome.ok or trial.outcome.outcome == "timeout":
            final = self.svc.stop(variant.name)
            trial.exit_status, trial.exit_code = final.exit_status, final.exit_code
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
    def restore(self) -> list[str]:
        """Put the host back as recorded; raise ``RestoreError`` (keeping the record) if it is not."""
        if self.restored:
            return []
        actions: list[str] = []
        for name in list(self.record.created):
            self.svc.remove_variant(name)
            actions.append(f"removed variant {name}")
        self.record.created.clear()
        for snap in self.record.snapshots.values():
            st = self.svc.status(snap.unit)
            if snap.running and not st.running:
                out = watch_start(self.svc, snap.unit, timeout=self.ready_timeout)
                actions.append(f"restarted {snap.unit}: {out.outcome}")
                if not out.ok:
                    raise RestoreError(f"{self.host.name}: {snap.unit} did not come back: {out.describe()}",
                                       host=self.host.name, details=actions)
            elif not snap.running and st.running:
                self.svc.stop(snap.unit)
                actions.append(f"stopped {snap.unit}")
        problems = self.verify()
        if problems:
            self._save()
            raise RestoreError(f"{self.host.name}: not restored: " + "; ".join(problems), host=self.host.name,
                               details=problems)
        self.host.run(["rm", "-f", "--", self.record_path], timeout=30, check=True)
        self.restored = True
        return actions

    def verify(self) -> list[str]:
        """What differs from the recorded state (empty: the host is as found)."""
        problems = []
        leftovers = self.svc.variant_files()
        if leftovers:
            problems.append(f"variant files left: {sorted(leftovers)}")
        for snap in self.record.snapshots.values():
            st = self.svc.status(snap.unit)
            files = self._files(st)
            if files != snap.files:
                problems.append(f"{snap.unit}: unit files changed ({snap.files} -> {files})")
            if st.running != snap.running:
                problems.append(f"{snap.unit}: {'running' if st.running else 'not running'}, was "
                                f"{'running' if snap.running else 'not running'}")
            if st.unit_file_state != snap.unit_file_state:
                problems.append(f"{snap.unit}: unit-file state {st.unit_file_state}, was {snap.unit_file_state}")
        return problems


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
    """The unit diff and the exact commands a variant run would issue; reads only."""
    import shlex

    svc = services or services_for(host)
    v = Variant.build(base, svc.unit_text(base), edits, env)
    q = shlex.quote
    if svc.kind == "systemd":
        cmds = [
            "flock -n /run/lock/workbench.lock  # held for the session",
            f"systemd-analyze verify <temporary copy of {v.name}>",
            f"write {v.path} atomically (temporary file + rename)",
            "systemctl daemon-reload",
            f"systemctl stop {q(base)}  # if running",
            f"systemctl start --no-block {q(v.name)}; journalctl -f -o json --all -u {q(v.name)}  # watch",
            f"systemctl stop {q(v.name)}; systemctl reset-failed {q(v.name)}; rm -f {q(v.path)}; systemctl daemon-reload",
            f"systemctl start {q(base)}  # restore, if it was running",
        ]
        path = v.path
    else:
        path = f"{getattr(svc, 'root', '')}/run/{v.name}"
        cmds = [f"write {path}", f"stop {base} (if running)", f"setsid python3 procsup.py ... {v.name}",
                f"stop {v.name}; rm -f {path}", f"start {base} (restore, if it was running)"]
    return Plan(v.name, path, v.render(), v.diff(), cmds)
