"""Leaving the host as found: the controller killed at every step, Ctrl-C, and the SSH link dropping."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from workbench.errors import (
    CommandRefused,
    CommandTimeout,
    HostError,
    RestoreError,
    SessionFenced,
    WorkbenchError,
)
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
    # The link is back: wait until gpu-a answers SSH again before the next session is asked to (on the fresh clone of
    # c8f78a3 it did not answer for 15 s and more after the link came up, under the whole suite's load; not
    # reproduced alone). The next session's recovery, not how fast a link comes back, is under test here.
    deadline, answered = time.monotonic() + 90, False
    while not answered and time.monotonic() < deadline:
        answered = subprocess.run(["ssh", "-F", toy.ssh_config_path, "-o", "ConnectTimeout=5", "gpu-a", "true"],
                                  capture_output=True, timeout=30).returncode == 0
        if not answered:
            time.sleep(0.5)  # the poll's interval: a refused connection returns at once
    assert answered, "gpu-a did not answer SSH within 90 s of its link coming back"
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


# The sshd process serving this command's connection: walk up from the shell to it (sshd, or
# sshd-session since OpenSSH 9.8, forks the session's commands).
_SSHD_OF_THIS = ('p=$$; while [ "$p" -gt 1 ]; do case "$(cat /proc/$p/comm)" in sshd*) echo "$p"; exit 0;; esac; '
                 'p=$(sed "s/.*) //" /proc/$p/stat | cut -d" " -f2); done; exit 1')


def test_a_host_too_stalled_to_open_a_channel_keeps_the_session_and_its_lock(toy, testbed):
    """The host's sshd stalls (SIGSTOP) longer than a channel open waits, and answers again within
    the connection probe's wait: the command fails as a timeout, but the connection -- and with it
    the session's lock -- is kept, the guard does not take the live session over, and the session
    restores the host itself. (Dropping the connection, as a dead link's is, ended the lock: the
    guard then fenced a live session off, as in CI on a 2-core host starting a real vLLM.)"""
    with HostSession(toy, purpose="stalled sshd", lock_wait=60) as s:
        s.protect(BASE)  # the record is written and the guard armed
        conn = toy._conn
        sshd = toy.run(["sh", "-c", _SSHD_OF_THIS], timeout=30, check=True).stdout.strip()
        stall = subprocess.Popen(["ssh", "-F", toy.ssh_config_path, "gpu-a",
                                  f"kill -STOP {sshd} && echo stopped; sleep 11; kill -CONT {sshd}"],
                                 stdout=subprocess.PIPE, text=True)
        try:
            assert stall.stdout is not None and stall.stdout.readline().strip() == "stopped"
            t0 = time.monotonic()
            with pytest.raises(CommandTimeout, match="the connection answers"):
                toy.run(["true"], timeout=1)  # a channel open waits 6 s; the probe then up to 8 s
            assert time.monotonic() - t0 < 20
        finally:
            assert stall.wait(30) == 0
        assert toy._conn is conn and s.lock.held
        assert toy.run(["true"], timeout=30).ok
    assert s.restored
    as_found(toy)


def test_a_live_session_its_guard_took_over_says_so_and_leaves_nothing(toy):
    """The guard takes a live session over (its heartbeat went stale: here stopped, and the beat
    file aged by hand): the session's next command is refused as SessionFenced, its exit says the
    host was taken over, and no in-flight lock file made by its refused commands stays behind."""
    with pytest.raises(SessionFenced, match="taken over on the host by") as info, \
            HostSession(toy, purpose="taken over", lock_wait=60) as s:
        s.protect(BASE)
        assert s.guard is not None
        s.guard.stop_beat()
        toy.run(["touch", "-d", "@1", "--", s.guard.paths.beat], timeout=30, check=True)
        deadline = time.monotonic() + 60
        while True:  # until the fence refuses: SessionFenced ends the session's body
            assert time.monotonic() < deadline, "the guard did not take over"
            toy.run(["true"], timeout=30)
            threading.Event().wait(0.2)
    assert isinstance(info.value.__cause__, SessionFenced)
    assert toy.run(["sh", "-c", "ls /run/workbench 2>/dev/null | grep -c inflight || true"]).stdout.strip() == "0"
    as_found(toy)


def _machine_pids(nspawn_pid: int) -> list[int]:
    """Every process of a testbed host: those in the PID namespace of its nspawn's child."""
    procs = [d for d in Path("/proc").iterdir() if d.name.isdigit()]
    spaces = set()
    for d in procs:  # nspawn's children (the host's init), by their parent in /proc/PID/stat
        with contextlib.suppress(OSError):
            if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == nspawn_pid:
                spaces.add(os.readlink(d / "ns" / "pid"))
    assert spaces, f"no child of nspawn {nspawn_pid}"
    pids = []
    for d in procs:
        with contextlib.suppress(OSError):  # gone meanwhile
            if os.readlink(d / "ns" / "pid") in spaces:
                pids.append(int(d.name))
    return pids


@contextlib.contextmanager
def _no_new_processes(pids: list[int]):
    """The processes put in a pids cgroup whose limit is what they are now: none of them can fork (or
    start a thread) until the block ends; then each goes back to the cgroup it was in (cgroup v1's pids
    hierarchy, or v2's)."""
    v1 = Path("/sys/fs/cgroup/pids")
    root = v1 if (v1 / "cgroup.procs").exists() else Path("/sys/fs/cgroup")
    if not (root / "cgroup.procs").exists():
        pytest.fail(f"no pids cgroup hierarchy at {root} to hold the host's processes in")
    field = "pids" if root == v1 else ""
    was: dict[int, str] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
                _, controllers, path = line.split(":", 2)
                if controllers.split(",") == [field] or (not field and controllers == ""):
                    was[pid] = path
    cg = root / f"workbench-nofork-{os.getpid()}"
    cg.mkdir()
    try:
        for pid in was:
            with contextlib.suppress(ProcessLookupError):
                (cg / "cgroup.procs").write_text(str(pid))
        (cg / "pids.max").write_text("0")  # below what they hold: no fork, no new thread
        yield
    finally:
        (cg / "pids.max").write_text("max")
        for pid in map(int, (cg / "cgroup.procs").read_text().split()):
            with contextlib.suppress(ProcessLookupError):
                (root / was.get(pid, "/").lstrip("/") / "cgroup.procs").write_text(str(pid))
        cg.rmdir()


def test_a_host_that_cannot_start_a_process_keeps_its_live_session(toy, testbed):
    """For longer than the guard's staleness the host cannot start a single process (its processes
    held at their pids cgroup limit): its sshd refuses every command, but the heartbeat goes through
    the session's lock holder with shell builtins, so it stays fresh, the guard does not take the live
    session over, the connection and lock are kept, and the session restores the host itself after.
    (A heartbeat of `touch` over a new channel each time went stale here and the guard took over.)"""
    nspawn = next(h.pid for h in testbed.hosts if h.name == "gpu-a")
    with HostSession(toy, purpose="no new process", lock_wait=60) as s:
        s.protect(BASE)  # the record is written and the guard armed
        assert s.guard is not None and s.guard.armed
        conn = toy._conn
        with _no_new_processes(_machine_pids(nspawn)):
            with pytest.raises(CommandRefused):
                toy.run(["true"], timeout=10)  # the host starts nothing now
            # the outage itself lasts past the guard's staleness (this wait is what is tested, not a sync)
            threading.Event().wait(s.guard.stale_s + 4)
            assert s.guard.silent_for < 3 * s.guard.beat_s + 1, "no heartbeat acknowledged while the host could not fork"
        assert toy._conn is conn and s.lock.held and not s.guard.took_over
        assert toy.run(["true"], timeout=30).ok
    assert s.restored
    as_found(toy)
