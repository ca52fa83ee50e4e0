"""An SSH stall is one error, "host stopped answering", with how long it waited; no paramiko internals."""

from __future__ import annotations

import paramiko
import pytest

from workbench.errors import CommandTimeout, HostUnresponsive
from workbench.ssh import SSHHost


class Transport:
    """paramiko's Transport as the stall leaves it: no channel opens; the link itself answers a global
    request (a busy host) or not (``answers=False``: a cut link, or a dead one)."""

    def __init__(self, error: Exception, answers: bool = False) -> None:
        self.error = error
        self.answers = answers

    def open_session(self, timeout: float) -> None:
        raise self.error

    def is_active(self) -> bool:
        return self.answers

    def global_request(self, kind: str, wait: bool = True) -> None:
        if not self.answers:
            raise EOFError


class Conn:
    is_connected = True

    def __init__(self, error: Exception, answers: bool = False) -> None:
        self.transport = Transport(error, answers)

    def close(self) -> None:
        pass


@pytest.mark.parametrize("error", [paramiko.SSHException("Timeout opening channel."),
                                   paramiko.SSHException("No existing session"), EOFError()])
def test_a_channel_that_does_not_open_is_host_stopped_answering(error):
    host = SSHHost("gpu-x")
    host._conn = Conn(error)
    with pytest.raises(HostUnresponsive) as info:
        host.run(["true"])
    msg = str(info.value)
    assert msg.startswith("gpu-x: host stopped answering (no SSH channel opened; waited ")
    assert "Timeout opening" not in msg and "No existing session" not in msg
    assert info.value.waited is not None and info.value.host == "gpu-x"
    assert host._conn is None  # dropped: the next command reconnects


def test_a_channel_that_does_not_open_on_a_link_that_answers_keeps_the_connection():
    """A host too busy to open a session (or one refusing it) whose connection still answers: the
    command fails as a timeout, and the connection -- with the session's lock on it -- is kept."""
    host = SSHHost("gpu-x")
    conn = host._conn = Conn(paramiko.SSHException("Timeout opening channel."), answers=True)
    with pytest.raises(CommandTimeout, match="the connection answers") as info:
        host.run(["true"])
    assert not isinstance(info.value, HostUnresponsive)
    assert host._conn is conn
