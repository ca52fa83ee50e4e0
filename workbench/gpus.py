"""Which GPUs are busy, and which unit holds them.

``nvidia-smi --query-compute-apps`` gives PIDs per GPU UUID; each PID maps to
its systemd unit through ``/proc/PID/cgroup``.  Inside containers the process
list may be empty or show host PIDs, so ``memory.used`` is checked as well.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field

from workbench.hosts import Host

GPU_FIELDS = "index,uuid,name,memory.used,memory.total,utilization.gpu"
APP_FIELDS = "pid,process_name,used_memory,gpu_uuid"


@dataclass(frozen=True)
class GpuApp:
    pid: int
    process_name: str
    used_memory_mib: float | None
    gpu_index: int | None
    unit: str | None = None
    pgid: int | None = None


@dataclass
class GpuInventory:
    gpus: list[dict[str, str]] = field(default_factory=list)
    apps: list[GpuApp] = field(default_factory=list)
    error: str | None = None

    def held_by(self, unit: str) -> list[int]:
        return sorted({a.gpu_index for a in self.apps if a.unit == unit and a.gpu_index is not None})

    def busy_message(self, host: str, *, allow_units: tuple[str, ...] = (), memory_threshold_mib: float = 1024.0,
                     ) -> str:
        """Why ``host``'s GPUs are not free, with what to do about the units holding them ('' when free)."""
        reasons = self.busy(allow_units=allow_units, memory_threshold_mib=memory_threshold_mib)
        if not reasons:
            return ""
        holders = sorted({a.unit for a in self.apps if a.unit and a.unit not in allow_units})
        hint = ("\n  to stop " + ", ".join(holders) + " for the run and restart it after, give the runbook "
                f"-p stop_units '{json.dumps(holders)}' (or stop it first: workbench stop {host} UNIT)"
                if holders else "")
        return f"{host}: GPUs are busy, not starting anything:\n  " + "\n  ".join(reasons) + hint

    def busy(self, *, allow_units: tuple[str, ...] = (), memory_threshold_mib: float = 1024.0) -> list[str]:
        """Reasons the GPUs are not free for a new start (empty list: free)."""
        reasons = []
        for app in self.apps:
            if app.unit in allow_units:
                continue
            where = f"GPU {app.gpu_index}" if app.gpu_index is not None else "a GPU"
            reasons.append(f"{where}: pid {app.pid} ({app.process_name}) of {app.unit or 'no unit'}")
        allowed_gpus = {a.gpu_index for a in self.apps if a.unit in allow_units}
        for gpu in self.gpus:
            idx = int(gpu["index"])
            used = _num(gpu.get("memory.used"))
            if idx not in allowed_gpus and used is not None and used > memory_threshold_mib and \
                    not any(a.gpu_index == idx for a in self.apps):
                reasons.append(f"GPU {idx}: {used:.0f} MiB in use by processes not listed (another container?)")
        return reasons


def _num(value: str | None) -> float | None:
    if value is None or value in ("", "[N/A]", "[Not Supported]"):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def parse_csv(text: str, fields: str) -> list[dict[str, str]]:
    names = fields.split(",")
    rows = []
    for rec in csv.reader(io.StringIO(text), skipinitialspace=True):
        if len(rec) == len(names):
            rows.append({k: v.strip() for k, v in zip(names, rec, strict=True)})
    return rows


_UNIT_RE = re.compile(r"/([^/]+\.service)(?:/|$)")


def unit_from_cgroup(text: str) -> str | None:
    """The innermost ``*.service`` in a ``/proc/PID/cgroup`` listing (v1 or v2)."""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and (parts[1] in ("name=systemd", "") ):
            found = _UNIT_RE.findall(parts[2])
            if found:
                return found[-1]
    return None


def inventory_command() -> str:
    """Two nvidia-smi calls in one round trip: GPUs, compute apps, and the cgroup of each app's PID."""
    return (
        f"nvidia-smi --query-gpu={GPU_FIELDS} --format=csv,noheader,nounits || exit 90; echo '@@apps'; "
        f"apps=$(nvidia-smi --query-compute-apps={APP_FIELDS} --format=csv,noheader,nounits) || exit 91; "
        'printf "%s\\n" "$apps"; '
        'for p in $(printf "%s\\n" "$apps" | cut -d, -f1); do '
        'case "$p" in *[!0-9]*|"") continue;; esac; echo "@@cgroup $p $(ps -o pgid= -p "$p" 2>/dev/null)"; cat "/proc/$p/cgroup" 2>/dev/null; done'
    )


def parse_inventory(text: str) -> GpuInventory:
    gpu_part, _, rest = text.partition("@@apps")
    gpus = parse_csv(gpu_part, GPU_FIELDS)
    uuid_to_index = {g["uuid"]: int(g["index"]) for g in gpus}
    apps_part, *cgroup_parts = rest.split("@@cgroup ")
    units: dict[int, str | None] = {}
    pgids: dict[int, int] = {}
    for part in cgroup_parts:
        head, _, body = part.partition("\n")
        fields = head.split()
        try:
            pid = int(fields[0])
        except (ValueError, IndexError):
            continue
        units[pid] = unit_from_cgroup(body)
        if len(fields) > 1 and fields[1].isdigit():
            pgids[pid] = int(fields[1])
    apps = []
    for row in parse_csv(apps_part, APP_FIELDS):
        try:
            pid = int(row["pid"])
        except ValueError:
            continue
        mem = _num(row["used_memory"])
        apps.append(GpuApp(pid, row["process_name"], mem, uuid_to_index.get(row["gpu_uuid"]), units.get(pid),
                           pgids.get(pid)))
    return GpuInventory(gpus=gpus, apps=apps)


def attribute(inv: GpuInventory, main_pids: dict[int, str]) -> GpuInventory:
    """Name the unit of apps no cgroup names, by process group (the process backend starts each
    service in its own session, so its processes' group id is the service's main PID)."""
    for i, app in enumerate(inv.apps):
        if app.unit is None and app.pgid in main_pids:
            inv.apps[i] = GpuApp(app.pid, app.process_name, app.used_memory_mib, app.gpu_index,
                                 main_pids[app.pgid], app.pgid)
    return inv


def inventory(host: Host, *, timeout: float = 30.0) -> GpuInventory:
    res = host.run(inventory_command(), timeout=timeout)
    if res.exited in (90, 91, 127):
        return GpuInventory(error=f"nvidia-smi failed on {host.name}: {res.tail(3)}")
    return parse_inventory(res.stdout)
