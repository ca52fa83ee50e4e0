"""Helpers to run the simulated SGLang server as a real subprocess (as the testbed's unit does)."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from workbench.testbed.ports import free_port

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures" / "sim"
MODEL = REPO / "workbench" / "testbed" / "models" / "Kimi-K2.6"
DRAFT = REPO / "workbench" / "testbed" / "models" / "Kimi-K2.6-DFlash"
DDTREE = [
    "--speculative-algorithm",
    "DDTREE",
    "--speculative-draft-model-path",
    str(DRAFT),
    "--speculative-num-draft-tokens",
    "16",
]


class SimServer:
    """A server subprocess; its merged stdout/stderr is collected line by line."""

    def __init__(
        self,
        args: list[str],
        state_dir: Path,
        env: dict[str, str] | None = None,
        time_scale: float = 0.005,
    ) -> None:
        self.port = free_port()
        self.state_dir = state_dir
        full_env = {
            **os.environ,
            "SIM_GPU_STATE_DIR": str(state_dir),
            "SGLANG_SIM_HOST_FILE": "",
            "SGLANG_SIM_FAULT_FILE": "",
            **(env or {}),
        }
        cmd = [
            sys.executable,
            "-m",
            "workbench.sim.server",
            "--model-path",
            str(MODEL),
            "--trust-remote-code",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--sim-time-scale",
            str(time_scale),
            *args,
        ]
        self.proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        self.lines: list[str] = []
        self._q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._q.put(line)
        self._q.put(None)

    def wait_for(self, needle: str, timeout: float = 90.0) -> bool:
        """Read output until a line contains ``needle`` (True) or the process ends (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._q.get(timeout=deadline - time.monotonic())
            except queue.Empty:
                break
            if line is None:
                return False
            self.lines.append(line)
            if needle in line:
                return True
        raise TimeoutError(f"no {needle!r} within {timeout}s; output:\n{self.text}")

    def wait_exit(self, timeout: float = 90.0) -> int:
        while self.wait_for("\0never\0", timeout):
            pass
        return self.proc.wait(timeout=timeout)

    @property
    def text(self) -> str:
        return "".join(self.lines)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def write_faults(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "faults.toml"
    p.write_text(text)
    return p
