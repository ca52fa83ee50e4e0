"""parse_line on real lines (tests/fixtures/logs/lines.json: the line, what it is, what it must give)."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.logformats import LogLine, clean_line, parse_line, parse_time, strip_ansi

CASES = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "lines.json").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["note"] for c in CASES])
def test_real_line(case: dict) -> None:
    got = asdict(parse_line(case["line"]))
    assert got.pop("raw") == case["line"]
    assert got == case["expect"]


def test_the_fixture_covers_every_format() -> None:
    formats = {c["expect"]["format"] for c in CASES}
    assert formats == {"journal", "kernel", "sglang", "uvicorn", "vllm", "glog", "trtllm", "tracing", "pylogging", "raycpp", "plain"}
    assert any(c["expect"]["service"] and c["expect"]["process"] for c in CASES)  # compose + vLLM


def test_a_time_before_prose_is_no_record() -> None:
    """A record of its own time needs its level within two fields of the time (a logger's name, a pid): a level
    word deeper in the text is prose, and the line stays plain."""
    for line in ("2025-01-01 10:00:00 The error was ERROR in foo",
                 "2025-01-01 10:00:00 Loading weights took 3 s INFO",
                 "2025-01-01 10:00:00,123 4 5 6"):
        got = parse_line(line)
        assert (got.format, got.level, got.message) == ("plain", None, line)
    # the same time before a record this parser knows gives that record, with the inner time when it has one
    got = parse_line("2025-01-01 10:00:00 INFO:     Started server process [1]")
    assert (got.format, got.level, got.time, got.message) == ("uvicorn", "INFO", "2025-01-01 10:00:00",
                                                              "Started server process [1]")


def test_ansi_is_removed_before_parsing() -> None:
    line = "\x1b[1;36m(EngineCore_DP0 pid=7)\x1b[0;0m ERROR 09-18 21:38:02 [core.py:708] EngineCore failed to start."
    got = parse_line(line)
    assert (got.process, got.rank, got.level, got.message) == ("EngineCore_DP0", None, "ERROR", "EngineCore failed to start.")
    assert strip_ansi("\x1b[31mred\x1b[0m") == "red"


@given(st.text(max_size=300))
@settings(max_examples=400, deadline=None)
def test_never_raises_and_keeps_the_message_inside_the_line(text: str) -> None:
    got = parse_line(text)
    assert isinstance(got, LogLine)
    assert got.raw == text
    # the message is what is left of the line once its prefixes and paste damage are removed
    assert got.message in clean_line(strip_ansi(text)).replace("\r", "") or "\r" in text


_DIGITS = st.text("0123456789", min_size=2, max_size=2)


@given(st.sampled_from(["", "2025-", "1999-", "0000-"]), _DIGITS, _DIGITS, _DIGITS, _DIGITS, _DIGITS,
       st.sampled_from(["", ".", ","]), st.text("0123456789", max_size=9))
@settings(max_examples=600, deadline=None)
def test_numeric_times_read_as_strptime_reads_them(year: str, mo: str, d: str, h: str, mi: str, s: str,
                                                   dot: str, frac: str) -> None:
    # the hand-read shapes (parse_time's fast path) must give exactly what strptime's formats gave
    text = f"{year}{mo}-{d} {h}:{mi}:{s}" + (dot + frac if dot and frac else "")
    want = None
    clean = text.replace(",", ".")
    if year and "." in clean:
        head, tail = clean.rsplit(".", 1)
        clean = head + "." + tail[:6]
    for fmt in (["%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S"] if year else ["%Y %m-%d %H:%M:%S"]):
        try:
            want = datetime.strptime(clean if year else f"2024 {clean}", fmt)
            break
        except ValueError:
            continue
    assert parse_time(text, year=2024) == want


def test_non_text_input_does_not_raise() -> None:
    assert parse_line(b"[2025-01-01 00:00:00 TP1] hi").rank == "TP1"  # type: ignore[arg-type]
    assert parse_line(None).message == "None"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "year", "expected"),
    [
        ("2025-05-16 10:48:21", None, datetime(2025, 5, 16, 10, 48, 21)),
        ("2025-10-06 20:05:22.123", None, datetime(2025, 10, 6, 20, 5, 22, 123000)),
        ("03-09 12:56:44", 2026, datetime(2026, 3, 9, 12, 56, 44)),
        ("May 30 15:02:13", 2025, datetime(2025, 5, 30, 15, 2, 13)),
        ("Mon May 30 15:02:13 2022", None, datetime(2022, 5, 30, 15, 2, 13)),
        ("309 12:56:45.480623726", 2026, datetime(2026, 3, 9, 12, 56, 45, 480623)),
        ("20250522 23:38:30.164904", 2026, datetime(2025, 5, 22, 23, 38, 30, 164904)),  # glog 0.7+: its own year
        ("2026-05-20T08:02:44.797Z", None, datetime(2026, 5, 20, 8, 2, 44, 797000, tzinfo=UTC)),
        ("2026-10-07T23:01:03+00:00", None, datetime(2026, 10, 7, 23, 1, 3, tzinfo=timezone(timedelta(0)))),
        ("1843.308145", None, None),
        (None, None, None),
        ("not a time", None, None),
    ],
)
def test_parse_time(text: str | None, year: int | None, expected: datetime | None) -> None:
    assert parse_time(text, year=year) == expected
