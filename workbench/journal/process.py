"""The process backend's journal: the supervisor's JSON log read as journal rows.

:mod:`workbench.procsup` writes ``<root>/state/<unit>.log`` one JSON object a line
(``{"t", "s", "m", "inv"}``; ``s`` is "out", "err" or "sys" for the supervisor's own
records, which carry systemd's message ids) and rotates it to ``.log.1`` ... ``.log.3``.
Files are read oldest first in one round trip.  Invocation = the ``inv`` field; the
supervisor's "sys" records play PID 1's part (origin "manager").

Cursors: ``proc:INODE:OFFSET`` is the byte after the last line read in the file with that
inode (rotation renames the file, the inode stays), so reads from it are exact; if that
file was rotated away the read starts at the oldest file and ``lost.gaps`` says so.
``@USEC`` (what ``ProcessServices.cursor()`` and the watch hand out) means "lines
logged after that time".  Every cursor returned is a ``proc:`` cursor.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from workbench.errors import ConfigError
from workbench.journal.entries import MSG_UNIT_FAILED, MSG_UNIT_PROCESS_EXIT, MSG_UNIT_STARTED
from workbench.journal.fetch import fetch
from workbench.journal.frame import (
    INVOCATION_COLUMNS,
    RAW_FIELDS,
    JournalFrame,
    Lost,
    build_frame,
    empty_raw,
    select_invocations,
    to_usec,
)

__all__ = ["invocations", "parse_files", "read", "read_script", "since_cursor"]

# Reads the rotated files oldest first: "@@file INODE OFFSET", the bytes from OFFSET, "\n@@eof".
# With a cursor inode: files before it are skipped and it is read from OFFSET; "@@gap" when
# no file has that inode any more.
_SCRIPT = r"""
p=$1; ino=$2; off=$3; found=
if [ -n "$ino" ]; then
  for f in "$p.3" "$p.2" "$p.1" "$p"; do [ -f "$f" ] && [ "$(stat -c %i "$f")" = "$ino" ] && found=1; done
  [ -z "$found" ] && echo '@@gap'
fi
skip=$found
for f in "$p.3" "$p.2" "$p.1" "$p"; do
  [ -f "$f" ] || continue
  i=$(stat -c %i "$f")
  if [ -n "$skip" ]; then
    [ "$i" = "$ino" ] || continue
    skip=
    if [ "$(stat -c %s "$f")" -lt "$off" ]; then echo '@@gap'; off=0; fi
    printf '@@file %s %s\n' "$i" "$off"; tail -c +$((off + 1)) "$f"
  else
    printf '@@file %s 0\n' "$i"; cat "$f"
  fi
  printf '\n@@eof\n'
done
"""
_FILE = re.compile(rb"@@file (\d+) (\d+)\n")
_SCHEMA = pa.schema([("t", pa.float64()), ("s", pa.string()), ("m", pa.string()), ("inv", pa.string()),
                     ("pid", pa.int64()), ("mid", pa.string()), ("exit_code", pa.int64())])
_FAILED_RESULT = re.compile(r"Failed with result '([^']+)'")


def read_script(log_path: str, cursor: str = "") -> list[str]:
    """The argv that prints the unit's log files from ``cursor`` (``proc:INODE:OFFSET``) on."""
    ino, off = "", "0"
    if cursor.startswith("proc:"):
        try:
            _, ino, off = cursor.split(":")
            int(ino), int(off)
        except ValueError:
            raise ConfigError(f"not a process-backend cursor: {cursor!r} (expected proc:INODE:OFFSET)") from None
    return ["sh", "-c", _SCRIPT, "logs", log_path, ino, off]


def _records(chunk: bytes) -> pa.Table:
    try:
        return pajson.read_json(io.BytesIO(chunk), parse_options=pajson.ParseOptions(
            explicit_schema=_SCHEMA, unexpected_field_behavior="ignore"))
    except pa.ArrowInvalid:  # a damaged line: read line by line, skipping what is not a record
        rows = []
        for line in chunk.split(b"\n"):
            if not line:
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                rec = {"t": None, "s": "err", "m": line.decode("utf-8", "replace")}
            rows.append({k: rec.get(k) for k in _SCHEMA.names} if isinstance(rec, dict) else {"m": str(rec)})
        return pa.Table.from_pylist(rows, schema=_SCHEMA)


def parse_files(data: bytes, *, unit: str, host: str = "") -> tuple[pa.Table, str | None, list[str]]:
    """The script's output as raw rows (journal_frame.RAW_FIELDS plus exit fields), the cursor
    after the last complete line, and the gaps it reported."""
    gaps = ["log rotated past the cursor: lines in between are gone"] if data.startswith(b"@@gap\n") else []
    tables: list[pa.Table] = []
    cursors: list[np.ndarray] = []
    next_cursor = None
    for m in _FILE.finditer(data):
        ino, off = int(m.group(1)), int(m.group(2))
        end = data.find(b"\n@@eof\n", m.end())
        body = data[m.end():end if end >= 0 else len(data)]
        complete = body[:body.rfind(b"\n") + 1]
        next_cursor = f"proc:{ino}:{off + len(complete)}"
        if not complete.strip():
            continue
        arr = np.frombuffer(complete, np.uint8)
        ends = np.flatnonzero(arr == 0x0A)
        starts = np.r_[0, ends[:-1] + 1]
        nonblank = ends > starts
        lines = complete if nonblank.all() else b"".join(complete[s:e + 1] for s, e in zip(
            starts[nonblank], ends[nonblank], strict=True))
        tables.append(_records(lines))
        cursors.append(np.char.add(f"proc:{ino}:", (ends[nonblank] + 1 + off).astype(str)))
    if not tables:
        return _table(empty_raw(), [], unit, host), next_cursor, gaps
    return _table(pa.concat_tables(tables), cursors, unit, host), next_cursor, gaps


def _table(rec: pa.Table, cursors: list[np.ndarray], unit: str, host: str) -> pa.Table:
    n = len(rec)
    if n == 0:
        return empty_raw().append_column("exit_code", pa.array([], pa.large_string())).append_column(
            "exit_status", pa.array([], pa.int64())).append_column("unit_result", pa.array([], pa.large_string()))
    stream = rec["s"].cast(pa.large_string())
    sys_rec = pc.fill_null(pc.equal(stream, "sys"), False)
    usec = pc.cast(pc.round(pc.multiply(pc.fill_null(rec["t"], 0.0), 1e6)), pa.int64())
    inv = rec["inv"].cast(pa.large_string())
    # lines carry no pid: give each invocation's lines the main pid its "Started" record names
    pids = pd.Series(rec["pid"].to_pandas(), dtype="Int64")
    pid = pids.groupby(inv.to_pandas().fillna(""), sort=False).ffill()
    code = rec["exit_code"].to_pandas()
    exit_code = [None if pd.isna(c) else ("killed" if c < 0 else "exited") for c in code]
    results = [(_FAILED_RESULT.search(m or "") or [None, None])[1] for m in rec["m"].to_pylist()]
    none = pa.nulls(n, pa.large_string())
    return pa.table({
        "usec": usec, "cursor": pa.array(np.concatenate(cursors), pa.large_string()),
        "message": rec["m"].cast(pa.large_string()), "pid": pa.array(pid, pa.int64()),
        "priority": pa.nulls(n, pa.int64()), "identifier": none, "host": pa.array([host] * n, pa.large_string()),
        "unit": pa.array([unit] * n, pa.large_string()), "invocation": inv,
        "origin": pc.if_else(sys_rec, "manager", "unit").cast(pa.large_string()),
        "message_id": rec["mid"].cast(pa.large_string()), "line_break": none, "stream": stream,
        "n_dropped": pa.nulls(n, pa.int64()), "exit_code": pa.array(exit_code, pa.large_string()),
        "exit_status": pc.abs(rec["exit_code"]), "unit_result": pa.array(results, pa.large_string()),
    })


def _fetch(svc: Any, unit: str, cursor: str = "", *, timeout: float) -> tuple[pa.Table, str | None, list[str]]:
    sec = fetch(svc.host, [("logs", read_script(svc.log_path(unit), cursor))], timeout=timeout)["logs"]
    return parse_files(sec.data, unit=unit, host=svc.host.name)


def invocations_of(table: pa.Table) -> pd.DataFrame:
    """One row per invocation from the supervisor's records (oldest first)."""
    rows: dict[str, dict[str, Any]] = {}
    for r in table.select(["usec", "invocation", "origin", "message_id", "exit_code", "exit_status",
                           "unit_result"]).to_pylist():
        inv = r["invocation"]
        if not inv:
            continue
        row = rows.setdefault(inv, {"invocation": inv, "start": r["usec"], "end": None, "result": None,
                                    "exit_code": None, "exit_status": None, "messages": 0})
        if r["origin"] != "manager":
            continue
        row["messages"] += 1
        if r["message_id"] == MSG_UNIT_PROCESS_EXIT:
            row.update(end=r["usec"], exit_code=r["exit_code"], exit_status=r["exit_status"])
            row["result"] = row["result"] or ("success" if r["exit_status"] == 0 else "stopped")
        elif r["message_id"] == MSG_UNIT_FAILED:
            row.update(end=max(row["end"] or 0, r["usec"]), result=r["unit_result"] or "failed")
    ordered: list[dict[str, Any]] = sorted(rows.values(), key=lambda r: int(r["start"]))
    out = pd.DataFrame(ordered, columns=INVOCATION_COLUMNS)
    for col in ("start", "end"):
        out[col] = pd.to_datetime(out[col].astype("Int64"), unit="us", utc=True)
    out["result"] = out["result"].fillna("running")
    out["exit_status"] = out["exit_status"].astype("Int64")
    return out


def invocations(svc: Any, unit: str, n: int | None = None, *, timeout: float = 120.0) -> pd.DataFrame:
    table, _, _ = _fetch(svc, unit, timeout=timeout)
    out = invocations_of(table)
    return out.tail(n).reset_index(drop=True) if n is not None else out


def read(svc: Any, unit: str, *, invocation: str | int | None = None, last_invocations: int | None = None,
         since: Any = None, until: Any = None, timeout: float = 600.0) -> JournalFrame:
    """See :func:`workbench.journal.read.read`."""
    table, cursor, gaps = _fetch(svc, unit, timeout=timeout)
    keep = np.ones(len(table), bool)
    if invocation is not None or last_invocations is not None:
        picked = select_invocations(invocations_of(table), invocation, last_invocations)
        ids = [str(i) for i in picked["invocation"]]
        keep &= np.isin(table["invocation"].to_numpy(zero_copy_only=False), ids)
        started = pc.fill_null(pc.equal(table["message_id"], MSG_UNIT_STARTED), False).to_numpy(zero_copy_only=False)
        missing = set(ids) - set(table["invocation"].filter(pa.array(started & keep)).to_pylist())
        if missing and len(table):
            gaps.append(f"log rotated: the start of invocation(s) {', '.join(sorted(missing))} is gone")
    usec = table["usec"].to_numpy(zero_copy_only=False)
    if since is not None:
        keep &= usec >= to_usec(since)
    if until is not None:
        keep &= usec <= to_usec(until)
    table = table.filter(pa.array(keep)).select(list(RAW_FIELDS))
    return build_frame(table, unit=unit, cursor=cursor, lost=Lost(gaps=gaps))


def since_cursor(svc: Any, unit: str, cursor: str, *, invocation: str | None = None,
                 timeout: float = 600.0) -> tuple[JournalFrame, str]:
    """See :func:`workbench.journal.read.since_cursor`; ``cursor`` is ``proc:INODE:OFFSET`` or ``@USEC``."""
    if not (cursor.startswith("proc:") or cursor.startswith("@")):
        raise ConfigError(f"not a process-backend cursor: {cursor!r} (proc:INODE:OFFSET or @USEC)")
    table, next_cursor, gaps = _fetch(svc, unit, cursor if cursor.startswith("proc:") else "", timeout=timeout)
    keep = np.ones(len(table), bool)
    if cursor.startswith("@"):
        keep &= table["usec"].to_numpy(zero_copy_only=False) > int(cursor[1:])
    if invocation:
        keep &= table["invocation"].to_numpy(zero_copy_only=False) == invocation
    table = table.filter(pa.array(keep)).select(list(RAW_FIELDS))
    next_cursor = next_cursor or cursor
    return build_frame(table, unit=unit, cursor=next_cursor, lost=Lost(gaps=gaps)), next_cursor
