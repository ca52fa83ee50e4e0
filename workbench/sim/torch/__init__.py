"""A tensor-free stand-in for PyTorch inside the simulated GPU host.

Only what the mirrored SGLang tree calls exists here.  Kernels live in ``torch._C`` (they stand for
compiled code): their frames are dropped from printed tracebacks, as real C++ frames never appear.
"""

from __future__ import annotations

import os as _os
import traceback as _traceback
from collections.abc import Iterator as _Iterator
from types import FrameType as _FrameType
from typing import Any as _Any

from torch._C import (
    AcceleratorError,
    OutOfMemoryError,
    Tensor,
    _VariableFunctions,
    device,
    dtype,
)
from torch.autograd.grad_mode import inference_mode, no_grad

__version__ = "2.9.1+cu130"

_NATIVE_DIR = _os.path.join(_os.path.dirname(__file__), "_C") + _os.sep

bfloat16 = dtype("torch.bfloat16", 2)
float16 = dtype("torch.float16", 2)
float32 = dtype("torch.float32", 4)
int32 = dtype("torch.int32", 4)
int64 = dtype("torch.int64", 8)
uint8 = dtype("torch.uint8", 1)
float8_e4m3fn = dtype("torch.float8_e4m3fn", 1)

bmm = _VariableFunctions.bmm
empty = _VariableFunctions.empty
zeros = _VariableFunctions.zeros
cat = _VariableFunctions.cat
argmax = _VariableFunctions.argmax


def _is_native(frame: _FrameType) -> bool:
    return frame.f_code.co_filename.startswith(_NATIVE_DIR)


def _install_traceback_filter() -> None:
    walk_full = getattr(_traceback, "_walk_tb_with_full_positions", None)
    walk = _traceback.walk_tb
    if getattr(walk, "_sim_filtered", False):
        return

    def walk_tb(tb: _Any) -> _Iterator[tuple[_FrameType, int]]:
        for frame, lineno in walk(tb):
            if not _is_native(frame):
                yield frame, lineno

    walk_tb._sim_filtered = True  # type: ignore[attr-defined]
    _traceback.walk_tb = walk_tb
    if walk_full is not None:

        def walk_full_filtered(tb: _Any) -> _Iterator[tuple[_FrameType, _Any]]:
            for frame, pos in walk_full(tb):
                if not _is_native(frame):
                    yield frame, pos

        _traceback._walk_tb_with_full_positions = walk_full_filtered  # type: ignore[attr-defined]


_install_traceback_filter()

from torch import cuda, distributed, nn  # noqa: E402

__all__ = [
    "AcceleratorError",
    "OutOfMemoryError",
    "Tensor",
    "argmax",
    "bfloat16",
    "bmm",
    "cat",
    "cuda",
    "device",
    "distributed",
    "dtype",
    "empty",
    "float8_e4m3fn",
    "float16",
    "float32",
    "inference_mode",
    "int32",
    "int64",
    "nn",
    "no_grad",
    "uint8",
    "zeros",
]
