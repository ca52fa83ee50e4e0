"""An SSH stall is one error, "host stopped answering", with how long it waited; no paramiko internals."""

from __future__ import annotations

import paramiko
import pytest

from workbench.errors import CommandRefused, CommandTimeout, HostUnresponsive
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


class RefusingChannel:
    """A channel that opened, whose command sshd would not start (paramiko: "Channel closed.")."""

    closed = False

    def __init__(self) -> None:
        self.in_buffer = self.in_stderr_buffer = paramiko.buffered_pipe.BufferedPipe()

    def exec_command(self, cmd: str) -> None:
        raise paramiko.SSHException("Channel closed.")

    def set_combine_stderr(self, on: bool) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def shutdown_write(self) -> None:
        pass


class OpensButRefuses(Transport):
    def open_session(self, timeout: float) -> RefusingChannel:  # type: ignore[override]
        return RefusingChannel()


@pytest.mark.parametrize("how", ["run", "stream"])
@pytest.mark.parametrize("answers", [True, False])
def test_a_command_sshd_would_not_start_keeps_a_connection_that_answers(how, answers):
    """A host out of processes: its sshd opens the channel but cannot fork the command. On a link
    that answers, nothing ran and the connection (with the session's lock on it) is kept; on one
    that does not, the connection is dropped as dead."""
    host = SSHHost("gpu-x")
    conn = host._conn = Conn(EOFError(), answers)
    conn.transport = OpensButRefuses(EOFError(), answers)
    call = (lambda: host.run(["true"])) if how == "run" else (lambda: host.stream(["true"]))
    if answers:
        with pytest.raises(CommandRefused, match=r"did not start the command .*connection answers; kept"):
            call()
        assert host._conn is conn
    else:
        with pytest.raises(HostUnresponsive, match="the SSH connection dropped"):
            call()
        assert host._conn is None
