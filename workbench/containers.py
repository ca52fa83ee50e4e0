"""Containers as facts: ``inspect`` parsed, logs split per start, and the ``create`` argv of a variant.

Pure functions over the real output of podman (and docker's compatible CLI); the backend that
runs them is :mod:`workbench.services.container`.  A container's *invocation* is one start:
its id is the container id's first 16 hex digits and the start time in µs (16 hex digits), so
it names the start and can be turned back into its start time.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from workbench.errors import ConfigError, ParseError
from workbench.journal import Entry
from workbench.unitfile import join_command, quote_arg

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
VARIANT_LABEL = "workbench.variant-of"
RUNTIMES = ("podman", "docker")
_ZERO = "0001-01-01T00:00:00Z"


def check_name(name: str) -> str:
    """A container name (a unit-style ``.service`` suffix is dropped)."""
    name = name.removesuffix(".service")
    if not NAME_RE.match(name):
        raise ConfigError(f"not a valid container name: {name!r}")
    return name


def parse_time(text: str) -> int:
    """RFC 3339 (nanoseconds allowed, as podman and docker print) -> µs since the epoch; 0 for the zero time."""
    text = (text or "").strip().strip('"')
    if not text or text.startswith("0001-01-01"):
        return 0
    m = re.match(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?\s*(Z|[+-]\d{2}:?\d{2})?", text)
    if not m:
        raise ParseError(f"not a timestamp: {text!r}")
    day, clock, frac, tz = m.groups()
    tz = "+00:00" if tz in (None, "Z") else (tz if ":" in tz else f"{tz[:3]}:{tz[3:]}")
    base = datetime.fromisoformat(f"{day}T{clock}{tz}")
    return int(base.timestamp()) * 1_000_000 + int(((frac or "") + "000000")[:6])


def iso(usec: int) -> str:
    return datetime.fromtimestamp(usec / 1e6, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def invocation_id(container_id: str, started_usec: int) -> str:
    return f"{container_id[:16]}{started_usec:016x}" if started_usec else ""


def invocation_start(invocation: str) -> int:
    """The start time (µs) an invocation id carries; 0 when it is not a container invocation."""
    try:
        return int(invocation[16:32], 16) if len(invocation) == 32 else 0
    except ValueError:
        return 0


@dataclass(frozen=True)
class ContainerInfo:
    """What ``inspect`` says about one container."""

    id: str
    name: str
    image: str  # as the user named it
    image_id: str
    status: str  # created | running | paused | restarting | exited | stopping | removing | dead
    exit_code: int
    restarts: int
    started_usec: int
    finished_usec: int
    pid: int
    argv: list[str]  # what runs: Path + Args
    env: list[str]
    network_mode: str
    ports: dict[str, list[int]]  # "30000/tcp" -> host ports
    create_command: list[str] | None  # podman only
    labels: dict[str, str] = field(default_factory=dict)
    restart_policy: str = ""
    error: str = ""
    oom_killed: bool = False
    host_config: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    workdir: str = ""
    user: str = ""

    @property
    def running(self) -> bool:
        return self.status in ("running", "paused")

    @property
    def invocation(self) -> str:
        return invocation_id(self.id, self.started_usec)

    @property
    def variant_of(self) -> str | None:
        return self.labels.get(VARIANT_LABEL)

    def host_ports(self) -> list[int]:
        return sorted({p for ports in self.ports.values() for p in ports})


def _ports(hc: dict[str, Any]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for cport, binds in (hc.get("PortBindings") or {}).items():
        out[cport] = [int(b["HostPort"]) for b in binds or [] if str(b.get("HostPort", "")).isdigit()]
    return out


INIT_PATHS = ("/run/podman-init",)  # podman's --init (catatonit) runs the command under it: `init -- ARGV`


def _argv(c: dict[str, Any]) -> list[str]:
    """What runs (Path + Args), without podman's init in front: the server's own command line."""
    if not c.get("Path"):
        return []
    argv = [str(c["Path"])] + [str(a) for a in c.get("Args") or []]
    if argv[0] in INIT_PATHS and len(argv) > 2 and argv[1] == "--":
        return argv[2:]
    return argv


def parse_inspect(text: str) -> list[ContainerInfo]:
    """``podman|docker inspect`` JSON (an array of containers)."""
    try:
        raw = json.loads(text or "[]")
    except ValueError as exc:
        raise ParseError(f"container inspect output is not JSON: {exc}") from exc
    out = []
    for c in raw:
        state, cfg, hc = c.get("State") or {}, c.get("Config") or {}, c.get("HostConfig") or {}
        status = str(state.get("Status", "")).lower()
        policy = hc.get("RestartPolicy") or {}
        out.append(ContainerInfo(
            id=str(c.get("Id", "")), name=str(c.get("Name", "")).lstrip("/"),
            image=str(c.get("ImageName") or cfg.get("Image") or ""), image_id=str(c.get("Image", "")),
            status=status, exit_code=int(state.get("ExitCode") or 0), restarts=int(c.get("RestartCount") or 0),
            started_usec=parse_time(str(state.get("StartedAt") or _ZERO)),
            finished_usec=parse_time(str(state.get("FinishedAt") or _ZERO)), pid=int(state.get("Pid") or 0),
            argv=_argv(c),
            env=[str(e) for e in cfg.get("Env") or []], network_mode=str(hc.get("NetworkMode", "")),
            ports=_ports(hc), create_command=[str(a) for a in cfg["CreateCommand"]] if cfg.get("CreateCommand") else None,
            labels={str(k): str(v) for k, v in (cfg.get("Labels") or {}).items()},
            restart_policy=str(policy.get("Name") or "no"), error=str(state.get("Error") or ""),
            oom_killed=bool(state.get("OOMKilled")), host_config=hc, workdir=str(cfg.get("WorkingDir") or ""),
            user=str(cfg.get("User") or ""),
        ))
    return out


def status_props(info: ContainerInfo | None, name: str, *, stopped_by_us: bool = False) -> dict[str, str]:
    """``systemctl show``-style properties for :class:`~workbench.systemd.UnitStatus` (missing: not-found)."""
    if info is None:
        return {"Id": name, "LoadState": "not-found", "ActiveState": "inactive", "SubState": "dead"}
    active, sub, result = {
        "running": ("active", "running", "success"), "paused": ("active", "paused", "success"),
        "restarting": ("activating", "auto-restart", "exit-code"), "stopping": ("deactivating", "stop", "success"),
        "removing": ("deactivating", "stop", "success"), "created": ("inactive", "dead", "success"),
    }.get(info.status, ("inactive", "dead", "success"))
    if info.status in ("exited", "dead", "stopped"):
        # A server that exits non-zero on its own has failed; one stopped (SIGTERM/SIGKILL) has not.
        killed = info.exit_code in (130, 137, 143) and stopped_by_us
        if (info.exit_code != 0 and not killed) or info.oom_killed or info.status == "dead":
            active, sub, result = "failed", "failed", "oom-kill" if info.oom_killed else "exit-code"
    props = {
        "Id": name, "LoadState": "loaded", "ActiveState": active, "SubState": sub, "Result": result,
        "MainPID": str(info.pid if info.running else 0), "NRestarts": str(info.restarts),
        "InvocationID": info.invocation, "Type": "exec", "UnitFileState": f"restart={info.restart_policy}",
        "ExecMainCode": "1", "ExecMainStatus": str(info.exit_code),
    }
    if info.exit_code > 128 and active != "active":
        props.update(ExecMainCode="2", ExecMainStatus=str(info.exit_code - 128))
    return props


def unit_text(info: ContainerInfo) -> str:
    """The container as a unit file (what variants edit): its command as ``ExecStart``, its environment."""
    lines = ["[Unit]", f"Description=container {info.name} ({info.image})", "", "[Service]", "Type=exec",
             f"ExecStart={join_command(info.argv)}"]
    lines += [f"Environment={quote_arg(e)}" for e in info.env]
    if info.workdir:
        lines.append(f"WorkingDirectory={info.workdir}")
    lines += [f"X-WorkbenchContainer={info.name}", f"X-WorkbenchImage={info.image_id}"]
    return "\n".join(lines) + "\n"


def server_port(info: ContainerInfo, flag_port: int) -> int:
    """The host port that reaches the server: its flag's port through the published mapping
    (``-p 8080:30000`` -> 8080), or the flag's port itself on host networking."""
    if info.network_mode == "host" or not info.ports:
        return flag_port
    for cport, hports in info.ports.items():
        if cport.split("/")[0] == str(flag_port) and hports:
            return hports[0]
    raise ConfigError(f"container {info.name}: the server listens on {flag_port} but that port is not published "
                      f"(published: {sorted(info.ports)}); it cannot be reached from the host")


# -- logs ---------------------------------------------------------------------


def parse_log_line(line: str, unit: str) -> Entry | None:
    """One line of ``logs --timestamps``: ``2026-12-01T10:29:52.514293512Z message``."""
    stamp, _, message = line.partition(" ")
    try:
        usec = parse_time(stamp)
    except ParseError:
        return None
    if not usec:
        return None
    return Entry(usec=usec, message=message, pid=None, unit=unit, invocation=None, manager=False)


def events(events_jsonl: str) -> list[dict[str, Any]]:
    """The records of ``podman events --format json`` output that have a time; other lines skipped."""
    out = []
    for line in events_jsonl.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict) and ev.get("Time"):
            out.append(ev)
    return out


def start_boundaries(events_jsonl: str) -> list[int]:
    """µs times of the ``init`` events (each start's first event, before its first line), sorted."""
    out = [parse_time(str(ev["Time"])) for ev in events(events_jsonl) if str(ev.get("Status", "")).lower() == "init"]
    return sorted(t for t in out if t)


def split_invocation(log_text: str, unit: str, started_usec: int, boundaries: list[int]) -> list[str]:
    """The lines of the start that began at ``started_usec``: from its ``init`` event (or its start,
    when there are no events) up to the next start's ``init``."""
    begin = max([b for b in boundaries if b <= started_usec], default=started_usec)
    end = min([b for b in boundaries if b > started_usec], default=None)
    lines = []
    for raw in log_text.splitlines():
        e = parse_log_line(raw, unit)
        if e is not None and e.usec >= begin and (end is None or e.usec < end):
            lines.append(e.message)
    return lines


# -- variant containers ----------------------------------------------------------

# Options of `podman|docker run/create` that take no value (everything else takes one unless `--x=v`).
_BOOL_LONG = {"--detach", "--interactive", "--tty", "--rm", "--privileged", "--init", "--read-only", "--replace",
              "--rmi", "--publish-all", "--no-hosts", "--oom-kill-disable", "--sig-proxy", "--env-host",
              "--no-healthcheck", "--read-only-tmpfs", "--quiet", "--http-proxy", "--help"}
_BOOL_SHORT = set("dit" "P" "q")
# Options a variant does not inherit: its own name, lifetime and entrypoint replace them.
_DROP = {"--name", "--detach", "-d", "--rm", "--restart", "--replace", "--pull", "--timeout", "--entrypoint",
         "--tty", "-t", "--interactive", "-i", "--label", "-l", "--rmi", "--cidfile"}


def _span(tail: list[str], j: int) -> int:
    """How many tokens the option at ``tail[j]`` spans (1, or 2 with its value)."""
    tok = tail[j]
    if tok.startswith("--"):
        return 1 if "=" in tok or tok in _BOOL_LONG else 2
    if set(tok[1:]) <= _BOOL_SHORT:
        return 1
    if len(tok) > 2 and tok[1] not in _BOOL_SHORT:
        return 1  # -p8080:80: the value is attached
    return 2


def split_run(argv: list[str]) -> tuple[list[str], list[str], list[str]]:
    """A ``... run|create [options] IMAGE [command]`` argv -> (program + global options + verb,
    options, rest); ``rest`` starts with the image."""
    for i, tok in enumerate(argv):
        if tok in ("run", "create"):
            head, tail = argv[: i + 1], argv[i + 1:]
            break
    else:
        raise ConfigError(f"not a `run`/`create` command line: {shlex.join(argv)[:200]}")
    opts: list[str] = []
    j = 0
    while j < len(tail) and tail[j].startswith("-") and tail[j] != "-":
        if tail[j] == "--":
            j += 1
            break
        n = _span(tail, j)
        opts += tail[j: j + n]
        j += n
    if j >= len(tail):
        raise ConfigError(f"no image in the command line: {shlex.join(argv)[:200]}")
    return head, opts, tail[j:]


def _inherited(opts: list[str]) -> list[str]:
    """The base's options a variant keeps: everything but name, lifetime, terminal and entrypoint."""
    out: list[str] = []
    j = 0
    while j < len(opts):
        n = _span(opts, j)
        tok, span = opts[j], opts[j: j + n]
        j += n
        if not tok.startswith("--") and set(tok[1:]) <= _BOOL_SHORT:
            keep = "".join(c for c in tok[1:] if c not in "dit")
            out += [f"-{keep}"] if keep else []
        elif tok.split("=", 1)[0] in ("--label", "-l"):
            value = span[1] if n == 2 else tok.split("=", 1)[-1]
            out += [] if value.startswith(VARIANT_LABEL) else span
        elif tok.split("=", 1)[0] not in _DROP:
            out += span
    return out


def _from_host_config(info: ContainerInfo) -> list[str]:
    """``run`` options rebuilt from inspect (docker keeps no command line): the ones servers use."""
    hc = info.host_config
    opts: list[str] = []
    if hc.get("Init"):  # docker's --init: without it a server that kills its own tree is PID 1, and hangs
        opts += ["--init"]
    if hc.get("Privileged"):
        opts += ["--privileged"]
    if hc.get("Runtime") and hc["Runtime"] not in ("runc", "io.containerd.runc.v2", "crun"):
        opts += ["--runtime", str(hc["Runtime"])]  # e.g. nvidia
    for cap in hc.get("CapAdd") or []:
        opts += ["--cap-add", str(cap)]
    for opt in hc.get("SecurityOpt") or []:
        opts += ["--security-opt", str(opt)]
    for lim in hc.get("Ulimits") or []:
        opts += ["--ulimit", f"{lim.get('Name')}={lim.get('Soft')}:{lim.get('Hard')}"]
    if info.network_mode and info.network_mode not in ("default", "bridge"):
        opts += ["--network", info.network_mode]
    for cport, hports in info.ports.items():
        opts += [a for h in hports for a in ("-p", f"{h}:{cport}")]
    for bind in hc.get("Binds") or []:
        opts += ["-v", str(bind)]
    if hc.get("IpcMode") and hc["IpcMode"] not in ("private", "shareable", ""):
        opts += ["--ipc", str(hc["IpcMode"])]
    if hc.get("ShmSize"):
        opts += ["--shm-size", str(hc["ShmSize"])]
    if hc.get("PidMode") and hc["PidMode"] not in ("private", ""):
        opts += ["--pid", str(hc["PidMode"])]
    for req in hc.get("DeviceRequests") or []:
        ids = req.get("DeviceIDs") or []
        opts += ["--gpus", f"device={','.join(ids)}" if ids else "all"]
    for dev in hc.get("Devices") or []:
        opts += ["--device", f"{dev.get('PathOnHost')}:{dev.get('PathInContainer')}"]
    for e in info.env:
        opts += ["-e", e]
    if info.workdir:
        opts += ["-w", info.workdir]
    if info.user:
        opts += ["-u", info.user]
    return opts


def create_argv(runtime: str, base: ContainerInfo, name: str, argv: list[str], env: list[tuple[str, str | None]],
                *, timeout_s: int | None) -> list[str]:
    """``create`` for a variant: the base's options (its command line on podman, else rebuilt from
    inspect), the same image by id, the edited command, env edits; ``--restart no`` (a failed start
    is seen once), a label naming the base, and podman's ``--timeout`` as the dead-man switch."""
    if not argv:
        raise ConfigError(f"container {base.name}: no command to edit")
    if base.create_command:
        head, opts, _ = split_run(base.create_command)
        globals_ = head[1:-1]
        opts = _inherited(opts)
    else:
        globals_, opts = [], _from_host_config(base)
    extra = ["--name", name, "--label", f"{VARIANT_LABEL}={base.name}", "--restart", "no"]
    if runtime == "podman":
        extra += ["--pull", "never"] + (["--timeout", str(timeout_s)] if timeout_s else [])
    for key, value in env:
        if value is None:
            if runtime != "podman":
                raise ConfigError(f"{runtime} cannot unset an environment variable of an image ({key})")
            extra += ["--unsetenv", key]
        else:
            extra += ["-e", f"{key}={value}"]
    return [runtime, *globals_, "create", *opts, *extra, "--entrypoint", argv[0], base.image_id, *argv[1:]]
