from __future__ import annotations

from typing import Any

from sglang.srt.distributed.device_communicators.pynccl_wrapper import NCCLLibrary


class PyNcclCommunicator:
    def __init__(self, group: Any, device: int, library_path: str | None = None) -> None:
        self.rank = group.rank
        self.world_size = group.world_size
        self.nccl = NCCLLibrary(library_path)
        self.unique_id = self.nccl.ncclGetUniqueId()
        self.comm = self.nccl.ncclCommInitRank(self.world_size, self.unique_id, self.rank)

    def all_reduce(self, in_tensor: Any, stream: Any = None) -> Any:
        self.nccl.ncclAllReduce(in_tensor, in_tensor, in_tensor.numel(), 9, 0, self.comm, stream)
        return in_tensor
