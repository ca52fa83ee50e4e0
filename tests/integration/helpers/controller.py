"""A controller that runs one variant trial on gpu-a and kills itself (SIGKILL) at a named step.

    python controller.py SSH_CONFIG STEP BASE

Steps: after_protect, after_record, after_install, after_stop_base, during_watch, after_watch.
Prints "REACHED <step>" right before dying, so the test knows the kill happened there.
Step during_install does not kill itself: the variant's install pauses *on the host* (our place
script, patched here: it creates DRILL_DIR/paused, then reads the FIFO DRILL_DIR/go before it
moves the unit into place, reloads and creates DRILL_DIR/done); the test kills this controller while the
install waits, then decides when (whether) the install may go on.
KILL_SIGNAL: KILL (default), TERM (no handler here: the default action, like any Python program),
INT.  LOCK_WAIT: seconds to wait for the host's lock.  GUARD=0 runs the session without its guard (to test the next session's recovery).
SSH_CONFIG "local" reaches gpu-a of the local testbed (process backend), "docker" this machine's
Docker (the container backend; DOCKER_HOST from the environment); HOST picks another host
(gpu-c: the container backend); EDITS (JSON) and PHASE (the phase that ends ``during_watch``) fit
the variant to the base.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from workbench.session import HostSession
from workbench.ssh import SSHHost

ssh_config, step, base = sys.argv[1:4]
sig = getattr(signal, "SIG" + os.environ.get("KILL_SIGNAL", "KILL"))


def die(at: str) -> None:
    if at == step:
        print(f"REACHED {at}", flush=True)
        os.kill(os.getpid(), sig)


host_name = os.environ.get("HOST", "gpu-a")
services = None
if ssh_config == "docker":
    from workbench.hosts import LocalHost
    from workbench.services import ContainerServices

    host = LocalHost("docker")
    services = ContainerServices(host)
elif ssh_config == "local":
    from workbench.hosts import connect

    host = connect(host_name)
else:
    host = SSHHost(host_name, ssh_config=ssh_config)
edits = json.loads(os.environ.get("EDITS", '{"--mode": "ok", "--delay": "0.5"}'))
phase = os.environ.get("PHASE", "cuda_graph_capture")
if step == "during_install":
    from workbench.services import systemd as _sd

    d = os.environ["DRILL_DIR"]
    _sd._PLACE_SCRIPT = _sd._PLACE_SCRIPT.replace(
        'chmod 644 "$tmp" && mv -f "$tmp" "$dst" || exit 21',
        f': > {d}/paused; read go < {d}/go; '
        f'chmod 644 "$tmp" && mv -f "$tmp" "$dst" || exit 21; : > {d}/done')  # done: the variant landed
    assert f"{d}/go" in _sd._PLACE_SCRIPT
session = HostSession(host, purpose=f"kill-at-{step}", guard=os.environ.get("GUARD", "1") != "0", services=services,
                      lock_wait=float(os.environ.get("LOCK_WAIT", "0")))  # others' sessions may hold it
svc = session.svc

orig_protect = session.protect
orig_save = session._save
orig_install = svc.install_variant
orig_stop = svc.stop
orig_stop_if_running = svc.stop_if_running


def protect(unit):  # type: ignore[no-untyped-def]
    snap = orig_protect(unit)
    die("after_protect")
    return snap


def save():  # type: ignore[no-untyped-def]
    orig_save()
    if session.record.created:
        die("after_record")


def install(v):  # type: ignore[no-untyped-def]
    changed = orig_install(v)
    die("after_install")
    return changed


def stop_if_running(unit):  # type: ignore[no-untyped-def]
    was = orig_stop_if_running(unit)
    if unit == base:
        die("after_stop_base")
    return was


def stop(unit, **kw):  # type: ignore[no-untyped-def]
    st = orig_stop(unit, **kw)
    if unit == base:
        die("after_stop_base")
    elif "-wb-" in unit:
        die("after_watch")
    return st


session.protect = protect  # type: ignore[method-assign]
session._save = save  # type: ignore[method-assign]
svc.install_variant = install  # type: ignore[method-assign]
svc.stop = stop  # type: ignore[method-assign]
svc.stop_if_running = stop_if_running  # type: ignore[method-assign]

with session:
    session.run_variant(base, edits, timeout=60,
                        on_event=lambda ev: die("during_watch") if ev.phase == phase else None)
print("COMPLETED", flush=True)
