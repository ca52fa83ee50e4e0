"""The container backend's journal: ``logs --timestamps`` and podman's events read as journal rows.

A container's log is one stream over all its starts; podman's ``init`` event opens each start
(before its first line), ``start``/``died`` events bound it and ``died`` carries the exit code.
An invocation is one start: its id is the container id's first 16 hex digits and the start
time in µs (:func:`workbench.containers.invocation_id`), the same id ``status`` reports for the
current start; a start's lines are those from its ``init`` to the next start's ``init``.
Events play PID 1's part: a ``died`` event becomes a row with origin ``manager`` (left out of
``frame.raw``).  Docker keeps no events here: the current start's lines are those from a second
before its ``StartedAt`` on; earlier ones belong to no known start (invocation null).

Cursors are ``@USEC``: the lines logged after that time; every cursor returned is one.
Pure functions over captured output; the fetch is :meth:`ContainerServices.journal_read`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from workbench import containers as ct
from workbench.errors import ConfigError
from workbench.journal.frame import (
    INVOCATION_COLUMNS,
    RAW_FIELDS,
    JournalFrame,
    Lost,
    build_frame,
    select_invocations,
    to_usec,
)

__all__ = ["Start", "invocations", "parse", "read", "since_cursor", "starts"]

NO_EVENTS_SLACK_US = 1_000_000


@dataclass(frozen=True)
class Start:
    """One start of a container: its invocation id, the window of its lines, how it ended."""

    invocation: str
    begin: int  # µs: its init event (lines from here)
    start: int  # µs: its start
    end: int | None  # µs: its died event (None while it runs)
    exit_code: int | None


def starts(events_jsonl: str, info: ct.ContainerInfo | None) -> list[Start]:
    """The container's starts, oldest first, from its events (and inspect for the current one)."""
    evs = sorted(((ct.parse_time(str(e["Time"])), str(e.get("Status", "")).lower(), e) for e in ct.events(events_jsonl)),
                 key=lambda x: x[0])
    inits = [t for t, status, _ in evs if status == "init" and t]
    cid = info.id if info is not None else next((str(e.get("ID", "")) for _, _, e in evs if e.get("ID")), "")
    if not inits and info is not None and info.started_usec:
        # no events (docker): the current start, from a moment before inspect's StartedAt (a
        # server's first line can precede it); earlier lines belong to no known start
        inits = [info.started_usec - NO_EVENTS_SLACK_US]
    out: list[Start] = []
    for k, begin in enumerate(inits):
        nxt = inits[k + 1] if k + 1 < len(inits) else None
        inside = [(t, s, e) for t, s, e in evs if t >= begin and (nxt is None or t < nxt)]
        start = next((t for t, s, _ in inside if s == "start"), begin)
        died = next(((t, e) for t, s, e in inside if s == "died"), None)
        last = nxt is None
        if last and info is not None and info.started_usec and abs(info.started_usec - start) < 5_000_000:
            start = info.started_usec  # the id status reports for the current start
        end: int | None = died[0] if died else None
        code = died[1].get("ContainerExitCode") if died else None
        if died is None and last and info is not None and not info.running and info.finished_usec:
            end, code = info.finished_usec, info.exit_code
        elif died is None and not last:
            end = nxt  # a start that ended without an event (the next one began)
        out.append(Start(ct.invocation_id(cid, start), begin, start, end,
                         int(code) if isinstance(code, int | str) and str(code).lstrip("-").isdigit() else None))
    return out


def invocations(events_jsonl: str, info: ct.ContainerInfo | None) -> pd.DataFrame:
    """:data:`~workbench.journal.frame.INVOCATION_COLUMNS` for the container's starts."""
    rows = []
    for s in starts(events_jsonl, info):
        code = s.exit_code
        if s.end is None:
            result, exit_code = "running", None
        elif code is not None and code > 128:
            result, exit_code = ("stopped" if code in (130, 137, 143) else "signal"), "killed"
        else:
            result, exit_code = ("success" if not code else "exit-code"), "exited"
        status = None if code is None else (code - 128 if code > 128 else code)
        rows.append({"invocation": s.invocation, "start": pd.Timestamp(s.start * 1000, tz="UTC"),
                     "end": pd.Timestamp(s.end * 1000, tz="UTC") if s.end else pd.NaT, "result": result,
                     "exit_code": exit_code, "exit_status": status, "messages": 0})
    out = pd.DataFrame(rows, columns=INVOCATION_COLUMNS)
    out["start"] = pd.to_datetime(out["start"], utc=True)
    out["end"] = pd.to_datetime(out["end"], utc=True)
    return out


def parse(log_text: str, events_jsonl: str, info: ct.ContainerInfo | None, *, unit: str,
          host: str = "") -> pa.Table:
    """Rows (:data:`RAW_FIELDS`) of every line of the log, each with its start's invocation, and a
    ``manager`` row for each start's end."""
    runs = starts(events_jsonl, info)
    usec: list[int] = []
    message: list[str] = []
    for raw in log_text.splitlines():
        e = ct.parse_log_line(raw, unit)
        if e is not None:
            usec.append(e.usec)
            message.append(e.message)
    begins = np.array([s.begin for s in runs], np.int64)
    at = np.searchsorted(begins, np.array(usec, np.int64), side="right") - 1 if len(begins) else np.full(len(usec), -1)
    inv = [runs[i].invocation if i >= 0 else None for i in at]
    origin = ["unit"] * len(usec)
    ident = [unit] * len(usec)
    for s in runs:
        if s.end is not None:
            usec.append(s.end)
            message.append(f"Container {unit} exited with code {s.exit_code}" if s.exit_code is not None
                           else f"Container {unit} exited")
            inv.append(s.invocation)
            origin.append("manager")
            ident.append("podman")
    order = np.argsort(np.array(usec, np.int64), kind="stable")
    n = len(usec)

    def col(values: list[Any], name: str) -> pa.Array:
        return pa.array([values[i] for i in order], RAW_FIELDS[name])

    none: list[Any] = [None] * n
    return pa.table({
        "usec": col(usec, "usec"), "cursor": col([f"@{u}" for u in usec], "cursor"), "message": col(message, "message"),
        "pid": col(none, "pid"), "priority": col(none, "priority"), "identifier": col(ident, "identifier"),
        "host": col([host or None] * n, "host"), "unit": col([unit] * n, "unit"), "invocation": col(inv, "invocation"),
        "origin": col(origin, "origin"), "message_id": col(none, "message_id"), "line_break": col(none, "line_break"),
        "stream": col(none, "stream"), "n_dropped": col(none, "n_dropped"),
    }, schema=pa.schema(RAW_FIELDS))


def alias(table: pa.Table, inv_table: pd.DataFrame, invocation: str) -> tuple[pa.Table, pd.DataFrame]:
    """Name the start that ``invocation`` means by the id asked for.  ``status`` names a start by
    inspect's StartedAt; a container removed since (a variant, its log kept) has no inspect, so
    its starts are named by their start events, a few hundred µs off: the start nearest to the
    time the id carries (within 5 s) is the one."""
    t = ct.invocation_start(invocation)
    if not t or not len(inv_table) or invocation in set(inv_table["invocation"]):
        return table, inv_table
    starts_us = inv_table["start"].astype("int64").to_numpy() // 1000
    k = int(np.argmin(np.abs(starts_us - t)))
    if abs(int(starts_us[k]) - t) > 5_000_000:
        return table, inv_table
    old = str(inv_table["invocation"].iloc[k])
    inv_table = inv_table.copy()
    inv_table.loc[inv_table.index[k], "invocation"] = invocation
    col = table["invocation"].to_numpy(zero_copy_only=False)
    renamed = np.where(col == old, invocation, col)
    table = table.set_column(table.schema.get_field_index("invocation"), "invocation",
                             pa.array(renamed.tolist(), RAW_FIELDS["invocation"]))
    return table, inv_table


def read(table: pa.Table, inv_table: pd.DataFrame, *, unit: str, invocation: str | int | None = None,
         last_invocations: int | None = None, since: Any = None, until: Any = None) -> JournalFrame:
    """The rows of the chosen starts (see :func:`workbench.journal.read.read`) as a frame."""
    if isinstance(invocation, str):
        table, inv_table = alias(table, inv_table, invocation)
    keep = np.ones(len(table), bool)
    if invocation is not None or last_invocations is not None:
        picked = select_invocations(inv_table, invocation, last_invocations)
        keep &= np.isin(table["invocation"].to_numpy(zero_copy_only=False), [str(i) for i in picked["invocation"]])
    usec = table["usec"].to_numpy(zero_copy_only=False)
    if since is not None:
        keep &= usec >= to_usec(since)
    if until is not None:
        keep &= usec <= to_usec(until)
    return build_frame(table.filter(pa.array(keep)), unit=unit, lost=Lost())


def since_cursor(table: pa.Table, cursor: str, *, unit: str, invocation: str | None = None) -> tuple[JournalFrame, str]:
    """The rows after ``@USEC`` and the cursor to pass next time."""
    if not (cursor.startswith("@") and cursor[1:].isdigit()):
        raise ConfigError(f"not a container cursor: {cursor!r} (@USEC: the lines logged after that time)")
    keep = table["usec"].to_numpy(zero_copy_only=False) > int(cursor[1:])
    if invocation:
        keep &= table["invocation"].to_numpy(zero_copy_only=False) == invocation
    rows = table.filter(pa.array(keep))
    nxt = f"@{rows['usec'][len(rows) - 1].as_py()}" if len(rows) else cursor
    return build_frame(rows, unit=unit, cursor=nxt, lost=Lost()), nxt
