"""Journal entries: ``journalctl -o json --all`` records and the process backend's log records.

This module holds the pure pieces every reader shares (command builders, the
entry parser, systemd's message ids); retrieval into DataFrames builds on them.
``MESSAGE`` may arrive as a byte array (non-UTF-8 or control characters) and is
decoded with replacement; ``--all`` keeps fields over 4 KB that journalctl
would otherwise print as ``null``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

# systemd catalog message ids (src/systemd/sd-messages.h) of PID 1's unit messages.
MSG_UNIT_STARTING = "7d4958e842da4a758f6c1cdc7b36dcc5"
MSG_UNIT_STARTED = "39f53479d3a045ac8e11786248231fbf"
MSG_UNIT_STOPPED = "9d1aaa27d60140bd96365438aad20286"
MSG_UNIT_FAILED = "d9b373ed55a64feb8242e02dbe79a49c"
MSG_UNIT_SUCCESS = "7ad2d189f7e94e70a38c781354912448"
MSG_UNIT_PROCESS_EXIT = "98e322203f7a4ed290d09fe03c09fe15"
MSG_UNIT_RESTART_SCHEDULED = "5eb03494b6584870a536b337290809b3"
TERMINAL_MESSAGE_IDS = {MSG_UNIT_FAILED, MSG_UNIT_PROCESS_EXIT, MSG_UNIT_RESTART_SCHEDULED, MSG_UNIT_SUCCESS,
                        MSG_UNIT_STOPPED}
# journald's own records: "Suppressed N messages from UNIT" (N_DROPPED=, OBJECT_SYSTEMD_UNIT=), and coredumps.
MSG_JOURNAL_DROPPED = "a596d6fe7bfa4994828e72309e95d61e"
MSG_COREDUMP = "fc2e22bc6ee647b6b90729ab34a250b1"

_CURSOR_RE = re.compile(r"^-- cursor: (\S+)", re.M)


@dataclass(frozen=True)
class Entry:
    """One journal record, reduced to what the workbench reads."""

    usec: int  # __REALTIME_TIMESTAMP (µs since the epoch)
    message: str
    pid: int | None
    unit: str | None  # _SYSTEMD_UNIT of the writer, or UNIT= of PID 1's message about a unit
    invocation: str | None  # _SYSTEMD_INVOCATION_ID, or INVOCATION_ID= on PID 1's messages
    manager: bool  # written by PID 1 about the unit, not by the unit's processes
    message_id: str | None = None
    cursor: str | None = None
    identifier: str | None = None
    priority: int | None = None
    stream: str | None = None  # process backend: "out"/"err"/"sys"
    fields: dict[str, object] | None = None

    @property
    def time(self) -> datetime:
        return datetime.fromtimestamp(self.usec / 1e6, tz=UTC)


def decode_field(value: object) -> str:
    """A journal JSON field value as text: strings as is, byte arrays decoded, arrays of values joined."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if all(isinstance(b, int) for b in value):
            return bytes(b & 0xFF for b in value).decode("utf-8", "replace")
        return "\n".join(decode_field(v) for v in value)
    return str(value)


def _int(value: object) -> int | None:
    try:
        return int(decode_field(value))
    except (TypeError, ValueError):
        return None


def parse_json_entry(line: str) -> Entry | None:
    """One line of ``journalctl -o json``; None for anything else (cursor lines, garbage)."""
    if not line.startswith("{"):
        return None
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    if not isinstance(rec, dict):
        return None
    manager = decode_field(rec.get("_PID")) == "1" and "UNIT" in rec
    return Entry(
        usec=_int(rec.get("__REALTIME_TIMESTAMP")) or 0,
        message=decode_field(rec.get("MESSAGE")),
        pid=_int(rec.get("_PID")),
        unit=decode_field(rec.get("UNIT") if manager else rec.get("_SYSTEMD_UNIT")) or None,
        invocation=decode_field(rec.get("INVOCATION_ID") if manager else rec.get("_SYSTEMD_INVOCATION_ID")) or None,
        manager=manager,
        message_id=decode_field(rec.get("MESSAGE_ID")) or None,
        cursor=decode_field(rec.get("__CURSOR")) or None,
        identifier=decode_field(rec.get("SYSLOG_IDENTIFIER")) or None,
        priority=_int(rec.get("PRIORITY")),
        fields=rec,
    )


def parse_process_entry(line: str, unit: str) -> Entry | None:
    """One record of the process backend's log (``{"t", "s", "m", "inv"}``)."""
    try:
        rec = json.loads(line)
        return Entry(usec=int(float(rec["t"]) * 1e6), message=str(rec["m"]), pid=rec.get("pid"), unit=unit,
                     invocation=rec.get("inv"), manager=rec.get("s") == "sys", stream=rec.get("s"),
                     message_id=rec.get("mid"), fields=rec)
    except (ValueError, KeyError, TypeError):
        return None


def parse_cursor(text: str) -> str | None:
    m = _CURSOR_RE.search(text)
    return m.group(1) if m else None


def cursor_argv() -> list[str]:
    """Prints the journal's current end as ``-- cursor: ...`` (and nothing else)."""
    return ["journalctl", "--no-pager", "-n", "0", "--show-cursor"]


def follow_argv(unit: str, *, after_cursor: str | None = None) -> list[str]:
    """Follow ``unit`` from a position.  ``--cursor`` rather than ``--after-cursor``: systemd 252
    skips the first *matching* entry after a cursor that belongs to another unit (the journal-end
    cursor taken before a start), which would drop PID 1's first line about the start.  The
    cursor's own entry is another unit's, so the filter leaves it out."""
    argv = ["journalctl", "--no-pager", "-o", "json", "--all", "--follow"]
    argv += ["--cursor", after_cursor] if after_cursor else ["-n", "0"]
    return [*argv, "-u", unit]


def query_argv(
    unit: str | None = None,
    *,
    invocation: str | None = None,
    after_cursor: str | None = None,
    since: str | None = None,
    until: str | None = None,
    lines: int | None = None,
    matches: Sequence[str] = (),
) -> list[str]:
    """``journalctl -o json --all`` for a unit, an invocation, a cursor or a time window."""
    argv = ["journalctl", "--no-pager", "-o", "json", "--all", "--show-cursor"]
    if after_cursor:
        argv += ["--after-cursor", after_cursor]
    if since:
        argv += ["--since", since]
    if until:
        argv += ["--until", until]
    if lines is not None:
        argv += ["-n", str(lines)]
    if invocation:
        # The unit's own lines, plus PID 1's lines about the same invocation (journalctl ORs
        # matches on different fields only across "+").
        argv += [f"_SYSTEMD_INVOCATION_ID={invocation}", "+", f"INVOCATION_ID={invocation}"]
    elif unit:
        argv += ["-u", unit]
    argv += list(matches)
    return argv


# ---------------------------------------------------------------------------
# Matches and the export query used by retrieval (workbench.journal.read)
# ---------------------------------------------------------------------------


def unit_matches(unit: str) -> list[str]:
    """What ``journalctl -u UNIT`` matches, spelled out, plus journald's suppression records.

    The unit's own lines, PID 1's lines about it, lines other root daemons log about it
    (journald's "Suppressed N messages from UNIT" carries ``OBJECT_SYSTEMD_UNIT=``), its
    coredumps, and every "Suppressed" record (matched again by text: a record whose
    object fields could not be read would otherwise be missed).  Terms are ORed with
    ``+``; fields within a term are ANDed.
    """
    return [f"_SYSTEMD_UNIT={unit}", "+", "_PID=1", f"UNIT={unit}", "+", "_UID=0", f"OBJECT_SYSTEMD_UNIT={unit}",
            "+", f"MESSAGE_ID={MSG_COREDUMP}", f"COREDUMP_UNIT={unit}", "+", f"MESSAGE_ID={MSG_JOURNAL_DROPPED}"]


def invocation_matches(invocations: Sequence[str]) -> list[str]:
    """The lines of these invocations: their own, PID 1's and journald's about them, and all "Suppressed" records."""
    if not invocations:
        raise ValueError("no invocation to match")
    own = [f"_SYSTEMD_INVOCATION_ID={i}" for i in invocations]
    manager = [f"INVOCATION_ID={i}" for i in invocations]
    daemons = [f"OBJECT_SYSTEMD_INVOCATION_ID={i}" for i in invocations]
    return [*own, "+", *manager, "+", *daemons, "+", f"MESSAGE_ID={MSG_JOURNAL_DROPPED}"]


def manager_matches(unit: str) -> list[str]:
    """PID 1's lines about ``unit`` (its starts, exits and results)."""
    return ["_PID=1", f"UNIT={unit}"]


def usec_arg(usec: int) -> str:
    """A µs timestamp as journalctl's ``--since``/``--until`` take it (``@seconds.micros``)."""
    return f"@{usec // 1_000_000}.{usec % 1_000_000:06d}"


def export_argv(
    matches: Sequence[str] = (),
    *,
    since: int | str | None = None,
    until: int | str | None = None,
    cursor: str | None = None,
    lines: int | None = None,
) -> list[str]:
    """``journalctl -o export`` over ``matches``: the format retrieval parses (see journal_export).

    ``cursor`` starts *at* the cursor's entry (``--cursor``), not after it: on systemd
    252 ``--after-cursor`` skips the first matching entry when the cursor's own entry
    does not match the filter (e.g. the journal-tail cursor taken before a start), so
    readers drop the cursor's entry themselves.  ``lines`` keeps the last N.  ``since``
    and ``until`` are µs since the epoch, or text in journalctl's own syntax ("-1h").
    """
    argv = ["journalctl", "--no-pager", "-q", "-o", "export"]
    if cursor:
        argv += ["--cursor", cursor]
    if since is not None:
        argv += ["--since", usec_arg(since) if isinstance(since, int) else since]
    if until is not None:
        argv += ["--until", usec_arg(until) if isinstance(until, int) else until]
    if lines is not None:
        argv += ["-n", str(lines)]
    return [*argv, *matches]
