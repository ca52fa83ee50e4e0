"""An invocation's stdout/stderr lines read as ``journalctl -o short-unix --all`` (pure pieces).

Why: journalctl formats ``-o export`` (every field of every entry) at a third of the speed
of ``-o cat`` on systemd 252; ``-o short-unix`` reads the few fields it prints (time,
host, identifier, pid, message) and runs at about 0.6-0.7 of ``-o cat``
(BENCHMARKS.md).  The invocation is a journal *match* (``_SYSTEMD_INVOCATION_ID=``), not a
printed field, and ``_TRANSPORT=stdout`` keeps to stream lines, which never hold a newline
(journald splits streams at ``\\n``), so one text line is one entry.  What the text lacks
comes from a second, small export query of the exceptions only: entries whose priority is
not the stream default (``<3>`` prefixes, ``SyslogLevel=``) and records journald split at
LineMax (``_LINE_BREAK=line-max``); they are matched back to their rows by time, pid
and message.  Only the last entry's cursor is printed (``--show-cursor``): the last row of
each read carries it, the others none.  Rows from the two queries are merged by time: rows
that journald stamped with the same microsecond from different transports (a stream line
and a syslog line) may come in another order than journal order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workbench.journal.entries import usec_arg
from workbench.journal.frame import RAW_FIELDS

__all__ = ["DEFAULT_PRIORITY", "exceptions_matches", "merge_order", "parse_short_unix", "patch", "text_argv",
           "undecodable"]

DEFAULT_PRIORITY = 6  # a stream's lines without a <N> prefix under the default SyslogLevel=info
_PATTERN = r"^(?P<host>[^ ]*) (?P<ident>[^\[]*?)(?:\[(?P<pid>[0-9]+)\])?: (?P<message>.*)$"


def text_argv(invocation: str, *, since: int | str | None = None, until: int | str | None = None) -> list[str]:
    """The invocation's stream lines as ``short-unix`` text (``--all``: control and invalid bytes as is);
    ``since``/``until`` as µs or in journalctl's own syntax."""
    argv = ["journalctl", "--no-pager", "-q", "-o", "short-unix", "--all", "--show-cursor"]
    if since is not None:
        argv += ["--since", usec_arg(since) if isinstance(since, int) else since]
    if until is not None:
        argv += ["--until", usec_arg(until) if isinstance(until, int) else until]
    return [*argv, f"_SYSTEMD_INVOCATION_ID={invocation}", "_TRANSPORT=stdout"]


def exceptions_matches(invocation: str) -> list[str]:
    """The stream entries the text cannot describe: another priority, or a LineMax split."""
    own = [f"_SYSTEMD_INVOCATION_ID={invocation}", "_TRANSPORT=stdout"]
    priorities = [f"PRIORITY={p}" for p in range(8) if p != DEFAULT_PRIORITY]
    return [*own, *priorities, "+", *own, "_LINE_BREAK=line-max"]


def parse_short_unix(data: bytes, *, unit: str, invocation: str) -> pa.Table:
    """``text_argv`` output as raw rows (:data:`~workbench.journal.frame.RAW_FIELDS`)."""
    text = data.decode("utf-8", "replace")
    if text.endswith("\n"):
        text = text[:-1]
    head, sep, trailer = text.rpartition("\n")
    last_cursor = None
    if (sep or not head) and trailer.startswith("-- cursor: "):  # --show-cursor: the last entry's cursor
        text, last_cursor = head, trailer[len("-- cursor: "):].strip()
    if not text:
        return pa.table({k: pa.array([], t) for k, t in RAW_FIELDS.items()})
    lines = pc.list_flatten(pc.split_pattern(pa.array([text], pa.large_string()), "\n"))
    stamp = pc.utf8_slice_codeunits(lines, 0, 17)
    usec = pc.cast(pc.replace_substring(stamp, ".", ""), pa.int64())
    parts = pc.extract_regex(pc.utf8_slice_codeunits(lines, 18, 1 << 40), _PATTERN)
    n = len(lines)

    def const(value: object, typ: pa.DataType) -> pa.Array:
        return pa.nulls(n, typ) if value is None else pa.array(np.full(n, value), typ)

    pid = pc.cast(pc.if_else(pc.equal(parts.field("pid"), ""), None, parts.field("pid")), pa.int64())
    cols = {
        "usec": usec, "cursor": const(None, pa.large_string()), "message": parts.field("message"),
        "pid": pid, "priority": const(DEFAULT_PRIORITY, pa.int64()), "identifier": parts.field("ident"),
        "host": parts.field("host"), "unit": pa.array([unit] * n, pa.large_string()),
        "invocation": pa.array([invocation] * n, pa.large_string()),
        "origin": pa.array(["unit"] * n, pa.large_string()), "message_id": const(None, pa.large_string()),
        "line_break": const(None, pa.large_string()), "stream": const(None, pa.large_string()),
        "n_dropped": const(None, pa.int64()),
    }
    if last_cursor:
        cols["cursor"] = pa.array([None] * (n - 1) + [last_cursor], pa.large_string())
    return pa.table({k: pc.cast(v, RAW_FIELDS[k]) for k, v in cols.items()})


def undecodable(data: bytes, rows: pa.Table) -> int:
    """How many rows journald held as binary (control characters, invalid UTF-8: decoded with
    replacement characters), as the export reader counts them."""
    raw = np.frombuffer(data, np.uint8)
    control = bool((((raw < 32) & (raw != 9) & (raw != 10)) | (raw == 127)).any())
    try:
        data.decode("utf-8")
        invalid = False
    except UnicodeDecodeError:
        invalid = True
    if not control and not invalid:
        return 0
    return int(pc.sum(pc.match_substring_regex(rows["message"], "[\\x00-\\x08\\x0b-\\x1f\\x7f\\x{fffd}]")).as_py() or 0)


def patch(rows: pa.Table, exceptions: pa.Table) -> pa.Table:
    """``rows`` with the priority and line break of the entries in ``exceptions`` (an export of
    :func:`exceptions_matches`), matched by time, pid and message (a LineMax part by its start)."""
    if not len(exceptions) or not len(rows):
        return rows
    usec = rows["usec"].to_numpy(zero_copy_only=False)
    wanted = exceptions.select(["usec", "pid", "message", "priority", "line_break"]).to_pylist()
    at = np.flatnonzero(np.isin(usec, np.array([w["usec"] for w in wanted], np.int64)))
    if not len(at):
        return rows
    index: dict[tuple[int, int | None, str], list[int]] = {}
    cand = rows.select(["usec", "pid", "message"]).take(pa.array(at)).to_pylist()
    for i, r in zip(at.tolist(), cand, strict=True):
        index.setdefault((r["usec"], r["pid"], r["message"] or ""), []).append(i)
    priority = rows["priority"].to_numpy(zero_copy_only=False).copy()
    line_break: list[str | None] = [None] * len(rows)
    for w in wanted:
        hits = index.get((w["usec"], w["pid"], w["message"] or ""))
        if not hits:
            continue
        i = hits.pop(0)
        if w["priority"] is not None:
            priority[i] = w["priority"]
        line_break[i] = w["line_break"]
    out = rows.set_column(rows.schema.get_field_index("priority"), "priority", pa.array(priority, pa.int64()))
    if any(line_break):
        # the parts are rejoined by pid (no stream ids here): the stream of one process
        out = out.set_column(out.schema.get_field_index("line_break"), "line_break",
                             pa.array(line_break, pa.large_string()))
    return out


def merge_order(tables: Sequence[pa.Table]) -> pa.Table:
    """Rows of several reads in time order (stable: ties keep the order the tables came in)."""
    parts = [t for t in tables if len(t)]
    if not parts:
        return tables[0] if tables else pa.table({k: pa.array([], t) for k, t in RAW_FIELDS.items()})
    merged = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    order = np.argsort(merged["usec"].to_numpy(zero_copy_only=False), kind="stable")
    return merged.take(pa.array(order))
