"""The stream lines read as ``-o short-unix`` text equal what ``-o export`` gives for the same
entries (captured together on the testbed: bytes, ANSI, tab/bell, a 100 kB LineMax split, a <3>
prefix)."""

from pathlib import Path

import pyarrow.compute as pc
import pytest

from workbench.journal import text
from workbench.journal.frame import RAW_FIELDS, build_frame
from workbench.journal.systemd import export_table

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "journal"
COLUMNS = ["usec", "pid", "message", "identifier", "host", "priority"]


def pair():
    short = (FIXTURES / "textpath.short-unix").read_bytes()
    export, binary = export_table((FIXTURES / "textpath.export").read_bytes())
    return short, export.select(list(RAW_FIELDS)), binary


def exceptions(export):
    other = pc.fill_null(pc.not_equal(export["priority"], text.DEFAULT_PRIORITY), False)
    split = pc.fill_null(pc.equal(export["line_break"], "line-max"), False)
    return export.filter(pc.or_(other, split))


def test_text_rows_equal_export_rows():
    short, export, binary = pair()
    rows = text.patch(text.parse_short_unix(short, unit="u.service", invocation="inv"), exceptions(export))
    for col in COLUMNS:
        assert rows[col].to_pylist() == export[col].to_pylist(), col
    assert rows["line_break"].to_pylist() == [b if b == "line-max" else None for b in export["line_break"].to_pylist()]
    assert text.undecodable(short, rows) == binary == 3
    a, b = build_frame(rows, unit="u.service"), build_frame(export, unit="u.service")
    assert a["message"].tolist() == b["message"].tolist() and a.lost == b.lost and a.lost.split_lines == 1
    assert a[["rank", "level", "phase"]].astype(str).values.tolist() == b[["rank", "level", "phase"]].astype(
        str).values.tolist()


def test_the_show_cursor_trailer_is_the_last_rows_cursor():
    short, export, _ = pair()
    last = export["cursor"][-1].as_py()
    rows = text.parse_short_unix(short + f"-- cursor: {last}\n".encode(), unit="u.service", invocation="inv")
    assert len(rows) == len(export) and rows["cursor"].to_pylist()[-1] == last
    assert rows["cursor"].null_count == len(rows) - 1
    assert len(text.parse_short_unix(f"-- cursor: {last}\n".encode(), unit="u", invocation="i")) == 0
    assert len(text.parse_short_unix(b"", unit="u", invocation="i")) == 0


def test_queries_match_the_invocation_and_quote_nothing_by_hand():
    argv = text.text_argv("abc", since=1_000_000, until="-1h")
    assert argv[-2:] == ["_SYSTEMD_INVOCATION_ID=abc", "_TRANSPORT=stdout"] and "--show-cursor" in argv
    assert argv[argv.index("--since") + 1] == "@1.000000" and argv[argv.index("--until") + 1] == "-1h"
    m = text.exceptions_matches("abc")
    assert "PRIORITY=6" not in m and "PRIORITY=3" in m and m[m.index("+") + 1:][-1] == "_LINE_BREAK=line-max"


def test_the_byte_reader_and_the_regex_reader_agree():
    short, _, _ = pair()
    data = short.decode("utf-8", "replace").encode()
    fast, slow = text._columns_fast(data), text._columns_regex(data)
    assert fast is not None and set(fast) == set(slow)
    for col in fast:
        assert fast[col].to_pylist() == slow[col].to_pylist(), col
    odd = data + b"1796121942.126215 gpu-a no-pid-here: a line without a pid\n"
    assert text._columns_fast(odd)["pid"].to_pylist()[-1] is None
    assert text._columns_fast(b"garbage line that is long enough\n") is None  # the regex reads it


@pytest.mark.parametrize("data", [
    "1796132053.000001 gpu-b python3[18486]: héllo: x\n1796132053.000002 gpu-b python3[18486]: \n"
    "1796132053.000003 gpu-b python3[18486]: wörld\x1b[0m\n",  # one process: messages sliced in place
    "1796132053.000001 gpu-b kernel: a b\n1796132053.000002 gpu-b kernel: c\n",  # no pid
    "1796132053.000001 gpu-b python3[1]: a\n1796132053.000002 gpu-b python3[22]: c: d\n",  # two processes
])
def test_the_byte_readers_read_what_the_regex_reads(data):
    fast, regex = text._columns_fast(data.encode()), text._columns_regex(data.encode())
    assert fast is not None
    assert {k: v.to_pylist() for k, v in fast.items()} == {k: v.to_pylist() for k, v in regex.items()}
