"""The container backend: named containers (podman, or docker's compatible CLI) as services.

A service is a container by name (``podman run -d --name sglang ...``).  Status comes from
``inspect`` (state, exit code, restarts, the start time as the invocation, image, command);
logs from ``logs --timestamps``, split per start at podman's ``init`` events; GPU holders
from the container's own processes; the port through its publish settings.  A variant is a
*new* container (``create``) from the same image id with the edited command and environment,
labelled with its base; the base is stopped and started again exactly as a base unit is, and
its definition is never touched (no ``update``, ``rename``, ``commit`` or ``rm`` of a base).

:class:`WithContainers` puts the containers of a host beside its systemd units (or process
services), so one ``Services`` answers for both and callers need not know which a name is.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import shlex
from typing import Any

import pandas as pd
import pyarrow as pa

from workbench import compose, containerunit, gpus
from workbench import containers as ct
from workbench.compose import ComposeService
from workbench.containers import ContainerInfo
from workbench.errors import (
    ConfigError,
    ContainerRuntimeMissing,
    ServiceError,
    UnitNotFound,
    VariantError,
)
from workbench.hosts import Host, LineStream
from workbench.journal import MSG_UNIT_STOPPED, Entry
from workbench.journal import container as journal_container
from workbench.journal.frame import JournalFrame
from workbench.services.base import (
    DetachedGuard,
    Services,
    server_port,
)
from workbench.systemd import UnitStatus
from workbench.variants import Variant

DIGEST_LABEL = "workbench.create-digest"
_VARIANT_NAME = re.compile(r"^(.+)-wb-[0-9a-f]{10}$")  # Variant.name without .service
# A removed variant's logs and events, kept for its invocation's text (as journald keeps a unit's).
LOG_DIR = "/run/workbench/container-logs"

# $1 runtime, $2 name, $3 LOG_DIR: lines (stdout and stderr, timestamped), "@@events", then events.
_LOGS = r"""
rt=$1; n=$2; d=$3
if "$rt" container inspect --format '{{.Id}}' -- "$n" >/dev/null 2>&1; then
  "$rt" logs --timestamps -- "$n" 2>&1 || exit 4
  echo @@events
  [ "$rt" = podman ] && "$rt" events --stream=false --filter "container=$n" --format json 2>/dev/null
  exit 0
fi
[ -f "$d/$n.log" ] || exit 3
cat -- "$d/$n.log"; echo @@events; cat -- "$d/$n.events" 2>/dev/null
echo @@inspect; cat -- "$d/$n.inspect" 2>/dev/null; exit 0
"""

# Keep a variant's logs, events and inspect, then remove it; nothing when it is gone already (a
# second removal must not overwrite what the first kept).  Idempotent: the session's restore and
# the host guard run it too (remove_variant_argv).  $1 runtime, $2 name, $3 LOG_DIR.
_REMOVE = r"""
rt=$1; n=$2; d=$3
"$rt" container inspect --format '{{.Id}}' -- "$n" >/dev/null 2>&1 || exit 0
mkdir -p -- "$d" && "$rt" logs --timestamps -- "$n" >"$d/$n.log" 2>&1
[ "$rt" = podman ] && "$rt" events --stream=false --filter "container=$n" --format json >"$d/$n.events" 2>/dev/null
"$rt" container inspect -- "$n" >"$d/$n.inspect" 2>/dev/null
"$rt" stop -t 10 -- "$n" >/dev/null 2>&1
"$rt" rm -f -- "$n" >/dev/null
"""

# Follow one container's next start: wait until it has started at or after the cursor (a start
# that dies at once included), print its lines as they come, "@@exited USEC" once the container
# has stopped and every line is out (PID 1's part: the watch stops draining there), then hold the
# stream open (no EOF loop) until the watch closes it.  $1 runtime, $2 name, $3 cursor µs, $4 cursor as RFC 3339.
_FOLLOW = r"""
rt=$1; name=$2; since=$3; iso=$4
while :; do
  s=$("$rt" container inspect --format '{{json .State.StartedAt}}' -- "$name" 2>/dev/null) || exit 3
  s=$(printf '%s' "$s" | tr -d '"')
  case "$s" in 0001-*|"") ;; *) [ "$(date -d "$s" +%s%6N 2>/dev/null || echo 0)" -ge "$since" ] && break;; esac
  sleep 0.2
done
"$rt" logs -f --timestamps --since "$iso" -- "$name" 2>&1
echo "@@exited $(date +%s%6N)"
exec sleep 2147483647
"""


def _digest(argv: list[str], *, labelled: bool = False) -> str:
    """Digest of a create argv (without its own digest label when ``labelled``)."""
    if labelled:
        i = argv.index(next(a for a in argv if a.startswith(f"{DIGEST_LABEL}=")))
        argv = argv[: i - 1] + argv[i + 1:]
    return hashlib.sha256(shlex.join(argv).encode()).hexdigest()[:16]


class ContainerServices(DetachedGuard):  # no systemd: a detached guard (with it, WithContainers uses the units')
    """Named containers on one host, driven with ``podman`` (else ``docker``)."""

    kind = "container"
    state_dir = "/run/workbench"
    lock_dir = "/run/lock"

    def __init__(self, host: Host, runtime: str | None = None) -> None:
        if runtime is not None and runtime not in ct.RUNTIMES:
            raise ConfigError(f"container runtime must be one of {ct.RUNTIMES}, not {runtime!r}")
        self.host = host
        self._runtime = runtime
        self._stopped: set[str] = set()  # containers this backend stopped (their 143 is not a failure)

    # -- runtime and facts ---------------------------------------------
    @property
    def runtime(self) -> str:
        if self._runtime is None:
            res = self.host.run(["sh", "-c", "command -v podman || command -v docker"], timeout=30)
            found = res.stdout.strip().rsplit("/", 1)[-1]
            if not res.ok or found not in ct.RUNTIMES:
                raise ContainerRuntimeMissing(f"{self.host.name}: no container runtime (podman or docker) on the "
                                              "host's PATH", host=self.host.name)
            self._runtime = found
        return self._runtime

    def _rt(self, *args: str, timeout: float = 60, check: bool = False) -> tuple[int, str, str]:
        res = self.host.run([self.runtime, *args], timeout=timeout)
        if check and not res.ok:
            raise ServiceError(f"{self.host.name}: {self.runtime} {args[0]} failed: {res.tail(3)}", host=self.host.name)
        return res.exited, res.stdout, res.stderr

    def names(self) -> list[str]:
        _, out, _ = self._rt("ps", "-a", "--format", "{{.Names}}", check=True)
        return sorted({n.strip() for n in out.split() if n.strip()})

    def inspect(self, names: list[str]) -> dict[str, ContainerInfo]:
        """The containers of ``names`` that exist (one ``inspect`` for all)."""
        names = [ct.check_name(n) for n in names]
        if not names:
            return {}
        rc, out, err = self._rt("container", "inspect", "--", *names)
        if rc != 0 and not out.strip().startswith("["):
            if "no such" in err.lower():
                return {}
            raise ServiceError(f"{self.host.name}: {self.runtime} inspect failed (exit {rc}): "
                               f"{err.strip()[-300:] or 'no message'}", host=self.host.name)
        return {i.name: i for i in ct.parse_inspect(out)}

    def info(self, name: str) -> ContainerInfo:
        name = ct.check_name(name)
        found = self.inspect([name]).get(name)
        if found is None:
            raise UnitNotFound(f"{self.host.name}: no container named {name!r} ({self.runtime} ps -a lists "
                               "every container)", host=self.host.name, unit=name)
        return found

    # -- status ---------------------------------------------------------
    def statuses(self, units: list[str]) -> list[UnitStatus]:
        names = [ct.check_name(u) for u in units]
        found = self.inspect(names)
        return [UnitStatus.from_show(ct.status_props(found.get(n), n, stopped_by_us=n in self._stopped))
                for n in names]

    def status(self, unit: str) -> UnitStatus:
        return self.statuses([unit])[0]

    def units(self, pattern: str = "*") -> list[str]:
        pattern = pattern.removesuffix(".service")
        return [n for n in self.names() if fnmatch.fnmatch(n, pattern)]

    def unit_text(self, unit: str) -> str:
        return ct.unit_text(self.info(unit))

    def command(self, unit: str) -> list[str]:
        return self.info(unit).argv

    # -- start / stop ------------------------------------------------------
    def start(self, unit: str) -> UnitStatus:
        name = ct.check_name(unit)
        info = self.info(name)
        if info.running:
            return self.status(name)
        self._stopped.discard(name)
        rc, _, err = self._rt("start", "--", name, timeout=120)
        if rc != 0 and info.status == "stopping":  # podman < 5.1 (#19629): no command moves it on
            raise ServiceError(f"{self.host.name}: {name} is stuck in podman's 'stopping' state (its monitor, conmon, "
                               "died without recording the exit: podman before 5.1 cannot start, stop or restart "
                               f"it); `{self.runtime} rm -f {name}` and create it again from its definition "
                               f"(`{self.runtime} inspect {name}`, Config.CreateCommand)", host=self.host.name, unit=name)
        if rc != 0:
            raise ServiceError(f"{self.host.name}: {self.runtime} start {name} failed: {err.strip()[-400:]}",
                               host=self.host.name, unit=name)
        return self.status(name)

    def stop(self, unit: str, *, timeout: float = 90.0) -> UnitStatus:
        name = ct.check_name(unit)
        self._stopped.add(name)
        rc, _, err = self._rt("stop", "-t", str(max(1, int(min(timeout, 60)) - 5)), "--", name, timeout=timeout + 10)
        if rc != 0 and "no such" not in err.lower():
            raise ServiceError(f"{self.host.name}: {self.runtime} stop {name} failed: {err.strip()[-300:]}",
                               host=self.host.name, unit=name)
        return self.status(name)

    def reset(self, unit: str) -> None:
        ct.check_name(unit)

    # -- a compose file's service, created as one named container -------------
    def run_service(self, service: ComposeService, *, check_only: bool = False) -> list[str]:
        """Create and start ``service`` (:mod:`workbench.compose`) with ``RUNTIME run -d``; the argv run.

        Refused before anything is created: no runtime, a container of that name already there, the
        image not on the host (nothing is pulled: pull or build it first), a host port another
        running container publishes or another process listens on."""
        from workbench.watch import port_holders  # the watch's own check: who listens on a port

        argv = compose.run_argv(service, self.runtime)
        name = service.container_name
        if name in self.names():
            raise ConfigError(f"{self.host.name}: a container named {name} exists already ({self.runtime} ps -a); "
                              "remove it, or give the service another container_name")
        rc, _, _ = self._rt("image", "inspect", "--format", "{{.Id}}", service.image)
        if rc != 0:
            raise ConfigError(f"{self.host.name}: image {service.image} is not on the host; the workbench pulls "
                              f"nothing: `{self.runtime} pull {service.image}` (or build it) first")
        run = containerunit.parse(argv)
        assert run is not None  # run_argv builds a run
        flag_port = server_port(run.command)
        ports = {flag_port if run.host_network else h for h in
                 ([flag_port] if run.host_network else run.published().values())}
        running = [i for i in self.inspect(self.names()).values() if i.running]
        taken = [f"{i.name} publishes {sorted(ports & set(i.host_ports()))}" for i in running
                 if ports & set(i.host_ports())]
        taken += [f"port {p}: {', '.join(h)}" for p in sorted(ports) if (h := port_holders(self.host, p))]
        if taken:
            raise ConfigError(f"{self.host.name}: the port of {service.source} is taken ({'; '.join(taken)}); "
                              f"not creating {name}")
        if check_only:
            return argv
        res = self.host.run(argv, timeout=300)
        if not res.ok:
            if "already in use" not in res.stderr:  # a half-created one of ours goes; never another's
                self.host.run([self.runtime, "rm", "-f", "--", name], timeout=60)
            raise ServiceError(f"{self.host.name}: {self.runtime} run {name} failed: {res.tail(4)}",
                               host=self.host.name, unit=name)
        return argv

    # -- variants ---------------------------------------------------------
    def create_argv(self, variant: Variant, base: ContainerInfo | None = None) -> list[str]:
        """The exact ``create`` a variant gets (also what :meth:`plan` prints), labelled with its
        own digest so an identical container already there is reused rather than recreated."""
        base = base or self.info(variant.base)
        argv = ct.create_argv(self.runtime, base, ct.check_name(variant.name), variant.argv()[1], list(variant.env),
                              timeout_s=variant.runtime_max_sec)
        i = argv.index("--entrypoint")
        return [*argv[:i], "--label", f"{DIGEST_LABEL}={_digest(argv)}", *argv[i:]]

    def _conflicts(self, base: ContainerInfo) -> list[str]:
        """Running containers other than ``base`` that publish one of its host ports."""
        others = self.inspect([n for n in self.names() if n != base.name])
        want = set(base.host_ports())
        return [f"{o.name} publishes {sorted(want & set(o.host_ports()))}" for o in others.values()
                if o.running and want & set(o.host_ports())]

    def install_variant(self, variant: Variant) -> bool:
        """Create the variant's container (not started); False when the identical one exists."""
        base = self.info(variant.base)
        name = ct.check_name(variant.name)
        if base.variant_of:
            raise VariantError(f"{self.host.name}: {base.name} is itself a variant of {base.variant_of}",
                               host=self.host.name, unit=name)
        rc, _, err = self._rt("image", "inspect", "--format", "{{.Id}}", base.image_id)
        if rc != 0:
            raise VariantError(f"{self.host.name}: image {base.image} ({base.image_id[:12]}) of {base.name} is "
                               f"missing: {err.strip()[-200:]}", host=self.host.name, unit=name)
        conflicts = self._conflicts(base)
        if conflicts:
            raise VariantError(f"{self.host.name}: the port of {base.name} is already published by another "
                               f"running container ({'; '.join(conflicts)}); not creating {name}",
                               host=self.host.name, unit=name)
        argv = self.create_argv(variant, base)
        current = self.inspect([name]).get(name)
        if current is not None:
            if current.variant_of != base.name:
                raise VariantError(f"{self.host.name}: a container named {name} exists and is not ours",
                                   host=self.host.name, unit=name)
            if current.labels.get(DIGEST_LABEL) == _digest(argv, labelled=True):
                return False
            self._rt("rm", "-f", "--", name, timeout=120, check=True)
        res = self.host.run(argv, timeout=300)
        if not res.ok:
            raise VariantError(f"{self.host.name}: creating {name} failed: {res.tail(4)}", host=self.host.name,
                               unit=name)
        return True

    def journal_outlives_removal(self, name: str) -> bool:
        return False  # the removal copies the logs out while it deletes the container: a read between sees half

    def remove_variant(self, name: str) -> bool:
        name = ct.check_name(name)
        current = self.inspect([name]).get(name)
        if current is None:
            return True
        if current.variant_of is None:
            raise VariantError(f"{self.host.name}: {name} is not a variant; refusing to remove it",
                               host=self.host.name, unit=name)
        res = self.host.run(self.remove_variant_argv(name), timeout=180)
        return res.ok

    # -- what the host guard runs without us (argv, built here like the verbs above) ---------
    def remove_variant_argv(self, name: str) -> list[str]:
        """Keep its logs (for its traceback, as journald keeps a unit's), then remove it."""
        return ["sh", "-c", _REMOVE, "remove", self.runtime, ct.check_name(name), LOG_DIR]

    def start_argv(self, unit: str) -> list[str]:
        return [self.runtime, "start", "--", ct.check_name(unit)]

    def stop_argv(self, unit: str) -> list[str]:
        return [self.runtime, "stop", "--time", "30", "--", ct.check_name(unit)]

    def running_argv(self, unit: str) -> list[str]:
        return ["sh", "-c", '[ "$("$0" inspect --format "{{.State.Running}}" -- "$1" 2>/dev/null)" = true ]',
                self.runtime, ct.check_name(unit)]

    def variant_files(self) -> dict[str, str]:
        """Variant containers on the host: name -> base (by their label)."""
        _, out, _ = self._rt("ps", "-a", "--filter", f"label={ct.VARIANT_LABEL}", "--format", "{{.Names}}",
                             check=True)  # (the labels from inspect: `ps` formats them differently per runtime)
        infos = self.inspect(sorted({n.strip() for n in out.split() if n.strip()}))
        return {n: i.variant_of for n, i in infos.items() if i.variant_of}

    def plan(self, variant: Variant) -> tuple[str, list[str]]:
        """(where the variant lives, the commands a run issues), from the builders that run them."""
        rt, base, name = self.runtime, ct.check_name(variant.base), ct.check_name(variant.name)
        q = shlex.quote
        return f"container {name}", [
            "flock -n /run/lock/workbench.lock  # held for the session",
            shlex.join(self.create_argv(variant)),
            f"{rt} stop -t 25 -- {q(base)}  # if running",
            f"{rt} start -- {q(name)}; {rt} logs -f --timestamps -- {q(name)}  # watch",
            f"{rt} stop -- {q(name)}; {rt} rm -f -- {q(name)}",
            f"{rt} start -- {q(base)}  # restore, if it was running",
        ]

    # -- ports and GPUs -----------------------------------------------------
    def host_port(self, unit: str, argv: list[str]) -> int:
        return ct.server_port(self.info(unit), server_port(argv))

    def definition(self, st: UnitStatus) -> dict[str, str]:
        """The container's id (a recreated container is another definition; its config cannot change
        in place), keyed ``container:RUNTIME:NAME``; nothing for one that does not exist."""
        info = self.inspect([st.unit]).get(st.unit)
        return {f"container:{self.runtime}:{info.name}": info.id} if info is not None else {}

    def server_roots(self, unit: str, st: UnitStatus, argv: list[str]) -> set[int]:
        """The container's init on host networking; a published port is the runtime's to hold
        (conmon, docker-proxy, a NAT rule): not judged."""
        info = self.info(unit)
        return {st.main_pid} if st.main_pid and (info.network_mode == "host" or not info.ports) else set()

    def attribute_gpus(self, inv: gpus.GpuInventory, units: list[str]) -> gpus.GpuInventory:
        """GPU processes named by their container (its main process's group)."""
        infos = self.inspect([u for u in units if ct.NAME_RE.match(u.removesuffix(".service"))])
        return gpus.attribute(inv, {i.pid: i.name for i in infos.values() if i.running and i.pid})

    def gpus_held(self, unit: str, inv: gpus.GpuInventory | None = None) -> list[int]:
        """GPUs the container's processes hold: host PIDs in its process group, else ``nvidia-smi``
        inside the container (whose PID namespace hides its processes from the host's view)."""
        info = self.info(unit)
        if not info.running:
            return []
        inv = inv or gpus.inventory(self.host)
        held = {a.gpu_index for a in inv.apps if info.pid and info.pid in (a.pid, a.pgid) and a.gpu_index is not None}
        if held:
            return sorted(held)
        res = self.host.run([self.runtime, "exec", info.name, "sh", "-c", gpus.inventory_command()], timeout=30)
        if res.exited in (90, 91, 126, 127) or not res.ok:
            return []
        return sorted({a.gpu_index for a in gpus.parse_inventory(res.stdout).apps if a.gpu_index is not None})

    # -- logs ---------------------------------------------------------------
    def cursor(self) -> str:
        res = self.host.run(["date", "+%s%6N"], timeout=30, check=True)
        return f"@{res.stdout.strip()}"

    def follow(self, unit: str, cursor: str) -> LineStream:
        usec = int(cursor[1:]) if cursor.startswith("@") and cursor[1:].isdigit() else 0
        return self.host.stream(["sh", "-c", _FOLLOW, "follow", self.runtime, ct.check_name(unit), str(usec),
                                 ct.iso(usec)])

    def parse_entry(self, line: str, unit: str) -> Entry | None:
        if line.startswith("@@exited "):
            stamp = line.split()[1] if len(line.split()) > 1 else ""
            return Entry(usec=int(stamp) if stamp.isdigit() else 0, message=f"container {unit} stopped", pid=None,
                         unit=unit, invocation=None, manager=True, message_id=MSG_UNIT_STOPPED)
        return ct.parse_log_line(line, unit)

    def _log(self, name: str, *, timeout: float) -> tuple[str, str, ContainerInfo | None]:
        """(its log with timestamps, its events as JSON lines, inspect) -- a removed variant's from
        the copy kept when it was removed."""
        res = self.host.run(["sh", "-c", _LOGS, "logs", self.runtime, name, LOG_DIR], timeout=timeout)
        if res.exited == 3:
            raise UnitNotFound(f"{self.host.name}: no container {name} and no logs kept of one", host=self.host.name,
                               unit=name)
        if not res.ok:
            raise ServiceError(f"{self.host.name}: {self.runtime} logs {name} failed: {res.tail(3)}",
                               host=self.host.name, unit=name)
        text, _, events = res.stdout.partition("\n@@events\n")
        events, kept, inspect = events.partition("@@inspect\n")
        if kept:  # removed: the inspect kept with its log names its starts as status did
            found = [i for i in ct.parse_inspect(inspect.strip() or "[]") if i.name == name]
            return text, events, found[0] if found else None
        return text, events, self.inspect([name]).get(name)

    def _table(self, unit: str, timeout: float) -> tuple[pa.Table, pd.DataFrame]:
        name = ct.check_name(unit)
        text, events, info = self._log(name, timeout=timeout)
        return (journal_container.parse(text, events, info, unit=name, host=self.host.name),
                journal_container.invocations(events, info))

    def journal_invocations(self, unit: str, n: int | None = None, *, timeout: float = 120.0) -> pd.DataFrame:
        name = ct.check_name(unit)
        _, events, info = self._log(name, timeout=timeout)
        out = journal_container.invocations(events, info)
        return out.tail(n).reset_index(drop=True) if n is not None else out

    def journal_read(self, unit: str, *, invocation: str | int | None = None, last_invocations: int | None = None,
                     since: Any = None, until: Any = None, timeout: float = 600.0, compress: bool = True,
                     jobs: int | None = None, text: bool = True) -> JournalFrame:
        table, invs = self._table(unit, timeout)
        return journal_container.read(table, invs, unit=ct.check_name(unit), invocation=invocation,
                                      last_invocations=last_invocations, since=since, until=until)

    def journal_since(self, unit: str, cursor: str, *, invocation: str | None = None, timeout: float = 600.0,
                      compress: bool = True) -> tuple[JournalFrame, str]:
        table, _ = self._table(unit, timeout)
        return journal_container.since_cursor(table, cursor, unit=ct.check_name(unit), invocation=invocation)

    def tail_entries(self, unit: str = "", invocation: str = "", lines: int = 500) -> list[Entry]:
        """The last ``lines`` lines of the container (of one start when ``invocation`` is given)."""
        if not unit:
            raise ConfigError("the container backend reads a container's log: give its name")
        frame = self.journal_read(unit, invocation=invocation or None)
        own = frame[frame["origin"] == "unit"].tail(lines)
        return [Entry(usec=int(u), message=str(m), pid=None, unit=frame.unit, invocation=str(i) if i else None,
                      manager=False) for u, m, i in zip(own["usec"], own["message"], own["invocation"], strict=True)]


class WithContainers:
    """A host's units (systemd or process backend) and its containers, behind one ``Services``.

    A name goes to the containers when a container has it (``.service`` dropped), else to the
    units; the session's lock and record stay where the units' backend keeps them."""

    def __init__(self, units: Services, containers: ContainerServices) -> None:
        self.units_backend = units
        self.containers = containers
        self.host = units.host
        self.kind = units.kind
        self.state_dir = units.state_dir
        self.lock_dir = units.lock_dir
        self._names: set[str] | None = None
        self._known: set[str] = set()  # every container name seen: a removed variant's logs stay readable

    def _is_container(self, unit: str) -> bool:
        name = unit.removesuffix(".service")
        if not ct.NAME_RE.match(name):
            return False
        if name in self._known:
            return True
        variant = _VARIANT_NAME.match(name)  # a variant of a container, removed since (its logs are kept)
        if variant is not None and variant.group(1) != name and self._is_container(variant.group(1)):
            self._known.add(name)
            return True
        if self._names is None or name not in self._names:
            self._names = set(self.containers.names())
        self._known |= self._names
        return name in self._names

    def backend(self, unit: str) -> Services:
        return self.containers if self._is_container(unit) else self.units_backend

    def status(self, unit: str) -> UnitStatus:
        return self.backend(unit).status(unit)

    def statuses(self, units: list[str]) -> list[UnitStatus]:
        return [self.status(u) for u in units]

    def units(self, pattern: str = "*") -> list[str]:
        return self.units_backend.units(pattern) + self.containers.units(pattern)

    def unit_text(self, unit: str) -> str:
        return self.backend(unit).unit_text(unit)

    def start(self, unit: str) -> UnitStatus:
        return self.backend(unit).start(unit)

    def stop(self, unit: str, *, timeout: float = 90.0) -> UnitStatus:
        return self.backend(unit).stop(unit, timeout=timeout)

    def restart(self, unit: str) -> UnitStatus:
        return self.backend(unit).restart(unit)

    def stop_if_running(self, unit: str) -> bool:
        return self.backend(unit).stop_if_running(unit)

    def reset(self, unit: str) -> None:
        self.backend(unit).reset(unit)

    def install_variant(self, variant: Variant) -> bool:
        changed = self.backend(variant.base).install_variant(variant)
        self._names = None
        return changed

    def _variant_backend(self, name: str) -> Services:
        """A variant lives where its base does, whether or not it exists yet: the record (and the
        guard's undo steps) names a variant before its container is created."""
        stem = name.removesuffix(".service")
        base = stem.rsplit("-wb-", 1)[0] if "-wb-" in stem else stem
        return self.containers if self._is_container(base) or self._is_container(name) else self.units_backend

    def journal_outlives_removal(self, name: str) -> bool:
        return self._variant_backend(name).journal_outlives_removal(name)

    def remove_variant(self, name: str) -> bool:
        return self._variant_backend(name).remove_variant(name)

    def variant_files(self) -> dict[str, str]:
        return {**self.units_backend.variant_files(), **self.containers.variant_files()}

    def cursor(self) -> str:
        """The units' journal cursor (containers follow by time: their entries carry it)."""
        return self.units_backend.cursor()

    def follow(self, unit: str, cursor: str) -> LineStream:
        if self._is_container(unit):
            return self.containers.follow(unit, self.containers.cursor() if not cursor.startswith("@") else cursor)
        return self.units_backend.follow(unit, cursor)

    def parse_entry(self, line: str, unit: str) -> Entry | None:
        return self.backend(unit).parse_entry(line, unit)

    def journal_invocations(self, unit: str, n: int | None = None, *, timeout: float = 120.0) -> pd.DataFrame:
        return self.backend(unit).journal_invocations(unit, n, timeout=timeout)

    def journal_read(self, unit: str, *, invocation: str | int | None = None, last_invocations: int | None = None,
                     since: Any = None, until: Any = None, timeout: float = 600.0, compress: bool = True,
                     jobs: int | None = None, text: bool = True) -> JournalFrame:
        return self.backend(unit).journal_read(unit, invocation=invocation, last_invocations=last_invocations,
                                               since=since, until=until, timeout=timeout, compress=compress,
                                               jobs=jobs, text=text)

    def journal_since(self, unit: str, cursor: str, *, invocation: str | None = None, timeout: float = 600.0,
                      compress: bool = True) -> tuple[JournalFrame, str]:
        return self.backend(unit).journal_since(unit, cursor, invocation=invocation, timeout=timeout,
                                                compress=compress)

    def tail_entries(self, unit: str = "", invocation: str = "", lines: int = 500) -> list[Entry]:
        return self.backend(unit).tail_entries(unit, invocation, lines)

    def host_port(self, unit: str, argv: list[str]) -> int:
        return self.backend(unit).host_port(unit, argv)

    def definition(self, st: UnitStatus) -> dict[str, str]:
        return self.backend(st.unit).definition(st)

    def server_roots(self, unit: str, st: UnitStatus, argv: list[str]) -> set[int]:
        return self.backend(unit).server_roots(unit, st, argv)

    def attribute_gpus(self, inv: gpus.GpuInventory, units: list[str]) -> gpus.GpuInventory:
        inv = self.units_backend.attribute_gpus(inv, [u for u in units if not self._is_container(u)])
        return self.containers.attribute_gpus(inv, [u for u in units if self._is_container(u)])

    def plan(self, variant: Variant) -> tuple[str, list[str]]:
        return self.backend(variant.base).plan(variant)

    def remove_variant_argv(self, name: str) -> list[str]:
        return self._variant_backend(name).remove_variant_argv(name)

    def start_argv(self, unit: str) -> list[str]:
        if self._is_container(unit):  # the guard runs it from its own unit: the container must outlive that
            return self.units_backend.outlive_argv(self.containers.start_argv(unit))
        return self.units_backend.start_argv(unit)

    def stop_argv(self, unit: str) -> list[str]:
        return self.backend(unit).stop_argv(unit)

    def running_argv(self, unit: str) -> list[str]:
        return self.backend(unit).running_argv(unit)

    def guard_start_argv(self, name: str, argv: list[str]) -> list[str]:
        return self.units_backend.guard_start_argv(name, argv)

    def guard_stop_argv(self, name: str) -> list[str]:
        return self.units_backend.guard_stop_argv(name)

    def guard_alive_argv(self, name: str) -> list[str]:
        return self.units_backend.guard_alive_argv(name)

    def outlive_argv(self, argv: list[str]) -> list[str]:
        return self.units_backend.outlive_argv(argv)

    def container_of(self, unit: str) -> ContainerServices | None:
        return self.containers if self._is_container(unit) else None
