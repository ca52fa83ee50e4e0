"""Tracebacks: an invocation's failures grouped by signature (count, ranks, phase), frames, comparison."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from workbench.errors import ConfigError
from workbench.journal.read import invocation_text
from workbench.tracebacks import Analysis, Comparison, Failure, analyze, compare
from workbench.widgets.background import Task, TaskBar, TaskContext, guarded
from workbench.widgets.context import Invocation, PanelContext
from workbench.widgets.render import esc, pre, table

FAILURE_COLUMNS = ("exception", "message", "occurrences", "ranks", "phase", "where", "signature")


def failure_rows(analysis: Analysis) -> list[dict[str, Any]]:
    """One row per failure signature, the root cause's first."""
    rows = []
    for f in analysis.failures:
        where = f"{f.innermost_frame.function} ({f.innermost_frame.file.rsplit('/', 1)[-1]}:{f.innermost_frame.line})" \
            if f.innermost_frame else ""
        rows.append({"exception": f.exception_type or "", "message": (f.message or "")[:160],
                     "occurrences": f.occurrences, "ranks": list(f.ranks), "phase": f.phase, "where": where,
                     "signature": f.signature, "pointer": f.pointer})
    return rows


def failure_frames(analysis: Analysis, failure: Failure) -> str:
    """The frames of a failure's first occurrence (every chained block), innermost last."""
    out: list[str] = []
    for idx in failure.tracebacks:
        tb = analysis.tracebacks[idx]
        if out and tb.rank != analysis.tracebacks[failure.tracebacks[0]].rank:
            break  # one occurrence is enough: the other ranks print the same frames
        if tb.chain:
            out.append("The above exception was the direct cause of the following exception:" if tb.chain == "cause"
                       else "During handling of the above exception, another exception occurred:")
        out.append(f"[{tb.rank or '-'}] Traceback (lines {tb.start_line}-{tb.end_line}):")
        for fr in tb.frames:
            out.append(f'  File "{fr.file}", line {fr.line}, in {fr.function}')
            if fr.code:
                out.append(f"    {fr.code}")
        out.append(f"{tb.exception_type}: {tb.message}" if tb.exception_type else "(cut before the exception)")
    return "\n".join(out)


def comparison_html(c: Comparison, a: Analysis, b: Analysis) -> str:
    def name(an: Analysis, sig: str) -> str:
        f = next((f for f in an.failures if f.signature == sig), None)
        return f"{f.exception_type}: {(f.message or '')[:100]}" if f else sig

    rows = [{"verdict": "same", "A": name(a, s), "B": name(b, s)} for s in c.same]
    rows += [{"verdict": "different message", "A": name(a, x), "B": name(b, y)} for x, y in c.different]
    rows += [{"verdict": "only in A", "A": name(a, s), "B": ""} for s in c.only_in_a]
    rows += [{"verdict": "only in B", "A": "", "B": name(b, s)} for s in c.only_in_b]
    return (f"<b>root cause: {esc(c.root_cause.replace('_', ' '))}</b>"
            + table(rows, ("verdict", "A", "B"), css="wb-compare", empty="no failures in either"))


class TracebacksTab:
    """Analyze the log of an invocation (or any text) with :func:`workbench.tracebacks.analyze`."""

    def __init__(self, ctx: PanelContext, *, analyze_fn: Callable[[str], Analysis] = analyze) -> None:
        self.ctx = ctx
        self._analyze = analyze_fn
        self.analyses: dict[str, Analysis] = {}
        self.analysis: Analysis | None = None
        self.comparison: Comparison | None = None
        self.bar = TaskBar("tracebacks")
        self.source = widgets.Dropdown(options=[], description="invocation", layout=widgets.Layout(width="640px"))
        self.source.add_class("wb-tracebacks-source")
        self.analyze_button = widgets.Button(description="Analyze", icon="search")
        self.analyze_button.add_class("wb-tracebacks-analyze")
        self.summary = widgets.HTML(value="")
        self.summary.add_class("wb-tracebacks-summary")
        self.failures = widgets.HTML(value="")
        self.failures.add_class("wb-tracebacks-failures")
        self.failure = widgets.Dropdown(options=[], description="failure", layout=widgets.Layout(width="640px"))
        self.failure.add_class("wb-tracebacks-failure")
        self.frames = widgets.HTML(value="")
        self.frames.add_class("wb-tracebacks-frames")
        self.a = widgets.Dropdown(options=[], description="A", layout=widgets.Layout(width="480px"))
        self.b = widgets.Dropdown(options=[], description="B", layout=widgets.Layout(width="480px"))
        self.compare_button = widgets.Button(description="Compare", icon="columns")
        self.compare_button.add_class("wb-tracebacks-compare")
        self.compare_view = widgets.HTML(value="")
        self.compare_view.add_class("wb-tracebacks-compareview")
        err = self.bar.error
        self.analyze_button.on_click(guarded(err, lambda _b: self.analyze(self.source.value)))
        self.failure.observe(guarded(err, lambda ch: self.expand(ch["new"]) if ch["new"] else None), names="value")
        self.compare_button.on_click(guarded(err, lambda _b: self.compare(self.a.value, self.b.value)))
        ctx.on_invocation(self._add_invocation)
        self.widget = widgets.VBox([
            widgets.HBox([self.source, self.analyze_button]), self.bar.widget, self.summary, self.failures,
            self.failure, self.frames, widgets.HTML("<b>Compare two invocations</b>"),
            widgets.HBox([self.a, self.b, self.compare_button]), self.compare_view])

    def _add_invocation(self, inv: Invocation) -> None:
        """The newest start becomes the one to analyze and A; the one before it B."""
        options = self.ctx.invocation_options()
        keys = [k for _, k in options]
        for dd, pick in ((self.source, 0), (self.a, 0), (self.b, 1)):
            dd.options = options
            dd.value = keys[min(pick, len(keys) - 1)] if keys else None

    # -- analysis ------------------------------------------------------------------------
    def _text(self, key: str) -> str:
        inv = self.ctx.find_invocation(key)
        if inv is None:
            raise ConfigError(f"unknown invocation {key!r}; run or refresh something first")
        return invocation_text(self.ctx.services(inv.host), inv.unit, inv.invocation)

    def _analysis(self, key: str) -> Analysis:
        if key not in self.analyses:
            self.analyses[key] = self._analyze(self._text(key))
        return self.analyses[key]

    def analyze(self, key: str | None = None, *, text: str | None = None) -> Task | None:
        """Analyze the log of invocation ``key`` (or ``text`` given directly)."""
        if text is None and not key:
            raise ConfigError("pick an invocation (a variant run or a refresh lists them)")

        def work(tc: TaskContext) -> Analysis:
            tc.progress(0.3, "reading the log" if text is None else "analyzing")
            return self._analyze(text) if text is not None else self._analysis(str(key))

        return self.bar.submit("analyze", work, on_done=self.show)

    def show(self, analysis: Analysis) -> None:
        self.analysis = analysis
        rows = failure_rows(analysis)
        root = analysis.root_cause
        self.summary.value = (f"{len(analysis.tracebacks)} traceback block(s), {len(analysis.failures)} failure(s) "
                              f"in {analysis.lines} lines" + (f"; root cause: <b>{esc(root.exception_type or '')}"
                                                              f"</b> {esc(root.message[:160])} in {esc(root.phase)}"
                                                              if root else ""))
        self.failures.value = table(rows, FAILURE_COLUMNS, css="wb-failures", empty="no failures found")
        options = [(f"{r['exception']} ×{r['occurrences']} ({r['phase']})", r["signature"]) for r in rows]
        self.failure.options = options
        self.failure.value = options[0][1] if options else None

    def expand(self, signature: str) -> str:
        """The frames of the failure with ``signature`` (shown, and returned)."""
        if self.analysis is None:
            raise ConfigError("analyze something first")
        f = next((f for f in self.analysis.failures if f.signature == signature), None)
        if f is None:
            raise ConfigError(f"no failure {signature!r}")
        text = failure_frames(self.analysis, f)
        self.frames.value = pre(text, css="wb-frames")
        return text

    def compare(self, key_a: str, key_b: str) -> Task | None:
        if not key_a or not key_b:
            raise ConfigError("pick two invocations")

        def work(tc: TaskContext) -> tuple[Comparison, Analysis, Analysis]:
            tc.progress(0.2, "reading A")
            a = self._analysis(key_a)
            tc.check()
            tc.progress(0.6, "reading B")
            b = self._analysis(key_b)
            return compare(a, b), a, b

        def done(r: tuple[Comparison, Analysis, Analysis]) -> None:
            self.comparison = r[0]
            self.compare_view.value = comparison_html(*r)

        return self.bar.submit("compare", work, on_done=done)

    def wait(self, timeout: float | None = 600.0) -> Task | None:
        return self.bar.wait(timeout)
