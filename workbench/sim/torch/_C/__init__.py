"""Native kernels of the stand-in torch.  Each may fail when the simulator armed a fault here."""

from __future__ import annotations

import math
from typing import Any

from simcore import catalogue, faultpoint


class OutOfMemoryError(RuntimeError):
    pass


OutOfMemoryError.__module__ = "torch"
OutOfMemoryError.__qualname__ = "OutOfMemoryError"


class AcceleratorError(RuntimeError):
    pass


AcceleratorError.__module__ = "torch"
AcceleratorError.__qualname__ = "AcceleratorError"


class dtype:
    def __init__(self, name: str, itemsize: int) -> None:
        self._name = name
        self.itemsize = itemsize

    def __repr__(self) -> str:
        return self._name


class device:
    def __init__(self, kind: str, index: int = 0) -> None:
        self.type = kind
        self.index = index


class Tensor:
    """Shape and dtype only; no data."""

    __slots__ = ("dtype", "shape")

    def __init__(self, shape: tuple[int, ...], dtype_: Any = None) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype_

    def numel(self) -> int:
        return math.prod(self.shape)

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self.shape[dim]

    def view(self, *shape: int) -> Tensor:
        known = math.prod(s for s in shape if s != -1)
        return Tensor(tuple(self.numel() // known if s == -1 else s for s in shape), self.dtype)

    def transpose(self, a: int, b: int) -> Tensor:
        s = list(self.shape)
        s[a], s[b] = s[b], s[a]
        return Tensor(tuple(s), self.dtype)

    def split(self, sizes: list[int], dim: int = -1) -> tuple[Tensor, ...]:
        base = list(self.shape)
        out = []
        for n in sizes:
            base[dim] = n
            out.append(Tensor(tuple(base), self.dtype))
        return tuple(out)

    def contiguous(self) -> Tensor:
        return self

    def tolist(self) -> list[int]:
        params = faultpoint.check("illegal_memory_access")
        if params is not None:
            raise AcceleratorError(catalogue.ILLEGAL_ACCESS)
        return [0] * (self.shape[0] if self.shape else 1)


class _VariableFunctions:
    @staticmethod
    def bmm(a: Tensor, b: Tensor) -> Tensor:
        params = faultpoint.check("cublas")
        if params is not None:
            raise RuntimeError(catalogue.cublas_message(params["status"]))
        return Tensor((a.shape[0], a.shape[1], b.shape[-1]), a.dtype)

    @staticmethod
    def empty(*shape: Any, dtype: Any = None, device: Any = None) -> Tensor:
        dims = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], tuple) else shape
        params = faultpoint.check("cuda_oom")
        if params is not None:
            from simcore import gpuview

            gpu, total, free = gpuview.memory()
            tried = params["tried_gib"] * 1024**3 or max(
                free + 512 * 1024**2, math.prod(dims) * (getattr(dtype, "itemsize", 2))
            )
            raise OutOfMemoryError(catalogue.oom_message(gpu, tried, total, free))
        return Tensor(tuple(dims), dtype)

    @staticmethod
    def zeros(*shape: Any, dtype: Any = None, device: Any = None) -> Tensor:
        return _VariableFunctions.empty(*shape, dtype=dtype, device=device)

    @staticmethod
    def cat(tensors: list[Tensor], dim: int = -1) -> Tensor:
        base = list(tensors[0].shape)
        base[dim] = sum(t.shape[dim] for t in tensors)
        return Tensor(tuple(base), tensors[0].dtype)

    @staticmethod
    def argmax(t: Tensor, dim: int = -1) -> Tensor:
        return Tensor(t.shape[:-1], None)


def _cuda_setDevice(index: int) -> None:
    from simcore import gpuview

    if not 0 <= index < gpuview.device_count():
        raise AcceleratorError(
            "CUDA error: invalid device ordinal\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the "
            "stacktrace below might be incorrect.\n"
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
        )


def _cuda_synchronize() -> None:
    if faultpoint.check("illegal_memory_access") is not None:
        raise AcceleratorError(catalogue.ILLEGAL_ACCESS)


def _nccl_call(name: str) -> int:
    params = faultpoint.check("nccl")
    if params is not None:
        raise RuntimeError(catalogue.nccl_message(params["error"]))
    return 0
