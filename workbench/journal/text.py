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

import re
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workbench.journal.entries import usec_arg
from workbench.journal.frame import RAW_FIELDS

__all__ = ["DEFAULT_PRIORITY", "exceptions_matches", "merge_order", "parse_short_unix", "patch", "text_argv",
           "undecodable"]

DEFAULT_PRIORITY = 6  # a stream's lines without a <N> prefix under the default SyslogLevel=info
_NOT_CONTROL = bytes(b for b in range(256) if not (b <= 0x08 or 0x0b <= b <= 0x1f or b == 0x7f))
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
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:  # invalid bytes become U+FFFD, as the export reader decodes them
        data = data.decode("utf-8", "replace").encode()
    if data and not data.endswith(b"\n"):
        data += b"\n"
    last_cursor = None
    tail = data.rfind(b"\n", 0, len(data) - 1) + 1
    if data.startswith(b"-- cursor: ", tail):  # --show-cursor: the last entry's cursor
        last_cursor = data[tail + len(b"-- cursor: "):].strip().decode()
        data = data[:tail]
    if not data:
        return pa.table({k: pa.array([], t) for k, t in RAW_FIELDS.items()})
    cols = _columns_fast(data) or _columns_regex(data)
    n = len(cols["usec"])

    def const(value: object, typ: pa.DataType) -> pa.Array:
        return pa.nulls(n, typ) if value is None else pa.array(np.full(n, value), typ)

    cols.update({
        "cursor": const(None, pa.large_string()), "priority": const(DEFAULT_PRIORITY, pa.int64()),
        "unit": pa.repeat(pa.scalar(unit, pa.large_string()), n),
        "invocation": pa.repeat(pa.scalar(invocation, pa.large_string()), n),
        "origin": pa.repeat(pa.scalar("unit", pa.large_string()), n), "message_id": const(None, pa.large_string()),
        "line_break": const(None, pa.large_string()), "stream": const(None, pa.large_string()),
        "n_dropped": const(None, pa.int64()),
    })
    if last_cursor:
        cols["cursor"] = pa.concat_arrays([pa.nulls(n - 1, pa.large_string()), pa.array([last_cursor], pa.large_string())])
    return pa.table({k: pc.cast(cols[k], t) for k, t in RAW_FIELDS.items()})


def _columns_regex(data: bytes) -> dict[str, pa.Array]:
    """The columns by a regular expression per line (any line shape journalctl prints)."""
    lines = pc.list_flatten(pc.split_pattern(pa.array([data[:-1].decode()], pa.large_string()), "\n"))
    usec = pc.cast(pc.replace_substring(pc.utf8_slice_codeunits(lines, 0, 17), ".", ""), pa.int64())
    parts = pc.extract_regex(pc.utf8_slice_codeunits(lines, 18, 1 << 40), _PATTERN)
    pid = pc.cast(pc.if_else(pc.equal(parts.field("pid"), ""), None, parts.field("pid")), pa.int64())
    return {"usec": usec, "message": parts.field("message"), "pid": pid, "identifier": parts.field("ident"),
            "host": parts.field("host")}


def _cut(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pa.Array:
    """The byte ranges [starts, ends) of ``buf`` as one string array (one copy, no Python loop)."""
    lengths = ends - starts
    offsets = np.zeros(len(starts) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] * 8 < len(buf):  # short ranges (the "ident[pid]" prefixes): gather their bytes
        index = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
        return pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(buf[index].tobytes()))
    delta = np.zeros(len(buf) + 1, np.int8)  # +1 where a range opens, -1 where it closes (disjoint ranges)
    delta[starts] += 1
    np.subtract.at(delta, ends, 1)
    keep = np.cumsum(delta[:-1], dtype=np.int8).view(bool)
    return pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(buf[keep].tobytes()))


def _who(prefix: str) -> tuple[str, int | None] | None:
    m = re.fullmatch(r"([^\[]*?)(?:\[([0-9]+)\])?", prefix)
    return None if m is None else (m.group(1), int(m.group(2)) if m.group(2) else None)


def _one_prefix(data: bytes, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, p0: int,
                ) -> dict[str, pa.Array] | None:
    """Message, pid and identifier when every line has the first line's ``HOST IDENT[PID]: `` (one
    process logged them all, as a server's stream does): the messages are sliced in C from the
    lines as they lie in ``data`` (no copy of the buffer); None when the prefixes differ."""
    colon = data.find(b": ", p0, int(ends[0]))
    if colon < 0:
        return None
    k = colon - int(starts[0])  # bytes before ": " on every line
    if (ends - starts < k + 2).any():
        return None
    first = buf[int(starts[0]):int(starts[0]) + k + 2]
    for j in range(17, k + 2):
        if (buf[starts + j] != first[j]).any():
            return None
    who = _who(data[p0:colon].decode())
    if who is None:
        return None
    n = len(starts)
    offsets = np.empty(n + 1, np.int64)
    offsets[:-1] = starts
    offsets[-1] = ends[-1] + 1
    lines = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))  # each with its \n
    return {"message": pc.utf8_slice_codeunits(lines, k + 2, -1),
            "pid": pa.repeat(pa.scalar(who[1], pa.int64()), n),
            "identifier": pa.repeat(pa.scalar(who[0], pa.large_string()), n)}


def _columns_fast(data: bytes) -> dict[str, pa.Array] | None:
    """The columns from byte positions: ``SSSSSSSSSS.UUUUUU HOST IDENT[PID]: MESSAGE`` with one host;
    None when a line has another shape (then the regex reads it)."""
    buf = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(buf == 10)
    starts = np.concatenate([[0], ends[:-1] + 1])
    if (ends - starts < 20).any():
        return None
    if (buf[starts + 10] != ord(".")).any():
        return None
    usec = np.zeros(len(starts), np.int64)
    for j in (*range(10), *range(11, 17)):  # one column of digits at a time (no n x 17 index array)
        digit = buf[starts + j] - np.uint8(48)  # wraps below "0": caught by the > 9 test
        if (digit > 9).any():
            return None
        usec = usec * 10 + digit
    first = data[18:ends[0]]
    space = first.find(b" ")
    if space <= 0:
        return None
    host = first[:space]
    head = starts + 18
    if (ends - head <= space + 2).any():
        return None
    block = buf[head[:, None] + np.arange(space + 1)]
    if not (block == np.frombuffer(host + b" ", np.uint8)).all():
        return None
    same = _one_prefix(data, buf, starts, ends, int(head[0]) + space + 1)
    if same is not None:
        return {"usec": pa.array(usec, pa.int64()), "host": pa.repeat(pa.scalar(host.decode(), pa.large_string()),
                                                                      len(starts)), **same}
    p0 = head + space + 1
    colon = np.flatnonzero((buf[:-1] == 58) & (buf[1:] == 32))  # ": "
    at = np.searchsorted(colon, p0)
    if (at >= len(colon)).any():
        return None
    c = colon[at]
    if (c >= ends).any():
        return None
    prefix = _cut(buf, p0, c).dictionary_encode()
    idents, pids = [], []
    for who in prefix.dictionary.to_pylist():
        m = re.fullmatch(r"([^\[]*?)(?:\[([0-9]+)\])?", who)
        if m is None:
            return None
        idents.append(m.group(1))
        pids.append(int(m.group(2)) if m.group(2) else None)
    return {"usec": pa.array(usec, pa.int64()), "message": _cut(buf, c + 2, ends),
            "pid": pa.array(pids, pa.int64()).take(prefix.indices),
            "identifier": pa.array(idents, pa.large_string()).take(prefix.indices),
            "host": pa.repeat(pa.scalar(host.decode(), pa.large_string()), len(starts))}


def undecodable(data: bytes, rows: pa.Table) -> int:
    """How many rows journald held as binary (control characters, invalid UTF-8: decoded with
    replacement characters), as the export reader counts them."""
    control = bool(data.translate(None, _NOT_CONTROL))  # the control bytes alone (C speed, no regex)
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
