"""The two views of an :class:`Analysis`: the stable JSON object and a short human summary."""

from __future__ import annotations

from typing import Any

from workbench.tracebacks.model import Analysis, Comparison, Final, Frame, RootCause, Traceback


def _frame(f: Frame | None, *, code: bool = False) -> dict[str, Any] | None:
    if f is None:
        return None
    d: dict[str, Any] = {"file": f.file, "line": f.line, "function": f.function}
    if code:
        d["code"] = f.code
    return d


def _traceback(t: Traceback) -> dict[str, Any]:
    return {
        "rank": t.rank,
        "start_line": t.start_line,
        "end_line": t.end_line,
        "frames": [_frame(f, code=True) for f in t.frames],
        "exception_type": t.exception_type,
        "message": t.message,
        "truncated": t.truncated,
        "chained_from": t.chained_from,
        "chain": t.chain,
    }


def _final(f: Final | None) -> dict[str, Any] | None:
    if f is None:
        return None
    return {
        "exception_type": f.exception_type,
        "message": f.message,
        "innermost_frame": _frame(f.innermost_frame),
        "phase": f.phase,
        "ranks": list(f.ranks),
        "truncated": f.truncated,
        "last_complete": {"exception_type": f.last_complete[0], "message": f.last_complete[1]} if f.last_complete else None,
    }


def _root(r: RootCause | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "kind": r.kind,
        "exception_type": r.exception_type,
        "message": r.message,
        "line": r.line,
        "innermost_frame": _frame(r.innermost_frame),
        "phase": r.phase,
        "ranks": list(r.ranks),
    }


def to_json(analysis: Analysis) -> dict[str, Any]:
    """The stable JSON object documented in docs/tracebacks.md (``workbench tracebacks --json``)."""
    return {
        "tracebacks": [_traceback(t) for t in analysis.tracebacks],
        "failures": [
            {
                "signature": f.signature,
                "exception_type": f.exception_type,
                "message": f.message,
                "innermost_frame": _frame(f.innermost_frame),
                "phase": f.phase,
                "ranks": list(f.ranks),
                "occurrences": f.occurrences,
                "tracebacks": list(f.tracebacks),
            }
            for f in analysis.failures
        ],
        "final": _final(analysis.final),
        "root_cause": _root(analysis.root_cause),
    }


def comparison_to_json(c: Comparison) -> dict[str, Any]:
    return {
        "same": list(c.same),
        "different": [list(p) for p in c.different],
        "only_in_a": list(c.only_in_a),
        "only_in_b": list(c.only_in_b),
        "root_cause": c.root_cause,
    }


def _first_line(text: str | None, width: int = 160) -> str:
    line = (text or "").split("\n", 1)[0]
    return line if len(line) <= width else line[: width - 1] + "…"


def _where(f: Frame | None) -> str:
    if f is None:
        return ""
    return f" at {f.file.rsplit('/', 2)[-1] if '/' in f.file else f.file}:{f.line if f.line is not None else '?'} in {f.function}"


def _ranks(ranks: tuple[str, ...]) -> str:
    if not ranks:
        return ""
    shown = ", ".join(ranks[:8]) + (f", … ({len(ranks)} ranks)" if len(ranks) > 8 else "")
    return f" on {shown}"


def format_summary(analysis: Analysis) -> str:
    """A few readable lines per failure, then the final error and the root cause."""
    out: list[str] = []
    if not analysis.failures and analysis.root_cause is None:
        return f"No tracebacks or failure lines in {analysis.lines} lines.\n"
    for i, f in enumerate(analysis.failures, 1):
        count = f" x{f.occurrences}" if f.occurrences > 1 else ""
        out.append(f"[{i}] {f.exception_type or '(cut before the exception)'}: {_first_line(f.message)}")
        out.append(f"    phase {f.phase}{_ranks(f.ranks)}{count}{_where(f.innermost_frame)}  [{f.signature}]")
    fin = analysis.final
    if fin is not None:
        out.append("")
        if fin.truncated:
            out.append(f"Final: the log ends inside a traceback (line {fin.line}){_where(fin.innermost_frame)}")
            if fin.last_complete:
                out.append(f"       last complete: {fin.last_complete[0]}: {_first_line(fin.last_complete[1])}")
        else:
            out.append(f"Final: {fin.exception_type}: {_first_line(fin.message)} (phase {fin.phase}{_ranks(fin.ranks)})")
    rc = analysis.root_cause
    if rc is not None:
        what = f"{rc.exception_type}: {_first_line(rc.message)}" if rc.kind == "exception" else _first_line(rc.message)
        out.append(f"Root cause (line {rc.line}, phase {rc.phase}{_ranks(rc.ranks)}): {what}")
    return "\n".join(out) + "\n"
