"""The testbed's ports: free when chosen, and never from the kernel's ephemeral range."""

from __future__ import annotations

import socket

import pytest

from workbench.testbed import ports


def test_a_port_is_free_and_outside_the_ephemeral_range() -> None:
    lo, hi = ports.ephemeral_range()
    for _ in range(20):
        port = ports.free_port()
        assert not lo <= port <= hi
        with socket.socket() as s:
            s.bind(("", port))  # it is free: this bind would raise otherwise


def test_the_range_is_read_from_the_kernel_and_a_bad_file_gives_linux_default(tmp_path) -> None:
    f = tmp_path / "range"
    f.write_text("20000\t40000\n")
    assert ports.ephemeral_range(f) == (20000, 40000)
    f.write_text("garbage\n")
    assert ports.ephemeral_range(f) == ports.LINUX_DEFAULT
    assert ports.ephemeral_range(tmp_path / "absent") == ports.LINUX_DEFAULT


def test_candidates_lie_above_the_range_or_else_below_it() -> None:
    above = ports.candidates(32768, 60999)
    assert min(above) == 61000 and max(above) == 65535
    few = ports.candidates(32768, 65000)  # too few above: below it as well
    assert min(few) == ports.LOWEST and 32767 in few and 65001 in few and not set(range(32768, 65001)) & set(few)


def test_a_held_port_is_never_chosen(monkeypatch) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", ports.free_port()))
        held.listen()
        port = held.getsockname()[1]
        monkeypatch.setattr(ports, "candidates", lambda lo, hi: [port])
        with pytest.raises(OSError, match="no free port among 1 tried"):
            ports.free_port()
