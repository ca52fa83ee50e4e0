"""The guard: the host puts itself back with no further workbench command, whatever happens to the controller.

Each test kills or cuts off a controller at a step of a variant, then waits on the host itself
(plain ``ssh`` and ``systemctl``, never the workbench) until the state found is back, within
the documented bound, and measures how long that took.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.guard import POLL_S, STALE_S

from .conftest import BASE, BASE_TEXT
from .test_restore import CONTROLLER, STEPS

pytestmark = pytest.mark.testbed
ROOT = Path(__file__).parents[2]
# The bound documented in docs/guard.md: the controller's end noticed (at once, or STALE_S after
# its last heartbeat), then the toy variant stopped and the base restarted (a few seconds).
BOUND_KILLED = 15.0
BOUND_CUT = STALE_S + POLL_S + 15.0
STATE_SCRIPT = (
    f"systemctl is-active {BASE}; "
    "grep -l '^X-WorkbenchVariantOf=' /run/systemd/system/*.service 2>/dev/null | wc -l; "
    "systemctl list-units --all --plain --no-legend 'toy-wb-*' | wc -l; "
    "test -e /run/workbench/session.json && echo record || echo no-record; "
    f"sha256sum /etc/systemd/system/{BASE} | cut -c1-64; "
    "systemctl list-units --plain --no-legend 'workbench-guard-*' | grep -c running || true; "
    "ls /run/workbench 2>/dev/null | grep -c -e hostguard -e beat || true"  # nothing of the guard left
)


def host_state(ssh_config: str) -> list[str]:
    """The host as plain ssh sees it (no workbench code)."""
    try:
        res = subprocess.run(["ssh", "-F", ssh_config, "-o", "ConnectTimeout=3", "gpu-a", STATE_SCRIPT],
                             capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return ["no answer"]
    return res.stdout.split()


def found_state() -> list[str]:
    import hashlib

    return ["active", "0", "0", "no-record", hashlib.sha256(BASE_TEXT.encode()).hexdigest(), "0", "0"]


def wait_as_found(ssh_config: str, since: float, bound: float) -> float:
    """Seconds from ``since`` until the host is back as found; fails past ``bound``."""
    want = found_state()
    while True:
        state = host_state(ssh_config)
        if state == want:
            return time.monotonic() - since
        assert time.monotonic() - since < bound, f"not restored {bound:.0f} s after the controller went: {state}"
        time.sleep(0.2)


def controller(ssh_config: str, step: str, signal_name: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, KILL_SIGNAL=signal_name, PYTHONPATH=str(ROOT), GUARD="1")
    return subprocess.run([sys.executable, str(CONTROLLER), ssh_config, step, BASE], capture_output=True,
                          text=True, timeout=180, env=env)


def report(name: str, seconds: float) -> None:
    print(f"\nGUARD-RESTORE {name} {seconds:.2f} s", flush=True)


@pytest.mark.parametrize("signal_name", ["KILL", "TERM"])
@pytest.mark.parametrize("step", STEPS)
def test_controller_killed_at_every_step_host_restores_itself(toy, step, signal_name):
    proc = controller(toy.ssh_config_path, step, signal_name)
    gone = time.monotonic()
    assert f"REACHED {step}" in proc.stdout, proc.stdout + proc.stderr
    assert proc.returncode == -getattr(signal, f"SIG{signal_name}")
    report(f"{signal_name}@{step}", wait_as_found(toy.ssh_config_path, gone, BOUND_KILLED))


def cli(ssh_config: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "workbench", "--ssh-config", ssh_config, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))


def cli_until(ssh_config: str, phase: str) -> subprocess.Popen[str]:
    """``workbench variant`` running, stopped right after it prints ``phase`` (progress: stderr)."""
    p = cli(ssh_config, "variant", "gpu-a", BASE, "--set", "mode=ok", "--set", "delay=1", "--timeout", "60")
    assert p.stderr is not None
    for line in p.stderr:
        if line.split()[-1:] == [phase]:
            return p
    raise AssertionError(f"the variant ended before {phase}: {p.communicate()}")


@pytest.mark.parametrize("signal_name", ["TERM", "HUP"])
def test_cli_variant_restores_on_sigterm_and_sighup_as_on_ctrl_c(toy, signal_name):
    p = cli_until(toy.ssh_config_path, "weight_loading")
    p.send_signal(getattr(signal, f"SIG{signal_name}"))
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, out + err
    assert f"SIG{signal_name}: stopping and restoring the host" in err
    assert host_state(toy.ssh_config_path) == found_state()  # restored before it exited


def test_cli_variant_sigkill_during_weight_loading_host_restores_itself(toy):
    p = cli_until(toy.ssh_config_path, "weight_loading")
    p.kill()
    p.wait()
    report("cli-KILL@weight_loading", wait_as_found(toy.ssh_config_path, time.monotonic(), BOUND_KILLED))


def _cut_link(testbed, up: bool) -> None:
    netns = next(h.netns for h in testbed.hosts if h.name == "gpu-a")
    subprocess.run(["ip", "netns", "exec", netns, "ip", "link", "set", "eth0", "up" if up else "down"], check=True)


def test_network_partition_host_restores_itself_while_cut_off(toy, testbed):
    """The link goes down mid-start and stays down past the bound: the guard restores on its own."""
    p = cli_until(toy.ssh_config_path, "weight_loading")
    _cut_link(testbed, up=False)
    cut, cut_wall = time.monotonic(), time.time()
    try:
        time.sleep(BOUND_CUT)  # the host is unreachable: there is nothing to poll until the link is back
    finally:
        _cut_link(testbed, up=True)
        toy.close()  # the fixture's connection died with the link: the next command reconnects
    # Already restored while cut off: as found as soon as ssh gets through again.
    wait_as_found(toy.ssh_config_path, cut, BOUND_CUT + 10)
    log = subprocess.run(["ssh", "-F", toy.ssh_config_path, "gpu-a",
                          "journalctl -o short-unix --no-pager -g 'workbench-guard: ' --since -3min"],
                         capture_output=True, text=True, timeout=20).stdout
    assert "no heartbeat for" in log, log
    restored = [float(line.split()[0]) for line in log.splitlines() if "host restored in" in line]
    assert restored and restored[-1] - cut_wall < BOUND_CUT, log
    out, err = p.communicate(timeout=120)
    print(err)
    assert p.returncode == 3, out + err  # exit table: host problem
    assert "host stopped answering" in err and "guard" in err, err
    assert "No existing session" not in err and "Timeout opening channel" not in err
    report("partition", restored[-1] - cut_wall)


def _sshd_pids_serving(testbed, local_pid: int) -> list[int]:
    """The host-side sshd processes of ``local_pid``'s SSH connections (found by TCP port)."""
    netns = next(h.netns for h in testbed.hosts if h.name == "gpu-a")
    addr = next(h.address for h in testbed.hosts if h.name == "gpu-a")
    ours = subprocess.run(["ss", "-tnpH", "dst", f"{addr}:22"], capture_output=True, text=True).stdout
    ports = [line.split()[3].rsplit(":", 1)[1] for line in ours.splitlines() if f"pid={local_pid}," in line]
    pids: list[int] = []
    for port in ports:
        theirs = subprocess.run(["ip", "netns", "exec", netns, "ss", "-tnpH", "sport", "= :22", "dport", f"= :{port}"],
                                capture_output=True, text=True).stdout
        pids += [int(x.split(",")[0]) for x in theirs.split("pid=")[1:]]
    return sorted(set(pids))


def test_sshd_stopped_host_restores_itself(toy, testbed):
    """sshd serving the controller frozen (SIGSTOP): the heartbeat stops, the guard takes over."""
    p = cli_until(toy.ssh_config_path, "weight_loading")
    pids = _sshd_pids_serving(testbed, p.pid)
    assert pids, "no sshd found for the controller's connection"
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        took = wait_as_found(toy.ssh_config_path, stopped, BOUND_CUT)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    _, err = p.communicate(timeout=120)
    print(err)
    report("sshd-SIGSTOP", took)


def _workbench(ssh_config: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workbench", "--ssh-config", ssh_config, *args],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def test_status_shows_a_guarded_session(toy):
    p = cli_until(toy.ssh_config_path, "weight_loading")
    try:
        st = _workbench(toy.ssh_config_path, "status", "gpu-a", "toy*")
        assert st.returncode == 0, st.stderr
        assert "session: GUARDED" in st.stdout and "variant of toy.service" in st.stdout, st.stdout
    finally:
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=60)
    assert host_state(toy.ssh_config_path) == found_state()


def test_frozen_controller_and_an_edited_base_stale_record_then_restore_accept_current(toy):
    """The controller freezes (SIGSTOP: a laptop lid closed) with the base stopped; someone edits the
    base meanwhile.  The guard removes the variant but does not guess about the base; status says
    so, ``workbench restore`` explains what changed, ``--accept-current`` finishes."""
    env = dict(os.environ, KILL_SIGNAL="STOP", PYTHONPATH=str(ROOT), GUARD="1")
    proc = subprocess.Popen([sys.executable, str(CONTROLLER), toy.ssh_config_path, "after_stop_base", BASE],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    edited = BASE_TEXT.replace("RestartSec=1", "RestartSec=2")
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "REACHED after_stop_base"
        frozen = time.monotonic()
        toy.put(edited.encode(), f"/etc/systemd/system/{BASE}")
        toy.run("systemctl daemon-reload", check=True)
        # The guard takes over once the heartbeat is stale: the variant goes, the base is left stopped.
        while (state := host_state(toy.ssh_config_path))[1:3] != ["0", "0"]:
            assert time.monotonic() - frozen < BOUND_CUT, state
            time.sleep(0.5)
        assert state[0] == "inactive" and state[3] == "record", state
    finally:
        proc.kill()
        proc.communicate()
    st = _workbench(toy.ssh_config_path, "status", "gpu-a", "toy*")
    assert "session: ABANDONED" in st.stdout and "unit files changed" in st.stdout, st.stdout
    first = _workbench(toy.ssh_config_path, "restore", "gpu-a")
    print(st.stdout.splitlines()[0], first.stderr, sep="\n")
    assert first.returncode == 1, first.stdout + first.stderr
    assert f"/etc/systemd/system/{BASE} changed" in first.stderr, first.stderr
    assert "workbench restore gpu-a --accept-current" in first.stderr
    assert host_state(toy.ssh_config_path)[0] == "inactive"  # nothing guessed
    done = _workbench(toy.ssh_config_path, "restore", "gpu-a", "--accept-current")
    assert done.returncode == 0, done.stdout + done.stderr
    print(done.stdout)
    assert f"accepted the current files and unit-file state of {BASE}" in done.stdout, done.stdout
    assert f"started {BASE} (it was running when found): ready" in done.stdout, done.stdout
    again = _workbench(toy.ssh_config_path, "restore", "gpu-a")
    assert again.returncode == 0 and "nothing to restore" in again.stdout
    # Put the fixture's base back for the next tests (the edit was this test's own).
    toy.put(BASE_TEXT.encode(), f"/etc/systemd/system/{BASE}")
    toy.run(f"systemctl daemon-reload && systemctl restart {BASE}", check=True)
    assert host_state(toy.ssh_config_path) == found_state()


SIM_STATE = ("systemctl is-active sglang-k26-ddtree.service; "
             "grep -l '^X-WorkbenchVariantOf=' /run/systemd/system/*.service 2>/dev/null | wc -l; "
             "test -e /run/workbench/session.json && echo record || echo no-record")


def _gpu_b(ssh_config: str) -> list[str]:
    try:
        return subprocess.run(["ssh", "-F", ssh_config, "-o", "ConnectTimeout=3", "gpu-b", SIM_STATE],
                              capture_output=True, text=True, timeout=10).stdout.split()
    except subprocess.TimeoutExpired:
        return ["no answer"]


@pytest.mark.parametrize("when", ["variant_loaded", "after_first_trial"])
def test_bisect_controller_killed_host_restores_itself(ssh_config, tmp_path, when):
    """``workbench run bisect`` SIGKILLed (its kernel dies with it) mid-trial or between trials."""
    cmd = [sys.executable, "-m", "workbench", "--ssh-config", ssh_config, "run", "bisect", "--host", "gpu-b",
           "--preset", "seeds-k26", "--data-dir", str(tmp_path), "-p", "start_timeout", "120", "-p", "lock_wait", "240",
           "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        deadline = time.monotonic() + 400
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "the bisect ended before the kill"
            if when == "variant_loaded" and _gpu_b(ssh_config)[1:2] == ["1"]:
                break
            if when == "after_first_trial" and list(tmp_path.glob("runs/*/trials.parquet")):
                break
            time.sleep(0.3)
        # The state found is what the session recorded (other suites may start or stop this base).
        record = subprocess.run(["ssh", "-F", ssh_config, "gpu-b", "cat /run/workbench/session.json"],
                                capture_output=True, text=True, timeout=10).stdout
        snaps = json.loads(record)["snapshots"] if record.strip() else {}
        snap = snaps.get("sglang-k26-ddtree.service")
        found = ("active" if snap["running"] else "inactive") if snap else _gpu_b(ssh_config)[0]
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    gone = time.monotonic()
    while (state := _gpu_b(ssh_config)) != [found, "0", "no-record"]:
        assert time.monotonic() - gone < BOUND_KILLED, f"not restored: {state}"
        time.sleep(0.2)
    report(f"bisect-KILL@{when}", time.monotonic() - gone)


def test_busy_gpus_refuse_the_start_and_the_placed_variant_is_removed(toy):
    """The GPU check runs beside the verified placement: busy GPUs (the simulated server holds them)
    refuse the start, the variant placed meanwhile is removed, the base never stopped."""
    from workbench import gpus
    from workbench.errors import GpuBusy
    from workbench.session import HostSession

    from .conftest import SIM_BASE, as_found

    toy.run(["systemctl", "start", SIM_BASE], check=True)
    try:
        deadline = time.monotonic() + 120
        while not gpus.inventory(toy).busy():
            assert time.monotonic() < deadline, "the simulated server never held the GPUs"
            time.sleep(0.5)
        before = toy.run(["systemctl", "show", "-p", "InvocationID", "--value", BASE]).stdout
        with HostSession(toy, purpose="busy") as s:
            with pytest.raises(GpuBusy, match=SIM_BASE):
                s.run_variant(BASE, {"--mode": "ok"}, timeout=60)
            assert s.svc.variant_files() == {}
        assert toy.run(["systemctl", "show", "-p", "InvocationID", "--value", BASE]).stdout == before
    finally:
        toy.run(["systemctl", "stop", SIM_BASE], check=True)
    as_found(toy)
