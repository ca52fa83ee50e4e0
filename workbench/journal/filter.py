"""Filtering a :class:`~workbench.journal.frame.JournalFrame` after retrieval, and its text export.

:func:`filter` covers what the seed scripts did with ``grep``: regexes to keep and to
drop, a minimum level, ranks, phases.  :func:`to_text` writes the rows the way
``journalctl -o short-iso-precise`` prints them, so the text reads like the journal
and :func:`workbench.logformats.parse_line` (and ``workbench tracebacks``) can read it
back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.errors import ConfigError
from workbench.journal.frame import JournalFrame

__all__ = ["LEVELS", "filter", "to_text"]

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _names(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _matches(messages: pd.Series, pattern: str) -> pd.Series:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"not a valid regular expression {pattern!r}: {exc}") from exc
    try:  # RE2 over the Arrow strings; Python's re where RE2 lacks a feature (look-around, backrefs)
        arr = pa.array(messages.fillna(""), pa.large_string())
        return pd.Series(pc.match_substring_regex(arr, pattern).to_numpy(zero_copy_only=False), index=messages.index)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        rx = re.compile(pattern)
        return messages.fillna("").map(lambda m: rx.search(m) is not None).astype(bool)


def filter(
    frame: JournalFrame,
    *,
    include: str | None = None,
    exclude: str | None = None,
    level: str | None = None,
    rank: str | Iterable[str] | None = None,
    phase: str | Iterable[str] | None = None,
    invocation: str | Iterable[str] | None = None,
    origin: str | Iterable[str] | None = None,
) -> JournalFrame:
    """The rows that pass every given test (a JournalFrame with the same cursor and losses).

    ``include``/``exclude``: regexes searched in the message.  ``level``: this level or
    worse (rows without a level are dropped).  ``rank``: rows whose rank names one of
    these (``"TP3"`` matches ``"DP1 TP3"``).  ``phase``, ``invocation``, ``origin``: one of
    these values.
    """
    keep = pd.Series(True, index=frame.index)
    if include:
        keep &= _matches(frame["message"], include)
    if exclude:
        keep &= ~_matches(frame["message"], exclude)
    if level:
        if level.upper() not in LEVELS:
            raise ConfigError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
        keep &= frame["level"].isin(LEVELS[LEVELS.index(level.upper()):]).fillna(False).astype(bool)
    ranks = _names(rank)
    if ranks:
        tokens = frame["rank"].fillna("").str.split(" ")
        wanted = set(ranks)
        keep &= tokens.map(lambda parts: bool(wanted.intersection(parts))).astype(bool)
    for column, values in (("phase", phase), ("invocation", invocation), ("origin", origin)):
        names = _names(values)
        if names:
            keep &= frame[column].isin(names).fillna(False).astype(bool)
    out = frame[keep.to_numpy()]
    out.cursor, out.lost, out.unit = frame.cursor, frame.lost, frame.unit
    return out


def to_text(frame: pd.DataFrame, *, precise: bool = True) -> str:
    """The rows as ``journalctl -o short-iso-precise`` lines (``short-iso`` with ``precise=False``).

    ``2026-11-29T14:02:45.319004+0000 gpu-a sh[5237]: hi`` -- continuation lines of a
    multi-line message are indented under the first, as journalctl does.
    """
    if frame.empty:
        return ""
    times = pa.array(frame["time"])
    if not precise:
        times = pc.cast(pc.floor_temporal(times, unit="second"), pa.timestamp("s", tz="UTC"))
    # Arrow prints the fraction the timestamp's unit holds: µs -> "13:34:02.529698"
    stamps = pd.Series(pc.strftime(times, format="%Y-%m-%dT%H:%M:%S%z").to_numpy(zero_copy_only=False),
                       index=frame.index, dtype="str")
    hosts = frame["host"].fillna("localhost") if "host" in frame else "localhost"
    idents = frame["identifier"].fillna(frame["unit"].fillna("unknown"))
    pids = frame["pid"].astype("string").fillna("")
    heads = stamps + " " + hosts + " " + idents + ("[" + pids + "]").where(pids != "", "") + ": "
    messages = frame["message"].fillna("")
    lines = heads + messages
    multi = messages.str.contains("\n", regex=False)
    if multi.any():
        for i in multi[multi].index:
            head = heads[i]
            lines[i] = head + messages[i].replace("\n", "\n" + " " * len(head))
    return "\n".join(lines.tolist()) + "\n"
