"""One trial = one start of a variant, classified: outcome, phase, failure signature.

A trial runs inside a :class:`~workbench.session.HostSession` (locked, recorded,
restored), reads the invocation's whole log, and lets
:mod:`workbench.tracebacks` name the failure: its signature groups the same
failure on every rank and every restart, and keeps different failures apart.
Trials are keyed for reuse by (host, host fingerprint, base unit text, edits).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench.hosts import Host
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
    signature: str | None
    message: str | None
    seconds: float
    reused: bool = False
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
    return {"signature": sig, "exception_type": exc_type, "message": message, "phase": phase,
            "root_cause_kind": kind}


def run_trial(
    session: HostSession,
    base: str,
    edits: dict[str, EditValue] | list[tuple[str, EditValue]],
    *,
    health_path: str = "/health",
    timeout: float = 900.0,
    fingerprint: str = "",
    on_event: Any = None,
) -> TrialRecord:
    """Start ``base`` + ``edits`` as a variant in ``session`` and classify what happened."""
    norm = normalize_edits(edits)
    base_text = session.base_text(base)
    started = time.time()
    trial = session.run_variant(base, list(norm), health_path=health_path, timeout=timeout, on_event=on_event)
    out = trial.outcome
    info: dict[str, Any] = {"signature": None, "exception_type": None, "message": None, "phase": out.phase,
                            "root_cause_kind": None}
    excerpt = ""
    if not out.ok:
        text = session.svc.invocation_text(trial.variant, out.invocation_id) if out.invocation_id else ""
        text = text or "\n".join(out.tail)
        info = classify(text)
        if info["signature"] is None:
            # No traceback and no telling log line: the exit itself is the signature.
            how = f"signal {trial.exit_status}" if trial.exit_code == "killed" else f"exit {trial.exit_status}"
            info["signature"] = f"{out.outcome}:{out.phase}:{how}"
            info["message"] = out.reason
        if info["phase"] in (None, "unknown"):
            info["phase"] = out.phase
        excerpt = "\n".join(text.splitlines()[-80:])
    return TrialRecord(
        edits=[[f, list(v) if isinstance(v, tuple) else v] for f, v in norm],
        outcome=out.outcome,
        phase=info["phase"] if not out.ok else "serving",
        exception_type=info["exception_type"],
        signature=info["signature"],
        message=info["message"],
        seconds=round(out.seconds, 3),
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
