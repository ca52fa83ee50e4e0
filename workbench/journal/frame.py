"""The journal as a DataFrame: :class:`JournalFrame`, what the journal lost (:class:`Lost`), and
the assembly of both from parsed records (either backend).

Rows are in journal order.  Columns: ``time`` (UTC), ``usec``, ``pid``, ``host``, ``unit``,
``invocation``, ``origin`` ("unit": the unit's own line; "manager": PID 1 about the unit;
"journald": journald's "Suppressed N messages" about it; "daemon": another root daemon
about it, e.g. a coredump; "unattributed": a line of the unit's processes that journald
could not tie to the unit, systemd issue #2913), ``manager``, ``identifier``, ``priority``, ``rank``, ``level``, ``phase``,
``message``, ``message_id``, ``parts`` (records a LineMax-split line was joined from),
``cursor``.  The frame carries ``cursor`` (where an incremental read continues),
``lost`` and ``unit``; ``frame.raw`` is the unit's output as it wrote it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.errors import ConfigError
from workbench.journal.annotate import annotate, phase_column

__all__ = ["COLUMNS", "INVOCATION_COLUMNS", "RAW_FIELDS", "JournalFrame", "Lost", "build_frame", "empty_raw",
           "select_invocations", "to_usec"]

COLUMNS = ["time", "usec", "pid", "host", "unit", "invocation", "origin", "manager", "identifier", "priority",
           "rank", "level", "phase", "message", "message_id", "parts", "cursor"]
# Columns every backend hands to build_frame (pyarrow types), before annotation.
RAW_FIELDS: dict[str, pa.DataType] = {
    "usec": pa.int64(), "cursor": pa.large_string(), "message": pa.large_string(), "pid": pa.int64(),
    "priority": pa.int64(), "identifier": pa.large_string(), "host": pa.large_string(),
    "unit": pa.large_string(), "invocation": pa.large_string(), "origin": pa.large_string(),
    "message_id": pa.large_string(), "line_break": pa.large_string(), "stream": pa.large_string(),
    "n_dropped": pa.int64(),
}
INVOCATION_COLUMNS = ["invocation", "start", "end", "result", "exit_code", "exit_status", "messages"]
_SUPPRESSED = re.compile(r"Suppressed (\d+) messages from (\S+)")


@dataclass
class Lost:
    """What the journal did not deliver as written.

    ``suppressed``: messages journald dropped by rate limiting (its "Suppressed N messages
    from UNIT" records about this unit in the read's window, and one reported right after
    it).  ``split_lines``/``split_records``: lines longer than journald's LineMax that
    arrived as several records and were joined.  ``truncated``: split lines whose last
    part is missing (the window ended or the part never came).  ``binary``: messages that
    arrived as bytes (invalid UTF-8, control characters), decoded with replacement
    characters where not UTF-8.  ``gaps``: other known holes (process backend: rotated
    away log files).  ``rate_limited``: windows in which the unit reached journald's rate
    limit (``rate_limit`` says which) with no "Suppressed" record after them: journald
    dropped an unknown number of lines and never said so (journal_ratelimit).
    """

    suppressed: int = 0
    suppressed_records: list[dict[str, Any]] = field(default_factory=list)
    split_lines: int = 0
    split_records: int = 0
    truncated: int = 0
    binary: int = 0
    gaps: list[str] = field(default_factory=list)
    rate_limited: int = 0
    rate_limit: str = ""

    @property
    def incomplete(self) -> bool:
        """The log misses lines (rate limited, cut short or rotated away)."""
        return bool(self.suppressed or self.truncated or self.gaps or self.rate_limited)

    def describe(self) -> str:
        parts = []
        if self.suppressed:
            parts.append(f"journald suppressed {self.suppressed} messages (rate limit)")
        if self.rate_limited:
            parts.append(f"journald's rate limit ({self.rate_limit}) was reached {self.rate_limited} time(s) with "
                         "no 'Suppressed' record after it: lines after the limit were dropped unreported")
        if self.truncated:
            parts.append(f"{self.truncated} split lines lack their end")
        parts.extend(self.gaps)
        if self.split_lines:
            parts.append(f"{self.split_lines} long lines rejoined from {self.split_records} records")
        head = "log incomplete: " if self.incomplete else ""
        return head + ("; ".join(parts) if parts else "nothing lost")


class JournalFrame(pd.DataFrame):
    """A DataFrame of journal rows plus ``cursor``, ``lost`` and ``unit`` (kept through slicing)."""

    _metadata = ["cursor", "lost", "unit"]  # noqa: RUF012 (pandas reads it as a class attribute)
    cursor: str | None = None
    lost: Lost | None = None
    unit: str | None = None

    @property
    def _constructor(self) -> type[JournalFrame]:
        return JournalFrame

    @property
    def incomplete(self) -> bool:
        return bool(self.lost and self.lost.incomplete)

    @property
    def raw(self) -> str:
        """The unit's own output, one line per row, as it wrote it (PID 1's lines left out)."""
        own = self[self["origin"].isin(["unit", "unattributed"])] if "origin" in self else self
        return "\n".join(own["message"].fillna("").tolist())


def empty_raw() -> pa.Table:
    return pa.table({k: pa.array([], t) for k, t in RAW_FIELDS.items()})


def decode_binary(column: pa.ChunkedArray | pa.Array, values: list[bytes]) -> tuple[pa.ChunkedArray | pa.Array, int]:
    """Replace ``\\x01<n>`` stand-ins (see journal_export) by ``values[n]`` decoded as UTF-8."""
    if not values:
        return column, 0
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    mask = pc.fill_null(pc.starts_with(arr, "\x01"), False)
    rows = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
    if not len(rows):
        return arr, 0
    stand_ins = arr.take(pa.array(rows)).to_pylist()
    decoded = [values[int(s[1:])].decode("utf-8", "replace") for s in stand_ins]
    return pc.replace_with_mask(arr, mask, pa.array(decoded, arr.type)), len(rows)


def _rejoin(table: pa.Table, lost: Lost) -> pa.Table:
    """Join records journald split at LineMax (``_LINE_BREAK=line-max``) back into one line.

    A split record is followed by the rest of the line from the same stream (the next
    record with the same stream id, else the same pid).  The joined row keeps the first
    part's time and the last part's cursor (an incremental read continues after it).
    """
    breaks = pc.fill_null(pc.equal(table["line_break"], "line-max"), False).to_numpy(zero_copy_only=False)
    parts = np.ones(len(table), np.int64)
    if not breaks.any():
        return table.append_column("parts", pa.array(parts))
    stream = table["stream"].to_pylist()
    pid = table["pid"].to_pylist()
    who = [s or f"pid:{p}" for s, p in zip(stream, pid, strict=True)]
    messages = table["message"].to_pylist()
    cursors = table["cursor"].to_pylist()
    line_break = breaks.tolist()
    keep = np.ones(len(table), bool)
    n = len(table)
    for i in np.flatnonzero(breaks).tolist():
        if not keep[i]:
            continue
        j, joined, count = i, [messages[i] or ""], 1
        while line_break[j]:
            nxt = next((k for k in range(j + 1, n) if keep[k] and who[k] == who[i]), None)
            if nxt is None:
                lost.truncated += 1
                break
            joined.append(messages[nxt] or "")
            keep[nxt] = False
            count += 1
            cursors[i] = cursors[nxt]
            j = nxt
        messages[i] = "".join(joined)
        parts[i] = count
        lost.split_lines += 1
        lost.split_records += count
    table = table.set_column(table.schema.get_field_index("message"), "message", pa.array(messages, pa.large_string()))
    table = table.set_column(table.schema.get_field_index("cursor"), "cursor", pa.array(cursors, pa.large_string()))
    table = table.append_column("parts", pa.array(parts))
    return table.filter(pa.array(keep))


def suppressed_records(table: pa.Table, unit: str | None) -> list[dict[str, Any]]:
    """journald's "Suppressed N messages from UNIT" records in ``table`` that are about ``unit``."""
    mask = pc.fill_null(pc.equal(table["origin"], "journald"), False)
    rows = table.filter(mask).to_pylist()
    out = []
    for r in rows:
        m = _SUPPRESSED.search(r["message"] or "")
        about = r["unit"] or (m.group(2) if m else None)
        if unit and about != unit:
            continue
        count = r["n_dropped"] if r["n_dropped"] is not None else (int(m.group(1)) if m else 0)
        out.append({"usec": r["usec"], "count": int(count), "unit": about, "invocation": r["invocation"],
                    "cursor": r["cursor"], "message": r["message"]})
    return out


def build_frame(table: pa.Table, *, unit: str | None = None, cursor: str | None = None,
                lost: Lost | None = None) -> JournalFrame:
    """Assemble a :class:`JournalFrame` from raw rows (columns :data:`RAW_FIELDS`).

    Joins LineMax splits, adds rank/level/phase, counts journald's suppressed messages
    about ``unit``; ``cursor`` defaults to the last row's.
    """
    lost = lost or Lost()
    table = _rejoin(table, lost)
    n = len(table)
    notes = annotate(table["message"])
    origin = table["origin"].to_numpy(zero_copy_only=False) if n else np.array([], object)
    own = np.isin(origin, ["unit", "unattributed"])
    inv = pd.factorize(table["invocation"].to_pandas().fillna(""))[0]
    usec = table["usec"].to_numpy(zero_copy_only=False) if n else np.array([], np.int64)
    message = pc.fill_null(table["message"].combine_chunks(), "")
    phase = phase_column(message, notes["text"], notes["flavor"], inv, own, usec)
    if lost.suppressed == 0 and not lost.suppressed_records:
        lost.suppressed_records = suppressed_records(table, unit)
        lost.suppressed = sum(r["count"] for r in lost.suppressed_records)
    manager = pc.fill_null(pc.equal(table["origin"], "manager"), False)
    out = pa.table({
        "time": pc.cast(table["usec"], pa.timestamp("us", tz="UTC")),
        "usec": table["usec"], "pid": table["pid"], "host": table["host"], "unit": table["unit"],
        "invocation": table["invocation"], "origin": table["origin"], "manager": manager,
        "identifier": table["identifier"], "priority": table["priority"],
        "rank": notes["rank"], "level": notes["level"], "phase": pa.array(phase, pa.large_string()),
        "message": table["message"], "message_id": table["message_id"], "parts": table["parts"],
        "cursor": table["cursor"],
    })
    df = out.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
    df["usec"] = df["usec"].astype("int64")
    df["parts"] = df["parts"].astype("int64")
    for col in ("origin", "level", "phase"):
        df[col] = df[col].astype("category")
    frame = JournalFrame(df)
    frame.unit = unit
    frame.lost = lost
    frame.cursor = cursor if cursor is not None else (str(df["cursor"].iloc[-1]) if n else None)
    return frame


def to_usec(value: datetime | pd.Timestamp | int | float | str) -> int:
    """A point in time as µs since the epoch (naive datetimes and ISO strings without an offset are UTC)."""
    if isinstance(value, bool):
        raise ConfigError(f"not a time: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return round(value * 1e6)
    try:
        ts = pd.Timestamp(value)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"not a time: {value!r} (give a datetime, epoch seconds or an ISO timestamp)") from exc
    if ts.tzinfo is None:
        ts = ts.tz_localize("UTC")
    return int(ts.value // 1000)


def select_invocations(table: pd.DataFrame, invocation: Any, last: int | None) -> pd.DataFrame:
    """The rows of an invocations table that ``invocation`` (ID, "last", index) or ``last`` (count) name."""
    if last is not None:
        if last < 1:
            raise ConfigError("last_invocations must be 1 or more")
        return table.tail(last)
    if isinstance(invocation, str) and invocation != "last":
        picked = table[table["invocation"] == invocation]
        if picked.empty:
            picked = pd.DataFrame({"invocation": [invocation], "start": [pd.NaT], "end": [pd.NaT]})
        return picked
    index = -1 if invocation == "last" else int(invocation)
    if not -len(table) <= index < len(table):
        raise ConfigError(f"no invocation {invocation!r}: the journal holds {len(table)} for this unit")
    return table.iloc[[index]]
