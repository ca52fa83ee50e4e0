"""SIGTERM and SIGHUP end a command the way Ctrl-C does: with ``KeyboardInterrupt``, so every
``with HostSession`` on the way out restores its host.

Two kinds of code hold a signal back:

- a restore (:func:`shielded`, within :func:`terminate_as_interrupt`: the CLI's commands): a
  signal arriving inside waits until the restore is over (cutting a restore short would leave the
  host half restored; the host's guard covers a SIGKILL);
- one call into the SSH library (:data:`held`, anywhere): paramiko takes a lock, then enters the
  ``try`` that releases it, so a ``KeyboardInterrupt`` raised between the two leaves the lock
  taken and the next command on that connection -- the restore's -- waits forever.  Ctrl-C is
  raised when the call returns (the callers keep each call short: a wait is at most half a second).

A second SIGTERM/SIGHUP is reported and ignored; a second Ctrl-C interrupts again, as Python's
own does (``workbench run`` kills its kernel on the second), except during a restore -- and inside
a held call it interrupts at once (a call that does not return, an SSH server frozen before it
answered: the user insists, and the lock question comes second).  Only the
main thread is concerned: Python runs handlers there, and other threads' calls are never held.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType, TracebackType
from typing import Any

TERMINATING = (signal.SIGTERM, signal.SIGHUP)
WAKE_S = 0.25  # how often a wait in the main thread wakes to run a signal handler another thread's signal queued
HANDLED = (signal.SIGINT, *TERMINATING)

_MAIN = threading.main_thread().ident
_state = {"restore": 0, "held": 0, "pending": 0, "deferred": 0}


def _release() -> None:
    if _state["restore"] == 0 and _state["held"] == 0 and _state["pending"]:
        signum, _state["pending"] = _state["pending"], 0
        raise KeyboardInterrupt(signal.Signals(signum).name)


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """A restore: a signal arriving inside waits for the end of the block, then interrupts."""
    if threading.get_ident() != _MAIN:
        yield
        return
    _state["restore"] += 1
    try:
        yield
    finally:
        _state["restore"] -= 1
    _release()


class _Held:
    """One call into the SSH library (see the module docstring); reentrant, and cheap enough to
    wrap each step of a read loop.

    Under :func:`terminate_as_interrupt` its handler holds the signal.  Anywhere else (a notebook's
    kernel, whose Ctrl-C is ipykernel's "interrupt"; a library user's program) Ctrl-C's own handler
    is set aside for the call and the signal raised again once the call has returned and the handler
    is back, so it reaches that handler as it would have."""

    def __init__(self) -> None:
        self._prev: Any = None

    def __enter__(self) -> None:
        if threading.get_ident() != _MAIN:
            return
        _state["held"] += 1
        if _state["held"] == 1:
            prev = signal.getsignal(signal.SIGINT)
            self._prev = None if isinstance(prev, _Handler) or prev is None else prev
            if self._prev is not None:
                signal.signal(signal.SIGINT, _defer)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if threading.get_ident() != _MAIN:
            return
        _state["held"] -= 1
        if _state["held"] == 0 and self._prev is not None:
            prev, self._prev = self._prev, None
            signal.signal(signal.SIGINT, prev)
            if _state["deferred"]:
                _state["deferred"] = 0
                signal.raise_signal(signal.SIGINT)  # to the handler now back in place
        _release()  # (while an error propagates too: the interrupt then carries it as its context)


def _defer(signum: int, frame: FrameType | None) -> None:
    if _state["deferred"] and callable(held._prev):  # a second Ctrl-C inside a call that does not return
        _state["deferred"] = 0
        held._prev(signum, frame)
        return
    _state["deferred"] = signum


held = _Held()


def _say(what: str) -> None:
    print(f"workbench: {what}", file=sys.stderr, flush=True)


class _Handler:
    def __init__(self) -> None:
        self.received: int | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        first, self.received = self.received is None, self.received or signum
        if _state["restore"] and not _state["pending"]:
            _state["pending"] = signum
            _say(f"{name}: finishing the restore first")
            return
        if _state["restore"] or (signum in TERMINATING and not first):
            _say(f"{name} again: still restoring the host, please wait "
                 "(if this process is killed, the guard on the host restores it)")
            return
        if signum in TERMINATING:
            _say(f"{name}: stopping and restoring the host")
        if _state["held"] and not (_state["pending"] and signum == signal.SIGINT):
            _state["pending"] = _state["pending"] or signum
            return
        _state["pending"] = 0  # (a second Ctrl-C inside a call that does not return: the user insists)
        raise KeyboardInterrupt(name)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[_Handler]:
    """Within the block, SIGTERM and SIGHUP raise ``KeyboardInterrupt`` once, and Ctrl-C waits for
    a restore or an SSH call to end (main thread only)."""
    handler = _Handler()
    if threading.get_ident() != _MAIN:
        yield handler
        return
    # (a Ctrl-C this process was started ignoring -- a shell script's background job -- stays ignored, as Python leaves it)
    old = {sig: signal.signal(sig, handler) for sig in HANDLED
           if not (sig == signal.SIGINT and signal.getsignal(sig) == signal.SIG_IGN)}
    try:
        yield handler
    finally:
        for sig, prev in old.items():
            signal.signal(sig, prev)
        _state["pending"] = 0


def run_all(jobs: list[tuple[str, Callable[[], None]]], *, on_interrupt: Callable[[], None] | None = None) -> None:
    """Run each ``(name, job)`` in a daemon thread of its own and wait until every job has ended.

    Interrupted while it starts or waits for them (Ctrl-C, or SIGTERM made one by :func:`terminate_as_interrupt`),
    it calls ``on_interrupt`` (tell the jobs to stop), waits for every job that began -- each restores its own host
    on the way out -- and then raises the interrupt. It waits on events: a ``Thread.join`` that an interrupt cut
    short returns at once when called again (Python 3.11), while its thread still runs."""
    began = [threading.Event() for _ in jobs]
    ended = [threading.Event() for _ in jobs]
    launched = [False] * len(jobs)

    def run(k: int, job: Callable[[], None]) -> None:
        began[k].set()
        try:
            job()
        finally:
            ended[k].set()

    try:  # (an interrupt may come as soon as the first job runs)
        for k, (name, job) in enumerate(jobs):
            threading.Thread(target=run, args=(k, job), name=name, daemon=True).start()
            launched[k] = True
        for done in ended:
            wait(done)
    except BaseException:
        if on_interrupt is not None:
            on_interrupt()
        for k, done in enumerate(ended):
            # a thread whose start returned runs its job; one whose start the interrupt cut may or may not
            if launched[k] or began[k].wait(1.0):
                wait(done)
        raise


def wait(event: threading.Event) -> None:
    """``event.wait()`` that a Ctrl-C can cut short: a signal another thread received runs its handler in the main
    thread only when the main thread next runs Python code, never while it blocks in one long wait."""
    while not event.wait(WAKE_S):
        pass


def wait_for(cond: threading.Condition, predicate: Callable[[], bool]) -> None:
    """``cond.wait_for(predicate)`` (the caller holds ``cond``) that a Ctrl-C can cut short, as :func:`wait`."""
    while not cond.wait_for(predicate, WAKE_S):
        pass
