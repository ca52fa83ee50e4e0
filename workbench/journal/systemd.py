"""What systemd's journal records mean, as Arrow tables: pure functions over parsed export output.

:func:`export_table` turns ``journalctl -o export`` output into raw rows and tells whose
each row is (``origin``): the unit's own line (``_SYSTEMD_UNIT``), PID 1's line about it
(``_PID=1`` + ``UNIT=``/``INVOCATION_ID=``), journald's "Suppressed N messages"
(``MESSAGE_ID=`` a596d6fe..., ``OBJECT_SYSTEMD_UNIT=``), another daemon's (coredumps), or
a line without a unit.  The rest selects and orders rows: the invocations table from
PID 1's lines, rows about a unit or its invocations, journal order, the late
suppression report, and the cut before an unfinished LineMax split.  Tested on captured
output (tests/fixtures/journal); the code that fetches it is in journal_read.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.journal.entries import (
    MSG_COREDUMP,
    MSG_JOURNAL_DROPPED,
    MSG_UNIT_FAILED,
    MSG_UNIT_PROCESS_EXIT,
    MSG_UNIT_STARTED,
    MSG_UNIT_STARTING,
    MSG_UNIT_SUCCESS,
    TERMINAL_MESSAGE_IDS,
)
from workbench.journal.export import parse_export
from workbench.journal.frame import INVOCATION_COLUMNS, decode_binary

__all__ = ["about", "export_table", "hold_back", "in_invocations", "invocations_of", "journal_order", "late_report",
           "unstarted"]

_TEXT = {"cursor": "__CURSOR", "message": "MESSAGE", "identifier": "SYSLOG_IDENTIFIER", "host": "_HOSTNAME",
         "sd_unit": "_SYSTEMD_UNIT", "sd_invocation": "_SYSTEMD_INVOCATION_ID", "unit_field": "UNIT",
         "invocation_field": "INVOCATION_ID", "object_unit": "OBJECT_SYSTEMD_UNIT",
         "object_invocation": "OBJECT_SYSTEMD_INVOCATION_ID", "coredump_unit": "COREDUMP_UNIT",
         "message_id": "MESSAGE_ID", "line_break": "_LINE_BREAK", "stream": "_STREAM_ID", "exit_code": "EXIT_CODE",
         "unit_result": "UNIT_RESULT"}
_NUMBERS = {"usec": "__REALTIME_TIMESTAMP", "pid": "_PID", "priority": "PRIORITY", "n_dropped": "N_DROPPED",
            "exit_status": "EXIT_STATUS"}

def export_table(data: bytes) -> tuple[pa.Table, int]:
    """Export output as raw rows (journal_frame.RAW_FIELDS plus exit fields); also how many were bytes."""
    _, cols, values = parse_export(data, _TEXT.values(), _NUMBERS.values())
    c = {name: cols[key] for name, key in {**_TEXT, **_NUMBERS}.items()}
    message, binary = decode_binary(c["message"], values)
    identifier, _ = decode_binary(c["identifier"], values)
    valid = pc.is_valid
    pid1 = pc.and_(pc.fill_null(pc.equal(c["pid"], 1), False), valid(c["unit_field"]))
    dropped = pc.fill_null(pc.equal(c["message_id"], MSG_JOURNAL_DROPPED), False)
    daemon = pc.or_(valid(c["object_unit"]), pc.fill_null(pc.equal(c["message_id"], MSG_COREDUMP), False))
    own = valid(c["sd_unit"])
    conds = pc.make_struct(pid1, dropped, daemon, own, field_names=["m", "j", "d", "u"])
    origin = pc.case_when(conds, "manager", "journald", "daemon", "unit", "unattributed")
    unit = pc.case_when(conds, c["unit_field"], c["object_unit"], pc.coalesce(c["object_unit"], c["coredump_unit"]),
                        c["sd_unit"], pa.scalar(None, pa.large_string()))
    invocation = pc.case_when(conds, c["invocation_field"], c["object_invocation"], c["object_invocation"],
                              c["sd_invocation"], pa.scalar(None, pa.large_string()))
    table = pa.table({
        "usec": c["usec"], "cursor": c["cursor"], "message": message, "pid": c["pid"], "priority": c["priority"],
        "identifier": identifier, "host": c["host"], "unit": unit, "invocation": invocation, "origin": origin,
        "message_id": c["message_id"], "line_break": c["line_break"], "stream": c["stream"],
        "n_dropped": c["n_dropped"], "exit_code": c["exit_code"], "exit_status": c["exit_status"],
        "unit_result": c["unit_result"],
    })
    return table, binary



def invocations_of(table: pa.Table) -> pd.DataFrame:
    """One row per invocation from PID 1's lines about a unit (oldest first)."""
    rows: dict[str, dict[str, Any]] = {}
    cols = ["usec", "invocation", "message_id", "exit_code", "exit_status", "unit_result", "origin"]
    for r in table.select(cols).to_pylist():
        inv = r["invocation"]
        if not inv:
            continue
        row = rows.setdefault(inv, {"invocation": inv, "start": r["usec"], "end": None, "result": None,
                                    "exit_code": None, "exit_status": None, "messages": 0})
        row["messages"] += r["origin"] == "manager"  # a unit's own line may stand in for PID 1's silence
        row["start"] = min(row["start"], r["usec"])
        mid = r["message_id"]
        if mid in TERMINAL_MESSAGE_IDS:
            row["end"] = max(row["end"] or 0, r["usec"])
        if mid == MSG_UNIT_PROCESS_EXIT:
            row["exit_code"], row["exit_status"] = r["exit_code"], r["exit_status"]
        if mid == MSG_UNIT_FAILED:
            row["result"] = r["unit_result"] or "failed"
        elif mid == MSG_UNIT_SUCCESS and row["result"] is None:
            row["result"] = "success"
    ordered: list[dict[str, Any]] = sorted(rows.values(), key=lambda r: int(r["start"]))
    out = pd.DataFrame(ordered, columns=INVOCATION_COLUMNS)
    for col in ("start", "end"):
        out[col] = pd.to_datetime(out[col].astype("Int64"), unit="us", utc=True)
    out["result"] = out["result"].where(out["result"].notna() | out["end"].notna(), "running")
    out["result"] = out["result"].fillna("stopped")
    out["exit_status"] = out["exit_status"].astype("Int64")
    return out



def unstarted(table: pa.Table, ids: set[str]) -> set[str]:
    """The invocations among ``ids`` whose start PID 1's lines in ``table`` do not record
    (transient units under ``LogLevelMax=``, a start rotated away): their start is a guess."""
    if not len(table):
        return set(ids)
    started = pc.is_in(table["message_id"], pa.array([MSG_UNIT_STARTING, MSG_UNIT_STARTED], pa.large_string()))
    seen = set(table.filter(pc.fill_null(started, False))["invocation"].to_pylist())
    return {i for i in ids if i not in seen}


def about(table: pa.Table, unit: str) -> pa.Array:
    """Rows about ``unit``: drops other units' "Suppressed" records that the MESSAGE_ID match brought."""
    if not len(table):
        return pa.array([], pa.bool_())
    daemon = pc.is_in(table["origin"], pa.array(["journald", "daemon"], pa.large_string()))
    named = pc.fill_null(pc.equal(table["unit"], unit), False)
    keep = pc.or_(pc.invert(daemon), named)
    unnamed = np.flatnonzero(pc.and_(daemon, pc.is_null(table["unit"])).to_numpy(zero_copy_only=False))
    if len(unnamed):  # a "Suppressed" record without object fields: the unit is in its text
        texts = table["message"].take(pa.array(unnamed)).to_pylist()
        hits = [i for i, t in zip(unnamed.tolist(), texts, strict=True) if f"messages from {unit}" in (t or "")]
        if hits:
            mask = np.zeros(len(table), bool)
            mask[hits] = True
            keep = pc.or_(keep, pa.array(mask))
    return keep



def in_invocations(table: pa.Table, ids: set[str], windows: dict[str, tuple[int, int | None]]) -> np.ndarray:
    """The rows of these invocations; a "Suppressed" record counts when it names one of them or
    falls inside one's lifetime (journald tags it with whichever invocation logged next)."""
    if not len(table):
        return np.zeros(0, bool)
    keep = pc.fill_null(pc.is_in(table["invocation"], pa.array(sorted(ids), pa.large_string())), False)
    keep_np = keep.to_numpy(zero_copy_only=False)
    journald = np.flatnonzero(pc.fill_null(pc.equal(table["origin"], "journald"), False).to_numpy(
        zero_copy_only=False))
    if len(journald):
        usec = table["usec"].to_numpy(zero_copy_only=False)[journald]
        for start, end in windows.values():
            keep_np[journald[(usec >= start) & (usec <= (end if end is not None else np.iinfo(np.int64).max))]] = True
    return keep_np



def fill_invocation(table: pa.Table) -> pa.Table:
    """The unit's own lines that journald logged without their invocation ID -- it reads the ID from
    the unit's cgroup, which is gone when the line is read after its process died (a process that
    exits at once) -- get the latest invocation of the table that started at or before them (its
    first row); a line older than every invocation keeps none."""
    if not len(table) or table["invocation"].null_count == 0:
        return table
    missing = pc.fill_null(pc.and_(pc.equal(table["origin"], "unit"), pc.is_null(table["invocation"])), False)
    rows = np.flatnonzero(missing.to_numpy(zero_copy_only=False))
    if not len(rows):
        return table
    known = table.filter(pc.is_valid(table["invocation"])).group_by("invocation").aggregate([("usec", "min")])
    if not len(known):
        return table
    order = np.argsort(known["usec_min"].to_numpy(zero_copy_only=False), kind="stable")
    starts = known["usec_min"].to_numpy(zero_copy_only=False)[order]
    ids = np.asarray(known["invocation"].to_pylist(), dtype=object)[order]
    at = np.searchsorted(starts, table["usec"].to_numpy(zero_copy_only=False)[rows], side="right") - 1
    filled = np.asarray(table["invocation"].to_pylist(), dtype=object)
    filled[rows[at >= 0]] = ids[at[at >= 0]]
    col = table.schema.get_field_index("invocation")
    return table.set_column(col, table.schema.field(col), pa.array(filled.tolist(), table.schema.field(col).type))


def journal_order(table: pa.Table) -> np.ndarray:
    """A sort key giving journal order: the seqnum (``i=`` of the cursor) when every row has the same
    seqnum id (``s=``), else the time (rows from several journals, e.g. across a journald restart)."""
    found = pc.extract_regex(table["cursor"], r"^s=(?P<s>[0-9a-f]+);i=(?P<i>[0-9a-f]+);")
    ids = pc.struct_field(found, "s")
    if len(table) and found.null_count == 0 and pc.count_distinct(ids).as_py() == 1:
        seq = pc.struct_field(found, "i").to_pylist()
        return np.array([int(x, 16) for x in seq], np.int64)
    return table["usec"].to_numpy()



def late_report(data: bytes | None, unit: str) -> pa.Table | None:
    """The "Suppressed" record journald logged about ``unit`` right after the invocation, if it came
    before any other line of the unit (then it reports lines lost at the invocation's end)."""
    if not data:
        return None
    cut = data.rfind(b"\n\n")
    if cut < 0:
        return None
    try:
        table, _ = export_table(data[:cut + 2])
    except Exception:  # a cut entry (head -c): nothing decidable
        return None
    if not len(table) or table["origin"][0].as_py() != "journald":
        return None
    return table.slice(0, 1)



def hold_back(table: pa.Table, cursor: str) -> tuple[pa.Table, str]:
    """Cut the table before a LineMax-split line whose last part has not arrived yet."""
    if not len(table):
        return table, cursor
    breaks = pc.fill_null(pc.equal(table["line_break"], "line-max"), False).to_numpy(zero_copy_only=False)
    if breaks.any():
        streams = table["stream"].to_pylist()
        pids = table["pid"].to_pylist()
        who = [s or f"pid:{p}" for s, p in zip(streams, pids, strict=True)]
        open_at: dict[str, int] = {}
        for i, split in enumerate(breaks.tolist()):
            if who[i] in open_at and not split:
                del open_at[who[i]]  # the split line's last part
            elif split and who[i] not in open_at:
                open_at[who[i]] = i
        if open_at:
            cut = min(open_at.values())
            table = table.slice(0, cut)
            return table, (table["cursor"][cut - 1].as_py() if cut else cursor)
    return table, table["cursor"][len(table) - 1].as_py()
