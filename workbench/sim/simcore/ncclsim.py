"""The libnccl entry points of the simulated host: return codes, failing when a fault is armed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import faultpoint

_CODES = {
    "unhandled cuda error": 1,
    "unhandled system error": 2,
    "internal error": 3,
    "invalid usage": 5,
    "remote error": 6,
}


def _call(*_args: Any) -> int:
    params = faultpoint.check("nccl")
    return 0 if params is None else _CODES[params["error"]]


def load_library(so_file: str) -> dict[str, Callable[..., int]]:
    return {"ncclCommInitRank": _call, "ncclAllReduce": _call}
