"""A unit's journal as a :class:`~workbench.journal.frame.JournalFrame`: one invocation, the last N,
a time window, or what is new since a cursor -- whatever runs the unit.

Each service backend owns its journal source (``Services.journal_invocations``,
``journal_read``, ``journal_since``): systemd units through journalctl (:mod:`.journald`),
supervised processes through their log files (:mod:`.process`), containers through their
logs and events (:mod:`.container`).  These readers pick the backend of a host and ask it;
nothing here knows the kinds.

:func:`invocation_text` is the one way to get the text of an invocation for the traceback
analysis (CLI, runbooks, trials, panel): the frame's own lines (``frame.raw``).
"""

from __future__ import annotations

from typing import Any, cast

import pandas as pd

from workbench.errors import ConfigError
from workbench.hosts import Host
from workbench.journal.frame import JournalFrame
from workbench.services import Services, services_for

__all__ = ["frame_text", "invocation_text", "invocations", "read", "since_cursor"]


def _services(target: Services | Host) -> Services:
    """The services backend of ``target`` (a Host is probed for its backends)."""
    if hasattr(target, "journal_read") and hasattr(target, "host"):
        return cast(Services, target)
    return services_for(cast(Host, target))


def invocations(target: Services | Host, unit: str, n: int | None = None, *, timeout: float = 120.0) -> pd.DataFrame:
    """The unit's invocations, oldest first (the last ``n`` when given).

    Columns: invocation (ID), start, end (NaT while running), result ("success", systemd's
    failure result such as "exit-code", "running", or "stopped"), exit_code ("exited",
    "killed", "dumped"), exit_status, messages (PID 1's lines about it).
    """
    return _services(target).journal_invocations(unit, n, timeout=timeout)


def read(
    target: Services | Host,
    unit: str,
    *,
    invocation: str | int | None = None,
    last_invocations: int | None = None,
    since: Any = None,
    until: Any = None,
    after_cursor: str | None = None,
    timeout: float = 600.0,
    compress: bool = True,
    jobs: int | None = None,
    text: bool = True,
) -> JournalFrame:
    """The unit's journal as a :class:`JournalFrame`.

    Choose at most one of ``invocation`` (an ID, ``"last"``, or an index into
    :func:`invocations`: -1 last, 0 oldest), ``last_invocations`` (the last N) and
    ``after_cursor`` (what came after a cursor: a journal cursor, or for the process and
    container backends ``proc:INODE:OFFSET`` / ``@USEC``); ``since``/``until`` bound the time
    (datetimes, epoch seconds, ISO strings, or journalctl expressions such as "-1h").
    With nothing chosen: all of the unit's lines in the window.  ``jobs`` > 1 reads the
    chosen invocations (once they have ended) in that many time slices at once (systemd: the
    host formats them on several cores); None: chosen by the backend (systemd: 4 for an
    ended invocation of 2 s or more, else 1).  ``text``: systemd's stream lines as ``-o short-unix``
    text (about twice as fast on the host, no per-row cursors); False reads ``-o export``.
    """
    chosen = [x is not None for x in (invocation, last_invocations, after_cursor)]
    if sum(chosen) > 1:
        raise ConfigError("choose one of invocation, last_invocations and after_cursor")
    svc = _services(target)
    if after_cursor is not None:
        frame, _ = svc.journal_since(unit, after_cursor, timeout=timeout, compress=compress)
        return frame
    return svc.journal_read(unit, invocation=invocation, last_invocations=last_invocations, since=since, until=until,
                            timeout=timeout, compress=compress, jobs=jobs, text=text)


def since_cursor(
    target: Services | Host,
    unit: str,
    cursor: str,
    *,
    invocation: str | None = None,
    timeout: float = 600.0,
    compress: bool = True,
) -> tuple[JournalFrame, str]:
    """The unit's lines after ``cursor`` and the cursor to pass next time.

    Repeated calls never return a line twice nor skip one.  ``cursor`` may be any cursor the
    backend handed out, e.g. ``Services.cursor()`` or a watch Outcome's.
    """
    if not cursor:
        raise ConfigError("since_cursor needs a cursor (Services.cursor() gives the journal's end)")
    return _services(target).journal_since(unit, cursor, invocation=invocation, timeout=timeout, compress=compress)


def invocation_text(target: Services | Host, unit: str, invocation: str | int, *, timeout: float = 600.0) -> str:
    """The text one invocation of ``unit`` wrote (its own lines, PID 1's left out), as the traceback
    analysis reads it everywhere: ``read(..., invocation=ID).raw``."""
    if invocation == "":
        raise ConfigError(f"{unit}: no invocation given")
    return frame_text(read(target, unit, invocation=invocation, timeout=timeout))


def frame_text(frame: JournalFrame) -> str:
    """A frame as the traceback analysis reads it: the unit's own lines as written (``frame.raw``)."""
    raw = frame.raw
    return raw + "\n" if raw else ""
