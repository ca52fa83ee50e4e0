"""Closing a selected-on SSH channel while packets still arrive must not kill the connection.

Found on the real vLLM unit: the watch closes its ``journalctl -f`` stream at ready, the
stop that follows floods the journal, and a late packet fed to the closed channel raised
``OSError: [Errno 9] Bad file descriptor`` in paramiko's transport thread, which took the
host's whole SSH connection down (``HostUnresponsive`` on the next command).
"""

from __future__ import annotations

import threading
import time

import paramiko
import paramiko.pipe
import pytest

from workbench.ssh import close_channel


def _races(closer: object, rounds: int = 100) -> int:
    """Close channels while another thread feeds them, as paramiko's transport thread does."""
    failures = 0
    for i in range(rounds):
        chan = paramiko.Channel(i)
        chan.fileno()  # what select.select([chan], ...) does first
        stop = threading.Event()
        errors: list[OSError] = []

        def feed(chan: paramiko.Channel = chan, stop: threading.Event = stop, errors: list[OSError] = errors) -> None:
            try:
                for _ in range(20_000):  # bounded: nothing reads the buffer
                    if stop.is_set():
                        break
                    chan._feed(b"late journal line\n")
                    time.sleep(0)  # let the closing thread run, as the socket reads between packets do
            except OSError as exc:
                errors.append(exc)

        t = threading.Thread(target=feed)
        t.start()
        closer(chan)  # type: ignore[operator]
        stop.set()
        t.join()
        failures += bool(errors)
    return failures


def test_close_channel_survives_packets_in_flight() -> None:
    assert _races(close_channel) == 0


def test_no_packet_after_close_reaches_the_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The property behind the race, checked deterministically: after ``close_channel`` a late
    packet never touches the (closed) pipe; after paramiko's own ``close`` it does (the race
    above fails in about half of 100 rounds with ``Channel.close``, measured)."""
    reached: list[object] = []
    monkeypatch.setattr(paramiko.pipe.PosixPipe, "set", lambda self: reached.append(self))
    ours, theirs = paramiko.Channel(1), paramiko.Channel(2)
    ours.fileno()
    theirs.fileno()
    close_channel(ours)
    theirs.close()
    ours._feed(b"late journal line\n")
    theirs._feed(b"late journal line\n")
    assert len(reached) == 1  # only paramiko's close left the pipe wired to the buffer
