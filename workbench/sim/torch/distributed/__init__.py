"""torch.distributed: the exception types SGLang code sees and the process-group entry point."""

from __future__ import annotations


class DistError(RuntimeError):
    pass


class DistBackendError(DistError):
    pass


class DistStoreError(DistError):
    pass


class DistNetworkError(DistError):
    pass


for _cls in (DistError, DistBackendError, DistStoreError, DistNetworkError):
    _cls.__module__ = "torch.distributed"

from torch.distributed.distributed_c10d import init_process_group  # noqa: E402

__all__ = [
    "DistBackendError",
    "DistError",
    "DistNetworkError",
    "DistStoreError",
    "init_process_group",
]
