"""parse_export on real ``journalctl -o export`` output, checked against ``-o json --all`` of the same entries."""

from __future__ import annotations

import json

import pytest

import workbench.journal.export as je
from workbench.journal import decode_field
from workbench.journal.export import parse_export

TEXT = ["__CURSOR", "MESSAGE", "_SYSTEMD_UNIT", "_SYSTEMD_INVOCATION_ID", "INVOCATION_ID", "UNIT", "SYSLOG_IDENTIFIER",
        "MESSAGE_ID", "_LINE_BREAK", "OBJECT_SYSTEMD_UNIT", "_HOSTNAME"]
NUMBERS = ["__REALTIME_TIMESTAMP", "_PID", "PRIORITY", "N_DROPPED"]


def _decoded(cols, values, key, i):
    v = cols[key][i].as_py()
    if isinstance(v, str) and v.startswith(je.PLACEHOLDER):
        return values[int(v[1:])].decode("utf-8", "replace")
    return v


@pytest.mark.parametrize("stem", ["mixed", "rate"])
def test_export_equals_json_of_the_same_entries(fixture_bytes, stem):
    n, cols, values = parse_export(fixture_bytes(f"{stem}.export"), TEXT, NUMBERS)
    records = [json.loads(line) for line in fixture_bytes(f"{stem}.json").decode().splitlines()]
    assert n == len(records) > 10
    for i, rec in enumerate(records):
        for key in TEXT:
            want = decode_field(rec[key]) if key in rec else None
            assert _decoded(cols, values, key, i) == want, (i, key)
        for key in NUMBERS:
            assert cols[key][i].as_py() == (int(rec[key]) if key in rec else None), (i, key)


def test_binary_fields_are_the_json_byte_arrays(fixture_bytes):
    _, _, values = parse_export(fixture_bytes("mixed.export"), ["MESSAGE"])
    records = [json.loads(line) for line in fixture_bytes("mixed.json").decode().splitlines()]
    arrays = [bytes(r["MESSAGE"]) for r in records if isinstance(r["MESSAGE"], list)]
    assert sorted(values) == sorted(arrays)
    assert any(b"\x1b[36m" in v for v in values) and any(b"\xff\xfe" in v for v in values)
    assert any(b"\x07" in v for v in values)


def test_long_fields_come_whole(fixture_bytes):
    _, cols, _ = parse_export(fixture_bytes("mixed.export"), ["MESSAGE", "_LINE_BREAK"])
    lengths = [len(m) for m in cols["MESSAGE"].to_pylist()]
    assert 10240 in lengths  # the 10 KB line: one record, all of it
    assert lengths.count(49152) >= 2  # the 100 KB line: split by LineMax (48K)...
    assert "line-max" in cols["_LINE_BREAK"].to_pylist()  # ...and marked


def test_small_chunks_give_the_same_columns(fixture_bytes, monkeypatch):
    data = fixture_bytes("mixed.export")
    whole = parse_export(data, TEXT, NUMBERS)
    monkeypatch.setattr(je, "CHUNK", 64)
    pieces = parse_export(data, TEXT, NUMBERS)
    assert pieces[0] == whole[0]
    assert pieces[2] == whole[2]
    for key in TEXT + NUMBERS:
        assert pieces[1][key].to_pylist() == whole[1][key].to_pylist(), key


def test_edge_cases():
    assert parse_export(b"", ["MESSAGE"])[0] == 0
    n, cols, _ = parse_export(b"MESSAGE=a\nX=1\nMESSAGE=b\n\nMESSAGE=\n", ["MESSAGE", "X"], ["X"])
    assert n == 2
    assert cols["MESSAGE"].to_pylist() == ["b", ""]  # a repeated field keeps its last value
    assert cols["X"].to_pylist() == [1, None]
    binary = b"MESSAGE\n" + (3).to_bytes(8, "little") + b"a\nb\n_PID=7\n\n"
    n, cols, values = parse_export(binary, ["MESSAGE"], ["_PID"])
    assert (n, values, cols["_PID"].to_pylist()) == (1, [b"a\nb"], [7])
