"""What runbook notebooks display: the conclusion first, provenance last (shared by every runbook)."""

from __future__ import annotations

import html
import json
from typing import Any

from IPython.display import HTML, Markdown


def conclusion(result: dict[str, Any]) -> Markdown:
    status = result.get("status", "?")
    head = "OK:" if status == "ok" else "FAILED:"
    lines = [f"### {head} {result.get('conclusion', '')}", ""]
    facts = []
    for key, label in (("server_starts", "server starts"), ("wall_seconds", "wall time (s)"),
                       ("host_restored", "host restored")):
        if key in result:
            facts.append(f"{label}: **{result[key]}**")
    if facts:
        lines.append(" · ".join(facts))
    if result.get("failure"):
        f = result["failure"]
        lines += ["", f"**Run failed** ({f.get('kind')}): {f.get('message')}"]
    return Markdown("\n".join(lines))


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
