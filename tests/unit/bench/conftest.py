"""Shared fixtures: fixed-schedule servers on 127.0.0.1 and a local Host that logs its commands."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.hosts import LineStream, LocalHost, Result

TTFT_MS, ITL_MS = 40.0, 20.0


@pytest.fixture(scope="session")
def schedule() -> tuple[float, float]:
    """(TTFT, ITL) in ms of the fixed-schedule servers below."""
    return TTFT_MS, ITL_MS


def _serve(*args: str) -> Iterator[str]:
    """The fixed-schedule server in its own process (as a real server is), until the module ends."""
    proc = subprocess.Popen([sys.executable, "-m", "workbench.bench.fixedserver", "--port", "0", *args],
                            stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[3])
    assert proc.stdout is not None
    ready = proc.stdout.readline()  # "READY <port>" once it listens
    try:
        assert ready.startswith("READY"), f"fixed server did not start: {ready!r}"
        yield f"http://127.0.0.1:{ready.split()[1]}"
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    yield from _serve("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS))


@pytest.fixture(scope="module")
def spec_server() -> Iterator[str]:
    """Three tokens per chunk, as under speculative decoding with acceptance length 3."""
    yield from _serve("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--tokens-per-chunk", "3")


class RecordingLocalHost(LocalHost):
    """The real ``LocalHost``, remembering the commands it was given."""

    def __init__(self) -> None:
        super().__init__("local-test")
        self.commands: list[Any] = []

    def run(self, cmd: Any, **kw: Any) -> Result:
        self.commands.append(cmd)
        return super().run(cmd, **kw)

    def stream(self, cmd: Any, **kw: Any) -> LineStream:
        self.commands.append(cmd)
        return super().stream(cmd, **kw)


@pytest.fixture
def local_host() -> RecordingLocalHost:
    return RecordingLocalHost()
