"""An SSH stall is one error, "host stopped answering", with how long it waited; no paramiko internals."""

from __future__ import annotations

import paramiko
import pytest

from workbench.errors import HostUnresponsive
from workbench.ssh import SSHHost


class Transport:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def open_session(self, timeout: float) -> None:
        raise self.error


class Conn:
    is_connected = True

    def __init__(self, error: Exception) -> None:
        self.transport = Transport(error)

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
