"""Forward-batch descriptors passed from the scheduler to the model runner."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, auto
from typing import Any


class ForwardMode(IntEnum):
    EXTEND = auto()
    DECODE = auto()
    MIXED = auto()
    IDLE = auto()
    TARGET_VERIFY = auto()
    DRAFT_EXTEND = auto()

    def is_extend(self) -> bool:
        return self in (ForwardMode.EXTEND, ForwardMode.MIXED, ForwardMode.DRAFT_EXTEND)

    def is_decode(self) -> bool:
        return self == ForwardMode.DECODE

    def is_target_verify(self) -> bool:
        return self == ForwardMode.TARGET_VERIFY

    def is_cuda_graph(self) -> bool:
        return self in (ForwardMode.DECODE, ForwardMode.TARGET_VERIFY, ForwardMode.IDLE)


class CaptureHiddenMode(IntEnum):
    NULL = auto()
    LAST = auto()
    FULL = auto()


@dataclass
class ForwardBatch:
    forward_mode: ForwardMode
    batch_size: int
    num_tokens: int
    seq_lens_sum: int = 0
    input_ids: Any = None
    positions: Any = None
    spec_info: Any = None
    capture_hidden_mode: CaptureHiddenMode = CaptureHiddenMode.NULL

    def contains_mm_inputs(self) -> bool:
        return False
