"""Services on a host: systemd units, or supervised processes where there is no systemd.

Both backends offer one interface (:class:`Services`): list units, read their
status (``LoadState`` first: a missing unit is never "inactive, exit 0"),
read their effective unit text and command line, start/stop/restart them,
and place or remove a variant's runtime unit.  The process backend reads the
same unit-file syntax (``ExecStart``, ``Environment``, ``WorkingDirectory``,
``RuntimeMaxSec``, ``TimeoutStopSec``) from its own directory and runs each
start under :mod:`workbench.procsup` (``setsid``, pid and log files).
"""

from __future__ import annotations

import fnmatch
import json
import shlex
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from workbench import gpus
from workbench.errors import CommandFailed, ConfigError, ServiceError, UnitNotFound, VariantError
from workbench.hosts import Host, LineStream
from workbench.journal import (
    Entry,
    cursor_argv,
    follow_argv,
    parse_cursor,
    parse_json_entry,
    parse_process_entry,
)
from workbench.systemd import (
    UnitStatus,
    list_unit_files_argv,
    list_units_argv,
    normalize_unit,
    parse_show,
    parse_unit_names,
    show_argv,
    valid_unit,
)
from workbench.unitfile import UnitFile, effective, split_command, split_environment
from workbench.variants import RUNTIME_DIR, Variant

# Verify a unit file (and in install mode place it and reload) in one round trip.
# $1 unit name, $2 destination path, $3 "verify" or "install"; the unit text on stdin.
# First output line: @@unchanged | @@pending | @@invalid | @@valid | @@installed.
_PLACE_SCRIPT = r"""
name=$1; dst=$2; mode=$3
mkdir -p /run/workbench || exit 20
tmpdir=$(mktemp -d /run/workbench/verify.XXXXXX) || exit 20
trap 'rm -rf "$tmpdir"' EXIT
tmp="$tmpdir/$name"
cat >"$tmp"
if [ "$mode" = install ] && cmp -s "$tmp" "$dst"; then echo @@unchanged; exit 0; fi
if [ "$mode" = install ]; then
  pending=$(systemctl show --no-pager --property=Id,NeedDaemonReload -- '*' \
    | awk 'BEGIN { RS = ""; FS = "\n" } /NeedDaemonReload=yes/ { for (i = 1; i <= NF; i++) if ($i ~ /^Id=/) print substr($i, 4) }' \
    | grep -vxF "$name")
  if [ -n "$pending" ]; then echo @@pending; printf '%s\n' "$pending"; exit 10; fi
fi
out=$(systemd-analyze verify -- "$tmp" 2>&1); rc=$?
problems=$(printf '%s\n' "$out" | grep -F "$name" | grep -v X-WorkbenchVariantOf)
if [ "$rc" -ne 0 ] || [ -n "$problems" ]; then echo @@invalid; printf '%s\n' "${problems:-$out}"; exit 11; fi
if [ "$mode" = verify ]; then echo @@valid; exit 0; fi
chmod 644 "$tmp" && mv -f "$tmp" "$dst" && systemctl daemon-reload && echo @@installed
"""


@dataclass
class ServiceInfo:
    """One row of a host's inventory."""

    status: UnitStatus
    argv: list[str] = field(default_factory=list)
    gpus: list[int] = field(default_factory=list)

    def row(self) -> dict[str, object]:
        s = self.status
        return {"unit": s.unit, "load": s.load_state, "active": s.active_state, "sub": s.sub_state,
                "result": s.result, "exit_status": s.exit_status, "restarts": s.n_restarts,
                "invocation": s.invocation_id, "main_pid": s.main_pid, "gpus": self.gpus,
                "command": shlex.join(self.argv) if self.argv else ""}


class Services(Protocol):
    host: Host
    kind: str
    state_dir: str  # where sessions keep their record and lock on this host

    def status(self, unit: str) -> UnitStatus: ...

    def statuses(self, units: list[str]) -> list[UnitStatus]: ...

    def units(self, pattern: str = "*") -> list[str]: ...

    def unit_text(self, unit: str) -> str: ...

    def start(self, unit: str) -> UnitStatus: ...

    def stop(self, unit: str, *, timeout: float = 90.0) -> UnitStatus: ...

    def restart(self, unit: str) -> UnitStatus: ...

    def stop_if_running(self, unit: str) -> bool: ...

    def reset(self, unit: str) -> None: ...

    def install_variant(self, variant: Variant) -> bool: ...

    def remove_variant(self, name: str) -> bool: ...

    def variant_files(self) -> dict[str, str]: ...

    def cursor(self) -> str: ...

    def follow(self, unit: str, cursor: str) -> LineStream: ...

    def parse_entry(self, line: str, unit: str) -> Entry | None: ...

    def invocation_text(self, unit: str, invocation: str) -> str: ...


def exec_argv(unit_text: str, unit: str = "unit") -> list[str]:
    """The argv of a unit's single ``ExecStart=``."""
    execs = UnitFile.parse(unit_text, source=unit).get_all("Service", "ExecStart")
    if len(execs) != 1:
        raise ConfigError(f"{unit}: expected exactly one ExecStart=, found {len(execs)}")
    return split_command(execs[0])[1]


def _check_unit(unit: str) -> str:
    unit = normalize_unit(unit)
    if not valid_unit(unit):
        raise ConfigError(f"not a valid unit name: {unit!r}")
    return unit


def inventory(svc: Services, pattern: str = "*") -> list[ServiceInfo]:
    """Units matching ``pattern`` with their status, command line and the GPUs they hold."""
    units = svc.units(pattern)
    seen: set[str] = set()
    statuses = []
    for st in svc.statuses(units) if units else []:
        if st.unit not in seen:  # an alias (sshd.service) reports its unit's Id (ssh.service)
            seen.add(st.unit)
            statuses.append(st)
    gpu_inv = gpus.attribute(gpus.inventory(svc.host), {st.main_pid: st.unit for st in statuses if st.main_pid})
    rows = []
    for st in statuses:
        try:
            argv = exec_argv(svc.unit_text(st.unit), st.unit)
        except Exception:
            argv = []
        rows.append(ServiceInfo(st, argv, gpu_inv.held_by(st.unit)))
    return rows


# ---------------------------------------------------------------------------
# systemd
# ---------------------------------------------------------------------------


class SystemdServices:
    """System units driven with systemctl."""

    kind = "systemd"
    state_dir = "/run/workbench"

    def __init__(self, host: Host) -> None:
        self.host = host

    def statuses(self, units: list[str]) -> list[UnitStatus]:
        units = [_check_unit(u) for u in units]
        res = self.host.run(show_argv(units), timeout=30, check=True)
        blocks = parse_show(res.stdout)
        out = []
        for unit, props in zip(units, blocks, strict=False):
            props.setdefault("Id", unit)
            out.append(UnitStatus.from_show(props))
        return out

    def status(self, unit: str) -> UnitStatus:
        return self.statuses([unit])[0]

    def require(self, unit: str) -> UnitStatus:
        st = self.status(unit)
        if st.missing:
            raise UnitNotFound(f"{self.host.name}: unit {st.unit} is {st.load_state}", host=self.host.name, unit=st.unit)
        return st

    def units(self, pattern: str = "*") -> list[str]:
        # list-unit-files exits 1 when nothing matches: an empty answer, not a failure.
        res = self.host.run(f"{shlex.join(list_units_argv(pattern))}; {shlex.join(list_unit_files_argv(pattern))}; true",
                            timeout=30, check=True)
        return sorted(set(parse_unit_names(res.stdout)))

    def unit_text(self, unit: str) -> str:
        unit = _check_unit(unit)
        res = self.host.run(["systemctl", "cat", "--no-pager", "--", unit], timeout=30)
        if not res.ok:
            raise UnitNotFound(f"{self.host.name}: cannot read unit {unit}: {res.tail(2)}", host=self.host.name, unit=unit)
        return effective(res.stdout).render()

    def start(self, unit: str) -> UnitStatus:
        """Queue a start without waiting for it (the watch follows it); fails fast if exec fails."""
        unit = _check_unit(unit)
        res = self.host.run(["systemctl", "start", "--no-block", "--", unit], timeout=60)
        if not res.ok:
            raise ServiceError(f"{self.host.name}: systemctl start {unit} failed: {res.tail(3)}", host=self.host.name, unit=unit)
        return self.status(unit)

    def stop(self, unit: str, *, timeout: float = 90.0) -> UnitStatus:
        unit = _check_unit(unit)
        res = self.host.run(["systemctl", "stop", "--", unit], timeout=timeout)
        if not res.ok and "not loaded" not in res.stderr:
            raise ServiceError(f"{self.host.name}: systemctl stop {unit} failed: {res.tail(3)}", host=self.host.name, unit=unit)
        return self.status(unit)

    def restart(self, unit: str) -> UnitStatus:
        unit = _check_unit(unit)
        self.host.run(["systemctl", "restart", "--no-block", "--", unit], timeout=60, check=True)
        return self.status(unit)

    def stop_if_running(self, unit: str) -> bool:
        """Stop ``unit`` if it runs (one round trip); whether it did run."""
        res = self.host.run(["sh", "-c", 'systemctl is-active --quiet -- "$1" || exit 3; systemctl stop -- "$1"',
                             "stop", _check_unit(unit)], timeout=120)
        if res.exited not in (0, 3):
            raise ServiceError(f"{self.host.name}: systemctl stop {unit} failed: {res.tail(3)}", host=self.host.name,
                               unit=unit)
        return res.exited == 0

    def reset(self, unit: str) -> None:
        self.host.run(["systemctl", "reset-failed", "--", _check_unit(unit)], timeout=30)

    # -- variants ------------------------------------------------------
    def variant_files(self) -> dict[str, str]:
        """Runtime unit files we placed: name -> base (found by their marker key)."""
        res = self.host.run(["sh", "-c", f"grep -l '^X-WorkbenchVariantOf=' {RUNTIME_DIR}/*.service 2>/dev/null "
                             "| while read f; do printf '%s %s\\n' \"$(basename \"$f\")\" "
                             "\"$(sed -n 's/^X-WorkbenchVariantOf=//p' \"$f\" | head -n1)\"; done"], timeout=30)
        out = {}
        for line in res.stdout.splitlines():
            name, _, base = line.partition(" ")
            out[name] = base
        return out

    def _place(self, text: str, name: str, path: str, mode: str) -> bool:
        """Verify (and in ``install`` mode place + reload) a unit in one round trip; see ``_PLACE_SCRIPT``."""
        res = self.host.run(["sh", "-c", _PLACE_SCRIPT, "place", name, path, mode], input=text, timeout=120)
        lines = res.stdout.splitlines()
        tag = lines[0] if lines else ""
        detail = "\n".join(lines[1:]).strip()
        if tag == "@@pending":
            raise VariantError(f"{self.host.name}: units with edits waiting for a daemon-reload: {detail.split()}; "
                               "not reloading on someone else's behalf (reload or revert them first)",
                               host=self.host.name, unit=name)
        if tag == "@@invalid":
            raise VariantError(f"{self.host.name}: variant {name} does not verify:\n{detail}", host=self.host.name,
                               unit=name)
        if tag not in ("@@unchanged", "@@installed", "@@valid") or not res.ok:
            raise VariantError(f"{self.host.name}: placing {name} failed (exit {res.exited}): {res.tail(5)}",
                               host=self.host.name, unit=name)
        return tag == "@@installed"

    def verify(self, text: str, name: str) -> None:
        """``systemd-analyze verify`` on a temporary copy; an invalid unit never reaches a unit path."""
        self._place(text, name, f"{RUNTIME_DIR}/{name}", "verify")

    def pending_reloads(self) -> list[str]:
        """Units whose files changed on disk without a daemon-reload (someone else's pending edits)."""
        res = self.host.run(["systemctl", "show", "--no-pager", "--property=Id,NeedDaemonReload", "--", "*"],
                            timeout=60, check=True)
        return [b["Id"] for b in parse_show(res.stdout) if b.get("NeedDaemonReload") == "yes" and b.get("Id")]

    def install_variant(self, variant: Variant) -> bool:
        """Place the variant's runtime unit and reload; False when the identical file is already there.

        One round trip: compare, refuse when another unit has a pending daemon-reload (our
        reload would apply someone else's half-done edits), verify a temporary copy with
        ``systemd-analyze verify``, rename it into place (atomic: same tmpfs), reload.
        """
        return self._place(variant.render(), variant.name, variant.path, "install")

    def remove_variant(self, name: str) -> bool:
        name = _check_unit(name)
        path = f"{RUNTIME_DIR}/{name}"
        res = self.host.run(["sh", "-c", 'systemctl stop -- "$1"; systemctl reset-failed -- "$1" 2>/dev/null; '
                             'rm -f -- "$2" && systemctl daemon-reload', "remove", name, path], timeout=120)
        return res.ok

    def daemon_reload(self) -> None:
        self.host.run(["systemctl", "daemon-reload"], timeout=120, check=True)

    # -- journal -------------------------------------------------------
    def cursor(self) -> str:
        res = self.host.run(cursor_argv(), timeout=30, check=True)
        cur = parse_cursor(res.stdout)
        if cur is None:
            raise ServiceError(f"{self.host.name}: journalctl printed no cursor: {res.tail(2)}", host=self.host.name)
        return cur

    def follow(self, unit: str, cursor: str) -> LineStream:
        return self.host.stream(follow_argv(_check_unit(unit), after_cursor=cursor))

    def parse_entry(self, line: str, unit: str) -> Entry | None:
        return parse_json_entry(line)

    def invocation_text(self, unit: str, invocation: str) -> str:
        """Every message the unit's processes logged in one invocation, as plain text."""
        res = self.host.run(["journalctl", "--no-pager", "-o", "cat", "--all", f"_SYSTEMD_INVOCATION_ID={invocation}"],
                            timeout=120, check=True)
        return res.stdout


# ---------------------------------------------------------------------------
# plain processes
# ---------------------------------------------------------------------------

DEFAULT_PROCESS_ROOT = "/var/lib/workbench/services"


class ProcessServices:
    """Units as files under ``root`` (``units/`` and variants in ``run/``), run as supervised processes.

    Layout on the host: ``root/units/NAME.service`` (the services as
    installed), ``root/run/NAME.service`` (runtime variants),
    ``root/state/NAME.{spec.json,state.json,log}`` and ``root/procsup.py``.
    """

    kind = "process"

    def __init__(self, host: Host, root: str = DEFAULT_PROCESS_ROOT) -> None:
        self.host = host
        self.root = root.rstrip("/")
        self.state_dir = f"{self.root}/session"

    def _path(self, unit: str) -> str:
        return f"{self.root}/units/{unit}"

    def _find_file(self, unit: str) -> str | None:
        for d in ("run", "units"):
            res = self.host.run(["test", "-f", f"{self.root}/{d}/{unit}"], timeout=30)
            if res.ok:
                return f"{self.root}/{d}/{unit}"
        return None

    def _state(self, unit: str) -> dict[str, object]:
        res = self.host.run(
            ["sh", "-c", 'cat "$1" 2>/dev/null; echo; s=$(sed -n \'s/.*"supervisor_pid": \\([0-9]*\\).*/\\1/p\' "$1" 2>/dev/null); '
             '[ -n "$s" ] && kill -0 "$s" 2>/dev/null && echo ALIVE || echo DEAD', "state", f"{self.root}/state/{unit}.state.json"],
            timeout=30)
        text, _, alive = res.stdout.rpartition("\n")
        if not alive.strip():
            text, _, alive = text.rpartition("\n")
        try:
            state = json.loads(text.strip() or "{}")
        except ValueError:
            state = {}
        state["_alive"] = alive.strip() == "ALIVE"
        return state

    def statuses(self, units: list[str]) -> list[UnitStatus]:
        return [self.status(u) for u in units]

    def status(self, unit: str) -> UnitStatus:
        unit = _check_unit(unit)
        path = self._find_file(unit)
        if path is None:
            return UnitStatus.from_show({"Id": unit, "LoadState": "not-found", "ActiveState": "inactive", "SubState": "dead"})
        st = self._state(unit)
        state = str(st.get("state", "inactive"))
        if state in ("active", "activating") and not st["_alive"]:
            state, st["result"] = "failed", "supervisor-lost"
        props = {
            "Id": unit, "LoadState": "loaded", "ActiveState": state,
            "SubState": {"active": "running", "activating": "start", "failed": "failed"}.get(state, "dead"),
            "Result": str(st.get("result") or ("success" if state != "failed" else "")),
            "MainPID": str(st.get("main_pid") or 0) if state in ("active", "activating") else "0",
            "NRestarts": "0", "InvocationID": str(st.get("invocation") or ""),
            "FragmentPath": path, "Type": "exec",
        }
        if st.get("exit_signal"):
            props.update(ExecMainCode="2", ExecMainStatus=str(st["exit_signal"]))
        elif st.get("exit_code") is not None:
            props.update(ExecMainCode="1", ExecMainStatus=str(st["exit_code"]))
        return UnitStatus.from_show(props)

    def units(self, pattern: str = "*") -> list[str]:
        res = self.host.run(["sh", "-c", 'ls -1 "$1/units" "$1/run" 2>/dev/null', "ls", self.root], timeout=30)
        names = {n for n in res.stdout.split() if n.endswith(".service")}
        return sorted(n for n in names if fnmatch.fnmatch(n, pattern))

    def unit_text(self, unit: str) -> str:
        path = self._find_file(_check_unit(unit))
        if path is None:
            raise UnitNotFound(f"{self.host.name}: unit {unit} not found under {self.root}", host=self.host.name, unit=unit)
        return self.host.run(["cat", "--", path], timeout=30, check=True).stdout

    def _ensure_supervisor(self) -> None:
        code = Path(__file__).with_name("procsup.py").read_bytes()
        res = self.host.run(["cat", "--", f"{self.root}/procsup.py"], timeout=30)
        if not res.ok or res.stdout.encode() != code:
            self.host.put(code, f"{self.root}/procsup.py", 0o755)

    def start(self, unit: str) -> UnitStatus:
        unit = _check_unit(unit)
        st = self.status(unit)
        if st.missing:
            raise UnitNotFound(f"{self.host.name}: unit {unit} not found", host=self.host.name, unit=unit)
        if st.running:
            return st
        text = self.unit_text(unit)
        uf = UnitFile.parse(text, source=unit)
        env: dict[str, str] = {}
        for value in uf.get_all("Service", "Environment"):
            env.update(split_environment(value))
        spec = {
            "argv": exec_argv(text, unit),
            "env": env,
            "unset_env": uf.get_all("Service", "UnsetEnvironment"),
            "cwd": uf.get("Service", "WorkingDirectory") or "/",
            "runtime_max_sec": uf.get("Service", "RuntimeMaxSec"),
            "timeout_stop_sec": uf.get("Service", "TimeoutStopSec") or "30",
            "invocation": uuid.uuid4().hex,
        }
        self._ensure_supervisor()
        state_dir = f"{self.root}/state"
        self.host.put(json.dumps(spec).encode(), f"{state_dir}/{unit}.spec.json", 0o600)
        # The launching shell records its own PID (which exec keeps for setsid and the
        # supervisor) before anything else can ask for the state.
        launch = (
            'printf \'{"invocation": "%s", "state": "activating", "supervisor_pid": %s}\' "$3" "$$" >"$1/$2.state.json"; '
            'exec setsid python3 "$4" "$1" "$2" </dev/null >/dev/null 2>&1'
        )
        self.host.run(["sh", "-c", f"sh -c {shlex.quote(launch)} launch \"$@\" &", "start", state_dir, unit,
                       str(spec["invocation"]), f"{self.root}/procsup.py"], timeout=30, check=True)
        return self.status(unit)

    def stop(self, unit: str, *, timeout: float = 90.0) -> UnitStatus:
        unit = _check_unit(unit)
        st = self._state(unit)
        pid = st.get("supervisor_pid")
        if pid and st["_alive"]:
            self.host.run(["sh", "-c", 'kill -TERM "$1"; i=0; while kill -0 "$1" 2>/dev/null; do i=$((i+1)); '
                           '[ $i -gt $(( $2 * 20 )) ] && { kill -KILL -- "$1"; break; }; sleep 0.05; done', "stop",
                           str(pid), str(int(timeout))], timeout=timeout + 10)
        return self.status(unit)

    def restart(self, unit: str) -> UnitStatus:
        self.stop(unit)
        return self.start(unit)

    def stop_if_running(self, unit: str) -> bool:
        if not self.status(unit).running:
            return False
        self.stop(unit)
        return True

    def reset(self, unit: str) -> None:
        pass

    def variant_files(self) -> dict[str, str]:
        res = self.host.run(["sh", "-c", 'grep -H "^X-WorkbenchVariantOf=" "$1"/run/*.service 2>/dev/null || true',
                             "vf", self.root], timeout=30)
        out = {}
        for line in res.stdout.splitlines():
            path, _, rest = line.partition(":")
            out[path.rsplit("/", 1)[-1]] = rest.partition("=")[2]
        return out

    def install_variant(self, variant: Variant) -> bool:
        text = variant.render()
        path = f"{self.root}/run/{variant.name}"
        current = self.host.run(["cat", "--", path], timeout=30)
        if current.ok and current.stdout == text:
            return False
        try:
            exec_argv(text, variant.name)
        except ConfigError as exc:
            raise VariantError(str(exc), host=self.host.name, unit=variant.name) from exc
        self.host.put(text.encode(), path)
        return True

    def remove_variant(self, name: str) -> bool:
        name = _check_unit(name)
        self.stop(name)
        res = self.host.run(["rm", "-f", "--", f"{self.root}/run/{name}"], timeout=30)
        return res.ok

    # -- journal: the supervisor's JSON log, one file per unit -----------
    def log_path(self, unit: str) -> str:
        return f"{self.root}/state/{_check_unit(unit)}.log"

    def cursor(self) -> str:
        """Process-backend cursors are per unit; ``@<epoch µs>`` means "entries after this time"."""
        res = self.host.run(["date", "+%s%6N"], timeout=30, check=True)
        return f"@{res.stdout.strip()}"

    def follow(self, unit: str, cursor: str) -> LineStream:
        path = self.log_path(unit)
        self.host.run(["sh", "-c", 'mkdir -p "$(dirname "$1")"; touch "$1"', "touch", path], timeout=30, check=True)
        return self.host.stream(["tail", "-n", "+1", "-F", path])

    def parse_entry(self, line: str, unit: str) -> Entry | None:
        return parse_process_entry(line, unit)

    def invocation_text(self, unit: str, invocation: str) -> str:
        path = self.log_path(unit)
        res = self.host.run(["sh", "-c", 'cat "$1".3 "$1".2 "$1".1 "$1" 2>/dev/null', "logs", path], timeout=120)
        lines = []
        for raw in res.stdout.splitlines():
            e = parse_process_entry(raw, unit)
            if e is not None and e.invocation == invocation and e.stream != "sys":
                lines.append(e.message)
        return "\n".join(lines) + ("\n" if lines else "")


def services_for(host: Host, *, process_root: str | None = None) -> Services:
    """The backend that fits ``host``: systemd when it booted with systemd, else plain processes."""
    root = process_root or getattr(host, "properties", {}).get("services_root")
    if root:
        return ProcessServices(host, root)
    try:
        res = host.run(["test", "-d", "/run/systemd/system"], timeout=30)
    except CommandFailed:
        raise
    return SystemdServices(host) if res.ok else ProcessServices(host, DEFAULT_PROCESS_ROOT)
