"""This process's view of its GPU memory (what ``avail mem=`` log figures and OOM messages use)."""

from __future__ import annotations

_mem = {"gpu": 0, "total": 275040 * 1024**2, "used": 0, "count": 8}


def configure(gpu: int, total_bytes: int, count: int = 8) -> None:
    _mem["gpu"] = gpu
    _mem["total"] = total_bytes
    _mem["count"] = count


def device_count() -> int:
    return _mem["count"]


def set_used(used_bytes: float) -> None:
    _mem["used"] = int(used_bytes)


def add_used(delta_bytes: float) -> None:
    _mem["used"] = int(_mem["used"] + delta_bytes)


def used() -> int:
    return _mem["used"]


def avail_gb() -> float:
    """Free memory in GiB, as SGLang's get_available_gpu_memory reports it (labelled GB)."""
    return (_mem["total"] - _mem["used"]) / 1024**3


def memory() -> tuple[int, int, int]:
    """(gpu index, total bytes, free bytes)."""
    return _mem["gpu"], _mem["total"], _mem["total"] - _mem["used"]
