"""The ``tcp://HOST:PORT`` rendezvous handler: a TCPStore, hosted by rank 0."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

from torch._C._distributed_c10d import TCPStore


def _create_c10d_store(hostname: str, port: int, rank: int, world_size: int, timeout: Any) -> Any:
    start_daemon = rank == 0
    return TCPStore(hostname, port, world_size, start_daemon, timeout, multi_tenant=True)


def _tcp_rendezvous_handler(url: str, timeout: Any = None, **kwargs: Any) -> Iterator[Any]:
    result = urlparse(url)
    rank, world_size = int(kwargs["rank"]), int(kwargs["world_size"])
    store = _create_c10d_store(result.hostname or "", int(result.port or 0), rank, world_size, timeout)
    yield (store, rank, world_size)


def rendezvous(url: str, rank: int = -1, world_size: int = -1, **kwargs: Any) -> Iterator[Any]:
    return _tcp_rendezvous_handler(url, rank=rank, world_size=world_size, **kwargs)
