"""SIGTERM and SIGHUP end a command the way Ctrl-C does: with ``KeyboardInterrupt``, so every
``with HostSession`` on the way out restores its host.

A second termination signal is reported and ignored, and one that arrives while a restore runs
(:func:`shielded`) is held until the restore is over (cutting a restore short would leave the
host half restored; the host's guard covers a SIGKILL).  Ctrl-C keeps Python's own behaviour.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

TERMINATING = (signal.SIGTERM, signal.SIGHUP)


_shield = {"depth": 0, "pending": 0}


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """A restore: a SIGTERM/SIGHUP arriving inside waits for the end of the block, then interrupts."""
    _shield["depth"] += 1
    try:
        yield
    finally:
        _shield["depth"] -= 1
    if _shield["depth"] == 0 and _shield["pending"]:
        signum, _shield["pending"] = _shield["pending"], 0
        raise KeyboardInterrupt(signal.Signals(signum).name)


class _Handler:
    def __init__(self) -> None:
        self.received: int | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.received is None and _shield["depth"]:
            self.received = _shield["pending"] = signum
            print(f"workbench: {name}: finishing the restore first", file=sys.stderr, flush=True)
            return
        if self.received is not None:
            print(f"workbench: {name} again: still restoring the host, please wait "
                  "(if this process is killed, the guard on the host restores it)", file=sys.stderr, flush=True)
            return
        self.received = signum
        print(f"workbench: {name}: stopping and restoring the host", file=sys.stderr, flush=True)
        raise KeyboardInterrupt(name)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[_Handler]:
    """Within the block, SIGTERM and SIGHUP raise ``KeyboardInterrupt`` once (main thread only)."""
    handler = _Handler()
    if threading.current_thread() is not threading.main_thread():
        yield handler
        return
    old = {sig: signal.signal(sig, handler) for sig in TERMINATING}
    try:
        yield handler
    finally:
        for sig, prev in old.items():
            signal.signal(sig, prev)
