"""The systemd backend: system units driven with systemctl and journalctl."""

from __future__ import annotations

import shlex
from typing import Any

import pandas as pd

from workbench import containerunit, gpus
from workbench.errors import ConfigError, ServiceError, UnitNotFound, VariantError
from workbench.hosts import Host, LineStream
from workbench.journal import (
    Entry,
    cursor_argv,
    follow_argv,
    journald,
    parse_cursor,
    parse_json_entry,
    query_argv,
)
from workbench.journal.frame import JournalFrame
from workbench.services.base import _check_unit, exec_argv, file_digests, server_port
from workbench.systemd import (
    UnitStatus,
    list_unit_files_argv,
    list_units_argv,
    parse_show,
    parse_unit_names,
    show_argv,
)
from workbench.unitfile import effective
from workbench.variants import RUNTIME_DIR, Variant

# Verify a unit file (and in install mode place it, reloading only where systemd needs it) in one
# round trip.  $1 unit name, $2 destination path, $3 "verify" or "install", $4 the variant's base (install);
# the unit text on stdin (whole: the host's ``run`` starts this only on all of it).  First output line: @@unchanged | @@pending | @@invalid | @@valid | @@installed.
# A name systemd has not loaded is read from disk at its first use (a new file in a unit directory
# changes the directory's mtime, which makes PID 1 look again): placing it needs no daemon-reload,
# and without one nobody else's pending edits are applied.  A name it has loaded (a kept variant)
# is reloaded as before, refused while another unit has edits waiting for a reload.
_PLACE_SCRIPT = r"""
name=$1; dst=$2; mode=$3; base=$4
mkdir -p /run/workbench || exit 20
tmpdir=$(mktemp -d /run/workbench/verify.XXXXXX) || exit 20
trap 'rm -rf "$tmpdir"' EXIT
trap 'exit 129' HUP; trap 'exit 141' PIPE; trap 'exit 143' TERM  # ended (its controller gone): still clean up
tmp="$tmpdir/$name"
cat >"$tmp"
pending() {
  systemctl show --no-pager --property=Id,NeedDaemonReload -- '*' \
    | awk 'BEGIN { RS = ""; FS = "\n" } /NeedDaemonReload=yes/ { for (i = 1; i <= NF; i++) if ($i ~ /^Id=/) print substr($i, 4) }' \
    | grep -vxF "$name"
}
if [ "$mode" = install ]; then
  if cmp -s "$tmp" "$dst"; then echo @@unchanged; exit 0; fi
  if [ -n "$base" ] && [ "$(systemctl show --property=NeedDaemonReload --value -- "$base")" = yes ]; then
    echo @@pending; printf '%s\n' "$base"; exit 10  # the variant's text is not what the base runs
  fi
  reload=yes
  [ "$(systemctl show --property=LoadState --value -- "$name")" = not-found ] && reload=no
  if [ "$reload" = yes ]; then p=$(pending); if [ -n "$p" ]; then echo @@pending; printf '%s\n' "$p"; exit 10; fi; fi
fi
out=$(systemd-analyze verify -- "$tmp" 2>&1); rc=$?
problems=$(printf '%s\n' "$out" | grep -F "$name" | grep -v X-WorkbenchVariantOf)
if [ "$rc" -ne 0 ] || [ -n "$problems" ]; then echo @@invalid; printf '%s\n' "${problems:-$out}"; exit 11; fi
if [ "$mode" = verify ]; then echo @@valid; exit 0; fi
chmod 644 "$tmp" && mv -f "$tmp" "$dst" || exit 21
if [ "$reload" = no ]; then
  [ "$(systemctl show --property=LoadState --property=NeedDaemonReload --value -- "$name" | tr '\n' ' ')" = "loaded no " ] \
    && { echo @@installed; exit 0; }
  p=$(pending)  # PID 1 did not pick the file up by itself: a reload after all, on nobody else's behalf
  if [ -n "$p" ]; then rm -f -- "$dst"; echo @@pending; printf '%s\n' "$p"; exit 10; fi
fi
systemctl daemon-reload && echo @@installed
"""

# Remove a variant: stop, forget a failure, delete its file.  Stopped, without a failure and referenced
# by nothing, the unit is unloaded by PID 1 at once (its garbage collection runs before the next
# request), so it then shows as not-found and is not listed: no daemon-reload.  One still loaded from
# the deleted file (something references it) gets the reload.  $1 unit name, $2 its path.
_REMOVE_SCRIPT = ('systemctl stop -- "$1"; systemctl reset-failed -- "$1" 2>/dev/null; rm -f -- "$2" || exit; '
                  '[ "$(systemctl show --property=LoadState --value -- "$1")" = not-found ] || systemctl daemon-reload')




class SystemdServices:
    """System units driven with systemctl."""

    kind = "systemd"
    state_dir = "/run/workbench"
    lock_dir = "/run/lock"

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
        res = self.host.run(self.start_argv(unit), timeout=60)
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

    def _place(self, text: str, name: str, path: str, mode: str, base: str = "") -> bool:
        """Verify (and in ``install`` mode place it, reloading where needed) in one round trip; see
        ``_PLACE_SCRIPT``."""
        res = self.host.run(["sh", "-c", _PLACE_SCRIPT, "place", name, path, mode, base], input=text, timeout=120)
        lines = res.stdout.splitlines()
        tag = lines[0] if lines else ""
        detail = "\n".join(lines[1:]).strip()
        if tag == "@@pending":
            raise VariantError(f"{self.host.name}: units with edits waiting for a daemon-reload: {detail.split()}; "
                               "not placing a variant on top of them (reload or revert them first)",
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
        """Place the variant's runtime unit; False when the identical file is already there.

        One round trip: compare, refuse when the base has edits waiting for a daemon-reload (the
        variant would be built from text the base does not run), verify a temporary copy with
        ``systemd-analyze verify``, rename it into place (atomic: same tmpfs).  A name systemd has
        not loaded needs no reload; one it has is reloaded, refused while another unit has a
        pending daemon-reload (our reload would apply someone else's half-done edits).
        """
        return self._place(variant.render(), variant.name, variant.path, "install", _check_unit(variant.base))

    def journal_outlives_removal(self, name: str) -> bool:
        return True  # journald keeps a removed unit's invocations as they were

    def remove_variant(self, name: str) -> bool:
        res = self.host.run(self.remove_variant_argv(name), timeout=120)
        return res.ok

    # -- the commands a restore runs (the guard runs the same ones on the host) ----
    def remove_variant_argv(self, name: str) -> list[str]:
        name = _check_unit(name)
        return ["sh", "-c", _REMOVE_SCRIPT, "remove", name, f"{RUNTIME_DIR}/{name}"]

    def start_argv(self, unit: str) -> list[str]:
        return ["systemctl", "start", "--no-block", "--", _check_unit(unit)]

    def stop_argv(self, unit: str) -> list[str]:
        return ["systemctl", "stop", "--", _check_unit(unit)]

    def running_argv(self, unit: str) -> list[str]:
        """Exits 0 while ``unit`` runs (:attr:`UnitStatus.running`: active, activating or reloading,
        not waiting to auto-restart)."""
        return ["sh", "-c", 'a=$(systemctl show --property=ActiveState --value -- "$1"); '
                's=$(systemctl show --property=SubState --value -- "$1"); '
                'case "$a" in active|activating|reloading) [ "$s" != auto-restart ];; *) false;; esac',
                "running", _check_unit(unit)]

    # -- the guard: a transient unit, independent of our SSH session -------------
    def guard_start_argv(self, name: str, argv: list[str]) -> list[str]:
        return ["systemd-run", f"--unit={_check_unit(name)}", "--collect", "--quiet",
                "--property=Description=workbench guard: restores the host if its session's controller is gone",
                "--", *argv]

    def guard_stop_argv(self, name: str) -> list[str]:
        return ["sh", "-c", 'systemctl stop -- "$1" 2>/dev/null; true', "disarm", _check_unit(name)]

    def guard_alive_argv(self, name: str) -> list[str]:
        return ["systemctl", "is-active", "--quiet", "--", _check_unit(name)]

    def outlive_argv(self, argv: list[str]) -> list[str]:
        # A scope of its own: a container's conmon started from the guard's transient unit stayed
        # in that unit's cgroup (podman's cgroupfs manager) and was killed when the guard ended.
        return ["systemd-run", "--scope", "--collect", "--quiet",
                "--property=Description=started by workbench (kept apart from the caller's unit)", "--", *argv]

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

    def journal_invocations(self, unit: str, n: int | None = None, *, timeout: float = 120.0) -> pd.DataFrame:
        return journald.invocations(self.host, unit, n, timeout=timeout)

    def journal_read(self, unit: str, *, invocation: str | int | None = None, last_invocations: int | None = None,
                     since: Any = None, until: Any = None, timeout: float = 600.0, compress: bool = True,
                     jobs: int | None = None, text: bool = True) -> JournalFrame:
        return journald.read(self.host, unit, invocation=invocation, last_invocations=last_invocations, since=since,
                             until=until, timeout=timeout, compress=compress, jobs=jobs, text=text)

    def journal_since(self, unit: str, cursor: str, *, invocation: str | None = None, timeout: float = 600.0,
                      compress: bool = True) -> tuple[JournalFrame, str]:
        return journald.since_cursor(self.host, unit, cursor, invocation=invocation, timeout=timeout,
                                     compress=compress)

    def tail_entries(self, unit: str = "", invocation: str = "", lines: int = 500) -> list[Entry]:
        """The last ``lines`` entries of ``unit`` (or of one ``invocation``), oldest first."""
        res = self.host.run(query_argv(unit or None, invocation=invocation or None, lines=lines), timeout=120,
                            check=True)
        return [e for e in map(parse_json_entry, res.stdout.splitlines()) if e is not None]

    # -- the server: its port, the GPUs it holds, what a variant run issues ----------
    def host_port(self, unit: str, argv: list[str]) -> int:
        """The server's port; for a unit that runs ``podman|docker run``, through the run's publish
        settings (:mod:`workbench.containerunit`)."""
        run = containerunit.parse(argv)
        return containerunit.host_port(run, server_port(run.command)) if run is not None else server_port(argv)

    def definition(self, st: UnitStatus) -> dict[str, str]:
        return file_digests(self.host, st)

    def server_roots(self, unit: str, st: UnitStatus, argv: list[str]) -> set[int]:
        """The main process, and for a unit that runs a container (``podman run``/``docker run``:
        its processes are the runtime's, not the client's children) the container's init."""
        roots = {st.main_pid} if st.main_pid else set()
        run = containerunit.parse(argv)
        if run is not None and not run.host_network and run.published():
            return set()  # a published port is the runtime's to hold (conmon, docker-proxy, NAT)
        if run is None:
            return roots
        pid = self._container_pid(run)
        return roots | {pid} if pid else set()  # a container not known yet, or unnamed: nothing to judge by

    def _container_pid(self, run: containerunit.RunArgv) -> int | None:
        """The host PID of the init of the container a unit's ``run`` names (None: unnamed, not running)."""
        if run.name is None:
            return None
        res = self.host.run([run.head[0], "container", "inspect", "--format", "{{.State.Pid}}", "--", run.name],
                            timeout=30)
        pid = res.stdout.strip()
        return int(pid) if res.ok and pid.isdigit() and int(pid) > 0 else None

    def attribute_gpus(self, inv: gpus.GpuInventory, units: list[str]) -> gpus.GpuInventory:
        """GPU processes named by their unit: the inventory reads each one's cgroup; a unit that runs a
        container whose processes live in their own cgroup (``libpod-ID.scope``) is found through
        the container's main PID (its processes' group)."""
        if all(a.unit is not None for a in inv.apps):
            return inv
        pids: dict[int, str] = {}
        for unit in units:
            try:
                run = containerunit.parse(exec_argv(self.unit_text(unit), unit))
            except (ConfigError, UnitNotFound):
                continue
            if run is not None and (pid := self._container_pid(run)):
                pids[pid] = unit
        return gpus.attribute(inv, pids)

    def plan(self, variant: Variant) -> tuple[str, list[str]]:
        """(where the variant lives, the commands a run issues)."""
        q, base, name = shlex.quote, variant.base, variant.name
        return variant.path, [
            "flock -n /run/lock/workbench.lock  # held for the session",
            f"systemd-analyze verify <temporary copy of {name}>",
            f"write {variant.path} atomically (temporary file + rename)",
            "systemctl daemon-reload  # only if systemd has the name loaded already",
            f"systemctl stop {q(base)}  # if running",
            f"{shlex.join(self.start_argv(name))}; {shlex.join(follow_argv(name))}  # watch",
            f"{shlex.join(self.remove_variant_argv(name))}",
            f"{shlex.join(self.start_argv(base))}  # restore, if it was running",
        ]
