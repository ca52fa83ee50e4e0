"""``init_process_group``: the rendezvous of every rank at the init method's address."""

from __future__ import annotations

from typing import Any

from torch.distributed.rendezvous import rendezvous


def init_process_group(
    backend: str = "nccl",
    init_method: str | None = None,
    timeout: Any = None,
    world_size: int = -1,
    rank: int = -1,
) -> None:
    rendezvous_iterator = rendezvous(init_method or "env://", rank, world_size, timeout=timeout)
    store, rank, world_size = next(rendezvous_iterator)
    del store
