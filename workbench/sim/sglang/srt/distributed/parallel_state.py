"""Process groups (TP/EP) over NCCL; the simulator keeps only what tracebacks pass through."""

from __future__ import annotations

from typing import Any

import torch
from sglang.srt.distributed.device_communicators.pynccl import PyNcclCommunicator

_TP: GroupCoordinator | None = None


class GroupCoordinator:
    def __init__(
        self,
        ranks: list[int],
        local_rank: int,
        rank: int,
        group_name: str,
        use_pynccl: bool = True,
        barrier: Any = None,
    ) -> None:
        self.ranks = ranks
        self.rank = rank
        self.world_size = len(ranks)
        self.rank_in_group = ranks.index(rank) if rank in ranks else 0
        self.unique_name = group_name
        self._barrier = barrier
        self.pynccl_comm: PyNcclCommunicator | None = None
        if use_pynccl and self.world_size > 1:
            self.pynccl_comm = PyNcclCommunicator(group=self, device=local_rank)

    def all_reduce(self, input_: Any) -> Any:
        if self.world_size == 1:
            return input_
        return self._all_reduce_out_place(input_)

    def _all_reduce_out_place(self, input_: Any) -> Any:
        assert self.pynccl_comm is not None
        return self.pynccl_comm.all_reduce(input_)

    def barrier(self) -> None:
        if self._barrier is not None:
            self._barrier()


def init_distributed_environment(
    world_size: int, rank: int, distributed_init_method: str, local_rank: int, backend: str = "nccl"
) -> None:
    from simcore import distsim

    if distsim.multi_node():  # one host: the launcher's own barrier stands for the store
        torch.distributed.init_process_group(
            backend=backend,
            init_method=distributed_init_method,
            world_size=world_size,
            rank=rank,
        )


def initialize_model_parallel(
    tensor_model_parallel_size: int,
    expert_model_parallel_size: int,
    rank: int,
    local_rank: int,
    barrier: Any = None,
) -> None:
    global _TP
    ranks = list(range(tensor_model_parallel_size))
    _TP = GroupCoordinator(
        ranks, local_rank, rank % tensor_model_parallel_size, "tp", barrier=barrier
    )


def get_tp_group() -> GroupCoordinator:
    assert _TP is not None, "tensor model parallel group is not initialized"
    return _TP


def tensor_model_parallel_all_reduce(input_: Any) -> Any:
    return get_tp_group().all_reduce(input_)
