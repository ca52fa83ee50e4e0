"""Services on a host: systemd units, or supervised processes where there is no systemd.

Both backends offer one interface (:class:`Services`): list units, read their
status (``LoadState`` first: a missing unit is never "inactive, exit 0"),
read their effective unit text and command line, start/stop/restart them,
and place or remove a variant's runtime unit.  The process backend reads the
same unit-file syntax (``ExecStart``, ``Environment``, ``WorkingDirectory``,
``RuntimeMaxSec``, ``TimeoutStopSec``) from its own directory and runs each
start under :mod:`workbench.procsup` (``setsid``, pid and log files).

Layout: :mod:`.base` (the interface), :mod:`.systemd`, :mod:`.process`; this module picks the
backend for a host and lists a host's units with the GPUs they hold.
"""

from __future__ import annotations

from workbench import gpus
from workbench.errors import CommandFailed
from workbench.hosts import Host
from workbench.services.base import ServiceInfo, Services, exec_argv
from workbench.services.process import DEFAULT_PROCESS_ROOT, ProcessServices
from workbench.services.systemd import SystemdServices

__all__ = [
    "DEFAULT_PROCESS_ROOT",
    "ProcessServices",
    "ServiceInfo",
    "Services",
    "SystemdServices",
    "exec_argv",
    "inventory",
    "services_for",
]


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
