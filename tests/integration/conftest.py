"""Fixtures of the integration tests: a toy server unit on gpu-a for the service-control claims."""

from __future__ import annotations

import hashlib
import shutil
import warnings
from pathlib import Path

import pytest

from workbench.services import SystemdServices
from workbench.watch import watch_start

TOY = Path(__file__).parents[1] / "fixtures" / "toy" / "toy_server.py"
BASE = "toy.service"
SIM_BASE = "sglang-k26-ddtree.service"
BASE_TEXT = """[Unit]
Description=toy base for service-control tests

[Service]
ExecStart=/usr/bin/python3 /opt/toy/toy_server.py --port 31000 --mode ok --delay 0.2
Restart=on-failure
RestartSec=1

[Install]
WantedBy=multi-user.target
"""


LEFTOVER_GLOBS = ("inflight-*.lock", "guard-*.beat", "hostguard.py", "verify.*")


@pytest.fixture(autouse=True)
def _no_session_files_left(request):
    """After each testbed test: a session's files left on a host (in-flight lock, heartbeat, guard
    script, verify scratch dir, with no session holding the host) are named in a warning and
    removed, so the test that left them is the one named and no later drill's "as found" fails on
    them.  Read through each host's PID 1 (/proc/PID/root): no SSH round trip per test."""
    yield
    if "testbed" not in request.fixturenames:
        return
    from workbench.testbed import testbed as tb

    state = tb.load()
    for h in state.hosts if state else []:
        try:
            (leader,) = Path(f"/proc/{h.pid}/task/{h.pid}/children").read_text().split()[:1]
        except (OSError, ValueError):
            continue
        run = Path(f"/proc/{leader}/root/run")
        if not (run / "workbench").is_dir() or (run / "workbench/session.json").exists() \
                or (run / "lock/workbench.lock").exists():
            continue  # nothing, or a session holds the host (not ours to touch)
        left = sorted(p for g in LEFTOVER_GLOBS for p in (run / "workbench").glob(g))
        for p in left:
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
        if left:
            warnings.warn(f"{request.node.nodeid} left on {h.name}: {', '.join(p.name for p in left)} (removed)",
                          stacklevel=1)


@pytest.fixture(scope="module")
def toy(testbed):
    from workbench.ssh import SSHHost

    host = SSHHost("gpu-a", ssh_config=str(testbed.ssh_config))
    # The simulated server holds the host's GPUs; these tests need them (and its absence) to themselves.
    # A host that just booted may not have started it yet: wait for the boot's jobs first, or the
    # stop below comes before its start.
    host.run(["systemctl", "is-system-running", "--wait"], timeout=120)
    sim_was_running = host.run(["systemctl", "is-active", "--quiet", SIM_BASE]).ok
    host.run(["systemctl", "stop", SIM_BASE], check=True)
    host.put(TOY.read_bytes(), "/opt/toy/toy_server.py")
    host.put(BASE_TEXT.encode(), f"/etc/systemd/system/{BASE}")
    host.run("systemctl daemon-reload && systemctl enable --now toy.service", check=True)
    svc = SystemdServices(host)
    out = watch_start(svc, BASE, start=False, port=31000, timeout=60)
    assert out.ok, out.describe()
    yield host
    host.run("systemctl disable --now toy.service; rm -f /etc/systemd/system/toy.service; systemctl daemon-reload")
    if sim_was_running:
        host.run(["systemctl", "start", SIM_BASE], check=True)
    host.close()


def tree_digest(host) -> str:
    """sha256 over every unit file and drop-in we could touch, plus the loaded units."""
    files = host.run("find /etc/systemd/system /run/systemd/system -type f -print0 | sort -z | xargs -0 sha256sum",
                     check=True).stdout
    units = host.run("systemctl list-units --all --plain --no-legend --no-pager | awk '{print $1, $2}'").stdout
    return hashlib.sha256((files + units).encode()).hexdigest()


def as_found(host) -> None:
    svc = SystemdServices(host)
    st = svc.status(BASE)
    assert st.running, st.describe()
    assert svc.variant_files() == {}
    assert host.run("systemctl list-units --all --plain --no-legend 'toy-wb-*'").stdout.strip() == ""
    assert host.run(["cat", f"/etc/systemd/system/{BASE}"]).stdout == BASE_TEXT
    assert host.run(["test", "-e", "/run/workbench/session.json"]).exited == 1


