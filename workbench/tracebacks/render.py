"""The two views of an :class:`Analysis`: the stable JSON object and a short human summary.

The JSON's shape is the ``*JSON`` typed dicts below; :func:`json_schema` derives the JSON
Schema from them (docs/tracebacks.schema.json is its output), so the schema and the code that
writes the object cannot drift apart.
"""

from __future__ import annotations

from typing import Any, Literal, cast

from typing_extensions import TypedDict  # pydantic reads these on Python < 3.12 too

from workbench.tracebacks.model import Analysis, Comparison, Final, Frame, RootCause, Traceback

Phase = Literal["nccl_init", "weight_loading", "kv_cache_alloc", "cuda_graph_capture", "warmup", "serving",
                "startup_other", "unknown"]


class FrameJSON(TypedDict):
    """A frame: the path as printed, its line (None when not printed) and the function."""

    file: str
    line: int | None
    function: str


class CodeFrameJSON(FrameJSON):
    """A frame with the source line printed under it (None when there was none)."""

    code: str | None


class WhereJSON(TypedDict):
    """The innermost frame that is not a generic wrapper: function name and file basename."""

    function: str
    file: str


class TracebackJSON(TypedDict):
    """One ``Traceback (most recent call last):`` block (or faulthandler dump, or bare exception line)."""

    rank: str | None
    start_line: int
    end_line: int
    frames: list[CodeFrameJSON]
    exception_type: str | None
    message: str | None
    truncated: bool
    chained_from: int | None
    chain: Literal["cause", "context"] | None


class FailureJSON(TypedDict):
    """Blocks with one signature: the same failure on several ranks or starts."""

    signature: str
    signature_text: str
    exception_type: str | None
    message: str | None
    innermost_frame: FrameJSON | None
    phase: Phase
    ranks: list[str]
    occurrences: int
    tracebacks: list[int]


class LastCompleteJSON(TypedDict):
    exception_type: str
    message: str


class FinalJSON(TypedDict):
    """The exception of the last block; ``truncated`` when the log ends inside it."""

    exception_type: str | None
    message: str | None
    innermost_frame: FrameJSON | None
    phase: Phase
    ranks: list[str]
    truncated: bool
    last_complete: LastCompleteJSON | None


class RootCauseJSON(TypedDict):
    """What to fix: an exception, or a log line; ``exception_type`` None when its traceback was cut."""

    kind: Literal["exception", "log_line"]
    exception_type: str | None
    message: str
    line: int
    innermost_frame: FrameJSON | None
    where: WhereJSON | None
    signature: str | None
    signature_text: str
    phase: Phase
    ranks: list[str]


class AnalysisJSON(TypedDict):
    """The object ``workbench tracebacks --json`` prints (docs/tracebacks.md)."""

    tracebacks: list[TracebackJSON]
    failures: list[FailureJSON]
    final: FinalJSON | None
    root_cause: RootCauseJSON | None


def _frame(f: Frame | None) -> FrameJSON | None:
    if f is None:
        return None
    return {"file": f.file, "line": f.line, "function": f.function}


def _code_frame(f: Frame) -> CodeFrameJSON:
    return {"file": f.file, "line": f.line, "function": f.function, "code": f.code}


def _traceback(t: Traceback) -> TracebackJSON:
    return {
        "rank": t.rank,
        "start_line": t.start_line,
        "end_line": t.end_line,
        "frames": [_code_frame(f) for f in t.frames],
        "exception_type": t.exception_type,
        "message": t.message,
        "truncated": t.truncated,
        "chained_from": t.chained_from,
        "chain": t.chain,
    }


def _final(f: Final | None) -> FinalJSON | None:
    if f is None:
        return None
    return {
        "exception_type": f.exception_type,
        "message": f.message,
        "innermost_frame": _frame(f.innermost_frame),
        "phase": cast(Phase, f.phase),
        "ranks": list(f.ranks),
        "truncated": f.truncated,
        "last_complete": {"exception_type": f.last_complete[0], "message": f.last_complete[1]} if f.last_complete else None,
    }


def _root(r: RootCause | None) -> RootCauseJSON | None:
    if r is None:
        return None
    from workbench.tracebacks.diagnose import innermost_frame  # diagnose imports nothing from here

    inner = innermost_frame([r.innermost_frame]) if r.innermost_frame is not None else None
    where: WhereJSON | None = None
    if inner is not None:
        where = {"function": inner.function, "file": inner.file.replace("\\", "/").rsplit("/", 1)[-1]}
    return {
        "kind": r.kind,
        "exception_type": r.exception_type,
        "message": r.message,
        "line": r.line,
        "innermost_frame": _frame(r.innermost_frame),
        "where": where,
        "signature": r.signature,
        "signature_text": r.signature_text,
        "phase": cast(Phase, r.phase),
        "ranks": list(r.ranks),
    }


def to_json(analysis: Analysis) -> AnalysisJSON:
    """The stable JSON object documented in docs/tracebacks.md (``workbench tracebacks --json``)."""
    return {
        "tracebacks": [_traceback(t) for t in analysis.tracebacks],
        "failures": [
            {
                "signature": f.signature,
                "signature_text": f.signature_text,
                "exception_type": f.exception_type,
                "message": f.message,
                "innermost_frame": _frame(f.innermost_frame),
                "phase": cast(Phase, f.phase),
                "ranks": list(f.ranks),
                "occurrences": f.occurrences,
                "tracebacks": list(f.tracebacks),
            }
            for f in analysis.failures
        ],
        "final": _final(analysis.final),
        "root_cause": _root(analysis.root_cause),
    }


def json_schema() -> dict[str, Any]:
    """The JSON Schema of :func:`to_json`'s object, derived from the typed dicts above."""
    from pydantic import TypeAdapter  # only this function needs it

    schema: dict[str, Any] = TypeAdapter(AnalysisJSON).json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "workbench tracebacks --json"
    return schema


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
            what = f"{fin.exception_type}: {_first_line(fin.message)}" if fin.exception_type else _first_line(fin.message)
            out.append(f"Final: {what} (phase {fin.phase}{_ranks(fin.ranks)})")
    rc = analysis.root_cause
    if rc is not None:
        what = f"{rc.exception_type}: {_first_line(rc.message)}" if rc.kind == "exception" else _first_line(rc.message)
        out.append(f"Root cause (line {rc.line}, phase {rc.phase}{_ranks(rc.ranks)}): {what}")
    return "\n".join(out) + "\n"
