"""Fixtures for the simulator tests (helpers live in simhelpers.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from simhelpers import SimServer


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., SimServer]]:
    servers: list[SimServer] = []

    def start(args: list[str], **kw: object) -> SimServer:
        s = SimServer(args, tmp_path / f"state{len(servers)}", **kw)  # type: ignore[arg-type]
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()
