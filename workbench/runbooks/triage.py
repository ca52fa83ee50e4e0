"""The triage runbook: why did the last start (or a given one) of a unit end the way it did?

Read-only: no lock, nothing started or stopped.  ``run(params)`` reads one invocation's journal
(:mod:`workbench.journal.read`: its own lines, PID 1's about it, what journald lost), groups its tracebacks by
signature (:func:`workbench.tracebacks.analyze`: ranks, phase, final vs root cause), rebuilds the
phase timeline (:func:`workbench.phases.timeline`, timed by the journal), and says the likely
cause in words: the root-cause exception, the phase it happened in, the innermost frame, and —
when the unit is a workbench variant (its ``X-WorkbenchVariantOf=`` names the base; a removed
variant is recognised by its name, its edits then come from the ledger) — the flags that differ
from its base (those pure pieces: :mod:`workbench.runbooks.cause`).

Tables: ``journal`` (the invocation's rows), ``failures``, ``phases``.

``result.json``::

    {"runbook": "triage", "status": "ok"|"failed", "host": str, "unit": str,
     "invocation": {"id": str, "start": str|null, "end": str|null, "result": str|null,
                    "exit_code": str|null, "exit_status": int|null},
     "source": "journal_read", "journal_lines": int, "journal_lost": str|null,
     "variant_of": str|null, "flag_diff": [[flag, value]] (value: true, a string, a list, or null = removed),
     "flags_source": "unit files"|"ledger"|null,
     "root_cause": {"kind", "exception_type", "message", "line", "innermost_frame": {"file", "line",
                    "function"}|null, "phase", "ranks"}|null,
     "final": {"exception_type", "message", "innermost_frame", "phase", "ranks", "truncated",
               "last_complete", "line"}|null,
     "failures": [{"signature", "exception_type", "message", "innermost_frame", "phase", "ranks",
                   "occurrences", "tracebacks"}],
     "phases": [{"phase", "started_at", "ended_at", "duration_s", "failed_in"}], "failed_in": str|null,
     "likely_cause": str, "conclusion": str, "host_restored": true (nothing is changed),
     "server_starts": 0, "wall_seconds": float, "failure": {"kind", "message"}|null,
     "started": float, "finished": float, "params": {...}, "provenance": {...}}
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from pydantic import Field

from workbench import plots
from workbench.errors import CommandFailed, ConfigError, HostError, ServiceError
from workbench.journal import read as journal_read
from workbench.journal.frame import select_invocations
from workbench.runbooks.cause import (
    first_line,
    flag_diff,
    likely_cause,
    line_times,
    phase_rows,
    variant_base,
)
from workbench.runbooks.params import RunbookParams
from workbench.runbooks.schemas import TriageResult
from workbench.runbooks.skeleton import RunbookRun
from workbench.runs import Ledger, Run, read_table
from workbench.services import Services, exec_argv, services_for
from workbench.tracebacks import analyze, to_json
from workbench.variants import EditValue


class TriageParams(RunbookParams):
    host: str = Field(min_length=1, description="ssh_config alias of the GPU host")
    unit: str = Field(min_length=1, description="the unit whose start to explain (a variant too)")
    invocation: str = Field("last", description="an InvocationID, 'last', or an index (-1 last, 0 oldest)")


# -- reading (thin: the only code touching the host) --------------------------------------------


def _invocation_arg(text: str) -> str | int:
    t = text.strip()
    return int(t) if t.lstrip("-").isdigit() else t


def _meta(row: dict[str, Any]) -> dict[str, Any]:
    def iso(v: Any) -> str | None:
        return None if v is None or pd.isna(v) else pd.Timestamp(v).isoformat()

    status = row.get("exit_status")
    return {"id": str(row.get("invocation") or ""), "start": iso(row.get("start")), "end": iso(row.get("end")),
            "result": row.get("result"), "exit_code": None if pd.isna(row.get("exit_code")) else row.get("exit_code"),
            "exit_status": None if status is None or pd.isna(status) else int(status)}


def read_invocation(svc: Services, unit: str, which: str) -> tuple[str, pd.DataFrame, dict[str, Any], str]:
    """(the unit's own log text, the journal frame, invocation facts, source)."""
    table = journal_read.invocations(svc, unit)
    if table.empty:
        raise ConfigError(f"{unit}: the journal holds no invocation of this unit")
    picked = select_invocations(table, _invocation_arg(which), None)
    meta = _meta({str(k): v for k, v in picked.iloc[-1].to_dict().items()})
    frame = journal_read.read(svc, unit, invocation=meta["id"])
    return journal_read.frame_text(frame), frame, meta, "journal_read"


def _flags(svc: Services, unit: str, base: str, data_dir: str) -> tuple[list[tuple[str, EditValue]], str | None]:
    try:
        argv = exec_argv(svc.unit_text(unit), unit)
        return flag_diff(exec_argv(svc.unit_text(base), base), argv), "unit files"
    except (ServiceError, CommandFailed, ConfigError):
        pass
    trials = Ledger(data_dir).trials()
    if not trials.empty and "variant" in trials:
        hit = trials[trials["variant"] == unit]
        if not hit.empty:
            return [(e[0], e[1]) for e in hit.iloc[-1]["edits"]], "ledger"
    return [], None


def _unit_text(svc: Services, unit: str) -> str | None:
    try:
        return svc.unit_text(unit)
    except (ServiceError, CommandFailed, ConfigError):
        return None


def run(params: TriageParams) -> tuple[Run, dict[str, Any]]:
    """Explain one invocation of ``params.unit`` on ``params.host``; reads only."""
    with RunbookRun("triage", params, TriageResult, kinds=((HostError, "ssh_lost"),)) as rr:
        rr.provenance = {"host": params.host}
        rr.set(host=params.host, unit=params.unit, host_restored=True, server_starts=0)  # nothing is changed
        svc = services_for(rr.connect(params.host))
        text, frame, meta, source = read_invocation(svc, params.unit, params.invocation)
        a = analyze(text)
        rows = phase_rows(text, line_times(frame))
        failed_in = next((r["failed_in"] for r in reversed(rows) if r["phase"] == "failed"), None)
        base = variant_base(params.unit, _unit_text(svc, params.unit))
        flags, flags_source = _flags(svc, params.unit, base, params.data_dir) if base else ([], None)
        words = likely_cause(a, invocation=meta, variant_of=base, flags=flags, failed_in=failed_in)
        js = to_json(a)
        if frame is not None:
            rr.table("journal", pd.DataFrame(frame).drop(columns=["parts"], errors="ignore"))
        rr.table("failures", pd.DataFrame([{**f, "innermost_frame": str(f["innermost_frame"])} for f in js["failures"]]))
        rr.table("phases", pd.DataFrame(rows))
        lost = getattr(frame, "lost", None)
        rr.conclude(
            f"{params.unit}, invocation {meta['id'][:12]} ({meta.get('result') or '?'}): {words}",
            invocation=meta, source=source, journal_lines=len(text.splitlines()),
            journal_lost=lost.describe() if lost is not None and lost.incomplete else None,
            variant_of=base, flag_diff=[[f, list(v) if isinstance(v, tuple) else v] for f, v in flags],
            flags_source=flags_source, root_cause=js["root_cause"], final=js["final"], failures=js["failures"],
            phases=[{k: (v.isoformat() if isinstance(v, pd.Timestamp) else v) for k, v in r.items() if k != "line_no"}
                    for r in rows],
            failed_in=failed_in, likely_cause=words)
    return rr.run, rr.result


# -- what the notebook shows ----------------------------------------------------


def tables(run: Run) -> dict[str, pd.DataFrame]:
    return {p.stem: read_table(p) for p in sorted(run.dir.glob("*.parquet"))}


def failures_frame(result: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for i, f in enumerate(result.get("failures") or [], 1):
        fr = f.get("innermost_frame") or {}
        rows.append({"rank": i, "exception": f.get("exception_type") or "", "message": first_line(f.get("message"), 120),
                     "phase": f.get("phase"), "ranks": ", ".join(f.get("ranks") or []),
                     "occurrences": f.get("occurrences"),
                     "innermost frame": f"{fr.get('function')} ({str(fr.get('file', '')).split('site-packages/')[-1]}:"
                                        f"{fr.get('line')})" if fr else "", "signature": f.get("signature")})
    return pd.DataFrame(rows)


def final_vs_root(result: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for what in ("root_cause", "final"):
        x = result.get(what) or {}
        if x:
            rows.append({"": what.replace("_", " "), "exception": x.get("exception_type") or "",
                         "message": first_line(x.get("message"), 120), "phase": x.get("phase"),
                         "ranks": ", ".join(x.get("ranks") or [])})
    return pd.DataFrame(rows)


def phases_frame(result: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(result.get("phases") or [])


def phase_chart(result: dict[str, Any]) -> Any:
    """The invocation's phases as bars (``plots.trial_timeline``), the outcome marked at the end."""
    rows = [r for r in result.get("phases") or [] if r.get("started_at") and r.get("ended_at")]
    if not rows:
        return None
    ts = [(pd.Timestamp(r["started_at"]).timestamp(), pd.Timestamp(r["ended_at"]).timestamp()) for r in rows]
    inv = result.get("invocation") or {}
    name = f"{result.get('unit')} {str(inv.get('id', ''))[:8]}"
    trials = pd.DataFrame([{"trial": name, "start": ts[0][0], "end": max(e for _, e in ts),
                            "outcome": inv.get("result") or "?"}])
    ph = pd.DataFrame([{"trial": name, "phase": r["phase"] if r["phase"] != "failed" else f"failed in {r['failed_in']}",
                        "start": s, "end": max(e, s + 0.05)} for r, (s, e) in zip(rows, ts, strict=True)])
    return plots.trial_timeline(trials, ph)


def likely_cause_md(result: dict[str, Any]) -> Any:
    from IPython.display import Markdown

    return Markdown(f"**Likely cause.** {result.get('likely_cause') or result.get('conclusion', '')}")


def notebook() -> Any:
    from workbench.runbooks.notebooks import runbook

    return runbook(
        'triage',
        "Triage: why did this start of a unit end the way it did?",
        "Read one invocation's journal (the last by default), group its tracebacks by signature with ranks and "
        "phase, tell the root cause from the last error, rebuild the phase timeline, and say the likely cause in "
        "words — for a workbench variant, with the flags that differ from its base. Read-only: nothing is locked, "
        "started or stopped.",
        TriageParams,
        ['rb.likely_cause_md(result)'],
        [
            ('md', '## Failures by signature\n\nRoot cause (what to fix) against the last error logged, then every failure with its ranks, phase and innermost frame.', []),
            ('code', 'rb.final_vs_root(result)', []),
            ('code', 'rb.failures_frame(result)', []),
            ('md', '## Phase timeline', []),
            ('code', 'rb.phase_chart(result)', []),
            ('code', 'rb.phases_frame(result)', []),
        ],
    )
