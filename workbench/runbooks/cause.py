"""Why a start ended as it did, in words: pure pieces of the triage runbook.

The flags a workbench variant's command line changes against its base's, the base a variant was
made from (its ``X-WorkbenchVariantOf=`` or its name), the likely cause in one paragraph from a
:class:`~workbench.tracebacks.Analysis`, and the phase timeline of a log timed by the journal.
Tested on real captured logs (``tests/fixtures/runbooks/``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from workbench import phases as phases_mod
from workbench.redact import clip
from workbench.tracebacks import Analysis, Frame
from workbench.unitfile import UnitFile
from workbench.variants import MARKER_KEY, EditValue, describe_edits, is_flag

_VARIANT_NAME = re.compile(r"^(?P<stem>.+)-wb-[0-9a-f]{10}\.service$")


# -- flags (pure) -------------------------------------------------------------------------------


def flags_of(argv: Sequence[str]) -> dict[str, EditValue]:
    """``--flag [values...]`` of a command line: True for a bare flag, a string, or a tuple of strings."""
    out: dict[str, EditValue] = {}
    i = 1  # argv[0] is the program
    while i < len(argv):
        tok = argv[i]
        if not is_flag(tok):
            i += 1
            continue
        name, eq, inline = tok.partition("=")
        if eq:
            out[name] = inline
            i += 1
            continue
        values = []
        i += 1
        while i < len(argv) and not is_flag(argv[i]):
            values.append(argv[i])
            i += 1
        out[name] = True if not values else values[0] if len(values) == 1 else tuple(values)
    return out


def flag_diff(base_argv: Sequence[str], argv: Sequence[str]) -> list[tuple[str, EditValue]]:
    """The edits that turn ``base_argv`` into ``argv``: changed or added flags, and removed ones (None)."""
    base, now = flags_of(base_argv), flags_of(argv)
    out: list[tuple[str, EditValue]] = [(f, v) for f, v in now.items() if base.get(f) != v]
    out += [(f, None) for f in base if f not in now]
    return out


def variant_base(unit: str, unit_text: str | None) -> str | None:
    """The base a workbench variant was made from: its ``X-WorkbenchVariantOf=``, else its name."""
    if unit_text:
        base = UnitFile.parse(unit_text, source=unit).get("Unit", MARKER_KEY)
        if base:
            return base
    m = _VARIANT_NAME.match(unit)
    return f"{m.group('stem')}.service" if m else None


# -- words (pure) -------------------------------------------------------------------------------


def _where(f: Frame | None) -> str:
    if f is None:
        return ""
    path = f.file.split("site-packages/", 1)[-1]
    return f", innermost frame {f.function} ({path}:{f.line if f.line is not None else '?'})"


def ranks_words(ranks: Sequence[str]) -> str:
    if not ranks:
        return ""
    if len(ranks) <= 3:
        return f" on {', '.join(ranks)}"
    return f" on {len(ranks)} ranks ({ranks[0]}..{ranks[-1]})"


def first_line(text: str | None, width: int = 140) -> str:
    return clip((text or "").strip().split("\n", 1)[0], width)  # redacted, then cut


def likely_cause(a: Analysis, *, invocation: dict[str, Any] | None = None, variant_of: str | None = None,
                 flags: Sequence[tuple[str, EditValue]] = (), failed_in: str | None = None) -> str:
    """The root cause, where it happened and, for a variant, the flags that differ from its base."""
    inv = invocation or {}
    rc = a.root_cause
    words = []
    if rc is None:
        state = inv.get("result")
        if state in ("running", None) and not a.failures:
            return "No failure in this invocation: no traceback and no failing log line" + (
                " (it is still running)." if state == "running" else ".")
        ended = f"ended ({state}, exit {inv.get('exit_status')})"
        words.append(f"The invocation {ended} without a traceback or a telling log line; "
                     "look at its last lines and PID 1's exit record.")
    else:
        what = f"{rc.exception_type}: {first_line(rc.message)}" if rc.exception_type else first_line(rc.message)
        phase = rc.phase if rc.phase not in (None, "unknown") else (failed_in or "an unknown phase")
        words.append(f"Root cause: {what} during {phase}{_where(rc.innermost_frame)}{ranks_words(rc.ranks)}.")
        fin = a.final
        if fin is not None and fin.exception_type and (fin.exception_type, first_line(fin.message)) != (
                rc.exception_type, first_line(rc.message)):
            words.append(f"The last error logged ({fin.exception_type}: {first_line(fin.message, 90)}) follows from it.")
        sigs = {f.signature for f in a.failures if not f.pointer}
        if len(sigs) > 1:
            words.append(f"{len(sigs)} distinct failures in this invocation (see the table).")
    if variant_of:
        if flags:
            words.append(f"The unit is a workbench variant of {variant_of}; it differs from its base by "
                         f"{describe_edits(list(flags))}: the likely trigger (the bisect runbook confirms which).")
        else:
            words.append(f"The unit is a workbench variant of {variant_of}; its flags could not be compared "
                         "(unit file gone and no ledger entry).")
    return " ".join(words)


# -- the phase timeline (pure) ------------------------------------------------------------------


def line_times(frame: pd.DataFrame | None) -> list[Any]:
    """The journal time of every line of ``frame.raw`` (a multi-line message repeats its time)."""
    if frame is None or frame.empty:
        return []
    own = frame[frame["origin"].isin(["unit", "unattributed"])] if "origin" in frame else frame
    out: list[Any] = []
    for t, msg in zip(own["time"], own["message"].fillna(""), strict=True):
        out += [t] * (msg.count("\n") + 1)
    return out


def phase_rows(text: str, times: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """``phases.timeline`` of the log, timed by the journal where known, repeats of a phase merged."""
    rows: list[dict[str, Any]] = []
    for r in phases_mod.timeline(text):
        at = times[r["line_no"] - 1] if 0 < r["line_no"] <= len(times) else r["started_at"]
        at = pd.Timestamp(at) if at is not None else None
        if at is not None and at.tzinfo is None:
            at = at.tz_localize("UTC")
        if rows and rows[-1]["phase"] == r["phase"] and r["phase"] != "failed":
            continue
        rows.append({"phase": r["phase"], "started_at": at, "failed_in": r["failed_in"], "line_no": r["line_no"]})
    for a, b in itertools.pairwise(rows):
        a["ended_at"] = b["started_at"]
    if rows:
        rows[-1]["ended_at"] = pd.Timestamp(times[-1]) if times else None
    for r in rows:
        ok = r["started_at"] is not None and r["ended_at"] is not None and not pd.isna(r["started_at"]) \
            and not pd.isna(r["ended_at"])
        r["duration_s"] = round((r["ended_at"] - r["started_at"]).total_seconds(), 3) if ok else None
    return rows
