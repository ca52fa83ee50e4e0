"""The simulated GPU host: GPU model, count, memory, power and bandwidth (``host.toml``)."""

from __future__ import annotations

import hashlib
import os
import tomllib
import uuid
from dataclasses import dataclass, fields
from typing import Any

DEFAULT_HOST_FILE = "/etc/sglang-sim/host.toml"
HOST_FILE_ENV = "SGLANG_SIM_HOST_FILE"
# PCI bus numbers of an 8-GPU HGX baseboard, in nvidia-smi index order.
_BUS_IDS = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


@dataclass(frozen=True)
class GpuHost:
    """What ``nvidia-smi`` shows and what the performance model reads."""

    name: str = "NVIDIA B300 SXM6 AC"
    count: int = 8
    memory_total_mib: int = 275040
    power_limit_w: float = 1100.0
    power_min_limit_w: float = 200.0
    idle_power_w: float = 142.0
    context_power_w: float = 188.0
    membound_power_w: float = 360.0
    hbm_bandwidth_gbps: float = 8000.0
    driver_version: str = "580.159.04"
    cuda_version: str = "13.0"
    compute_cap: str = "10.3"
    vbios_version: str = "97.10.4A.00.0A"
    sm_clock_max_mhz: int = 2032
    mem_clock_mhz: int = 3996
    hostname_seed: str = ""
    uuids: tuple[str, ...] = ()
    bus_ids: tuple[str, ...] = ()
    serials: tuple[str, ...] = ()

    def uuid(self, index: int) -> str:
        if index < len(self.uuids):
            return self.uuids[index]
        seed = self.hostname_seed or os.uname().nodename
        return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{seed}/{self.name}/{index}"))

    def bus_id(self, index: int) -> str:
        if index < len(self.bus_ids):
            return self.bus_ids[index]
        bus = _BUS_IDS[index] if index < len(_BUS_IDS) else 0x100 + index
        return f"00000000:{bus:02X}:00.0"

    def serial(self, index: int) -> str:
        if index < len(self.serials):
            return self.serials[index]
        digest = hashlib.blake2b(self.uuid(index).encode(), digest_size=8).digest()
        return f"165{int.from_bytes(digest, 'little') % 10**10:010d}"

    @property
    def memory_total_gib(self) -> float:
        return self.memory_total_mib / 1024.0


class HostConfigError(ValueError):
    """A host file that cannot be used; the message names the file and key."""


def load_host(path: str | None = None) -> GpuHost:
    """Read ``path`` (or env ``SGLANG_SIM_HOST_FILE``, or /etc/sglang-sim/host.toml if present)."""
    path = path or os.environ.get(HOST_FILE_ENV)
    if not path:
        if not os.path.exists(DEFAULT_HOST_FILE):
            return GpuHost()
        path = DEFAULT_HOST_FILE
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise HostConfigError(f"{path}: {e}") from e
    table: dict[str, Any] = data.get("gpu", {})
    known = {f.name: f for f in fields(GpuHost)}
    kwargs: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            raise HostConfigError(f"{path}: [gpu].{key}: unknown key")
        default = getattr(GpuHost(), key)
        if isinstance(default, tuple):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise HostConfigError(f"{path}: [gpu].{key}: expected a list of strings")
            value = tuple(value)
        if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if type(value) is not type(default):
            raise HostConfigError(
                f"{path}: [gpu].{key}: expected {type(default).__name__}, got {value!r}"
            )
        kwargs[key] = value
    host = GpuHost(**kwargs)
    if host.count < 1:
        raise HostConfigError(f"{path}: [gpu].count: must be >= 1")
    return host
