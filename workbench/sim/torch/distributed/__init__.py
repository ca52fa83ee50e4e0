"""torch.distributed: only the exception type SGLang code catches."""

from __future__ import annotations


class DistBackendError(RuntimeError):
    pass


DistBackendError.__module__ = "torch.distributed"
