"""Journal tab: captured journalctl JSON into a frame, filters, follow, export."""

from __future__ import annotations

import pandas as pd
import pytest

from workbench.errors import ConfigError
from workbench.journal import parse_json_entry
from workbench.widgets.context import Invocation
from workbench.widgets.journal_tab import JournalTab, entries_frame, filter_frame

from .fakes import EP8_INVOCATION, JOURNAL, FakeContext

VARIANT = "sglang-k26-ddtree-wb-ecf0cadcae.service"


def frame() -> pd.DataFrame:
    return entries_frame(e for e in map(parse_json_entry, JOURNAL.splitlines()) if e is not None)


def test_entries_frame_parses_ranks_levels_and_pid1_lines():
    df = frame()
    assert len(df) > 800 and list(df.columns)[:3] == ["time", "unit", "invocation"]
    assert {f"TP{i} EP{i}" for i in range(8)} <= set(df["rank"])
    assert (df["invocation"] == EP8_INVOCATION).all()
    assert df["message"].str.contains("Main process exited").any()  # PID 1's verdict is in the frame
    assert {"INFO", "WARNING", "ERROR"} <= set(df["level"])
    tb = df[df["message"].str.contains("AttributeError: 'NoneType'")]
    assert (tb["level"] == "ERROR").all()


def test_filters_include_exclude_rank_level():
    df = frame()
    errors = filter_frame(df, include=r"AttributeError")
    assert len(errors) >= 8 and errors["message"].str.contains("AttributeError").all()
    one_rank = filter_frame(df, include="AttributeError", rank="TP3 EP3")
    assert len(one_rank) >= 1 and (one_rank["rank"] == "TP3 EP3").all()
    assert filter_frame(df, exclude=".").empty
    warn = filter_frame(df, level="WARNING")
    assert set(warn["level"]) <= {"WARNING", "ERROR", "CRITICAL"}
    with pytest.raises(ConfigError):
        filter_frame(df, include="(")
    with pytest.raises(ConfigError):
        filter_frame(df, level="LOUD")


def test_load_an_invocation_filter_and_export(tmp_path):
    ctx = FakeContext(tmp_path)
    tab = JournalTab(ctx)
    ctx.add_invocation(Invocation("gpu-b", VARIANT, EP8_INVOCATION, "variant"))
    assert (ctx.invocations[0].describe(), ctx.invocations[0].key) in tab.invocation.options
    tab.choose(ctx.invocations[0].key)
    assert tab.unit.value == VARIANT
    tab.load_button.click()
    assert tab.wait(10).state == "done"
    sent = ctx.fake_hosts["gpu-b"].commands[-1]
    assert f"_SYSTEMD_INVOCATION_ID={EP8_INVOCATION}" in sent  # asked by invocation, on that host
    assert len(tab.frame) > 800 and "Failed with result" in tab.view.value
    assert "the last 400 shown" in tab.count.value
    assert ("TP0 EP0", "TP0 EP0") in tab.rank.options
    tab.include.value = "AttributeError"
    tab.rank.value = "TP3 EP3"
    assert 1 <= len(tab.shown) < 10 and "AttributeError" in tab.view.value
    assert f"{len(tab.shown)} of {len(tab.frame)}" in tab.count.value
    path = tab.export(tmp_path / "out.csv")
    back = pd.read_csv(path)
    assert len(back) == len(tab.shown) and back["message"].str.contains("AttributeError").all()
    tab.include.value = "("  # a bad regex is a message, not a dead widget
    assert "regular expression" in tab.bar.error.value


def test_follow_appends_new_lines(tmp_path):
    ctx = FakeContext(tmp_path)
    tab = JournalTab(ctx, unit=VARIANT)
    svc = ctx.services()
    svc.follow_lines = [ln for ln in JOURNAL.splitlines() if ln.startswith("{")][:30]
    svc.follow_ends = True  # the follower ends after these lines (journald restarted, say)
    tab.follow_toggle.value = True
    assert tab.wait(10).state == "done"
    assert len(tab.frame) == 30 and not tab.follow_toggle.value
    assert "Starting sglang-k26-ddtree-wb-ecf0cadcae" in tab.view.value


def test_follow_runs_until_turned_off(tmp_path):
    ctx = FakeContext(tmp_path)
    tab = JournalTab(ctx, unit=VARIANT)
    tab.follow_toggle.value = True  # an open stream with nothing new: follows until turned off
    task = tab.bar.task
    assert task is not None and task.running
    tab.follow_toggle.value = False
    tab.wait(10)
    assert task.state == "cancelled" and "cancelled" in tab.bar.status.value


def test_unknown_invocation_is_refused(tmp_path):
    tab = JournalTab(FakeContext(tmp_path))
    with pytest.raises(ConfigError):
        tab.choose("gpu-b:nope")
