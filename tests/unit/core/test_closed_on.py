"""``closed_on``: a host closed the moment its stop is set (so what it runs in flight ends with its
connection), and on the way out either way; no watcher thread outlives the block."""

from __future__ import annotations

import threading

import pytest

from workbench.hosts import LocalHost, closed_on


class Closing(LocalHost):
    """The real ``LocalHost``, telling when it is closed (from which thread, how often)."""

    def __init__(self) -> None:
        super().__init__("gpu-a")
        self.closed = threading.Event()
        self.closes: list[str] = []

    def close(self) -> None:
        self.closes.append(threading.current_thread().name)
        self.closed.set()


def test_the_stop_closes_the_host_while_the_block_still_runs() -> None:
    host, stop = Closing(), threading.Event()
    with closed_on(host, stop) as h:
        assert h is host and not host.closed.is_set()
        threading.Thread(target=stop.set).start()
        assert host.closed.wait(30), "the stop did not close the host"
        assert host.closes == ["closed-on-gpu-a"]  # by the watcher, before the block ended
    assert host.closes == ["closed-on-gpu-a", "MainThread"]
    assert not any(t.name == "closed-on-gpu-a" for t in threading.enumerate())


@pytest.mark.parametrize("stop", [threading.Event(), None], ids=["never-set", "no-stop"])
def test_without_a_stop_the_host_is_closed_once_on_the_way_out(stop: threading.Event | None) -> None:
    host = Closing()
    with pytest.raises(KeyError), closed_on(host, stop):
        assert host.run(["true"]).ok and host.closes == []
        raise KeyError("the block's own error")
    assert host.closes == ["MainThread"]
    assert not any(t.name == "closed-on-gpu-a" for t in threading.enumerate())
