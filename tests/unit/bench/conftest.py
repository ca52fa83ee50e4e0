"""Shared fixtures: fixed-schedule servers on 127.0.0.1 and a local Host that logs its commands."""

from __future__ import annotations

import os
import queue
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.hosts import LineStream, LocalHost, Result
from workbench.testbed.ports import free_port

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


MODELS = Path(__file__).parents[3] / "workbench" / "testbed" / "models"  # the testbed's model dirs
SIM_READY = "The server is fired up and ready to roll!"
SIM_API_KEY = "sk-test-7f3a9c"  # the keyed simulator's key (a test value, not a secret)


def serve_sim(state: Path, *extra: str) -> Iterator[str]:
    """The simulated SGLang server (Kimi K2.6, TP8, DDTree) on loopback until the fixture ends."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.sim.server", "--model-path", str(MODELS / "Kimi-K2.6"), "--tp-size", "8",
         "--speculative-algorithm", "DDTREE", "--speculative-draft-model-path", str(MODELS / "Kimi-K2.6-DFlash"),
         "--speculative-num-draft-tokens", "16", "--trust-remote-code", "--host", "127.0.0.1", "--port", str(port),
         "--enable-metrics", "--sim-gpu-state-dir", str(state), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=Path(__file__).parents[3])
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen = []
    try:
        while True:
            line = lines.get(timeout=120)
            if line is None:
                pytest.fail("simulated server exited before it was ready:\n" + "".join(seen[-30:]))
            seen.append(line)
            if SIM_READY in line:
                break
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=60)


@pytest.fixture(scope="module")
def sim_gpu_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The GPU state directory the keyed simulator writes and its ``nvidia-smi`` shim reads."""
    return tmp_path_factory.mktemp("gpu-state")


@pytest.fixture(scope="module")
def keyed_sim_url(sim_gpu_state: Path) -> Iterator[str]:
    """The simulator started with ``--api-key`` (it answers 401 on /v1/* without the bearer token)."""
    yield from serve_sim(sim_gpu_state, "--api-key", SIM_API_KEY)


@pytest.fixture
def sim_nvidia_smi(sim_gpu_state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``nvidia-smi`` on this machine's PATH: the simulator's shim, reading the keyed simulator's GPUs
    (as the testbed hosts install it)."""
    shim = Path(__file__).parents[3] / "workbench" / "sim" / "nvidia_smi.py"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\nSIM_GPU_STATE_DIR={shlex.quote(str(sim_gpu_state))} exec {shlex.quote(sys.executable)} "
                   f"{shlex.quote(str(shim))} \"$@\"\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return exe


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
