"""The process backend's log files (captured output of read_script) as journal rows."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError
from workbench.journal.frame import RAW_FIELDS, build_frame
from workbench.journal.process import invocations_of, parse_files, read_script


def test_rows_cursors_and_invocations(fixture_bytes):
    data = fixture_bytes("process_logs.out")
    table, cursor, gaps = parse_files(data, unit="jtest-proc.service", host="h")
    assert gaps == [] and len(table) == 12
    ino = data.split(b" ")[1].decode()
    size = len(data.split(b"\n", 1)[1].split(b"\n@@eof\n")[0])  # the file's bytes
    assert cursor == f"proc:{ino}:{size}"
    assert table["cursor"][len(table) - 1].as_py() == cursor
    inv = invocations_of(table)
    assert len(inv) == 2 and set(inv["result"]) == {"exit-code"} and set(inv["exit_status"]) == {2}
    frame = build_frame(table.select(list(RAW_FIELDS)), unit="jtest-proc.service", cursor=cursor)
    own = frame[frame["origin"] == "unit"]
    assert set(own["message"]) == {"out line", "err line", "second"}
    assert own["pid"].notna().all()  # each invocation's lines carry the pid its start record names
    assert frame["manager"].sum() == 6


def test_partial_last_line_waits_and_gaps_are_reported():
    body = b'{"t": 1.5, "s": "out", "m": "a", "inv": "i"}\n{"t": 2.5, "s": "out", "m": "b'
    data = b"@@gap\n@@file 42 100\n" + body + b"\n@@eof\n"
    table, cursor, gaps = parse_files(data, unit="u.service")
    assert table["message"].to_pylist() == ["a"] and table["usec"].to_pylist() == [1_500_000]
    first = body.index(b"\n") + 1
    assert cursor == f"proc:42:{100 + first}"
    assert gaps and "rotated" in gaps[0]


def test_damaged_lines_do_not_lose_the_rest():
    data = b'@@file 1 0\n{"t": 1, "s": "out", "m": "ok", "inv": "i"}\nnot json\n\n@@eof\n'
    table, _, _ = parse_files(data, unit="u.service")
    assert table["message"].to_pylist() == ["ok", "not json"]


def test_script_arguments():
    assert read_script("/r/state/u.log")[-3:] == ["/r/state/u.log", "", "0"]
    assert read_script("/r/state/u.log", "proc:12:34")[-2:] == ["12", "34"]
    with pytest.raises(ConfigError):
        read_script("/x", "proc:bad")
