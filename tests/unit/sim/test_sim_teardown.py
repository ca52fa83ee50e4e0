"""The simulated launcher's teardown after a failed rank: the whole tree goes, whatever the main thread holds.

A Slurm job of the seeds' ``--ep-size 8`` once stayed RUNNING to its deadline after both "Received sigquit"
lines: the process that should have killed the tree never finished. These tests hold the two ways out that
cannot wait on the main thread: the tree's killer flushes the standard streams for a bounded time only, and a
burst of SIGQUITs (every rank signals at once) still ends every process of the server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from simhelpers import REPO, SimServer

SIM = REPO / "workbench" / "sim"


def _holding(needle: str) -> list[int]:
    """Processes whose environment names ``needle`` (the server's own state directory)."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            env = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue
        if needle.encode() in env:
            pids.append(int(name))
    return pids


def test_the_tree_killer_dies_with_its_tree_while_a_stream_cannot_be_flushed(tmp_path: Path) -> None:
    marker = f"teardown-{os.getpid()}-{time.monotonic_ns()}"
    script = textwrap.dedent(
        """
        import subprocess, sys, threading
        from sglang.srt.utils import kill_process_tree

        class Stuck:
            # a stream whose buffer another thread holds: its flush never returns
            def write(self, text): return len(text)
            def flush(self): threading.Event().wait()

        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        print(child.pid, flush=True)
        sys.stderr = Stuck()
        threading.Thread(target=kill_process_tree, args=(__import__("os").getpid(),), daemon=True).start()
        threading.Event().wait()
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(SIM), "TEARDOWN_MARK": marker},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    assert rc == -signal.SIGKILL
    assert not Path(f"/proc/{child}").exists() or b"Z" in Path(f"/proc/{child}/stat").read_bytes().rsplit(b")", 1)[1][:3]
    assert _holding(marker) == []


def test_a_burst_of_sigquits_ends_every_process_of_the_server(tmp_path: Path) -> None:
    state = tmp_path / "state"
    s = SimServer(["--tp-size", "8"], state, time_scale=0.05)
    try:
        assert s.wait_for("Load weight begin", timeout=60), s.text
        for _ in range(16):  # eight ranks signalling at once, coalesced or not
            os.kill(s.proc.pid, signal.SIGQUIT)
        rc = s.wait_exit(timeout=60)
    finally:
        s.stop()
    assert rc == -signal.SIGKILL, s.text
    assert "Received sigquit from a child process" in s.text
    assert _holding(str(state)) == []  # the launcher waits for its tree to be gone before it kills itself


def test_the_launcher_ends_after_a_sigquit_even_when_its_killer_hangs() -> None:
    script = textwrap.dedent(
        """
        import os, signal, threading, types
        from sglang.srt.entrypoints import engine

        engine._kill_after_failed_children = lambda: threading.Event().wait()  # a killer that never acts
        engine._set_envs_and_config(types.SimpleNamespace(enable_nccl_nvls=False))
        os.kill(os.getpid(), signal.SIGQUIT)
        threading.Event().wait()
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script],
                            env={**os.environ, "PYTHONPATH": str(SIM), "WB_SIM_KILL_ALARM": "5"},
                            stderr=subprocess.PIPE, text=True)
    try:
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGALRM, err
    assert "Received sigquit from a child process" in err
