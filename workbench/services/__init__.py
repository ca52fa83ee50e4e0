"""Services on a host: systemd units, or supervised processes where there is no systemd.

Both backends offer one interface (:class:`Services`): list units, read their
status (``LoadState`` first: a missing unit is never "inactive, exit 0"),
read their effective unit text and command line, start/stop/restart them,
and place or remove a variant's runtime unit.  The process backend reads the
same unit-file syntax (``ExecStart``, ``Environment``, ``WorkingDirectory``,
``RuntimeMaxSec``, ``TimeoutStopSec``) from its own directory and runs each
start under :mod:`workbench.procsup` (``setsid``, pid and log files).

Layout: :mod:`.base` (the interface), :mod:`.systemd`, :mod:`.process`, :mod:`.container`
(named podman/docker containers, beside a host's units through :class:`WithContainers`); this
module picks the backend for a host and lists a host's units with the GPUs they hold.
"""

from __future__ import annotations

from workbench import containerunit, gpus
from workbench.errors import CommandFailed
from workbench.hosts import Host
from workbench.services.base import ServiceInfo, Services, exec_argv, server_engine
from workbench.services.container import ContainerServices, WithContainers
from workbench.services.process import DEFAULT_PROCESS_ROOT, ProcessServices
from workbench.services.systemd import SystemdServices

__all__ = [
    "DEFAULT_PROCESS_ROOT",
    "ContainerServices",
    "ProcessServices",
    "ServiceInfo",
    "Services",
    "SystemdServices",
    "WithContainers",
    "exec_argv",
    "inventory",
    "running_servers",
    "services_for",
]


def inventory(svc: Services, pattern: str = "*") -> list[ServiceInfo]:
    """Units (and containers) matching ``pattern`` with their status, command line and the GPUs they hold."""
    if isinstance(svc, WithContainers):
        units = _unit_rows(svc.units_backend, pattern)
        return units + _container_rows(svc.containers, pattern)
    if isinstance(svc, ContainerServices):
        return _container_rows(svc, pattern)
    return _unit_rows(svc, pattern)


def running_servers(svc: Services) -> list[ServiceInfo]:
    """The units (and containers) of ``svc`` that run an inference server now (SGLang, vLLM, ...)."""
    return [i for i in inventory(svc) if i.status.running and server_engine(i.argv)]


def _unit_rows(svc: Services, pattern: str) -> list[ServiceInfo]:
    # A template (getty@.service) has no state of its own: systemctl show refuses it.
    units = [u for u in svc.units(pattern) if "@." not in u]
    seen: set[str] = set()
    statuses = []
    for st in svc.statuses(units) if units else []:
        if st.unit not in seen:  # an alias (sshd.service) reports its unit's Id (ssh.service)
            seen.add(st.unit)
            statuses.append(st)
    gpu_inv = gpus.attribute(gpus.inventory(svc.host), {st.main_pid: st.unit for st in statuses if st.main_pid})
    gpu_inv = svc.attribute_gpus(gpu_inv, [st.unit for st in statuses if st.running])
    rows = []
    for st in statuses:
        try:
            argv = exec_argv(svc.unit_text(st.unit), st.unit)
        except Exception:
            argv = []
        run = containerunit.parse(argv)  # a unit that runs `podman|docker run IMAGE ...`: its image
        rows.append(ServiceInfo(st, argv, gpu_inv.held_by(st.unit), svc.kind, run.image if run is not None else ""))
    return rows


def _container_rows(svc: ContainerServices, pattern: str) -> list[ServiceInfo]:
    names = svc.units(pattern)
    infos = svc.inspect(names)
    statuses = svc.statuses(names)
    inv = gpus.inventory(svc.host) if any(i.running for i in infos.values()) else None
    return [ServiceInfo(st, infos[st.unit].argv, svc.gpus_held(st.unit, inv) if infos[st.unit].running else [],
                        svc.kind, infos[st.unit].image) for st in statuses if st.unit in infos]


# podman, else docker with a daemon that answers (a docker CLI alone runs nothing).
_RUNTIME_PROBE = ("command -v podman || { command -v docker >/dev/null && "
                  "docker version --format '{{.Server.Version}}' >/dev/null 2>&1 && command -v docker; }")


def services_for(host: Host, *, process_root: str | None = None) -> Services:
    """The backend that fits ``host``: systemd when it booted with systemd, else plain processes;
    with the host's named containers beside them when it has podman (or a running docker)."""
    root = process_root or getattr(host, "properties", {}).get("services_root")
    if root:
        return ProcessServices(host, root)
    res = host.run(["sh", "-c", f"test -d /run/systemd/system && echo @@systemd; {_RUNTIME_PROBE}; true"], timeout=30)
    if res.exited != 0:
        raise CommandFailed(f"{host.name}: probing the service backends failed: {res.tail(3)}", host=host.name,
                            result=res)
    lines = res.stdout.split()
    units: Services = SystemdServices(host) if "@@systemd" in lines else ProcessServices(host, DEFAULT_PROCESS_ROOT)
    runtime = next((p.rsplit("/", 1)[-1] for p in lines if p.rsplit("/", 1)[-1] in ("podman", "docker")), None)
    return WithContainers(units, ContainerServices(host, runtime)) if runtime else units
