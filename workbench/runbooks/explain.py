"""What a report says about each culprit: a readable signature (the hash kept as its id), where the
failure happened (innermost frame and file), on which ranks, and the root-cause traceback.

The fields come from the culprit in ``result.json`` when the bisect wrote them (``signature``
readable with ``signature_id``, ``innermost_frame``, ``ranks``, ``traceback``); for older
results, or fields left out, they are worked out from the failing trial's log excerpt in
``trials.parquet`` with :func:`workbench.tracebacks.analyze`.  Values the redactor replaced
(``[ADDRESS]``, ``[REDACTED]``) are named as redacted, not shown as if they were the value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.redact import ADDRESS, REDACTED

_CALL = re.compile(r"`?([A-Za-z_][\w:.]*)\((?:[^()]|\([^()]*\))*\)`?")
_HASH_ID = re.compile(r"^[\w.]+@[0-9a-f]{6,}$")
MESSAGE_WIDTH = 100


@dataclass(frozen=True)
class CulpritView:
    """One culprit as a reader sees it."""

    edits: str  # "--ep-size 8, --enable-nccl-nvls"
    redacted: tuple[str, ...]  # flags whose value was redacted
    signature: str  # "RuntimeError: CUDA error: ... at forward_absorb_prepare (deepseek_v2.py)"
    signature_id: str  # "RuntimeError@bf5b7c54f7"
    exception_type: str | None
    phase: str
    function: str  # innermost frame's function ("" when unknown)
    file: str  # its file's name ("deepseek_v2.py")
    line: int | None
    ranks: tuple[str, ...]
    traceback: str  # the root-cause traceback as logged ("" when unknown)

    @property
    def where(self) -> str:
        """``forward_absorb_prepare (deepseek_v2.py:121)``, or ``""``."""
        if not self.function:
            return ""
        at = f"{self.file}:{self.line}" if self.file and self.line is not None else self.file
        return f"{self.function} ({at})" if at else self.function


def key_message(message: str | None, width: int = MESSAGE_WIDTH) -> str:
    """The first line of an exception message with long call expressions cut to their name:
    ``CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling cublasGemmStridedBatchedEx``."""
    first = (message or "").strip().split("\n", 1)[0]
    first = _CALL.sub(lambda m: m.group(1), first)
    return first if len(first) <= width else first[: width - 1] + "…"


def readable_signature(exception_type: str | None, message: str | None, function: str = "", file: str = "") -> str:
    head = exception_type or "failure"
    text = key_message(message)
    out = f"{head}: {text}" if text else head
    if function:
        out += f" at {function}" + (f" ({file})" if file else "")
    return out


def describe_edit(flag: str, value: Any) -> str:
    return flag if value is True else f"{flag} {value}"


def _redacted_flags(edits: list[list[Any]]) -> tuple[str, ...]:
    return tuple(str(e[0]) for e in edits if len(e) > 1 and isinstance(e[1], str) and (ADDRESS in e[1] or REDACTED in e[1]))


def _trial_for(culprit: dict[str, Any], trials: list[dict[str, Any]]) -> dict[str, Any] | None:
    want = [list(e) for e in culprit.get("edits", [])]
    failing = [t for t in trials if [list(e) for e in (t.get("edits") or [])] == want and t.get("outcome") != "ready"]
    with_log = [t for t in failing if t.get("log_excerpt")]
    picked = with_log or failing
    return picked[0] if picked else None


def _from_log(text: str) -> dict[str, Any]:
    """Innermost frame, ranks and the root-cause traceback text of a log excerpt."""
    from workbench.tracebacks import analyze

    if not text.strip():
        return {}
    analysis = analyze(text)
    rc = analysis.root_cause
    if rc is None:
        return {}
    lines = text.splitlines()
    block = next((t for t in analysis.tracebacks if t.start_line <= rc.line <= t.end_line), None)
    frame = rc.innermost_frame or (block.innermost if block else None)
    out: dict[str, Any] = {"ranks": list(rc.ranks), "phase": rc.phase,
                           "traceback": "\n".join(lines[block.start_line - 1: block.end_line]) if block else ""}
    if frame is not None:
        out["innermost_frame"] = {"function": frame.function, "file": frame.file, "line": frame.line}
    return out


def view(culprit: dict[str, Any], trials: list[dict[str, Any]] | None = None) -> CulpritView:
    """The reader's view of one culprit of a ``result.json`` (``trials``: rows of ``trials.parquet``)."""
    edits = [list(e) for e in culprit.get("edits", [])]
    known = dict(culprit)
    if not (known.get("innermost_frame") and known.get("traceback") is not None and known.get("ranks") is not None):
        trial = _trial_for(culprit, trials or [])
        derived = _from_log(str(trial.get("log_excerpt") or "")) if trial else {}
        for key, value in derived.items():
            known.setdefault(key, value)
            if known.get(key) is None:
                known[key] = value
    frame = known.get("innermost_frame") or {}
    function = str(frame.get("function") or "")
    file = Path(str(frame.get("file") or "")).name
    raw_sig = str(culprit.get("signature") or "")
    if culprit.get("signature_id"):
        signature, signature_id = raw_sig, str(culprit["signature_id"])
    else:  # an older result: ``signature`` is the hash
        signature_id = raw_sig
        signature = readable_signature(culprit.get("exception_type"), culprit.get("message"), function, file)
    if _HASH_ID.match(signature):  # a readable one was promised but a hash came
        signature = readable_signature(culprit.get("exception_type"), culprit.get("message"), function, file)
    return CulpritView(
        edits=", ".join(describe_edit(str(e[0]), e[1] if len(e) > 1 else True) for e in edits),
        redacted=_redacted_flags(edits), signature=signature, signature_id=signature_id,
        exception_type=culprit.get("exception_type"), phase=str(culprit.get("phase") or known.get("phase") or ""),
        function=function, file=file, line=frame.get("line"), ranks=tuple(known.get("ranks") or ()),
        traceback=str(known.get("traceback") or ""))


def trials_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of the run's ``trials.parquet`` (found from the result's data_dir and run_id), or []."""
    from workbench.runs import read_table

    params = result.get("params") or {}
    run_id = result.get("run_id") or params.get("run_id")
    if not run_id:
        return []
    path = Path(str(params.get("data_dir") or "data")) / "runs" / str(run_id) / "trials.parquet"
    if not path.is_file():
        return []
    frame = read_table(path)
    return [{str(k): (None if _isna(v) else v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def _isna(value: Any) -> bool:
    try:
        return value is None or bool(value != value)
    except (TypeError, ValueError):
        return False


def views(result: dict[str, Any]) -> list[CulpritView]:
    culprits = result.get("culprits") or []
    trials = trials_of(result) if culprits else []
    return [view(c, trials) for c in culprits]


def ranks_words(ranks: tuple[str, ...], limit: int = 8) -> str:
    if not ranks:
        return ""
    shown = ", ".join(ranks[:limit])
    return shown + (f", … ({len(ranks)} ranks)" if len(ranks) > limit else "")
