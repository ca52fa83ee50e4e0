"""Rank, level and phase columns for a journal frame, without parsing every line in Python.

:func:`workbench.logformats.parse_line` costs a few µs a line; over a million journal
lines that is seconds.  Most server lines have one of a few shapes, so those are read
with vectorised (RE2) regexes that give exactly what ``parse_line`` gives for them:

* indented continuation lines (traceback frames): no rank, no level;
* SGLang ``[2025-08-08 03:34:38 DP1 TP0] ...`` (with the optional ``[ERROR] ``/uvicorn level);
* vLLM ``LEVEL mm-dd hh:mm:ss [file.py:12] ...`` and uvicorn ``INFO:     ...``, either one
  behind one ``(Name pid=N)`` process prefix.

ANSI colour codes are removed first (as ``parse_line`` does).  Every other line, and any
line with a ``\\r``, goes through ``parse_line`` itself; the unit tests check both paths
agree on the real lines of tests/fixtures/logs.  The phase column runs a
:class:`~workbench.phases.PhaseTracker` per invocation over only the lines that can move
it (those holding one of its anchor words), which is the same as feeding every line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workbench import logformats, phases
from workbench.logformats import parse_line

__all__ = ["annotate", "phase_column"]

_LEVELS = "DEBUG|INFO|WARNING|ERROR|CRITICAL"
_SGLANG = (r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?P<ranks>(?: [A-Z][A-Z_]*\d+)*)\] ?"
           rf"(?:\[(?P<lvl>{_LEVELS})\] |(?P<uvl>{_LEVELS}|TRACE):\s+)?")
_PROC = r"^(?:\((?P<proc>[A-Za-z_][\w.-]*?)(?: rank=(?P<prank>\d+))? pid=\d+\) ?)?"
_VLLM = _PROC + rf"(?:(?P<lvl>{_LEVELS}) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[^\]\s:]+:\d+\] ?|(?P<uvl>{_LEVELS}|TRACE):[\s\w])"
_BATCH_ANCHORS = ("batch", "Avg prompt", "/v1/")


def _any(words: Sequence[str]) -> str:
    return "|".join(re.escape(w) for w in words)


_ANCHOR_RE = _any([a for a in phases._ANCHORS if a not in _BATCH_ANCHORS])
_BATCH_RE = _any(_BATCH_ANCHORS)
_FAILURE_RE = _any(phases._FAILURE_ANCHORS)


@lru_cache(maxsize=4096)
def _process_rank(name: str, rank: str | None) -> str | None:
    """The rank ``parse_line`` gives a vLLM process prefix (asked of parse_line itself)."""
    suffix = f" rank={rank}" if rank else ""
    return parse_line(f"({name}{suffix} pid=1) x").rank


def _split(key: str) -> tuple[str, str | None]:
    name, _, rank = key.partition("|")
    return name, rank or None


def _strings(values: pa.Array) -> pa.Array:
    return values.cast(pa.large_string()) if values.type != pa.large_string() else values


class _Columns:
    """rank/level/flavor assembled from per-path pieces (row indices + Arrow values), no Python strings."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.where = np.full(n, -1, np.int64)
        self.parts: dict[str, list[pa.Array]] = {"rank": [], "level": [], "flavor": []}
        self.size = 0

    def put(self, rows: np.ndarray, **values: pa.Array) -> None:
        self.where[rows] = self.size + np.arange(len(rows))
        self.size += len(rows)
        for name, parts in self.parts.items():
            v = values.get(name)
            parts.append(pc.cast(v, pa.large_string()) if v is not None else pa.nulls(len(rows), pa.large_string()))

    def result(self) -> dict[str, pa.Array]:
        where = pa.array(self.where, mask=self.where < 0)
        out = {}
        for name, parts in self.parts.items():
            values = pa.concat_arrays(parts) if parts else pa.nulls(0, pa.large_string())
            out[name] = values.take(where) if len(values) else pa.nulls(self.n, pa.large_string())
        return out


def _none_if_empty(values: pa.Array) -> pa.Array:
    return pc.if_else(pc.equal(values, ""), pa.scalar(None, values.type), values)


def annotate(messages: pa.Array | pa.ChunkedArray) -> dict[str, pa.Array]:
    """Per message: ``rank``, ``level`` (as parse_line reads them), ``text`` (ANSI removed) and
    ``flavor`` ("sglang"/"vllm" where the line's shape says, for the phase tracker)."""
    msgs = _strings(messages.combine_chunks() if isinstance(messages, pa.ChunkedArray) else messages)
    n = len(msgs)
    msgs = pc.fill_null(msgs, "")
    data = msgs.buffers()[2].to_pybytes() if n else b""  # a memchr over all the text says whether to look per row
    has_esc = pc.match_substring(msgs, "\x1b") if b"\x1b" in data else pa.repeat(False, n)
    text = pc.if_else(has_esc, pc.replace_substring_regex(msgs, logformats._ANSI.pattern, ""), msgs) \
        if b"\x1b" in data and pc.any(has_esc).as_py() else msgs
    cols = _Columns(n)
    slow = pc.match_substring(text, "\r").to_numpy(zero_copy_only=False) if b"\r" in data else np.zeros(n, bool)
    plain = pc.or_(pc.equal(text, ""), pc.and_(pc.or_(pc.starts_with(text, " "), pc.starts_with(text, "\t")),
                                                  pc.invert(has_esc))).to_numpy(zero_copy_only=False) & ~slow
    done = slow | plain  # plain: indented continuation lines and empty ones have no rank or level
    sg_rows = np.flatnonzero(~done & pc.starts_with(text, "[").to_numpy(zero_copy_only=False))
    if len(sg_rows):
        sub = text if len(sg_rows) == n else text.take(pa.array(sg_rows))
        sg = pc.extract_regex(sub, _SGLANG)
        lvl = pc.coalesce(_none_if_empty(sg.field("lvl")), _none_if_empty(sg.field("uvl")))
        ok = sg.is_valid().to_numpy(zero_copy_only=False)
        if b"NCCL " in data:
            ok &= ~(pc.is_null(lvl).to_numpy(zero_copy_only=False) & pc.match_substring(sub, "NCCL ").to_numpy(
                zero_copy_only=False))
        keep = pa.array(ok)
        cols.put(sg_rows[ok], rank=_none_if_empty(pc.utf8_trim_whitespace(sg.field("ranks"))).filter(keep),
                 level=lvl.filter(keep), flavor=pa.repeat("sglang", int(ok.sum())))
        done[sg_rows[ok]] = True
    vl_rows = np.flatnonzero(~done)
    if len(vl_rows):
        vl = pc.extract_regex(text.take(pa.array(vl_rows)), _VLLM)
        ok = vl.is_valid().to_numpy(zero_copy_only=False)
        if ok.any():
            keep = pa.array(ok)
            proc, prank = vl.field("proc").filter(keep), vl.field("prank").filter(keep)
            vlvl = vl.field("lvl").filter(keep)
            level = pc.coalesce(_none_if_empty(vlvl), _none_if_empty(vl.field("uvl").filter(keep)))
            keys = pc.binary_join_element_wise(proc, prank, pa.scalar("|", pa.large_string()))
            unique = pc.unique(keys)
            ranks_of = pa.array([_process_rank(*_split(k)) if k.split("|")[0] else None
                                 for k in unique.to_pylist()], pa.large_string())
            rank = ranks_of.take(pc.index_in(keys, unique))
            vllm = pc.or_(pc.not_equal(proc, ""), pc.not_equal(vlvl, ""))
            flavor = pc.if_else(vllm, "vllm", pa.scalar(None, pa.large_string()))
            cols.put(vl_rows[ok], rank=rank, level=level, flavor=flavor)
            done[vl_rows[ok]] = True
    rest = np.flatnonzero(~done | slow)
    if len(rest):
        parsed = [parse_line(line) for line in msgs.take(pa.array(rest)).to_pylist()]
        cols.put(rest, rank=pa.array([p.rank for p in parsed], pa.large_string()),
                 level=pa.array([p.level for p in parsed], pa.large_string()),
                 flavor=pa.array(["vllm" if p.format == "vllm" or p.process is not None else
                                  "sglang" if p.format == "sglang" or (p.format == "uvicorn" and p.time) else None
                                  for p in parsed], pa.large_string()))
    return {**cols.result(), "text": text}


def phase_column(messages: pa.Array, text: pa.Array, flavor: pa.Array, groups: np.ndarray, own: np.ndarray,
                 usec: np.ndarray) -> np.ndarray:
    """The server phase at each row: one PhaseTracker per group (invocation) over its own lines.

    ``groups`` are integer codes (one per invocation).  Rows that are not the server's own
    lines (PID 1's, journald's) take the phase of the group at that point.  Only lines that can change a tracker are fed: those with an
    anchor word, the first line that tells SGLang from vLLM, and batch lines while the
    phase is still unknown.
    """
    n = len(groups)
    out = np.full(n, None, object)
    if n == 0:
        return out
    anchor = pc.match_substring_regex(text, _ANCHOR_RE).to_numpy(zero_copy_only=False)
    failure = pc.match_substring_regex(text, _FAILURE_RE).to_numpy(zero_copy_only=False)
    batch = pc.match_substring_regex(text, _BATCH_RE).to_numpy(zero_copy_only=False)
    flav = flavor.to_numpy(zero_copy_only=False)
    first_flavor = np.zeros(n, bool)
    has_flavor = own & (flav != None)  # noqa: E711
    if has_flavor.any():
        _, first = np.unique(groups[has_flavor], return_index=True)
        first_flavor[np.flatnonzero(has_flavor)[first]] = True
    batch_only = own & batch & ~anchor & ~failure & ~first_flavor
    feed = own & (anchor | failure | batch | first_flavor)
    trackers: dict[object, phases.PhaseTracker] = {}
    changes: list[tuple[int, str]] = []
    rows = np.flatnonzero(feed)
    # strings are fetched only for rows actually fed (batch lines are skipped once the phase is known)
    eager = np.flatnonzero(feed & ~batch_only)
    lines = dict(zip(eager.tolist(), messages.take(pa.array(eager)).to_pylist(), strict=True)) if len(eager) else {}
    skippable = batch_only.tolist()
    for i in rows.tolist():
        tracker = trackers.get(groups[i])
        if tracker is None:
            tracker = trackers[groups[i]] = phases.PhaseTracker()
        if skippable[i]:
            if tracker.phase != "unknown":
                continue
            line = messages[i].as_py()
        else:
            line = lines[i]
        tr = tracker.feed(line or "", datetime.fromtimestamp(usec[i] / 1e6, tz=UTC), line_no=i + 1)
        if tr is not None:
            changes.append((i, tr.phase))
    for i, phase in changes:
        out[i] = phase
    # forward-fill within each group; rows before the group's first transition are "unknown"
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    vals = out[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    last = np.maximum.accumulate(np.where(vals != None, np.arange(n), -1))  # noqa: E711
    group_start = starts[np.cumsum(np.isin(np.arange(n), starts)) - 1]
    out[order] = np.where(last >= group_start, vals[np.maximum(last, 0)], "unknown")
    return out
