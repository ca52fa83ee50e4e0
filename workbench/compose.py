"""A service of a compose file as a named container: read the YAML here, run it with ``podman run``.

Why not ``podman compose`` / ``docker compose``: ``podman compose`` only hands the file to an
external provider (``docker-compose`` or ``podman-compose``) that is often not installed (it is
not on the testbed's podman 4.3.1), and what a provider creates differs between providers.  The
workbench reads the service itself (image, entrypoint, command, environment, env files, ports,
network mode, IPC, devices and GPU reservations, volumes, shm size, capabilities, ulimits, restart
policy, working directory, init, user) and creates the container with one ``podman|docker run -d --name NAME ...`` -- so the
container's own command line (podman's ``CreateCommand``) is an ordinary ``run`` and every variant,
status, log and restore of the container backend applies unchanged.  See docs/containers.md.

Interpolation follows compose: ``${VAR}``, ``${VAR:-default}`` / ``${VAR-default}``,
``${VAR:?message}`` (an error), ``$VAR``, and ``$$`` for a literal ``$``, from the environment
given (the controller's, as compose reads the caller's); a variable that is not set becomes
empty and is listed in :attr:`ComposeService.unset` (compose warns the same way).  An
``environment`` entry without a value passes the variable through from that environment.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped,unused-ignore]

from workbench.containers import NAME_RE, RUNTIMES
from workbench.errors import ConfigError

__all__ = ["COMPOSE_LABEL", "ComposeService", "load", "run_argv"]

COMPOSE_LABEL = "workbench.compose"  # "FILE:SERVICE" of the container's definition
_VAR = re.compile(r"\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])((?:[^{}]|\{[^{}]*\})*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


@dataclass
class ComposeService:
    """One service, interpolated, in the terms of ``podman run``."""

    name: str  # the service's key
    container_name: str
    image: str
    entrypoint: list[str] | None
    command: list[str] | None
    environment: dict[str, str] = field(default_factory=dict)
    ports: list[str] = field(default_factory=list)
    network_mode: str = ""
    ipc: str = ""
    devices: list[str] = field(default_factory=list)
    gpus: str = ""  # --gpus value from deploy.resources.reservations.devices (nvidia/gpu)
    volumes: list[str] = field(default_factory=list)
    shm_size: str = ""
    cap_add: list[str] = field(default_factory=list)
    ulimits: list[str] = field(default_factory=list)
    restart: str = ""
    runtime: str = ""  # an OCI runtime (nvidia, habana): docker's --runtime
    working_dir: str = ""
    init: bool = False
    user: str = ""
    source: str = ""  # FILE:SERVICE
    unset: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # keys read but not carried into the run

    @property
    def argv(self) -> list[str]:
        """What runs: the entrypoint then the command (the image's own when neither is given)."""
        return [*(self.entrypoint or []), *(self.command or [])]


def _interpolate(value: str, env: Mapping[str, str], unset: list[str], where: str) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(1):
            return "$"
        name = m.group(2) or m.group(5)
        op, arg = m.group(3), m.group(4) or ""
        have = env.get(name)
        empty = have is None or (op is not None and op.startswith(":") and have == "")
        if op in ("-", ":-"):
            return _interpolate(arg, env, unset, where) if empty else str(have)
        if op in ("?", ":?"):
            if empty:
                raise ConfigError(f"{where}: {name} is required: {arg or 'not set'}")
            return str(have)
        if have is None:
            unset.append(name)
            return ""
        return have

    return _VAR.sub(sub, value)


def _walk(node: Any, env: Mapping[str, str], unset: list[str], where: str) -> Any:
    if isinstance(node, str):
        return _interpolate(node, env, unset, where)
    if isinstance(node, list):
        return [_walk(x, env, unset, where) for x in node]
    if isinstance(node, dict):
        return {k: _walk(v, env, unset, where) for k, v in node.items()}
    return node


def _words(value: Any, key: str, where: str) -> list[str] | None:
    """A command/entrypoint: a list as is, a string split as a shell would (compose does the same)."""
    if value is None:
        return None
    if isinstance(value, str):
        return shlex.split(value)
    if isinstance(value, list) and all(isinstance(x, str | int | float) for x in value):
        return [str(x) for x in value]
    raise ConfigError(f"{where}: {key} must be a string or a list of strings")


def _env_file(path: Path, where: str) -> dict[str, str]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read env_file {path}: {exc.strerror or exc}") from exc
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        if eq:
            out[key.strip()] = value.strip().strip("'\"")
    return out


def _environment(raw: Any, env: Mapping[str, str], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    items: list[tuple[str, Any]]
    if isinstance(raw, dict):
        items = list(raw.items())
    elif isinstance(raw, list):
        items = [(e.partition("=")[0], e.partition("=")[2] if "=" in e else None) for e in map(str, raw)]
    elif raw is None:
        items = []
    else:
        raise ConfigError(f"{where}: environment must be a mapping or a list")
    for key, value in items:
        if value is None:  # passed through from the caller's environment, when it has it
            if key in env:
                out[str(key)] = env[key]
        else:
            out[str(key)] = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    return out


def _gpus(deploy: Any) -> str:
    devices = (((deploy or {}).get("resources") or {}).get("reservations") or {}).get("devices") or []
    for dev in devices:
        caps = [str(c) for c in dev.get("capabilities") or []]
        if dev.get("driver", "nvidia") == "nvidia" and ("gpu" in caps or not caps):
            if dev.get("device_ids"):
                return "device=" + ",".join(str(i) for i in dev["device_ids"])
            count = dev.get("count", "all")
            return "all" if str(count) == "all" else str(count)
    return ""


def _ulimits(raw: Any) -> list[str]:
    out = []
    for name, value in (raw or {}).items():
        if isinstance(value, dict):
            out.append(f"{name}={value.get('soft')}:{value.get('hard')}")
        else:
            out.append(f"{name}={value}")
    return out


_CARRIED = {"image", "container_name", "entrypoint", "command", "environment", "env_file", "ports", "network_mode",
            "ipc", "devices", "deploy", "volumes", "shm_size", "cap_add", "ulimits", "restart", "runtime",
            "working_dir", "init", "user"}
_HARMLESS = {"healthcheck", "profiles", "depends_on", "labels", "networks", "logging", "stdin_open", "tty"}


def load(path: str | Path, service: str | None = None, *, env: Mapping[str, str] | None = None,
         project: str | None = None) -> ComposeService:
    """The service ``service`` of the compose file (the only one when not named), interpolated."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read compose file {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not YAML: {exc}") from exc
    services = (doc or {}).get("services") if isinstance(doc, dict) else None
    if not isinstance(services, dict) or not services:
        raise ConfigError(f"{path}: no services: a compose file defines them under `services:`")
    if service is None:
        if len(services) != 1:
            raise ConfigError(f"{path}: several services ({', '.join(services)}): name the one to run")
        service = next(iter(services))
    if service not in services:
        raise ConfigError(f"{path}: no service {service!r} (services: {', '.join(services)})")
    where = f"{path}:{service}"
    env = dict(os.environ if env is None else env)
    env.setdefault("PWD", str(path.parent.resolve()))
    unset: list[str] = []
    raw = _walk(services[service] or {}, env, unset, where)
    if "build" in raw and "image" not in raw:
        raise ConfigError(f"{where}: the service is built (`build:`), not an image: build and tag it on the host "
                          "(podman build -t NAME), then name it as `image:`")
    image = str(raw.get("image") or "")
    if not image:
        raise ConfigError(f"{where}: no image" + (f" (the variables {sorted(set(unset))} are not set)" if unset
                                                   else ""))
    network = str(raw.get("network_mode") or "")
    if network.startswith("service:"):
        raise ConfigError(f"{where}: network_mode {network!r} joins another service's container's network: run "
                          "that service first and name its container (network_mode: container:NAME)")
    environment: dict[str, str] = {}
    files = raw.get("env_file") or []
    for f in [files] if isinstance(files, str | dict) else files:
        p = Path(f["path"] if isinstance(f, dict) else f)
        environment.update(_env_file(p if p.is_absolute() else path.parent / p, where))
    environment.update(_environment(raw.get("environment"), env, where))
    project = project or re.sub(r"[^a-z0-9_-]", "", path.parent.resolve().name.lower()) or "default"
    name = str(raw.get("container_name") or f"{project}-{service}-1")
    if not NAME_RE.match(name):
        raise ConfigError(f"{where}: not a valid container name: {name!r}")
    ports = []
    for p in raw.get("ports") or []:
        if isinstance(p, dict):
            ip = f"{p['host_ip']}:" if p.get("host_ip") else ""
            host = f"{ip}{p.get('published', '')}"
            ports.append(f"{host}:{p['target']}/{p.get('protocol', 'tcp')}" if p.get("published") else str(p["target"]))
        else:
            ports.append(str(p))
    volumes = []
    for v in raw.get("volumes") or []:
        if isinstance(v, dict):
            ro = ":ro" if v.get("read_only") else ""
            volumes.append(f"{v['source']}:{v['target']}{ro}" if v.get("source") else str(v["target"]))
        else:
            volumes.append(str(v))
    return ComposeService(
        name=service, container_name=name, image=image, entrypoint=_words(raw.get("entrypoint"), "entrypoint", where),
        command=_words(raw.get("command"), "command", where), environment=environment, ports=ports,
        network_mode=network, ipc=str(raw.get("ipc") or ""), devices=[str(d) for d in raw.get("devices") or []],
        gpus=_gpus(raw.get("deploy")), volumes=volumes, shm_size=str(raw.get("shm_size") or ""),
        cap_add=[str(c) for c in raw.get("cap_add") or []], ulimits=_ulimits(raw.get("ulimits")),
        restart=str(raw.get("restart") or ""), runtime=str(raw.get("runtime") or ""), source=f"{path.name}:{service}",
        working_dir=str(raw.get("working_dir") or ""), init=raw.get("init") is True, user=str(raw.get("user") or ""),
        unset=sorted(set(unset)), ignored=sorted(k for k in raw if k not in _CARRIED | _HARMLESS),
    )


def run_argv(svc: ComposeService, runtime: str = "podman", *, extra: list[str] | None = None) -> list[str]:
    """``RUNTIME run -d --name NAME ... IMAGE ARGV``: the service as one container.

    The entrypoint's first word is ``--entrypoint``, the rest lead the command (``--entrypoint``
    takes one executable on docker).  ``runtime: nvidia`` becomes docker's ``--runtime``; podman
    reaches GPUs through ``--device nvidia.com/gpu=...`` (CDI) or ``--gpus``, so it is left out there."""
    if runtime not in RUNTIMES:
        raise ConfigError(f"container runtime must be one of {RUNTIMES}, not {runtime!r}")
    opts = ["-d", "--name", svc.container_name, "--label", f"{COMPOSE_LABEL}={svc.source}"]
    if svc.network_mode:
        opts += ["--network", svc.network_mode]
    if svc.network_mode != "host":
        opts += [a for p in svc.ports for a in ("-p", p)]
    if svc.ipc:
        opts += ["--ipc", svc.ipc]
    if svc.init:
        opts += ["--init"]
    if svc.working_dir:
        opts += ["-w", svc.working_dir]
    if svc.user:
        opts += ["-u", svc.user]
    if svc.shm_size:
        opts += ["--shm-size", svc.shm_size]
    for d in svc.devices:
        opts += ["--device", d]
    if svc.gpus:
        opts += ["--gpus", svc.gpus]
    for v in svc.volumes:
        opts += ["-v", v]
    for c in svc.cap_add:
        opts += ["--cap-add", c]
    for u in svc.ulimits:
        opts += ["--ulimit", u]
    if svc.restart and svc.restart != "no":
        opts += ["--restart", svc.restart]
    if svc.runtime and runtime == "docker":
        opts += ["--runtime", svc.runtime]
    for key, value in svc.environment.items():
        opts += ["-e", f"{key}={value}"]
    argv: list[str] = list(svc.command or [])
    if svc.entrypoint:
        opts += ["--entrypoint", svc.entrypoint[0]]
        argv = [*svc.entrypoint[1:], *argv]
    return [runtime, "run", *opts, *(extra or []), svc.image, *argv]
