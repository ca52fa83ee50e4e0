"""The guard: the host puts itself back with no further workbench command, whatever happens to the controller.

Each test kills or cuts off a controller at a step of a variant, then waits on the host itself
(plain ``ssh`` and ``systemctl``, never the workbench) until the state found is back, within
the documented bound, and measures how long that took.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from workbench.guard import POLL_S, STALE_S

from .conftest import BASE, BASE_TEXT
from .test_containers import host_c  # noqa: F401  (the fixture: gpu-c, brought up when missing)
from .test_restore import CONTROLLER, STEPS

pytestmark = pytest.mark.testbed
ROOT = Path(__file__).parents[2]
# The bound the guard promises (issue 14: 60 s after the controller is gone; docs/guard.md): its end
# noticed (at once, or STALE_S after its last heartbeat), then the variant stopped and the base
# restarted. Typically a few seconds / ~25 s (the GUARD-RESTORE lines report them); a loaded 2-core
# machine took 15-20 s for a kill (seen), so the tests hold the promise, not the typical figure.
BOUND_KILLED = 60.0
BOUND_CUT = max(60.0, STALE_S + POLL_S + 15.0)
# What the guard and the fence leave in the state dir: named, so a failure says what was left.
LEFT = ("echo left:$(ls /run/workbench 2>/dev/null | grep -e hostguard -e beat -e inflight -e verify "
        "| tr '\\n' ,)")
STATE_SCRIPT = (
    f"systemctl is-active {BASE}; "
    "grep -l '^X-WorkbenchVariantOf=' /run/systemd/system/*.service 2>/dev/null | wc -l; "
    "systemctl list-units --all --plain --no-legend 'toy-wb-*' | wc -l; "
    "test -e /run/workbench/session.json && echo record || echo no-record; "
    f"sha256sum /etc/systemd/system/{BASE} | cut -c1-64; "
    "systemctl list-units --all --plain --no-legend 'workbench-guard-*' | wc -l; "  # ended, not ending
    + LEFT
)
# The container backend on gpu-c (podman): the base container running, no variant container.
C_BASE = "sglang-k26-ddtree"
C_STATE_SCRIPT = (
    f"podman container inspect --format '{{{{.State.Running}}}}' {C_BASE}; "
    # running as podman says *and* its process alive: a base the guard started from its own unit
    # was killed with that unit, while podman still said running
    f"kill -0 \"$(podman container inspect --format '{{{{.State.Pid}}}}' {C_BASE})\" 2>/dev/null "
    "&& echo alive || echo dead; "
    "podman ps -a --filter label=workbench.variant-of --format '{{.Names}}' | wc -l; "
    "test -e /run/workbench/session.json && echo record || echo no-record; "
    "systemctl list-units --all --plain --no-legend 'workbench-guard-*' | wc -l; "  # ended, not ending
    + LEFT
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

    return ["active", "0", "0", "no-record", hashlib.sha256(BASE_TEXT.encode()).hexdigest(), "0", "left:"]


@dataclass
class Bed:
    """A backend's testbed host for the drills: what the controller runs there, and how plain ssh
    sees the state found."""

    backend: str
    ssh_config: str
    host: str
    base: str
    edits: dict[str, object]
    phase: str  # the phase that ends ``during_watch``
    state_script: str
    found: list[str]
    conn: Any = None  # the fixture's own connection to the host

    def state(self) -> tuple[list[str], float]:
        """The state, read holding the host's lock (other suites' sessions share these hosts and
        each restores before it lets go), and the seconds spent waiting for another session's lock
        (not our guard's: a guard holds it only while it restores)."""
        script = ('o=$(cat /run/lock/workbench.owner.json 2>/dev/null); t0=$(date +%s%N); p=/run/lock/workbench.lock; '
                  'while :; do exec 9>>"$p"; flock -w 600 9 || exit 75; '  # as workbench.lock holds it
                  '[ "$(stat -L -c %i /proc/self/fd/9)" = "$(stat -c %i "$p" 2>/dev/null)" ] && break; exec 9>&-; done; '
                  'sh -c "$1" 9>&-; rm -f "$p"; '
                  'case "$o" in *"guard restoring"*|"") w=0;; *) w=$(( $(date +%s%N) - t0 ));; esac; '
                  'echo "@@waited $w"')
        try:
            res = subprocess.run(["ssh", "-F", self.ssh_config, "-o", "ConnectTimeout=3", self.host,
                                  shlex.join(["sh", "-c", script, "state", self.state_script])],
                                 capture_output=True, text=True, timeout=620)
        except subprocess.TimeoutExpired:
            return ["no answer"], 0.0
        words = res.stdout.split()
        waited = float(words[-1]) / 1e9 if words[-2:-1] == ["@@waited"] else 0.0
        return words[:-2], waited

    def peek(self) -> list[str]:
        """The state without the host's lock (plain ssh, no workbench code)."""
        try:
            res = subprocess.run(["ssh", "-F", self.ssh_config, "-o", "ConnectTimeout=3", self.host,
                                  self.state_script], capture_output=True, text=True, timeout=10)
        except subprocess.TimeoutExpired:
            return ["no answer"]
        return res.stdout.split()

    def evidence(self) -> str:
        """What a drill that failed leaves to read: the guard's log and the session record."""
        return evidence(self.ssh_config, self.host)

    def wait_as_found(self, since: float, bound: float) -> float:
        """Seconds from ``since`` until the host is back as found, less the time other sessions held it."""
        others = 0.0
        while True:
            state, waited = self.state()
            others += waited
            if state == self.found:
                return time.monotonic() - since - others
            assert time.monotonic() - since - others < bound, \
                f"not restored {bound:.0f} s after the controller went: {state}\n{self.evidence()}"
            time.sleep(0.2)

    def env(self, **more: str) -> dict[str, str]:
        return dict(os.environ, PYTHONPATH=str(ROOT), GUARD="1", HOST=self.host, EDITS=json.dumps(self.edits),
                    PHASE=self.phase, LOCK_WAIT="300", **more)


@pytest.fixture(params=["systemd", "container"])
def bed(request) -> Bed:
    """The drills' host on each backend: gpu-a's toy unit (systemd), gpu-c's base container (podman)."""
    if request.param == "systemd":
        toy = request.getfixturevalue("toy")
        return Bed("systemd", toy.ssh_config_path, "gpu-a", BASE, {"--mode": "ok", "--delay": "0.5"},
                   "cuda_graph_capture", STATE_SCRIPT, found_state(), toy)
    # (edits of its own: test_containers.py's variants have other names, whatever runs at once)
    hc = request.getfixturevalue("host_c")
    hc.run(["podman", "start", C_BASE], check=True)  # found running (another test may have left it so)
    return Bed("container", str(hc.ssh_config_path), "gpu-c", C_BASE, {"--enable-nccl-nvls": True, "--tp-size": "8"},
               "weight_loading", C_STATE_SCRIPT, ["true", "alive", "0", "no-record", "0", "left:"], hc)


def evidence(ssh_config: str, host: str = "gpu-a") -> str:
    """The guard's log (every guard of the last 5 min) and the session record, read with plain ssh."""
    script = ("journalctl -o short-unix --no-pager -g 'workbench-guard: ' --since -5min; "
              "echo '--- the session record:'; cat /run/workbench/session.json 2>&1")
    try:
        res = subprocess.run(["ssh", "-F", ssh_config, "-o", "ConnectTimeout=3", host, script],
                             capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "(no answer to read the guard's log)"
    return res.stdout + res.stderr


def wait_as_found(ssh_config: str, since: float, bound: float) -> float:
    """Seconds from ``since`` until the host is back as found; fails past ``bound``."""
    want = found_state()
    while True:
        state = host_state(ssh_config)
        if state == want:
            return time.monotonic() - since
        assert time.monotonic() - since < bound, \
            f"not restored {bound:.0f} s after the controller went: {state}\n{evidence(ssh_config)}"
        time.sleep(0.2)


def controller(ssh_config: str, step: str, signal_name: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, KILL_SIGNAL=signal_name, PYTHONPATH=str(ROOT), GUARD="1")
    return subprocess.run([sys.executable, str(CONTROLLER), ssh_config, step, BASE], capture_output=True,
                          text=True, timeout=180, env=env)


def report(name: str, seconds: float) -> None:
    print(f"\nGUARD-RESTORE {name} {seconds:.2f} s", flush=True)


@pytest.mark.parametrize("signal_name", ["KILL", "TERM"])
@pytest.mark.parametrize("step", STEPS)
def test_controller_killed_at_every_step_host_restores_itself(bed, step, signal_name):
    proc = subprocess.run([sys.executable, str(CONTROLLER), bed.ssh_config, step, bed.base], capture_output=True,
                          text=True, timeout=480, env=bed.env(KILL_SIGNAL=signal_name))
    gone = time.monotonic()
    assert f"REACHED {step}" in proc.stdout, proc.stdout + proc.stderr
    assert proc.returncode == -getattr(signal, f"SIG{signal_name}")
    took = bed.wait_as_found(gone, BOUND_KILLED)
    report(f"{signal_name}@{step}" if bed.backend == "systemd" else f"{bed.backend}-{signal_name}@{step}", took)


def cli(ssh_config: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "workbench", "--ssh-config", ssh_config, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT), PYTHONFAULTHANDLER="1"))


def finish(p: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """``p``'s output once it has ended; past ``timeout``, its threads' stacks (SIGABRT: faulthandler) in the error."""
    try:
        return p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGABRT)
        out, err = p.communicate(timeout=30)
        raise AssertionError(f"still running {timeout:.0f} s later; its stacks:\n{err}\n{out}") from None


def cli_until(ssh_config: str, phase: str, *variant: str) -> subprocess.Popen[str]:
    """``workbench variant`` running, stopped right after it prints ``phase`` (progress: stderr);
    ``variant``: HOST BASE --set ... (default: gpu-a's toy unit)."""
    args = variant or ("gpu-a", BASE, "--set", "mode=ok", "--set", "delay=1")
    p = cli(ssh_config, "variant", *args, "--timeout", "120", "--lock-wait", "300")
    assert p.stderr is not None
    for line in p.stderr:
        if line.split()[-1:] == [phase]:
            return p
    raise AssertionError(f"the variant ended before {phase}: {p.communicate()}")


@pytest.mark.parametrize("signal_name", ["TERM", "HUP"])
def test_cli_variant_restores_on_sigterm_and_sighup_as_on_ctrl_c(toy, signal_name):
    p = cli_until(toy.ssh_config_path, "weight_loading")
    p.send_signal(getattr(signal, f"SIG{signal_name}"))
    out, err = finish(p, 60)
    assert p.returncode == 130, out + err
    assert f"SIG{signal_name}: stopping and restoring the host" in err
    assert host_state(toy.ssh_config_path) == found_state()  # restored before it exited


def test_cli_variant_sigkill_during_weight_loading_host_restores_itself(toy):
    p = cli_until(toy.ssh_config_path, "weight_loading")
    p.kill()
    p.wait()
    report("cli-KILL@weight_loading", wait_as_found(toy.ssh_config_path, time.monotonic(), BOUND_KILLED))


def _cut_link(testbed, up: bool, host: str = "gpu-a") -> None:
    from workbench.testbed import testbed as tb

    # The session's state was read before gpu-c joined (the containers fixture adds it): read it again.
    state = tb.load() or testbed
    netns = next(h.netns for h in state.hosts if h.name == host)
    subprocess.run(["ip", "netns", "exec", netns, "ip", "link", "set", "eth0", "up" if up else "down"], check=True)


def _guard_log_inside(testbed, host: str, since_wall: float) -> str:
    """The guard's lines in ``host``'s journal since ``since_wall``, read from inside the host's mount namespace
    (nsenter into its init): its link may be down."""
    from workbench.testbed import testbed as tb

    state = tb.load() or testbed
    nspawn_pid = next(h.pid for h in state.hosts if h.name == host)
    init = Path(f"/proc/{nspawn_pid}/task/{nspawn_pid}/children").read_text().split()[0]
    return subprocess.run(["nsenter", "-t", init, "-m", "--", "journalctl", "-o", "short-unix", "--no-pager",
                           "-g", "workbench-guard: ", "--since", f"@{int(since_wall) - 1}"],
                          capture_output=True, text=True, timeout=20).stdout


def _sets(edits: dict[str, object]) -> list[str]:
    """``edits`` as ``workbench variant``'s ``--set`` options."""
    return [a for k, v in edits.items() for a in ("--set", k.lstrip("-") if v is True else f"{k.lstrip('-')}={v}")]


def test_network_partition_host_restores_itself_while_cut_off(bed, testbed):
    """The link goes down mid-start and stays down past the bound: the guard restores on its own."""
    p = cli_until(bed.ssh_config, "weight_loading", bed.host, bed.base, *_sets(bed.edits))
    _cut_link(testbed, up=False, host=bed.host)
    cut, cut_wall = time.monotonic(), time.time()
    try:
        # The link stays down until both sides have acted alone, as in a partition that outlasts them: the
        # controller has given up on its own clock (it has ended) and the guard has restored on its own (its line,
        # read from inside the host). Up to the bound and a minute more: on a loaded fresh clone the controller once
        # had not ended 60 s after the cut. (A sleep of the whole bound stood here: 60 s, where this takes 25-35.)
        while not (p.poll() is not None and "host restored in" in _guard_log_inside(testbed, bed.host, cut_wall)):
            assert time.monotonic() - cut < BOUND_CUT + 60, (
                f"controller ended: {p.poll() is not None}; the guard's log:\n"
                f"{_guard_log_inside(testbed, bed.host, cut_wall)}")
            time.sleep(0.5)
    finally:
        _cut_link(testbed, up=True, host=bed.host)
        bed.conn.close()  # the fixture's connection died with the link: the next command reconnects
    # Already restored while cut off: as found as soon as ssh gets through again.
    bed.wait_as_found(cut, BOUND_CUT + 10)
    log = subprocess.run(["ssh", "-F", bed.ssh_config, bed.host,
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
    report("partition" if bed.backend == "systemd" else f"{bed.backend}-partition", restored[-1] - cut_wall)


def _sshd_pids_serving(testbed, local_pid: int, host: str = "gpu-a") -> list[int]:
    """The host-side sshd processes of ``local_pid``'s SSH connections (found by TCP port)."""
    from workbench.testbed import testbed as tb

    state = tb.load() or testbed  # (gpu-c joins after the session read its state: read it again)
    netns = next(h.netns for h in state.hosts if h.name == host)
    addr = next(h.address for h in state.hosts if h.name == host)
    ours = subprocess.run(["ss", "-tnpH", "dst", f"{addr}:22"], capture_output=True, text=True).stdout
    ports = [line.split()[3].rsplit(":", 1)[1] for line in ours.splitlines() if f"pid={local_pid}," in line]
    pids: list[int] = []
    for port in ports:
        theirs = subprocess.run(["ip", "netns", "exec", netns, "ss", "-tnpH", "sport", "= :22", "dport", f"= :{port}"],
                                capture_output=True, text=True).stdout
        pids += [int(x.split(",")[0]) for x in theirs.split("pid=")[1:]]
    return sorted(set(pids))


def test_sshd_stopped_host_restores_itself(bed, testbed):
    """sshd serving the controller frozen (SIGSTOP): the heartbeat stops, the guard takes over."""
    p = cli_until(bed.ssh_config, "weight_loading", bed.host, bed.base, *_sets(bed.edits))
    pids = _sshd_pids_serving(testbed, p.pid, bed.host)
    assert pids, "no sshd found for the controller's connection"
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        # Read without the host's lock: the frozen controller's session holds it until the guard
        # ends that session's holder.
        while (state := bed.peek()) != bed.found:
            if time.monotonic() - stopped >= BOUND_CUT:
                seen = bed.evidence()
                for pid in pids:  # then the controller's own account
                    os.kill(pid, signal.SIGCONT)
                _, err = p.communicate(timeout=120)
                raise AssertionError(f"not restored {BOUND_CUT:.0f} s after sshd froze: {state}\n"
                                     f"{seen}\n--- the controller said (after sshd went on):\n{err}")
            time.sleep(0.2)
        took = time.monotonic() - stopped
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):  # (gone once its connection ended)
                os.kill(pid, signal.SIGCONT)
    _, err = p.communicate(timeout=120)
    print(err)
    report("sshd-SIGSTOP" if bed.backend == "systemd" else f"{bed.backend}-sshd-SIGSTOP", took)


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
        finish(p, 60)
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
            assert time.monotonic() - frozen < BOUND_CUT, f"{state}\n{evidence(toy.ssh_config_path)}"
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


def test_frozen_controller_and_a_recreated_base_container_stale_record_then_restore_accept_current(host_c):  # noqa: F811
    """The container backend's stale record: the controller freezes with the base container stopped;
    meanwhile someone recreates the base container (same definition, a new container: a new id).
    The guard removes the variant and leaves the base alone; ``workbench restore`` names what changed
    (the container's id) and how to proceed; ``--accept-current`` starts the new container."""
    cfg = str(host_c.ssh_config_path)
    host_c.run(["podman", "start", C_BASE], check=True)
    env = dict(os.environ, KILL_SIGNAL="STOP", PYTHONPATH=str(ROOT), GUARD="1", HOST="gpu-c", LOCK_WAIT="300",
               EDITS=json.dumps({"--enable-nccl-nvls": True, "--tp-size": "8"}), PHASE="weight_loading")
    proc = subprocess.Popen([sys.executable, str(CONTROLLER), cfg, "after_stop_base", C_BASE],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "REACHED after_stop_base"
        frozen = time.monotonic()
        (c,) = json.loads(host_c.run(["podman", "container", "inspect", C_BASE], check=True).stdout)
        host_c.run(["podman", "rm", "-f", "--", C_BASE], check=True)
        host_c.run(c["Config"]["CreateCommand"], check=True)  # the same definition, another container
        new_id = host_c.run(["podman", "container", "inspect", "--format", "{{.Id}}", C_BASE], check=True).stdout.strip()
        assert new_id != c["Id"]
        # The guard takes over once the heartbeat is stale: the variant goes, the base is left stopped.
        while (state := Bed("container", cfg, "gpu-c", C_BASE, {}, "", C_STATE_SCRIPT, []).peek())[2:3] != ["0"]:
            assert time.monotonic() - frozen < BOUND_CUT, f"{state}\n{evidence(cfg, 'gpu-c')}"
            time.sleep(0.5)
        assert state[0] == "false" and state[3] == "record", state
    finally:
        proc.kill()
        proc.communicate()
    first = _workbench(cfg, "restore", "gpu-c")
    print(first.stderr)
    assert first.returncode == 1, first.stdout + first.stderr
    assert f"container:podman:{C_BASE} changed (id {c['Id'][:12]} -> {new_id[:12]})" in first.stderr, first.stderr
    assert "workbench restore gpu-c --accept-current" in first.stderr
    assert host_c.run(["podman", "container", "inspect", "--format", "{{.State.Running}}", C_BASE]).stdout.strip() == "false"
    done = _workbench(cfg, "restore", "gpu-c", "--accept-current")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"started {C_BASE} (it was running when found)" in done.stdout, done.stdout
    state = Bed("container", cfg, "gpu-c", C_BASE, {}, "", C_STATE_SCRIPT, []).peek()
    assert state == ["true", "alive", "0", "no-record", "0", "left:"], state


SIM_STATE = ("systemctl is-active sglang-k26-ddtree.service; "
             "grep -l '^X-WorkbenchVariantOf=' /run/systemd/system/*.service 2>/dev/null | wc -l; "
             "test -e /run/workbench/session.json && echo record || echo no-record")
# The same three words for gpu-c's base container: running, variant containers, a session's record.
C_SIM_STATE = (f"podman container inspect --format '{{{{.State.Running}}}}' {C_BASE}; "
               "podman ps -a --filter label=workbench.variant-of --format '{{.Names}}' | wc -l; "
               "test -e /run/workbench/session.json && echo record || echo no-record")
BISECT_BEDS = {"systemd": ("gpu-b", "sglang-k26-ddtree.service", SIM_STATE, {True: "active", False: "inactive"}),
               "container": ("gpu-c", C_BASE, C_SIM_STATE, {True: "true", False: "false"})}


def _sim_state(ssh_config: str, host: str, script: str) -> list[str]:
    try:
        return subprocess.run(["ssh", "-F", ssh_config, "-o", "ConnectTimeout=3", host, script],
                              capture_output=True, text=True, timeout=10).stdout.split()
    except subprocess.TimeoutExpired:
        return ["no answer"]


@pytest.mark.parametrize("backend, when, signal_name", [
    ("systemd", "variant_loaded", "KILL"), ("systemd", "after_first_trial", "KILL"), ("systemd", "variant_loaded", "TERM"),
    ("container", "variant_loaded", "KILL"), ("container", "after_first_trial", "KILL"),
    ("container", "variant_loaded", "TERM")])
def test_bisect_controller_killed_host_restores_itself(request, ssh_config, tmp_path, backend, when, signal_name):
    """``workbench run bisect`` SIGKILLed (its kernel dies with it) mid-trial or between trials, or
    SIGTERMed mid-trial (it restores as on Ctrl-C, or its guard does): on gpu-b's unit and on gpu-c's
    base container."""
    host, base, script, words = BISECT_BEDS[backend]
    if backend == "container":
        hc = request.getfixturevalue("host_c")  # gpu-c, brought up when missing
        hc.run(["podman", "start", C_BASE], check=True)
        ssh_config = str(hc.ssh_config_path)
    cmd = [sys.executable, "-m", "workbench", "--ssh-config", ssh_config, "run", "bisect", "--host", host,
           "--preset", "seeds-k26", "-p", "base_unit", base, "--data-dir", str(tmp_path), "-p", "start_timeout", "120",
           "-p", "lock_wait", "240", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        deadline = time.monotonic() + 400
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "the bisect ended before the kill"
            if when == "variant_loaded" and _sim_state(ssh_config, host, script)[1:2] == ["1"]:
                break
            if when == "after_first_trial" and list(tmp_path.glob("runs/*/trials.parquet")):
                break
            time.sleep(0.3)
        # The state found is what the session recorded (other suites may start or stop this base).
        record = subprocess.run(["ssh", "-F", ssh_config, host, "cat /run/workbench/session.json"],
                                capture_output=True, text=True, timeout=10).stdout
        snaps = json.loads(record)["snapshots"] if record.strip() else {}
        snap = snaps.get(base)
        found = words[bool(snap["running"])] if snap else _sim_state(ssh_config, host, script)[0]
        proc.send_signal(getattr(signal, f"SIG{signal_name}"))
        proc.wait(timeout=300)  # KILL: at once; TERM: after its own restore
    finally:
        if proc.poll() is None:
            proc.kill()
    gone = time.monotonic()
    while (state := _sim_state(ssh_config, host, script)) != [found, "0", "no-record"]:
        assert time.monotonic() - gone < BOUND_KILLED, f"not restored: {state}"
        time.sleep(0.2)
    if signal_name == "TERM":
        assert proc.returncode == 130, proc.returncode  # interrupted, the host restored (the exit-code table)
    name = f"bisect-{signal_name}@{when}"
    report(name if backend == "systemd" else f"{backend}-{name}", time.monotonic() - gone)


def test_bisect_over_two_hosts_sigtermed_while_both_run_a_trial_stops_both_and_restores_both(ssh_config, tmp_path):
    """``workbench run bisect -p hosts '["gpu-a","gpu-b"]'`` SIGTERMed while each host runs a trial: both trials
    are told to stop (their watches end), no queued set starts, each host is restored by its own session."""
    hosts, base = ("gpu-a", "gpu-b"), "sglang-k26-ddtree.service"
    cmd = [sys.executable, "-m", "workbench", "--ssh-config", ssh_config, "run", "bisect", "--preset", "seeds-k26",
           "-p", "hosts", json.dumps(hosts), "-p", "base_unit", base, "--data-dir", str(tmp_path),
           "-p", "start_timeout", "120", "-p", "lock_wait", "240", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    found: dict[str, str] = {}
    try:
        deadline = time.monotonic() + 400
        while not all(_sim_state(ssh_config, h, SIM_STATE)[1:2] == ["1"] for h in hosts):
            assert proc.poll() is None and time.monotonic() < deadline, "the bisect ended before both ran a trial"
            time.sleep(0.3)
        for h in hosts:  # the state found is what each session recorded
            record = subprocess.run(["ssh", "-F", ssh_config, h, "cat /run/workbench/session.json"],
                                    capture_output=True, text=True, timeout=10).stdout
            snap = (json.loads(record)["snapshots"] if record.strip() else {}).get(base)
            found[h] = ("active" if snap["running"] else "inactive") if snap else _sim_state(ssh_config, h, SIM_STATE)[0]
        proc.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        proc.wait(timeout=300)
        took = time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, proc.returncode  # interrupted, the hosts restored (the exit-code table)
    for h in hosts:  # restored by the run itself before it exited: nothing left for a guard
        assert _sim_state(ssh_config, h, SIM_STATE) == [found[h], "0", "no-record"], h
    report("bisect-2hosts-TERM", took)


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


DRILL = "/run/wb-drill"  # the paused install's files on gpu-a (helpers/controller.py, step during_install)


def _sh(ssh_config: str, script: str, timeout: float = 15) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ssh", "-F", ssh_config, "-o", "ConnectTimeout=3", "gpu-a", script],
                          capture_output=True, text=True, timeout=timeout)


def _until(ssh_config: str, script: str, what: str, bound: float) -> None:
    since = time.monotonic()
    while _sh(ssh_config, script).returncode != 0:
        assert time.monotonic() - since < bound, f"{what}: not within {bound:.0f} s"
        time.sleep(0.1)


@pytest.mark.parametrize("install", ["ends_while_the_guard_waits", "never_ends"])
@pytest.mark.parametrize("signal_name", ["KILL", "TERM"])
def test_controller_killed_while_its_install_runs_nothing_lands_after_the_restore(toy, signal_name, install):
    """The race behind a variant left behind: the controller dies while its install runs on the host
    (held there on a FIFO by our own place script), and the install goes on after the controller is
    gone.  The guard fences the session off first: it waits for the install (which then lands
    *before* the restore, and the restore removes it), or ends it when it outlives the wait; either
    way nothing of the variant is left and no late command of the session runs."""
    cfg = toy.ssh_config_path
    _sh(cfg, f"rm -rf {DRILL} && mkdir -p {DRILL} && mkfifo {DRILL}/go").check_returncode()
    env = dict(os.environ, KILL_SIGNAL=signal_name, PYTHONPATH=str(ROOT), GUARD="1", DRILL_DIR=DRILL,
               LOCK_WAIT="300")
    proc = subprocess.Popen([sys.executable, str(CONTROLLER), cfg, "during_install", BASE], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        _until(cfg, f"test -e {DRILL}/paused", "the install never started", 330)
        proc.send_signal(getattr(signal, f"SIG{signal_name}"))
        proc.communicate(timeout=30)
        gone = time.monotonic()
        assert proc.returncode == -getattr(signal, f"SIG{signal_name}")
        if install == "ends_while_the_guard_waits":
            # Without the fence the guard restored at once (the record gone) and the install landed after it.
            _until(cfg, "grep -q '\"fenced_by\": {' /run/workbench/session.json || ! test -e /run/workbench/session.json",
                   "the guard never fenced the session off", BOUND_KILLED)
            _sh(cfg, f"echo go > {DRILL}/go", timeout=10).check_returncode()  # the install goes on, late
            _until(cfg, f"test -e {DRILL}/done", "the released install never ended", 30)
        took = wait_as_found(cfg, gone, BOUND_KILLED)
        if install == "never_ends":
            # The guard ended it after its wait: nobody reads the FIFO any more (an install still
            # waiting would go on now, after the restore).
            late = _sh(cfg, f"timeout 3 sh -c 'echo go > {DRILL}/go'", timeout=15)
            assert late.returncode == 124, "the session's install was still waiting after the restore"
            assert _sh(cfg, f"test -e {DRILL}/done").returncode == 1
        # (Other suites' sessions may use gpu-a by now: only this test's own variant is checked again.)
        assert _sh(cfg, "ls /run/systemd/system/toy-wb-* /run/workbench/verify.* 2>/dev/null").stdout == ""
        log = _sh(cfg, "journalctl -o cat --no-pager -g 'workbench-guard: fenced' --since -2min").stdout
        assert "fenced the session's commands off" in log, log
        report(f"install-{install}-{signal_name}", took)
    finally:
        if proc.poll() is None:
            proc.kill()
        _sh(cfg, f"timeout 2 sh -c 'echo go > {DRILL}/go'; rm -rf {DRILL}")


def test_a_session_leaves_no_lock_file_no_in_flight_lock_and_no_empty_state_dir(bed):
    """After a session that changed the host (a record, its guard, a variant), on each backend:
    no lock file, no owner file, no in-flight lock, no guard file, no empty /run/workbench."""
    from workbench.session import HostSession
    from workbench.ssh import SSHHost

    h = SSHHost(bed.host, ssh_config=bed.ssh_config)
    try:
        with HostSession(h, purpose="test: leaves nothing behind", lock_wait=300) as s:
            trial = s.run_variant(bed.base, bed.edits, timeout=180)
            assert trial.outcome.ok, trial.outcome.describe()
            sid = s.record.id[:12]
            during = h.run(["ls", "-A", "/run/lock", "/run/workbench"]).stdout
            assert "workbench.lock" in during and f"inflight-{sid}.lock" in during, during
        after = h.run(["sh", "-c", 'cat /run/lock/workbench.owner.json 2>/dev/null; echo; ls -A /run/lock; '
                       'echo @@; [ -d /run/workbench ] && { ls -A /run/workbench; [ -n "$(ls -A /run/workbench)" ] '
                       '|| echo EMPTY-DIR; }; true']).stdout
    finally:
        h.close()
    owner, _, rest = after.partition("\n")
    locks, _, state = rest.partition("@@")
    assert "EMPTY-DIR" not in state and sid not in state, after
    if "workbench.lock" in locks.split():  # only while another suite's session holds the host now
        assert owner and "leaves nothing behind" not in owner, after
