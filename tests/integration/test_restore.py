"""Leaving the host as found: the controller killed at every step, Ctrl-C, and the SSH link dropping."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from workbench.errors import HostError, RestoreError, WorkbenchError
from workbench.session import HostSession, leftover_record

from .conftest import BASE, as_found

pytestmark = pytest.mark.testbed
CONTROLLER = Path(__file__).parent / "helpers" / "controller.py"
STEPS = ["after_protect", "after_record", "after_install", "after_stop_base", "during_watch", "after_watch"]


def run_controller(ssh_config: str, step: str, signal_name: str = "KILL", guard: bool = False
                   ) -> subprocess.CompletedProcess[str]:
    """The controller killed at ``step``; without its guard unless asked (test_guard.py tests the guard)."""
    env = dict(os.environ, KILL_SIGNAL=signal_name, PYTHONPATH=str(Path(__file__).parents[2]),
               GUARD="1" if guard else "0", LOCK_WAIT="300")  # other suites' sessions may hold gpu-a
    return subprocess.run([sys.executable, str(CONTROLLER), ssh_config, step, BASE], capture_output=True,
                          text=True, timeout=180, env=env)


@pytest.mark.parametrize("step", STEPS)
def test_sigkill_at_every_step_then_next_session_restores(toy, step):
    proc = run_controller(toy.ssh_config_path, step)
    assert f"REACHED {step}" in proc.stdout, proc.stdout + proc.stderr
    assert proc.returncode == -9
    record = leftover_record(toy)
    assert record is not None and record["snapshots"], "a change without a record"
    # The lock died with the controller: the next session gets it at once and finishes the restore.
    with HostSession(toy, purpose="recover") as s:
        assert s.recovered == record["created"]
    as_found(toy)


def test_ctrl_c_restores_on_the_way_out(toy):
    proc = run_controller(toy.ssh_config_path, "during_watch", signal_name="INT", guard=True)
    assert "REACHED during_watch" in proc.stdout and "KeyboardInterrupt" in proc.stderr
    assert leftover_record(toy) is None
    as_found(toy)


def test_ssh_link_drop_mid_trial_is_finished_by_the_next_session(toy, testbed):
    netns = next(h.netns for h in testbed.hosts if h.name == "gpu-a")
    down = ["ip", "netns", "exec", netns, "ip", "link", "set", "eth0", "down"]
    up = ["ip", "netns", "exec", netns, "ip", "link", "set", "eth0", "up"]

    def cut_link(ev):
        if ev.phase == "cuda_graph_capture":
            subprocess.run(down, check=True)

    t0 = time.monotonic()
    try:
        with pytest.raises((HostError, RestoreError, WorkbenchError)), \
                HostSession(toy, purpose="drop", guard=False) as s:
            s.run_variant(BASE, {"--mode": "ok", "--delay": "1"}, timeout=60, on_event=cut_link)
        assert time.monotonic() - t0 < 120  # no call hung
    finally:
        subprocess.run(up, check=True)
    toy.close()
    assert leftover_record(toy) is not None
    # The dead session's lock lasts until sshd gives up on its client (ClientAlive 10 s x 3).
    with HostSession(toy, purpose="recover", lock_wait=60) as s:
        assert s.recovered
    as_found(toy)


def test_lock_is_free_after_the_holder_is_killed(toy):
    from workbench.lock import HostLock

    code = ("import sys,time; from workbench.ssh import SSHHost; from workbench.lock import HostLock; "
            "l=HostLock(SSHHost('gpu-a', ssh_config=sys.argv[1]), purpose='holder').acquire(); "
            "print('HELD', flush=True); time.sleep(600)")
    holder = subprocess.Popen([sys.executable, "-c", code, toy.ssh_config_path], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2])))
    assert holder.stdout.readline().strip() == "HELD"
    from workbench.errors import LockHeld

    with pytest.raises(LockHeld, match="purpose=holder"):
        HostLock(toy).acquire()
    holder.kill()
    holder.wait()
    deadline = time.monotonic() + 20
    while True:
        try:
            HostLock(toy).acquire().release()
            break
        except LockHeld:
            assert time.monotonic() < deadline, "lock still held 20 s after its holder died"
            threading.Event().wait(0.2)
