"""What runbook notebooks display: the conclusion first, provenance last (shared by every runbook)."""

from __future__ import annotations

import html
import json
from typing import Any

from IPython.display import HTML

from workbench.runbooks import explain


def conclusion(result: dict[str, Any]) -> HTML:
    """The run's status and conclusion, its key figures, and for each culprit where it failed
    (innermost frame and file, phase, ranks) with the root-cause traceback one click away."""
    status = result.get("status", "?")
    head = "OK:" if status == "ok" else "FAILED:"
    parts = [f"<h3>{html.escape(head)} {html.escape(str(result.get('conclusion', '')))}</h3>"]
    facts = []
    for key, label in (("server_starts", "server starts"), ("wall_seconds", "wall time (s)"),
                       ("host_restored", "host restored")):
        if key in result:
            facts.append(f"{label}: <b>{html.escape(str(result[key]))}</b>")
    if facts:
        parts.append("<p>" + " · ".join(facts) + "</p>")
    if result.get("failure"):
        f = result["failure"]
        parts.append(f"<p><b>Run failed</b> ({html.escape(str(f.get('kind')))}): {html.escape(str(f.get('message')))}</p>")
    parts += [culprit_html(v) for v in explain.views(result)]
    return HTML("\n".join(parts))


def culprit_html(v: explain.CulpritView) -> str:
    """One culprit: its edits, readable signature (hash as id), where, ranks, the traceback collapsed."""
    e = html.escape
    out = [f"<div class='wb-culprit'><p><b>Culprit: <code>{e(v.edits)}</code></b> → {e(v.signature)} "
           f"<small>(id <code>{e(v.signature_id)}</code>)</small></p><ul>"]
    if v.redacted:
        out.append(f"<li>value of {e(', '.join(v.redacted))} redacted in this report (an address or secret: "
                   "the run's own parameters hold it)</li>")
    where = (f"in <b><code>{e(v.function)}</code></b> of <code>{e(v.file)}</code>"
             + (f" (line {v.line})" if v.line is not None else "")) if v.function else "innermost frame not in the log"
    out.append(f"<li>where: {where}, during <b>{e(v.phase or 'unknown phase')}</b></li>")
    out.append(f"<li>ranks: {e(explain.ranks_words(v.ranks)) if v.ranks else 'not named in the log excerpt'}</li>")
    out.append("</ul>")
    if v.traceback:
        out.append(f"<details class='wb-traceback'><summary>root-cause traceback ({len(v.traceback.splitlines())} "
                   f"lines)</summary><pre>{e(v.traceback)}</pre></details>")
    out.append("</div>")
    return "".join(out)


def culprit_lines(result: dict[str, Any]) -> list[str]:
    """The culprits as text lines (``workbench run``/``demo``)."""
    lines = []
    for v in explain.views(result):
        where = f" at {v.where}" if v.where else ""
        ranks = f" on {explain.ranks_words(v.ranks)}" if v.ranks else ""
        note = f"  (value of {', '.join(v.redacted)} redacted)" if v.redacted else ""
        said = f" in {v.phase}"  # signatures carry their phase in words: say it once
        phase = "" if v.signature.endswith(said) else f",{said}"
        lines.append(f"culprit: {v.edits} -> {v.signature}{'' if v.function else where}{phase}{ranks}"
                     f"  [{v.signature_id}]{note}")
    return lines


def provenance(result: dict[str, Any]) -> HTML:
    prov = dict(result.get("provenance") or {})
    diff = prov.pop("unit_diff", "")
    params = result.get("params") or {}
    rows = "".join(f"<tr><th style='text-align:left'>{html.escape(str(k))}</th><td>{html.escape(json.dumps(v) if isinstance(v, dict | list) else str(v))}</td></tr>"
                   for k, v in prov.items())
    prow = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td><code>{html.escape(json.dumps(v))}</code></td></tr>"
                   for k, v in params.items())
    parts = ["<h4>Provenance</h4>", f"<table>{rows}</table>", "<h4>Parameters</h4>", f"<table>{prow}</table>"]
    if diff:
        parts += ["<h4>Unit diff (base → all edits)</h4>", f"<pre>{html.escape(diff)}</pre>"]
    parts.append(f"<p>run <code>{html.escape(str(result.get('run_id', '')))}</code></p>")
    return HTML("\n".join(parts))
