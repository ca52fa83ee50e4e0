"""JournalFrame assembly from captured export output: origins, rejoined splits, decoded bytes, losses."""

from __future__ import annotations

import pandas as pd

from workbench.journal.filter import filter
from workbench.journal.frame import (
    COLUMNS,
    RAW_FIELDS,
    JournalFrame,
    Lost,
    build_frame,
    empty_raw,
    select_invocations,
)
from workbench.journal.systemd import about as _about
from workbench.journal.systemd import export_table, invocations_of
from workbench.journal.systemd import hold_back as _hold_back
from workbench.journal.systemd import in_invocations as _in_invocations


def _frame(fixture_bytes, stem: str, unit: str) -> JournalFrame:
    table, binary = export_table(fixture_bytes(f"{stem}.export"))
    table = table.filter(_about(table, unit))
    return build_frame(table.select(list(RAW_FIELDS)), unit=unit, lost=Lost(binary=binary))


def test_columns_and_types(fixture_bytes):
    f = _frame(fixture_bytes, "mixed", "jtest-cap-mixed.service")
    assert list(f.columns) == COLUMNS
    assert str(f["time"].dtype) == "datetime64[us, UTC]"
    assert str(f["pid"].dtype) == "Int64" and f["manager"].dtype == bool
    assert f["message"].dtype == "str" and f["phase"].dtype == "category"
    assert set(f["origin"]) == {"unit", "manager"}  # another unit's "Suppressed" record was dropped
    assert f.cursor == f["cursor"].iloc[-1] and f.unit == "jtest-cap-mixed.service"


def test_long_lines_whole_and_rejoined(fixture_bytes):
    f = _frame(fixture_bytes, "mixed", "jtest-cap-mixed.service")
    lengths = f["message"].str.len().tolist()
    assert 10240 in lengths and 100000 in lengths and 49152 not in lengths
    joined = f[f["parts"] > 1]
    assert set(joined["parts"]) == {3}
    assert all(m.startswith("hundred kilobytes ") and set(m[18:]) == {"h"} for m in joined["message"])
    assert f.lost.split_lines == len(joined) and f.lost.split_records == 3 * len(joined)
    assert not f.incomplete


def test_bytes_decoded(fixture_bytes):
    f = _frame(fixture_bytes, "mixed", "jtest-cap-mixed.service")
    msgs = set(f["message"])
    assert "invalid utf-8 \ufffd\ufffd here" in msgs
    assert "tab\tand bell\x07 control" in msgs
    coloured = f[f["message"].str.contains("coloured", regex=False)].iloc[0]
    assert coloured["message"].startswith("\x1b[36m(EngineCore_DP0 pid=7)")
    assert coloured["level"] == "WARNING" and pd.isna(coloured["rank"])  # EngineCore_DP0 names a process, not a rank
    assert f.lost.binary >= 3


def test_rank_level_phase(fixture_bytes):
    f = _frame(fixture_bytes, "mixed", "jtest-cap-mixed.service")
    row = f[f["message"].str.contains("DP1 TP3", regex=False)].iloc[0]
    assert row["rank"] == "DP1 TP3"
    first = f[f["invocation"] == f["invocation"].iloc[0]]
    assert first["phase"].iloc[0] == "unknown"  # PID 1's "Started" comes before any server line
    assert "weight_loading" in set(first["phase"]) and "kv_cache_alloc" in set(first["phase"])


def test_manager_lines_and_traceback_after_the_exit_record(fixture_bytes):
    # journald wrote the dying process's last lines after PID 1 logged its exit: all are kept
    f = _frame(fixture_bytes, "mixed", "jtest-cap-mixed.service")
    inv = f[f["invocation"] == f["invocation"].iloc[0]].reset_index(drop=True)
    exited = inv.index[inv["message"].str.contains("Main process exited", regex=False)][0]
    tail = inv["message"].iloc[exited:].tolist()
    assert "RuntimeError: mixed fixture done" in tail and "no newline at the end" in tail
    assert inv.loc[exited, "manager"] and inv.loc[exited, "origin"] == "manager"


def test_suppressed_marks_the_log_incomplete(fixture_bytes):
    f = _frame(fixture_bytes, "rate", "jtest-cap-rate.service")
    assert f.lost.suppressed > 0 and f.incomplete
    recs = f.lost.suppressed_records
    assert all(r["unit"] == "jtest-cap-rate.service" and r["count"] > 0 for r in recs)
    assert sum(r["count"] for r in recs) == f.lost.suppressed
    assert "log incomplete" in f.lost.describe() and "suppressed" in f.lost.describe()
    assert "journald" in set(f["origin"])


def test_metadata_survives_slicing(fixture_bytes):
    f = _frame(fixture_bytes, "mixed", "jtest-cap-mixed.service")
    for part in (f[f["origin"] == "unit"], f.head(3), f.loc[f.index[2:]], filter(f, include="Load")):
        assert isinstance(part, JournalFrame)
        assert (part.cursor, part.lost, part.unit) == (f.cursor, f.lost, f.unit)
    assert "Started" not in f.raw and "RuntimeError: mixed fixture done" in f.raw


def test_invocations_from_pid1_lines(fixture_bytes):
    mixed = invocations_of(export_table(fixture_bytes("pid1_mixed.export"))[0])
    assert list(mixed.columns) == ["invocation", "start", "end", "result", "exit_code", "exit_status", "messages"]
    assert set(mixed["result"]) == {"exit-code", "success"}
    failed = mixed[mixed["result"] == "exit-code"].iloc[0]
    assert (failed["exit_code"], failed["exit_status"]) == ("exited", 3)
    assert (mixed["end"] >= mixed["start"]).all() and mixed["start"].is_monotonic_increasing
    killed = invocations_of(export_table(fixture_bytes("pid1_kill.export"))[0]).iloc[-1]
    assert (killed["result"], killed["exit_code"], killed["exit_status"]) == ("signal", "killed", 9)
    assert select_invocations(mixed, "last", None)["invocation"].tolist() == [mixed["invocation"].iloc[-1]]
    assert select_invocations(mixed, 0, None)["invocation"].tolist() == [mixed["invocation"].iloc[0]]
    assert len(select_invocations(mixed, None, 2)) == 2


def test_invocation_selection_keeps_suppression_reports_in_its_lifetime(fixture_bytes):
    table, _ = export_table(fixture_bytes("rate.export"))
    inv = invocations_of(table)
    start = int(inv["start"].iloc[0].value // 1000)
    keep = _in_invocations(table, {"none-of-these"}, {"x": (start, None)})
    kept = [o for o, k in zip(table["origin"].to_pylist(), keep, strict=True) if k]
    assert kept and set(kept) == {"journald"}


def test_hold_back_a_split_line_until_its_end_arrives(fixture_bytes):
    table, _ = export_table(fixture_bytes("mixed.export"))
    breaks = table["line_break"].to_pylist()
    first_split = breaks.index("line-max")
    partial = table.slice(0, first_split + 2)  # both 48K parts, not the last one
    held, cursor = _hold_back(partial, "start")
    assert len(held) == first_split and cursor == table["cursor"][first_split - 1].as_py()
    whole, cursor = _hold_back(table, "start")
    assert len(whole) == len(table) and cursor == table["cursor"][len(table) - 1].as_py()


def test_empty_frame():
    f = build_frame(empty_raw())
    assert list(f.columns) == COLUMNS and len(f) == 0 and f.cursor is None and f.raw == ""
    assert isinstance(f["time"].dtype, pd.DatetimeTZDtype)


def _without_ids(table, rows):
    """``table`` as journald writes it when it could not read these rows' invocation ID (the field absent)."""
    import numpy as np
    import pyarrow as pa

    ids = np.asarray(table["invocation"].to_pylist(), dtype=object)
    ids[rows] = None
    col = table.schema.get_field_index("invocation")
    return table.set_column(col, table.schema.field(col), pa.array(ids.tolist(), table.schema.field(col).type))


def test_own_lines_logged_without_their_invocation_get_the_one_running_when_they_came(fixture_bytes):
    """A process that dies at once: journald reads its last lines after the cgroup is gone and
    writes them without _SYSTEMD_INVOCATION_ID (a fresh clone's test_journal saw such a row)."""
    from workbench.journal.systemd import fill_invocation

    table, _ = export_table(fixture_bytes("mixed.export"))
    origin = table["origin"].to_pylist()
    inv = table["invocation"].to_pylist()
    own = [i for i, o in enumerate(origin) if o == "unit"]
    # each invocation's first and last own line, and one in the middle (the traceback written after
    # PID 1 logged the exit is among the last)
    firsts = [min(i for i in own if inv[i] == x) for x in dict.fromkeys(inv[i] for i in own)]
    lasts = [max(i for i in own if inv[i] == x) for x in dict.fromkeys(inv[i] for i in own)]
    stripped = sorted({*firsts, *lasts, own[len(own) // 2]})
    assert len(stripped) >= 6
    filled = fill_invocation(_without_ids(table, stripped))
    assert filled["invocation"].to_pylist() == inv
    # nothing started before the oldest invocation's lines: they keep none; PID 1's and journald's rows are never filled
    blank = [i for i, x in enumerate(inv) if x == inv[own[0]] or origin[i] != "unit"]
    kept = fill_invocation(_without_ids(table, blank))["invocation"].to_pylist()
    assert [kept[i] for i in blank] == [None] * len(blank)
