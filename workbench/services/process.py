"""The process backend: units as files, each start run under :mod:`workbench.procsup` (``setsid``).

For hosts without systemd (containers on GPU clouds). The same unit-file syntax
(``ExecStart``, ``Environment``, ``UnsetEnvironment``, ``WorkingDirectory``,
``RuntimeMaxSec``, ``TimeoutStopSec``) is read from ``<root>/units`` and ``<root>/run``.
"""

from __future__ import annotations

import fnmatch
import json
import shlex
import uuid
from pathlib import Path
from typing import Any

import pandas as pd

from workbench import gpus
from workbench.errors import ConfigError, UnitNotFound, VariantError
from workbench.hosts import Host, LineStream
from workbench.journal import Entry, parse_process_entry
from workbench.journal import process as journal_process
from workbench.journal.frame import JournalFrame
from workbench.services.base import (
    DetachedGuard,
    _check_unit,
    exec_argv,
    file_digests,
    server_port,
)
from workbench.systemd import UnitStatus
from workbench.unitfile import UnitFile, split_environment
from workbench.variants import Variant

DEFAULT_PROCESS_ROOT = "/var/lib/workbench/services"
NEW_INVOCATION = "@@NEW_INVOCATION@@"  # the guard puts a fresh invocation id here (hostguard.py)

# $1: a unit's state file; exits 0 when its supervisor lives.
# A zombie (a PID 1 that does not reap, as in some containers) is not alive.
_LIVES = '[ -n "$s" ] && kill -0 "$s" 2>/dev/null && ! grep -q "^State:[[:space:]]*Z" "/proc/$s/status" 2>/dev/null'
_ALIVE = ('s=$(sed -n \'s/.*"supervisor_pid": \\([0-9]*\\).*/\\1/p\' "$1" 2>/dev/null); ' + _LIVES)
# $1 state file, $2 seconds before SIGKILL.
_STOP_SCRIPT = (_ALIVE + ' || exit 0; kill -TERM "$s"; i=0; while ' + _LIVES.split("&& ", 1)[1] + '; do i=$((i+1)); '
                '[ $i -gt $(( $2 * 20 )) ] && { kill -KILL -- "$s"; break; }; sleep 0.05; done')
# $1 state dir, $2 unit, $3 invocation id, $4 procsup.py: launch from the spec file unless running;
# returns once the new invocation's state is written (so a status read right after sees it).
_START_SCRIPT = r"""
f="$1/$2.state.json"; spec="$1/$2.spec.json"
s=$(sed -n 's/.*"supervisor_pid": \([0-9]*\).*/\1/p' "$f" 2>/dev/null)
[ -n "$s" ] && kill -0 "$s" 2>/dev/null && ! grep -q "^State:[[:space:]]*Z" "/proc/$s/status" 2>/dev/null && exit 0
[ -f "$spec" ] || { echo "no spec file $spec: $2 was never started by the process backend" >&2; exit 1; }
sed -i "s/\"invocation\": \"[0-9a-f]*\"/\"invocation\": \"$3\"/" "$spec" || exit 1
sh -c 'printf '\''{"invocation": "%s", "state": "activating", "supervisor_pid": %s}'\'' "$3" "$$" >"$1/$2.state.json"
exec setsid python3 "$4" "$1" "$2" </dev/null >/dev/null 2>&1' launch "$@" &
i=0; until grep -q "\"invocation\": \"$3\"" "$f" 2>/dev/null; do
  i=$((i+1)); [ $i -gt 1000 ] && break; sleep 0.01; done
"""

class ProcessServices(DetachedGuard):  # no systemd: the guard is a detached process
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
        self.lock_dir = f"{self.state_dir}/lock"

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
        code = (Path(__file__).parents[1] / "procsup.py").read_bytes()
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
        self.host.put(json.dumps(spec).encode(), f"{self.root}/state/{unit}.spec.json", 0o600)
        self.host.run(self.start_argv(unit, str(spec["invocation"])), timeout=30, check=True)
        return self.status(unit)

    def stop(self, unit: str, *, timeout: float = 90.0) -> UnitStatus:
        unit = _check_unit(unit)
        self.host.run(self.stop_argv(unit, timeout), timeout=timeout + 10)
        return self.status(unit)

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

    def journal_outlives_removal(self, name: str) -> bool:
        return False  # the removal ends the supervisor and deletes its state file while a read may use them

    def remove_variant(self, name: str) -> bool:
        return self.host.run(self.remove_variant_argv(name), timeout=120).ok

    # -- the commands a restore runs (the guard runs the same ones on the host) ----
    def start_argv(self, unit: str, invocation: str = NEW_INVOCATION) -> list[str]:
        """Launch ``unit`` under the supervisor from its spec file, unless its supervisor lives.

        The launching shell records its own PID (which exec keeps for setsid and the
        supervisor) before anything else can ask for the state.  ``invocation`` is written
        into the spec first (the guard passes :data:`NEW_INVOCATION`, replaced by a fresh id)."""
        return ["sh", "-c", _START_SCRIPT, "start", f"{self.root}/state", _check_unit(unit), invocation,
                f"{self.root}/procsup.py"]

    def stop_argv(self, unit: str, timeout: float = 90.0) -> list[str]:
        """SIGTERM to the unit's supervisor (it forwards to the group), SIGKILL after ``timeout``."""
        return ["sh", "-c", _STOP_SCRIPT, "stop", f"{self.root}/state/{_check_unit(unit)}.state.json",
                str(int(timeout))]

    def remove_variant_argv(self, name: str) -> list[str]:
        name = _check_unit(name)
        return ["sh", "-c", f'sh -c {shlex.quote(_STOP_SCRIPT)} stop "$1" 90; rm -f -- "$2"', "remove",
                f"{self.root}/state/{name}.state.json", f"{self.root}/run/{name}"]

    def running_argv(self, unit: str) -> list[str]:
        return ["sh", "-c", _ALIVE + ' && grep -Eq \'"state": "(active|activating)"\' "$1"', "running",
                f"{self.root}/state/{_check_unit(unit)}.state.json"]

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

    def journal_invocations(self, unit: str, n: int | None = None, *, timeout: float = 120.0) -> pd.DataFrame:
        return journal_process.invocations(self, _check_unit(unit), n, timeout=timeout)

    def journal_read(self, unit: str, *, invocation: str | int | None = None, last_invocations: int | None = None,
                     since: Any = None, until: Any = None, timeout: float = 600.0, compress: bool = True,
                     jobs: int | None = None, text: bool = True) -> JournalFrame:
        return journal_process.read(self, _check_unit(unit), invocation=invocation, last_invocations=last_invocations,
                                    since=since, until=until, timeout=timeout)

    def journal_since(self, unit: str, cursor: str, *, invocation: str | None = None, timeout: float = 600.0,
                      compress: bool = True) -> tuple[JournalFrame, str]:
        return journal_process.since_cursor(self, _check_unit(unit), cursor, invocation=invocation, timeout=timeout)

    def tail_entries(self, unit: str = "", invocation: str = "", lines: int = 500) -> list[Entry]:
        """The last ``lines`` entries of ``unit`` (of one ``invocation`` when given), oldest first."""
        if not unit:
            raise ConfigError("the process backend reads a unit's log: give the unit")
        path = self.log_path(unit)
        res = self.host.run(["sh", "-c", 'cat "$1".3 "$1".2 "$1".1 "$1" 2>/dev/null', "logs", path], timeout=120)
        entries = [e for e in (parse_process_entry(raw, unit) for raw in res.stdout.splitlines()) if e is not None]
        if invocation:
            entries = [e for e in entries if e.invocation == invocation]
        return entries[-lines:]

    # -- the server: its port, the GPUs it holds, what a variant run issues ----------
    def host_port(self, unit: str, argv: list[str]) -> int:
        return server_port(argv)

    def definition(self, st: UnitStatus) -> dict[str, str]:
        return file_digests(self.host, st)

    def server_roots(self, unit: str, st: UnitStatus, argv: list[str]) -> set[int]:
        """The unit's main process (it leads the session its server runs in)."""
        return {st.main_pid} if st.main_pid else set()

    def attribute_gpus(self, inv: gpus.GpuInventory, units: list[str]) -> gpus.GpuInventory:
        """GPU processes named by their unit through their process group (each unit runs in its own session)."""
        statuses = self.statuses([u for u in units if u in self.units()])
        return gpus.attribute(inv, {st.main_pid: st.unit for st in statuses if st.main_pid})

    def plan(self, variant: Variant) -> tuple[str, list[str]]:
        path, name, base = f"{self.root}/run/{variant.name}", variant.name, variant.base
        return path, [f"flock -n {self.lock_dir}/workbench.lock  # held for the session", f"write {path}",
                      f"{shlex.join(self.stop_argv(base))}  # if running", shlex.join(self.start_argv(name)),
                      shlex.join(self.remove_variant_argv(name)), f"{shlex.join(self.start_argv(base))}  # restore, "
                      "if it was running"]
