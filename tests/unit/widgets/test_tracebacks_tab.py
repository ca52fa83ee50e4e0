"""Tracebacks tab: a captured failed start grouped by signature, its frames, and a comparison."""

from __future__ import annotations

from workbench.widgets.context import Invocation
from workbench.widgets.tracebacks_tab import TracebacksTab, failure_rows

from .fakes import EP8_INVOCATION, EP8_LOG, FakeContext

VARIANT = "sglang-k26-ddtree-wb-ecf0cadcae.service"


def test_failures_grouped_with_count_ranks_phase(tmp_path):
    ctx = FakeContext(tmp_path)
    tab = TracebacksTab(ctx)
    ctx.add_invocation(Invocation("gpu-b", VARIANT, EP8_INVOCATION, "variant --ep-size 8"))
    assert tab.source.value == f"gpu-b:{EP8_INVOCATION}"
    tab.analyze_button.click()
    assert tab.wait(10).state == "done"
    rows = failure_rows(tab.analysis)
    top = rows[0]
    assert top["exception"] == "AttributeError" and top["occurrences"] == 8
    assert top["ranks"] == [f"TP{i} EP{i}" for i in range(8)] and top["phase"] == "cuda_graph_capture"
    assert "AttributeError" in tab.failures.value and "TP7 EP7" in tab.failures.value
    assert "cuda_graph_capture" in tab.summary.value
    # the first failure is expanded to its frames
    assert "Traceback" in tab.frames.value and "topk_ids" in tab.frames.value
    assert ("invocation_text", EP8_INVOCATION) in ctx.fake_services["gpu-b"].calls


def test_expand_and_analyze_text(tmp_path):
    tab = TracebacksTab(FakeContext(tmp_path))
    tab.analyze(text=EP8_LOG)
    tab.wait(10)
    sig = tab.analysis.failures[0].signature
    text = tab.expand(sig)
    assert text.count("Traceback (lines") >= 1 and 'File "' in text


def test_compare_two_invocations(tmp_path):
    ctx = FakeContext(tmp_path)
    tab = TracebacksTab(ctx)
    ctx.add_invocation(Invocation("gpu-b", "sglang-k26-ddtree.service", "good-1", "baseline"))
    ctx.add_invocation(Invocation("gpu-b", VARIANT, EP8_INVOCATION, "variant"))
    assert tab.a.value != tab.b.value
    tab.compare(f"gpu-b:{EP8_INVOCATION}", "gpu-b:good-1")
    assert tab.wait(10).state == "done"
    assert tab.comparison.only_in_a and not tab.comparison.only_in_b
    assert "only in A" in tab.compare_view.value and "AttributeError" in tab.compare_view.value


def test_analyze_without_a_source_is_a_message(tmp_path):
    tab = TracebacksTab(FakeContext(tmp_path))
    tab.analyze_button.click()
    assert "pick an invocation" in tab.bar.error.value
