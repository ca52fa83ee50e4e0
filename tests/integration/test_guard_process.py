"""The guard on the process backend (hosts without systemd): a ``setsid`` supervisor on the host
restores it when the controller is killed, with no further workbench command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .test_guard import BOUND_KILLED, ROOT
from .test_local_backend import BASE, local_host  # noqa: F401  (the fixture)
from .test_restore import CONTROLLER

STEPS = ["after_record", "after_install", "after_stop_base", "during_watch"]


def host_state(root: str) -> list[str]:
    """The host as plain shell commands see it: base supervisor alive and active, no variant
    files, no session record, no guard process."""
    script = (
        f's=$(sed -n \'s/.*"supervisor_pid": \\([0-9]*\\).*/\\1/p\' "$1/state/{BASE}.state.json"); '
        '[ -n "$s" ] && kill -0 "$s" 2>/dev/null && echo alive || echo dead; '
        f'grep -o \'"state": "[a-z]*"\' "$1/state/{BASE}.state.json" | cut -d\'"\' -f4; '
        'ls "$1/run" 2>/dev/null | wc -l; '
        'test -e "$1/session/session.json" && echo record || echo no-record; '
        'for f in "$1"/session/*.pid; do [ -e "$f" ] && grep -q hostguard "/proc/$(cat "$f")/cmdline" 2>/dev/null '
        '&& echo guard; done; true'
    )
    return subprocess.run(["sh", "-c", script, "state", root], capture_output=True, text=True, timeout=10).stdout.split()


@pytest.mark.parametrize("signal_name", ["KILL", "TERM"])
@pytest.mark.parametrize("step", STEPS)
def test_process_backend_controller_killed_host_restores_itself(local_host, step, signal_name):  # noqa: F811
    root = local_host.properties["services_root"]
    env = dict(os.environ, KILL_SIGNAL=signal_name, PYTHONPATH=str(ROOT), GUARD="1",
               EDITS=json.dumps({"--ep-size": "8"}), PHASE="weight_loading")
    proc = subprocess.run([sys.executable, str(CONTROLLER), "local", step, BASE], capture_output=True, text=True,
                          timeout=180, env=env)
    gone = time.monotonic()
    assert f"REACHED {step}" in proc.stdout, proc.stdout + proc.stderr
    assert proc.returncode == -getattr(signal, f"SIG{signal_name}")
    while (state := host_state(root)) != ["alive", "active", "0", "no-record"]:
        assert time.monotonic() - gone < BOUND_KILLED + 60, f"not restored: {state}"
        time.sleep(0.2)
    took = time.monotonic() - gone
    print(f"\nGUARD-RESTORE process-{signal_name}@{step} {took:.2f} s", flush=True)
    assert took < BOUND_KILLED, state
    assert Path(root, "session").is_dir()
    left = sorted(p.name for p in Path(root, "session").rglob("*") if p.is_file())
    assert not [n for n in left if n.endswith((".lock", ".beat")) or n == "hostguard.py"], left


@pytest.mark.parametrize("signal_name", ["KILL", "TERM"])
def test_process_backend_bisect_killed_mid_trial_host_restores_itself(local_host, tmp_path, signal_name):  # noqa: F811
    """``workbench run bisect`` on the process backend, SIGKILLed (its kernel dies with it) or
    SIGTERMed (it restores as on Ctrl-C) while a trial's variant runs."""
    root = local_host.properties["services_root"]
    cmd = [sys.executable, "-m", "workbench", "run", "bisect", "--host", "gpu-a", "--preset", "seeds-k26",
           "--data-dir", str(tmp_path), "-p", "start_timeout", "120", "-p", "lock_wait", "240", "--no-progress"]
    err = tmp_path / "stderr.txt"
    with err.open("w") as f:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=f,
                                env=dict(os.environ, PYTHONPATH=str(ROOT)))  # the local testbed's state dir: inherited
    try:
        deadline = time.monotonic() + 300
        while host_state(root)[2:3] != ["1"]:  # a variant placed
            assert proc.poll() is None, f"the bisect ended before the kill: {err.read_text()[-2000:]}"
            assert time.monotonic() < deadline, "no variant within 300 s"
            time.sleep(0.2)
        proc.send_signal(getattr(signal, f"SIG{signal_name}"))
        proc.wait(timeout=300)  # KILL: at once; TERM: after its own restore
    finally:
        if proc.poll() is None:
            proc.kill()
    gone = time.monotonic()
    while (state := host_state(root)) != ["alive", "active", "0", "no-record"]:
        assert time.monotonic() - gone < BOUND_KILLED, f"not restored: {state}"
        time.sleep(0.2)
    if signal_name == "TERM":
        assert proc.returncode == 130, proc.returncode  # interrupted, the host restored (the exit-code table)
    print(f"\nGUARD-RESTORE process-bisect-{signal_name}@variant_loaded {time.monotonic() - gone:.2f} s", flush=True)
