"""One trial = one start of a variant, classified: outcome, phase, failure signature.

A trial runs inside a :class:`~workbench.session.HostSession` (locked, recorded,
restored), reads the invocation's whole log, and lets
:mod:`workbench.tracebacks` name the failure.  Trials are keyed for reuse by
(host, host fingerprint, base unit text, edits).

The **phase** of a failure is named by :func:`failure_phase`, the one precedence every runbook
(bisect, factorial, A/B, sweep, on a host, a deployment or a Slurm cluster) uses: the start's
timeline (the phase the log was in when the failure began, else the last it entered), else the
phase the root cause was raised in when its traceback (frames, else its own words) names one;
never ``serving`` unless the log declared the server ready (a scheduler-loop frame before
readiness is the warmup request); ``unknown`` only when neither tells.  The **signature** a
bisect keys on is exception type + normalised message + phase, in words (``signature``) and as a short id (``signature_id``):
the same exception in ``cuda_graph_capture`` and in ``warmup`` are two signatures,
:func:`related` pairs them.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench.hosts import Host
from workbench.journal.read import invocation_text
from workbench.phases import PHASES
from workbench.redact import clip
from workbench.session import HostSession
from workbench.tracebacks import analyze, normalize_message
from workbench.variants import EditValue, edits_key, normalize_edits, one_line

FINGERPRINT_COMMAND = (
    "cat /etc/machine-id /proc/sys/kernel/random/boot_id 2>/dev/null; "
    "find /etc -xdev -type f -printf '%p %s %T@\\n' 2>/dev/null | sort | sha256sum"
)


@dataclass
class TrialRecord:
    """A trial as the ledger keeps it (JSON- and Parquet-friendly)."""

    edits: list[list[Any]]
    outcome: str  # ready | failed | timeout
    phase: str
    exception_type: str | None
    signature: str | None  # in words: "Type: normalised message in phase"
    message: str | None
    seconds: float
    reused: bool = False
    signature_id: str | None = None  # "Type@hash" of (exception type, normalised message, phase)
    frames_phase: str | None = None  # what the root cause's frames said, kept for the record
    ranks: list[str] = field(default_factory=list)  # the ranks the root cause was seen on (the whole log)
    where: str = ""  # the root cause's innermost frame: "function (file.py:line)"
    host: str = ""
    base_unit: str = ""
    unit_hash: str = ""
    fingerprint: str = ""
    edits_key: str = ""
    variant: str = ""
    invocation: str = ""
    exit_status: int | None = None
    exit_code: str = ""
    started_at: float = 0.0
    detection_latency: float | None = None
    reason: str = ""
    timeline: list[dict[str, Any]] = field(default_factory=list)
    log_excerpt: str = ""
    root_cause_kind: str | None = None

    def row(self) -> dict[str, Any]:
        return asdict(self)


def failure_words(exception_type: str | None, message: str | None, width: int = 90) -> str:
    """``RuntimeError (CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling ...)``."""
    if not exception_type and not message:
        return "a failure"
    text = clip(one_line((message or "").splitlines()[0] if message else ""), width)  # redacted, then cut
    return f"{exception_type or 'failure'} ({text})" if text else str(exception_type)


STARTUP_PHASES = PHASES[:5]  # nccl_init .. warmup: the phases of a start before readiness


def failure_phase(timeline_phase: str | None, frames_phase: str | None, *, ready_seen: bool = False) -> str:
    """The phase a failed start died in: the timeline's where it names a step, else the root cause's.

    The timeline is what the watch saw (the phase the log was in when the failure began, else the
    last it entered): a start's steps come in order and a failure masks every later one, so where
    the log was is the phase the failure belongs to, whichever frames the exception was raised
    from (a CUBLAS error raised in a matmul helper during graph capture is a capture failure).
    ``frames_phase`` (the root cause's: :func:`classify`, its frames, else its words) names it
    only where the timeline names no step.  ``startup_other`` from either is used only when
    neither names a step; ``serving`` becomes ``warmup`` before readiness (the scheduler loop
    before ready serves the warmup request); ``unknown`` only when nothing tells.
    """
    for phase in (timeline_phase, frames_phase):
        if phase in STARTUP_PHASES:
            return str(phase)
        if phase == "serving":
            return "serving" if ready_seen else "warmup"
    return "startup_other" if "startup_other" in (frames_phase, timeline_phase) else "unknown"


def start_failure_phase(out: Any, frames_phase: str | None) -> str:
    """:func:`failure_phase` of a watched start (:class:`workbench.watch.Outcome`) whose root cause
    was in ``frames_phase``: the timeline and readiness are the watch's."""
    timeline_phase, ready_seen = _timeline_phase(out)
    return failure_phase(timeline_phase, frames_phase, ready_seen=ready_seen)


def signature_of(exception_type: str | None, message: str | None, phase: str) -> tuple[str, str]:
    """(words, id) of a failure: exception type + normalised first message line + phase."""
    norm = normalize_message(message)
    what = f"{exception_type}: {norm}" if exception_type and norm else (exception_type or norm or "failure")
    words = f"{what} in {phase}"
    digest = hashlib.sha1(f"{exception_type}|{norm}|{phase}".encode()).hexdigest()[:10]
    return words, f"{exception_type or 'log'}@{digest}"


def related(signatures: list[tuple[str | None, str | None, str]]) -> list[list[int]]:
    """Groups (indices) of signatures with the same exception and message in different phases."""
    by: dict[tuple[str | None, str], list[int]] = {}
    for i, (exc, msg, _phase) in enumerate(signatures):
        by.setdefault((exc, normalize_message(msg)), []).append(i)
    return [g for g in by.values() if len({signatures[i][2] for i in g}) > 1]


def host_fingerprint(host: Host) -> str:
    """Machine id, boot id and the state of /etc: a reboot or any configuration change invalidates reuse."""
    res = host.run(["sh", "-c", FINGERPRINT_COMMAND], timeout=60)
    return hashlib.sha256(res.stdout.encode()).hexdigest()[:16]


def unit_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def classify(text: str) -> dict[str, Any]:
    """Signature, exception type, message and phase of what a failed start logged."""
    a = analyze(text)
    root = a.root_cause
    sig: str | None = None
    exc_type = message = None
    phase = "unknown"
    kind = None
    if root is not None:
        kind = root.kind
        exc_type, message, phase = root.exception_type, root.message, root.phase
        if root.kind == "exception":
            match = [f for f in a.failures if f.exception_type == root.exception_type and not f.pointer]
            match = match or [f for f in a.failures if f.exception_type == root.exception_type]
            sig = match[0].signature if match else None
        if sig is None:
            norm = normalize_message(root.message)
            sig = f"{root.exception_type or 'log'}@{hashlib.sha1(norm.encode()).hexdigest()[:10]}"
    elif a.failures:
        f = a.failures[0]
        sig, exc_type, message, phase = f.signature, f.exception_type, f.message, f.phase
    ranks: list[str] = []
    where = ""
    frame = None
    if root is not None:
        ranks, frame = list(root.ranks), root.innermost_frame
    elif a.failures:
        ranks, frame = list(a.failures[0].ranks), a.failures[0].innermost_frame
    if frame is not None:
        where = f"{frame.function} ({frame.file.rsplit('/', 1)[-1]}:{frame.line})"
    return {"signature": sig, "exception_type": exc_type, "message": message, "phase": phase,
            "root_cause_kind": kind, "ranks": ranks, "where": where}


def _timeline_phase(out: Any) -> tuple[str | None, bool]:
    """(the phase the watch says the start died in, whether the log declared it ready)."""
    phases = [e.phase for e in out.timeline]
    ready = out.ok or "serving" in phases  # the tracker enters serving on the server's own "ready" line
    if out.phase and out.phase != "unknown":
        return out.phase, ready
    named = [p for p in phases if p not in ("unknown", "failed")]
    return (named[-1] if named else None), ready


def judge_failure(svc: Any, trial: Any) -> tuple[dict[str, Any], str]:
    """A failed start judged, for every runbook alike: (the :func:`classify` fields with the phase by
    :func:`start_failure_phase`, the readable ``signature`` and its ``signature_id``; the log text)."""
    out = trial.outcome
    text = trial.log_text if trial.log_text is not None else (
        invocation_text(svc, trial.variant, out.invocation_id) if out.invocation_id else "")
    text = text or "\n".join(out.tail)
    info = classify(text)
    info["frames_phase"] = info["phase"]
    info["phase"] = start_failure_phase(out, info["phase"])
    if info["signature"] is None:
        # No traceback and no telling log line: the exit itself is the failure.
        how = f"signal {trial.exit_status}" if trial.exit_code == "killed" else f"exit {trial.exit_status}"
        what = "timeout" if out.outcome == "timeout" else f"{out.outcome} ({how})"
        info["signature"], info["signature_id"] = signature_of(None, what, info["phase"])
        info["message"] = out.reason
    else:
        info["signature"], info["signature_id"] = signature_of(info["exception_type"], info["message"], info["phase"])
    return info, text


def run_trial(
    session: HostSession,
    base: str,
    edits: dict[str, EditValue] | list[tuple[str, EditValue]],
    *,
    health_path: str = "/health",
    timeout: float = 900.0,
    fingerprint: str = "",
    on_event: Any = None,
    stop: threading.Event | None = None,
) -> TrialRecord:
    """Start ``base`` + ``edits`` as a variant in ``session`` and classify what happened (``stop``: see
    :meth:`HostSession.run_variant`)."""
    norm = normalize_edits(edits)
    base_text = session.base_text(base)
    started = time.time()
    trial = session.run_variant(base, list(norm), health_path=health_path, timeout=timeout, on_event=on_event,
                                read_log=True, stop=stop)
    out = trial.outcome
    info: dict[str, Any] = {"signature": None, "exception_type": None, "message": None, "phase": out.phase,
                            "root_cause_kind": None}
    excerpt = ""
    if not out.ok:
        info, text = judge_failure(session.svc, trial)
        excerpt = "\n".join(text.splitlines()[-80:])
    return TrialRecord(
        edits=[[f, list(v) if isinstance(v, tuple) else v] for f, v in norm],
        outcome=out.outcome,
        phase=info["phase"] if not out.ok else "serving",
        exception_type=info["exception_type"],
        signature=info["signature"],
        message=info["message"],
        seconds=round(out.seconds, 3),
        signature_id=info.get("signature_id"),
        frames_phase=info.get("frames_phase"),
        ranks=list(info.get("ranks") or []),
        where=str(info.get("where") or ""),
        host=session.host.name,
        base_unit=base,
        unit_hash=unit_hash(base_text),
        fingerprint=fingerprint,
        edits_key=edits_key(norm),
        variant=trial.variant,
        invocation=out.invocation_id,
        exit_status=trial.exit_status,
        exit_code=trial.exit_code,
        started_at=started,
        detection_latency=out.detection_latency,
        reason=out.reason,
        timeline=[{"phase": e.phase, "seconds": round(e.seconds or 0.0, 3)} for e in out.timeline],
        log_excerpt=excerpt,
        root_cause_kind=info["root_cause_kind"],
    )
