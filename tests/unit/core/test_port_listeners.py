"""Who answers on a port: the watch's check that a health answer comes from the start's own server.

Real processes on this machine (``ss``, ``/proc``): a server started below a "main process", and
another one that is not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

from workbench.hosts import LocalHost
from workbench.systemd import UnitStatus
from workbench.testbed.ports import free_port
from workbench.watch import Listener, foreign_listeners, port_holders, port_listeners

# A "main process" (a shell) whose child listens: the server below its unit's main process.
SERVE = ("import socket, sys, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
         "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); print('up', flush=True); time.sleep(120)")


@pytest.fixture
def served():
    port = free_port()
    main = subprocess.Popen(["sh", "-c", f'"{sys.executable}" -c "$1" "$2"; :', "sh", SERVE, str(port)],
                            stdout=subprocess.PIPE, text=True)
    assert main.stdout is not None and main.stdout.readline().strip() == "up"
    yield main, port
    subprocess.run(["pkill", "-KILL", "-P", str(main.pid)], check=False)
    main.kill()
    main.wait()


@dataclass
class _Svc:
    """The seam the watch asks: the host, and the backend's server roots for the unit."""

    host: LocalHost
    roots: set[int]

    def server_roots(self, unit: str, st: UnitStatus, argv: list[str]) -> set[int]:
        return self.roots


def _status(main_pid: int) -> UnitStatus:
    return UnitStatus("srv.service", "loaded", "active", "running", "success", None, "", main_pid, 0, "inv")


def test_a_listener_is_named_with_its_ancestry(served):
    main, port = served
    (x,) = port_listeners(LocalHost(), port)
    assert x.pid is not None and x.pid != main.pid
    assert x.chain[0] == x.pid and main.pid in x.chain and os.getpid() in x.chain  # itself, the shell, this test
    assert port_holders(LocalHost(), port) == [x.describe()]


def test_the_start_s_own_server_is_not_foreign_another_process_is(served):
    main, port = served
    svc = _Svc(LocalHost(), {main.pid})
    assert foreign_listeners(svc, "srv.service", port, _status(main.pid), []) == []  # type: ignore[arg-type]
    # The same listener judged for a unit whose main process is another one: foreign, and named.
    other = subprocess.Popen(["sleep", "30"])
    try:
        svc = _Svc(LocalHost(), {other.pid})
        (x,) = foreign_listeners(svc, "srv.service", port, _status(other.pid), [])  # type: ignore[arg-type]
        assert x.pid != other.pid and x.describe().startswith(f"pid {x.pid} (")
    finally:
        other.kill()
        other.wait()


def test_roots_not_known_judge_nothing_and_a_free_port_has_no_listener(served):
    _, port = served
    assert foreign_listeners(_Svc(LocalHost(), set()), "srv.service", port, _status(0), []) == []  # type: ignore[arg-type]
    free = free_port()
    deadline = time.monotonic() + 5
    while port_listeners(LocalHost(), free) and time.monotonic() < deadline:  # (someone may take it meanwhile)
        free = free_port()
    assert port_listeners(LocalHost(), free) == []
    assert Listener(None).describe() == "an unknown process"
