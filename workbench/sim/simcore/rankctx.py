"""What one simulated rank process needs besides SGLang's own state: phase pacing and GPU state."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from . import distsim, faultpoint, gpuview
from .gpustate import StateWriter
from .hostcfg import GpuHost
from .timing import PhaseTimes


class RankContext:
    def __init__(
        self,
        rank: int,
        world_size: int,
        gpu: int,
        host: GpuHost,
        times: PhaseTimes,
        barrier: Any,
        process_name: str,
        state_dir: str | None,
        seed: int,
    ) -> None:
        self.rank = rank
        self.world_size = world_size
        self.gpu = gpu
        self.host = host
        self.times = times
        self._barrier = barrier
        self._rng = random.Random(seed * 1000 + rank)
        self.state = StateWriter(gpu, process_name, state_dir)
        gpuview.configure(gpu, host.memory_total_mib * 1024**2, host.count)
        self.power_w = host.context_power_w

    def enter_phase(self, phase: str) -> None:
        faultpoint.set_phase(phase)
        self.collective()

    def collective(self) -> None:
        """A collective every rank must reach; a rank that raised never does, so the rest hang."""
        if distsim.active():
            distsim.barrier()
        elif self._barrier is not None and self.world_size > 1:
            self._barrier.wait()

    def joined(self) -> None:
        """Every rank of every node is in the process group: from now on a dead peer is noticed."""
        if distsim.active():
            distsim.watch_peers()

    def work(self, seconds: float) -> None:
        """The GPU/IO time of a startup step, with a little per-rank spread."""
        if seconds > 0:
            time.sleep(seconds * self._rng.uniform(0.97, 1.03))

    def set_memory(self, used_bytes: float) -> None:
        gpuview.set_used(used_bytes)
        self.state.update(memory_mib=int(used_bytes / 1024**2), power_w=self.power_w)

    def add_memory(self, delta_bytes: float) -> None:
        self.set_memory(gpuview.used() + delta_bytes)

    def publish_load(self, util: float, mem_util: float, power_w: float) -> None:
        self.power_w = power_w
        self.state.update(util=round(util), mem_util=round(mem_util), power_w=round(power_w, 2))

    def hang(self) -> None:
        """Wait forever in a collective whose peer died (NCCL spins: 100% util, low power)."""
        self.publish_load(100, 0, self.host.context_power_w + 31.0)
        threading.Event().wait()
