"""Startup phase durations (seconds at --sim-time-scale 1.0, calibrated on the seeds: ~165 s)."""

from __future__ import annotations

from dataclasses import dataclass

from .perf import ModelSpec

BOOT_S = 12.0  # interpreter start, imports, server_args checks, process spawn
NCCL_INIT_S = 2.6
WEIGHT_LOAD_GBPS = 0.72  # per GPU, safetensors from local NVMe
DRAFT_WEIGHTS_S = 3.8
KV_ALLOC_S = 1.9
CAPTURE_PER_BS_S = 1.3
DRAFT_CAPTURE_S = 5.5
WARMUP_S = 2.4
DEFAULT_TIME_SCALE = 0.01


@dataclass(frozen=True)
class PhaseTimes:
    boot: float
    nccl_init: float
    weight_loading: float
    draft_weights: float
    kv_cache_alloc: float
    capture_per_bs: float
    draft_capture: float
    warmup: float

    def scaled(self, scale: float) -> PhaseTimes:
        return PhaseTimes(*(getattr(self, f) * scale for f in self.__dataclass_fields__))


def phase_times(model: ModelSpec, tp: int, speculative: bool) -> PhaseTimes:
    return PhaseTimes(
        boot=BOOT_S,
        nccl_init=NCCL_INIT_S,
        weight_loading=model.weight_bytes_per_gpu(tp) / (WEIGHT_LOAD_GBPS * 1e9),
        draft_weights=DRAFT_WEIGHTS_S if speculative else 0.0,
        kv_cache_alloc=KV_ALLOC_S,
        capture_per_bs=CAPTURE_PER_BS_S,
        draft_capture=DRAFT_CAPTURE_S if speculative else 0.0,
        warmup=WARMUP_S,
    )
