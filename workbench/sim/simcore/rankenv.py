"""Everything a rank process needs from the launcher to build its simulation context (picklable)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from . import distsim, faultpoint
from .faults import Strike
from .hostcfg import GpuHost
from .rankctx import RankContext
from .timing import PhaseTimes


@dataclass
class RankSetup:
    rank: int
    world_size: int
    gpu: int
    host: GpuHost
    times: PhaseTimes
    barrier: Any
    state_dir: str | None
    seed: int
    strike: Strike | None
    launched_at: float
    dist: distsim.DistSetup | None = None

    def build(self, process_name: str) -> tuple[RankContext, Strike | None]:
        ctx = RankContext(
            self.rank,
            self.world_size,
            self.gpu,
            self.host,
            self.times,
            self.barrier,
            process_name,
            self.state_dir,
            self.seed,
        )
        faultpoint.arm(self.strike, self.rank)
        distsim.configure(self.dist, self.rank)
        # interpreter start and imports of a real scheduler process take this long
        remaining = self.times.boot - (time.time() - self.launched_at)
        if remaining > 0:
            time.sleep(remaining)
        ctx.set_memory(0)
        return ctx, self.strike
