"""filter() and to_text() on frames built from captured journal output."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError
from workbench.journal.filter import filter, to_text
from workbench.journal.frame import RAW_FIELDS, build_frame
from workbench.journal.systemd import about as _about
from workbench.journal.systemd import export_table
from workbench.logformats import parse_line


@pytest.fixture
def frame(fixture_bytes):
    table, _ = export_table(fixture_bytes("mixed.export"))
    table = table.filter(_about(table, "jtest-cap-mixed.service")).select(list(RAW_FIELDS))
    return build_frame(table, unit="jtest-cap-mixed.service")


def test_include_exclude(frame):
    got = filter(frame, include=r"^\[2026-\d\d-\d\d", exclude="DP1")
    assert set(got["message"].str[:30]) == {"[2026-01-02 03:04:05 TP0] Load"}
    assert filter(frame, include=r"(?<=Load )weight end").shape[0] > 0  # look-behind: Python's re fallback
    with pytest.raises(ConfigError):
        filter(frame, include="(")


def test_level_rank_phase_origin(frame):
    assert set(filter(frame, level="warning")["level"]) == {"WARNING"}
    assert set(filter(frame, rank="TP3")["rank"]) == {"DP1 TP3"}
    # EngineCore_DP0 names a process, not a rank (issue 15): only the SGLang TP0 line has a rank here
    assert set(filter(frame, rank=["DP0", "TP0"])["rank"]) == {"TP0"}
    assert set(filter(frame, phase="weight_loading")["phase"]) == {"weight_loading"}
    assert filter(frame, origin="manager")["manager"].all()
    inv = frame["invocation"].iloc[0]
    assert set(filter(frame, invocation=inv)["invocation"]) == {inv}
    with pytest.raises(ConfigError):
        filter(frame, level="loud")


def test_text_reads_like_journalctl_and_parses_back(frame):
    text = to_text(frame)
    lines = text.splitlines()
    assert len(lines) == len(frame) and text.endswith("\n")
    assert lines[0].startswith(frame["time"].iloc[0].strftime("%Y-%m-%dT%H:%M:%S.%f+0000 gpu-a systemd[1]: Started"))
    for line, (_, row) in zip(lines, frame.iterrows(), strict=True):
        p = parse_line(line)
        assert (p.host, p.service) == ("gpu-a", row["identifier"])
        assert line.endswith(row["message"])
    short = to_text(frame.head(1), precise=False).split(" ")[0]
    assert len(short) == len("2026-11-29T14:16:06+0000")


def test_multiline_messages_are_indented(frame):
    one = frame.head(1).copy()
    one.loc[one.index[0], "message"] = "first\nsecond"
    head, tail = to_text(one).splitlines()
    assert head.endswith(": first") and tail.strip() == "second" and len(tail) - len("second") == head.index("first")
