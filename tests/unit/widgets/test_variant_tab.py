"""Variant tab: edits as data, the plan, a watched run in a session, cancel, restore."""

from __future__ import annotations

import threading
from typing import ClassVar

import pytest

from workbench.session import Plan, Trial
from workbench.watch import Outcome, PhaseEvent
from workbench.widgets.variant_tab import VariantTab, describe_edit, edit_value

from .fakes import BASE, FakeContext

PHASES = ("nccl_init", "weight_loading", "kv_cache_alloc", "cuda_graph_capture")


class FakeSession:
    """run_variant as HostSession does it: events while watching, a Trial at the end; restore on exit."""

    instances: ClassVar[list[FakeSession]] = []

    def __init__(self, ctx, purpose, *, block: threading.Event | None = None):
        self.purpose, self.block, self.exited = purpose, block, False
        self.edits = None
        FakeSession.instances.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.exited = True

    def run_variant(self, base, edits, *, timeout, on_event, on_line):
        self.edits = edits
        timeline = []
        for i, ph in enumerate(PHASES):
            ev = PhaseEvent(ph, None, float(i), f"{ph} line")
            timeline.append(ev)
            on_event(ev)
        while self.block is not None and not self.block.is_set():
            on_line(None)  # the watch calls on_line for every journal line
            self.block.wait(0.05)
        out = Outcome(f"{base[:-8]}-wb-1234.service", "failed", "cuda_graph_capture", "inv-1", 4.2,
                      "failed (signal, killed by signal 9)", timeline=timeline,
                      tail=["AttributeError: 'NoneType' object has no attribute 'topk_ids'"])
        return Trial(out.unit, base, list(edits), out, 9, "killed", True)


def test_edit_values():
    assert edit_value("set", "8") == "8"
    assert edit_value("set", "a b") == ["a", "b"]
    assert edit_value("add", "") is True
    assert edit_value("remove", "x") is None
    with pytest.raises(ValueError):
        edit_value("set", " ")
    assert describe_edit("--ep-size", "8") == "set --ep-size 8"


def test_add_replace_and_drop_edits(tmp_path):
    tab = VariantTab(FakeContext(tmp_path))
    tab.flag.value, tab.value.value = "ep-size", "8"
    tab.add_button.click()
    tab.add_edit("--enable-nccl-nvls", action="add")
    tab.add_edit("--disable-cuda-graph", action="remove")
    tab.add_edit("--ep-size", "4")  # replaces, keeps one edit per flag
    assert tab.edits == [("--enable-nccl-nvls", True), ("--disable-cuda-graph", None), ("--ep-size", "4")]
    assert tab.edits_view.options[0][0] == "add --enable-nccl-nvls"
    tab.edits_view.value = "--disable-cuda-graph"
    tab.drop_button.click()
    assert [f for f, _ in tab.edits] == ["--enable-nccl-nvls", "--ep-size"]
    tab.flag.value, tab.value.value = "--bad flag", "1"
    tab.add_button.click()
    assert "not a flag" in tab.bar.error.value  # a message in the panel, edits unchanged
    assert len(tab.edits) == 2


def test_plan_shows_diff_and_commands(tmp_path):
    calls = []

    def fake_plan(host, base, edits, *, services):
        calls.append((host.name, base, edits))
        return Plan(f"{base}-wb-1", "/run/systemd/system/x.service", "", "-a\n+b --ep-size 8", ["systemctl daemon-reload"])

    ctx = FakeContext(tmp_path)
    ctx.select("gpu-b")
    tab = VariantTab(ctx, plan_fn=fake_plan)
    tab.add_edit("--ep-size", "8")
    tab.plan_button.click()
    assert tab.wait(10).state == "done"
    assert calls == [("gpu-b", BASE, [("--ep-size", "8")])]
    assert "+b --ep-size 8" in tab.plan_view.value and "daemon-reload" in tab.plan_view.value


def test_run_shows_the_phase_timeline_and_outcome_and_publishes_the_invocation(tmp_path):
    ctx = FakeContext(tmp_path, session_factory=lambda c, p: FakeSession(c, p))
    tab = VariantTab(ctx)
    tab.add_edit("--ep-size", "8")
    tab.run_button.click()
    assert tab.wait(10).state == "done"
    session = FakeSession.instances[-1]
    assert session.exited and session.edits == [("--ep-size", "8")] and "variant of" in session.purpose
    assert [e.phase for e in tab.events] == list(PHASES)
    for ph in PHASES:
        assert ph in tab.timeline.value
    assert "FAILED in cuda_graph_capture" in tab.outcome.value and "topk_ids" in tab.outcome.value
    inv = ctx.invocations[0]
    assert inv.invocation == "inv-1" and inv.unit.endswith("-wb-1234.service") and "failed" in inv.label


def test_run_needs_an_edit(tmp_path):
    tab = VariantTab(FakeContext(tmp_path))
    tab.run_button.click()
    assert "at least one edit" in tab.bar.error.value


def test_cancel_ends_the_run_and_the_session_restores(tmp_path):
    block = threading.Event()
    ctx = FakeContext(tmp_path, session_factory=lambda c, p: FakeSession(c, p, block=block))
    tab = VariantTab(ctx)
    tab.add_edit("--ep-size", "8")
    task = tab.run()
    assert task is not None
    tab.bar.cancel_button.click()
    tab.wait(10)
    block.set()
    assert task.state == "cancelled" and FakeSession.instances[-1].exited
    assert "cancelled" in tab.bar.status.value and ctx.invocations == []
    assert "cancelled" in tab.outcome.value and "host restored" in tab.outcome.value


def test_restore_without_a_record_says_so(tmp_path, monkeypatch):
    import workbench.widgets.variant_tab as vt

    monkeypatch.setattr(vt, "leftover_record", lambda host, svc: None)
    tab = VariantTab(FakeContext(tmp_path))
    tab.restore_button.click()
    assert tab.wait(10).state == "done"
    assert "nothing to restore" in tab.outcome.value


def test_errors_from_the_session_are_messages(tmp_path):
    from workbench.errors import LockHeld

    def locked(ctx, purpose):
        raise LockHeld("gpu-b is locked by another session (user=bob)", host="gpu-b")

    tab = VariantTab(FakeContext(tmp_path, session_factory=locked))
    tab.add_edit("--ep-size", "8")
    tab.run()
    assert tab.wait(10).state == "failed"
    assert "LockHeld" in tab.bar.error.value and "user=bob" in tab.bar.error.value
