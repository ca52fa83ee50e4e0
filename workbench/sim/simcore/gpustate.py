"""GPU state published by the server's rank processes and read by the ``nvidia-smi`` shim.

One JSON file per process, ``$SIM_GPU_STATE_DIR/<pid>.json`` (default ``/run/nvidia-sim``), written
atomically.  Files of dead processes (or of a reused pid, told apart by the process start time)
are ignored by readers.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass

STATE_DIR_ENV = "SIM_GPU_STATE_DIR"
DEFAULT_STATE_DIR = "/run/nvidia-sim"


def state_dir() -> str:
    return os.environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR


def process_start_time(pid: int) -> int | None:
    """Start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode(errors="replace")
    except OSError:
        return None
    rest = data.rsplit(")", 1)[-1].split()
    if rest and rest[0] == "Z":  # a zombie (its parent has not reaped it) holds no GPU: it is gone
        return None
    return int(rest[19]) if len(rest) > 19 else None


@dataclass
class ProcState:
    pid: int
    start_time: int
    gpu: int
    name: str
    memory_mib: int = 0
    util: float = 0.0
    mem_util: float = 0.0
    power_w: float | None = None
    updated: float = 0.0


class StateWriter:
    """Publishes one process's GPU usage; cheap enough to call on every load change."""

    def __init__(self, gpu: int, name: str, directory: str | None = None) -> None:
        self.dir = directory or state_dir()
        pid = os.getpid()
        self.state = ProcState(pid=pid, start_time=process_start_time(pid) or 0, gpu=gpu, name=name)
        self.path = os.path.join(self.dir, f"{pid}.json")
        self._enabled = True
        try:
            os.makedirs(self.dir, exist_ok=True)
        except OSError:
            self._enabled = False

    def update(self, **changes: object) -> None:
        for key, value in changes.items():
            setattr(self.state, key, value)
        self.state.updated = time.time()
        if not self._enabled:
            return
        tmp = f"{self.path}.tmp"
        try:
            with open(tmp, "w") as f:
                json.dump(asdict(self.state), f)
            os.replace(tmp, self.path)
        except OSError:
            self._enabled = False

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def read_states(directory: str | None = None) -> list[ProcState]:
    """Live processes' states, ordered by GPU then pid."""
    directory = directory or state_dir()
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    out = []
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(directory, name)) as f:
                raw = json.load(f)
            st = ProcState(**raw)
        except (OSError, ValueError, TypeError):
            continue
        if process_start_time(st.pid) != st.start_time:
            continue
        out.append(st)
    out.sort(key=lambda s: (s.gpu, s.pid))
    return out
