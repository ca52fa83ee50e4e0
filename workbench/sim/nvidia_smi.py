"""The ``nvidia-smi`` of the simulated GPU hosts (formats byte-exact against real captures).

Run as a script (``python3 /opt/sglang-sim/nvidia_smi.py --query-gpu=... --format=csv``); the
testbed installs ``/usr/bin/nvidia-smi`` as a wrapper that execs it.  GPU load comes from the state
files the simulated server's rank processes publish (``$SIM_GPU_STATE_DIR``).
"""

from __future__ import annotations

import importlib
import math
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TextIO


def _simcore(name: str) -> ModuleType:
    if __package__:
        return importlib.import_module(f"{__package__}.simcore.{name}")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    return importlib.import_module(f"simcore.{name}")


gpustate = _simcore("gpustate")
hostcfg = _simcore("hostcfg")

NA = "[N/A]"


@dataclass
class Gpu:
    """One GPU's current readings."""

    index: int
    host: Any
    procs: list[Any]
    now: float

    @property
    def busy(self) -> float:
        return max((p.util for p in self.procs), default=0.0)

    @property
    def mem_used(self) -> int:
        return sum(p.memory_mib for p in self.procs)

    @property
    def reserved(self) -> int:
        return math.ceil(self.host.memory_total_mib * 0.00428)

    @property
    def power(self) -> float:
        h = self.host
        if not self.procs:
            base = h.idle_power_w
        else:
            base = max((p.power_w or h.context_power_w) for p in self.procs)
        wobble = ((int(self.now * 10) * 7919 + self.index * 104729) % 200 - 100) / 100.0
        return min(base + wobble * 0.6, h.power_limit_w)

    @property
    def instant_power(self) -> float:
        wobble = ((int(self.now * 50) * 31 + self.index * 17) % 100 - 50) / 50.0
        return min(self.power * (1.0 + 0.02 * wobble), self.host.power_limit_w)

    @property
    def temperature(self) -> int:
        return round(31 + self.index % 3 + (self.power - self.host.idle_power_w) * 0.05)

    @property
    def sm_clock(self) -> int:
        if not self.procs:
            return 345
        return self.host.sm_clock_max_mhz - (112 if self.busy > 0 else 0)

    @property
    def event_reasons(self) -> str:
        return "0x0000000000000001" if not self.procs else "0x0000000000000000"


def _ts(now: float) -> str:
    return (
        time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"
    )


def _w(v: float) -> str:
    return f"{v:.2f} W"


# field name -> (header, unit or "", value getter)
GpuField = tuple[str, str, Callable[[Gpu], str]]
_GPU_FIELDS: dict[str, GpuField] = {
    "timestamp": ("timestamp", "", lambda g: _ts(g.now)),
    "driver_version": ("driver_version", "", lambda g: g.host.driver_version),
    "count": ("count", "", lambda g: str(g.host.count)),
    "name": ("name", "", lambda g: g.host.name),
    "serial": ("serial", "", lambda g: g.host.serial(g.index)),
    "uuid": ("uuid", "", lambda g: g.host.uuid(g.index)),
    "pci.bus_id": ("pci.bus_id", "", lambda g: g.host.bus_id(g.index)),
    "index": ("index", "", lambda g: str(g.index)),
    "vbios_version": ("vbios_version", "", lambda g: g.host.vbios_version),
    "compute_cap": ("compute_cap", "", lambda g: g.host.compute_cap),
    "persistence_mode": ("persistence_mode", "", lambda g: "Enabled"),
    "compute_mode": ("compute_mode", "", lambda g: "Default"),
    "display_mode": ("display_mode", "", lambda g: "[Requested functionality has been deprecated]"),
    "display_active": ("display_active", "", lambda g: "Disabled"),
    "mig.mode.current": ("mig.mode.current", "", lambda g: "Disabled"),
    "ecc.mode.current": ("ecc.mode.current", "", lambda g: "Enabled"),
    "ecc.errors.uncorrected.volatile.total": (
        "ecc.errors.uncorrected.volatile.total",
        "",
        lambda g: "0",
    ),
    "pcie.link.gen.current": ("pcie.link.gen.current", "", lambda g: "5"),
    "pcie.link.gen.max": ("pcie.link.gen.max", "", lambda g: "5"),
    "pcie.link.width.current": ("pcie.link.width.current", "", lambda g: "16"),
    "pcie.link.width.max": ("pcie.link.width.max", "", lambda g: "16"),
    "pstate": ("pstate", "", lambda g: "P0"),
    "fan.speed": ("fan.speed", "%", lambda g: NA),
    "memory.total": ("memory.total", "MiB", lambda g: str(g.host.memory_total_mib)),
    "memory.reserved": ("memory.reserved", "MiB", lambda g: str(g.reserved)),
    "memory.used": ("memory.used", "MiB", lambda g: str(g.mem_used)),
    "memory.free": (
        "memory.free",
        "MiB",
        lambda g: str(g.host.memory_total_mib - g.reserved + 1 - g.mem_used),
    ),
    "utilization.gpu": ("utilization.gpu", "%", lambda g: str(round(g.busy))),
    "utilization.memory": (
        "utilization.memory",
        "%",
        lambda g: str(round(max((p.mem_util for p in g.procs), default=0))),
    ),
    "temperature.gpu": ("temperature.gpu", "", lambda g: str(g.temperature)),
    "temperature.memory": ("temperature.memory", "", lambda g: str(g.temperature + 2)),
    "temperature.gpu.tlimit": ("temperature.gpu.tlimit", "", lambda g: str(87 - g.temperature)),
    "power.draw": ("power.draw", "W", lambda g: _w(g.power)),
    "power.draw.average": ("power.draw.average", "W", lambda g: _w(g.power)),
    "power.draw.instant": ("power.draw.instant", "W", lambda g: _w(g.instant_power)),
    "power.limit": ("power.limit", "W", lambda g: _w(g.host.power_limit_w)),
    "enforced.power.limit": ("enforced.power.limit", "W", lambda g: _w(g.host.power_limit_w)),
    "power.default_limit": ("power.default_limit", "W", lambda g: _w(g.host.power_limit_w)),
    "power.min_limit": ("power.min_limit", "W", lambda g: _w(g.host.power_min_limit_w)),
    "power.max_limit": ("power.max_limit", "W", lambda g: _w(g.host.power_limit_w)),
    "clocks.current.sm": ("clocks.current.sm", "MHz", lambda g: f"{g.sm_clock} MHz"),
    "clocks.current.graphics": ("clocks.current.graphics", "MHz", lambda g: f"{g.sm_clock} MHz"),
    "clocks.current.memory": (
        "clocks.current.memory",
        "MHz",
        lambda g: f"{g.host.mem_clock_mhz} MHz",
    ),
    "clocks.max.sm": ("clocks.max.sm", "MHz", lambda g: f"{g.host.sm_clock_max_mhz} MHz"),
    "clocks.max.graphics": (
        "clocks.max.graphics",
        "MHz",
        lambda g: f"{g.host.sm_clock_max_mhz} MHz",
    ),
    "clocks.max.memory": ("clocks.max.memory", "MHz", lambda g: f"{g.host.mem_clock_mhz} MHz"),
    "clocks_event_reasons.active": ("clocks_event_reasons.active", "", lambda g: g.event_reasons),
    "clocks_event_reasons.supported": (
        "clocks_event_reasons.supported",
        "",
        lambda g: "0x00000000000001FF",
    ),
}
_GPU_ALIASES = {
    "gpu_name": "name",
    "gpu_serial": "serial",
    "gpu_uuid": "uuid",
    "gpu_bus_id": "pci.bus_id",
    "clocks.sm": "clocks.current.sm",
    "clocks.gr": "clocks.current.graphics",
    "clocks.mem": "clocks.current.memory",
    "clocks.max.gr": "clocks.max.graphics",
    "clocks.max.mem": "clocks.max.memory",
    "clocks_throttle_reasons.active": "clocks_event_reasons.active",
    "clocks_throttle_reasons.supported": "clocks_event_reasons.supported",
    "persistence-mode": "persistence_mode",
    "ecc.mode.current": "ecc.mode.current",
}
_APP_FIELDS = {
    "timestamp": ("timestamp", ""),
    "gpu_name": ("gpu_name", ""),
    "gpu_bus_id": ("gpu_bus_id", ""),
    "gpu_serial": ("gpu_serial", ""),
    "gpu_uuid": ("gpu_uuid", ""),
    "pid": ("pid", ""),
    "process_name": ("process_name", ""),
    "name": ("process_name", ""),
    "used_memory": ("used_gpu_memory", "MiB"),
    "used_gpu_memory": ("used_gpu_memory", "MiB"),
}


class SmiError(Exception):
    def __init__(self, message: str, rc: int) -> None:
        super().__init__(message)
        self.message, self.rc = message, rc


def _strip_unit(value: str, unit: str) -> str:
    return value[: -len(unit) - 1] if unit and value.endswith(" " + unit) else value


def _with_unit(value: str, unit: str) -> str:
    if not unit or value == NA or value.endswith(" " + unit) or unit == "W":
        return value
    return f"{value} {unit}"


def _parse_format(spec: str | None) -> tuple[bool, bool]:
    parts = (spec or "csv").split(",")
    if parts[0] != "csv" or any(p not in ("noheader", "nounits") for p in parts[1:]):
        raise SmiError("Format modifier is not recognized.\n", 2)
    return "noheader" in parts, "nounits" in parts


def _gpus(host: Any, ids: list[int] | None, now: float) -> list[Gpu]:
    states = gpustate.read_states()
    indices = ids if ids is not None else list(range(host.count))
    return [Gpu(i, host, [s for s in states if s.gpu == i], now) for i in indices]


def query_gpu(
    host: Any, fields: list[str], fmt: str | None, ids: list[int] | None, header: bool = True
) -> list[str]:
    noheader, nounits = _parse_format(fmt)
    resolved = []
    for f in fields:
        key = _GPU_ALIASES.get(f, f)
        if key not in _GPU_FIELDS:
            raise SmiError(f'Field "{f}" is not a valid field to query.\n\n', 2)
        resolved.append(_GPU_FIELDS[key])
    lines = []
    if header and not noheader:
        lines.append(", ".join(f"{h} [{u}]" if u else h for h, u, _ in resolved))
    for gpu in _gpus(host, ids, time.time()):
        values = []
        for _h, unit, get in resolved:
            v = _with_unit(get(gpu), unit)
            values.append(_strip_unit(v, unit) if nounits else v)
        lines.append(", ".join(values))
    return lines


def query_apps(host: Any, fields: list[str], fmt: str | None, ids: list[int] | None) -> list[str]:
    noheader, nounits = _parse_format(fmt)
    for f in fields:
        if f not in _APP_FIELDS:
            raise SmiError(f'Field "{f}" is not a valid field to query.\n\n', 2)
    lines = []
    if not noheader:
        lines.append(
            ", ".join(
                f"{_APP_FIELDS[f][0]} [{_APP_FIELDS[f][1]}]"
                if _APP_FIELDS[f][1]
                else _APP_FIELDS[f][0]
                for f in fields
            )
        )
    now = time.time()
    for gpu in _gpus(host, ids, now):
        for p in gpu.procs:
            row = {
                "timestamp": _ts(now),
                "gpu_name": host.name,
                "gpu_bus_id": host.bus_id(gpu.index),
                "gpu_serial": host.serial(gpu.index),
                "gpu_uuid": host.uuid(gpu.index),
                "pid": str(p.pid),
                "process_name": p.name,
                "name": p.name,
                "used_memory": f"{p.memory_mib} MiB",
                "used_gpu_memory": f"{p.memory_mib} MiB",
            }
            lines.append(
                ", ".join(_strip_unit(row[f], "MiB") if nounits else row[f] for f in fields)
            )
    return lines


def list_gpus(host: Any, ids: list[int] | None) -> list[str]:
    return [f"GPU {g.index}: {host.name} (UUID: {host.uuid(g.index)})" for g in _gpus(host, ids, 0)]


_SEP = "+-----------------------------------------+------------------------+----------------------+"


def table(host: Any, ids: list[int] | None) -> list[str]:
    now = time.time()
    gpus = _gpus(host, ids, now)
    out = [
        time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now)) + "       ",
        "+" + "-" * 89 + "+",
        f"| NVIDIA-SMI {host.driver_version:<23}Driver Version: {host.driver_version:<15}"
        f"CUDA Version: {host.cuda_version:<9}|",
        _SEP,
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
    ]
    for g in gpus:
        name = host.name if len(host.name) <= 29 else host.name[:26] + "..."
        out.append(
            f"|{g.index:>4}  {name:<29} {'On':>3}  |{host.bus_id(g.index):>19} {'Off':>3} |"
            f"{'0':>21} |"
        )
        out.append(
            f"|{'N/A':>4}{g.temperature:>5}C{'P0':>6}{round(g.power):>15}W / "
            f"{round(host.power_limit_w):>4}W |{g.mem_used:>8}MiB / "
            f"{host.memory_total_mib:>6}MiB |{round(g.busy):>7}%{'Default':>13} |"
        )
        out.append(f"|{'':41}|{'':24}|{'Disabled':>21} |")
        out.append(_SEP)
    out += [
        "",
        "+" + "-" * 89 + "+",
        "| Processes:" + " " * 78 + "|",
        "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|" + "=" * 89 + "|",
    ]
    procs = [(g.index, p) for g in gpus for p in g.procs]
    if not procs:
        out.append("|  No running processes found" + " " * 61 + "|")
    for idx, p in procs:
        name = p.name if len(p.name) <= 35 else "..." + p.name[-32:]
        out.append(f"|{idx:>5}   N/A  N/A{p.pid:>16}{'C':>7}   {name:<35}{p.memory_mib:>8}MiB |")
    out.append("+" + "-" * 89 + "+")
    return out


def _parse_ids(spec: str, host: Any) -> list[int]:
    ids = []
    for part in spec.split(","):
        part = part.strip()
        match = next(
            (i for i in range(host.count) if part in (str(i), host.uuid(i), host.bus_id(i))), None
        )
        if match is None:
            raise SmiError("No devices were found\n", 6)
        ids.append(match)
    return ids


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    args = list(sys.argv[1:] if argv is None else argv)
    opts: dict[str, str] = {}
    flags = set()
    i = 0
    valued = {
        "--query-gpu",
        "--query-compute-apps",
        "--format",
        "-i",
        "--id",
        "-l",
        "--loop",
        "-lms",
        "--loop-ms",
    }
    try:
        while i < len(args):
            a = args[i]
            key, eq, val = a.partition("=")
            if key in valued:
                if not eq:
                    i += 1
                    if i >= len(args):
                        raise SmiError(
                            f"ERROR: Option {a} is not recognized. Please run 'nvidia-smi -h'.\n\n",
                            255,
                        )
                    val = args[i]
                opts[{"--id": "-i", "--loop": "-l", "--loop-ms": "-lms"}.get(key, key)] = val
            elif a in ("-L", "--list-gpus"):
                flags.add("-L")
            else:
                raise SmiError(
                    f"ERROR: Option {a} is not recognized. Please run 'nvidia-smi -h'.\n\n", 255
                )
            i += 1
        host = hostcfg.load_host()
        ids = _parse_ids(opts["-i"], host) if "-i" in opts else None
        if "-L" in flags:
            out.write("\n".join(list_gpus(host, ids)) + "\n")
            return 0
        if "--query-gpu" in opts or "--query-compute-apps" in opts:
            apps = "--query-compute-apps" in opts
            fields = [
                f.strip()
                for f in opts.get("--query-compute-apps" if apps else "--query-gpu", "").split(",")
                if f.strip()
            ]
            interval = (
                float(opts["-lms"]) / 1000.0
                if "-lms" in opts
                else float(opts["-l"])
                if "-l" in opts
                else None
            )
            return _run_query(host, apps, fields, opts.get("--format"), ids, interval, out)
        out.write("\n".join(table(host, ids)) + "\n")
        return 0
    except SmiError as e:
        out.write(e.message)
        return e.rc


def _run_query(
    host: Any,
    apps: bool,
    fields: list[str],
    fmt: str | None,
    ids: list[int] | None,
    interval: float | None,
    out: TextIO,
) -> int:
    def one(header: bool) -> list[str]:
        if apps:
            return query_apps(host, fields, fmt, ids)
        return query_gpu(host, fields, fmt, ids, header)

    lines = one(True)
    out.write("".join(line + "\n" for line in lines))
    out.flush()
    if interval is None:
        return 0
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(0))
    start = time.monotonic()
    k = 1
    while True:
        delay = start + k * max(interval, 0.05) - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        k += 1
        lines = one(False)
        out.write("".join(line + "\n" for line in lines))
        out.flush()


if __name__ == "__main__":
    sys.exit(main())
