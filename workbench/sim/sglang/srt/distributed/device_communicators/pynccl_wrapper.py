"""ctypes bindings of libnccl (the error path is what surfaces in tracebacks)."""

from __future__ import annotations

from typing import Any

from simcore import ncclsim

NCCL_ERROR_STRINGS = {
    1: "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
    2: "unhandled system error (run with NCCL_DEBUG=INFO for details)",
    3: "internal error - please report this issue to the NCCL developers",
    4: "invalid argument (run with NCCL_DEBUG=WARN for details)",
    5: "invalid usage (run with NCCL_DEBUG=WARN for details)",
    6: "remote process exited or there was a network error",
}


class NCCLLibrary:
    def __init__(self, so_file: str | None = None) -> None:
        self._funcs = ncclsim.load_library(so_file or "libnccl.so.2")

    def ncclGetErrorString(self, result: int) -> str:
        return NCCL_ERROR_STRINGS.get(result, "unknown result code")

    def NCCL_CHECK(self, result: int) -> None:
        if result != 0:
            error_str = self.ncclGetErrorString(result)
            raise RuntimeError(f"NCCL error: {error_str}")

    def ncclGetUniqueId(self) -> bytes:
        return b"\0" * 128

    def ncclCommInitRank(self, world_size: int, unique_id: bytes, rank: int) -> Any:
        comm = object()
        self.NCCL_CHECK(self._funcs["ncclCommInitRank"](comm, world_size, unique_id, rank))
        return comm

    def ncclAllReduce(
        self,
        sendbuff: Any,
        recvbuff: Any,
        count: int,
        datatype: int,
        op: int,
        comm: Any,
        stream: Any,
    ) -> None:
        self.NCCL_CHECK(
            self._funcs["ncclAllReduce"](sendbuff, recvbuff, count, datatype, op, comm, stream)
        )
