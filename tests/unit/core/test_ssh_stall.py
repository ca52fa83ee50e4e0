"""An SSH stall is one error, "host stopped answering", with how long it waited; no paramiko internals."""

from __future__ import annotations

import os

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


class SilentChannel(RefusingChannel):
    """A channel whose command runs and says nothing (a lock holder between beats, a quiet follow)."""

    def __init__(self) -> None:
        super().__init__()
        self._r, self._w = os.pipe()  # select() on it: never readable

    def exec_command(self, cmd: str) -> None:
        pass

    def fileno(self) -> int:
        return self._r

    def recv_ready(self) -> bool:
        return False

    def exit_status_ready(self) -> bool:
        return False

    def close(self) -> None:
        if not self.closed:
            os.close(self._r)
            os.close(self._w)
        self.closed = True


class OpensSilent(Transport):
    def open_session(self, timeout: float) -> SilentChannel:  # type: ignore[override]
        return SilentChannel()


def test_a_silent_stream_on_a_busy_host_is_kept_and_on_a_dead_link_ended(monkeypatch):
    """The stream's liveness check after a silence: no probe command ran, but the connection answers
    (a busy host) -- the stream goes on (ending it would end a lock held over it); once the
    connection does not answer either, the stream ends as host stopped answering."""
    monkeypatch.setattr("workbench.ssh.PROBE_TIMEOUT", 0.05)
    host = SSHHost("gpu-x")
    host._conn = Conn(EOFError(), True)
    host._conn.transport = OpensSilent(EOFError(), True)
    answers = [True]
    monkeypatch.setattr(host, "alive", lambda *a, **k: False)
    monkeypatch.setattr(host, "_answers", lambda conn, timeout=0.0: answers[0])
    stream = host.stream(["sleep", "infinity"], tether=False)
    assert stream.readline(timeout=2.5) is None and not stream.finished  # probed at least once, kept
    answers[0] = False
    with pytest.raises(HostUnresponsive, match="a stream went silent"):
        stream.readline(timeout=5)
