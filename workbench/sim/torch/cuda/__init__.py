"""torch.cuda: synchronisation and graph capture contexts."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from torch._C import OutOfMemoryError, _cuda_setDevice, _cuda_synchronize

__all__ = ["CUDAGraph", "OutOfMemoryError", "graph", "set_device", "synchronize"]


def synchronize(device: Any = None) -> None:
    return _cuda_synchronize()


def set_device(device: int) -> None:
    _cuda_setDevice(device)


class CUDAGraph:
    def replay(self) -> None:
        return None


@contextlib.contextmanager
def graph(cuda_graph: CUDAGraph, pool: Any = None, stream: Any = None) -> Iterator[None]:
    yield
