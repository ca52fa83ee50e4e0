"""The watch drains a failed start's stream until it has caught up with the moment the failure was seen
(a stream relayed by a container runtime runs behind, with pauses), and stops at the container's end."""

from __future__ import annotations

import threading
import time

from workbench.hosts import LineStream
from workbench.phases import PhaseTracker
from workbench.services import ContainerServices
from workbench.watch import _drain


class _Svc:
    def parse_entry(self, line: str, unit: str):  # the container backend's own parser
        return ContainerServices.parse_entry(None, line, unit)  # type: ignore[arg-type]


def _stamp(usec: int, text: str) -> str:
    from workbench.containers import iso

    return f"{iso(usec)} {text}"


def test_a_behind_stream_is_read_past_a_pause_and_stops_at_the_containers_end() -> None:
    now = int(time.time() * 1e6)
    stream = LineStream(lambda: None, "h")
    stream._feed(_stamp(now - 8_000_000, "Load weight begin."))

    def later() -> None:  # the rest arrives after a pause longer than the quiet grace
        time.sleep(0.6)
        stream._feed(_stamp(now - 6_000_000, "Capture cuda graph begin."))
        stream._feed(_stamp(now - 5_900_000, "AttributeError: 'NoneType' object has no attribute 'topk_ids'"))
        stream._feed(f"@@exited {now}")
        stream._feed(_stamp(now + 1, "never read: after the end"))

    t = threading.Thread(target=later)
    t.start()
    tail: list[str] = []
    started = time.monotonic()
    _drain(stream, _Svc(), "c", None, tail, PhaseTracker(), None, grace=0.3, cap=10.0,  # type: ignore[arg-type]
           caught_up_usec=now)
    t.join()
    assert tail == ["Load weight begin.", "Capture cuda graph begin.",
                    "AttributeError: 'NoneType' object has no attribute 'topk_ids'"]
    assert time.monotonic() - started < 5  # stopped at the end marker, not at the cap


def test_a_stream_that_caught_up_stops_after_the_quiet_grace() -> None:
    now = int(time.time() * 1e6)
    stream = LineStream(lambda: None, "h")
    stream._feed(_stamp(now, "Traceback (most recent call last):"))
    started = time.monotonic()
    tail: list[str] = []
    _drain(stream, _Svc(), "c", None, tail, PhaseTracker(), None, grace=0.3, cap=10.0,  # type: ignore[arg-type]
           caught_up_usec=now)
    assert tail == ["Traceback (most recent call last):"] and time.monotonic() - started < 2
