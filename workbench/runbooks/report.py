"""A run's ``report.html``: one file that opens offline in any browser.

:func:`export_html` renders an executed (sanitized) runbook notebook with
nbconvert's lab template, rearranged for a reader: the title, the run's status
when it failed, the ``conclusion``-tagged cells, the body, then the
``provenance``-tagged cells and the parameters.  Code inputs stay in the page,
collapsed in ``<details>``; prompts are hidden.  Nothing is loaded from the
network: the template's require.js, MathJax, Mermaid and widget scripts (CDN
links) are left out, Vega-Lite/Vega charts become inline SVG (vl-convert, no
data fetched), remote ``<script src>``/``<link href>`` in outputs are removed,
and the result is checked (:func:`external_refs`).  When cells never ran (the
kernel died), the conclusion and provenance come from ``result.json``.
"""

from __future__ import annotations

import copy
import functools
import html
import json
import re
from pathlib import Path
from typing import Any

import nbformat
from jinja2 import DictLoader
from nbconvert import HTMLExporter

from workbench.errors import WorkbenchError
from workbench.redact import Redactor

REPORT_NAME = "report.html"
ERROR_MARKER_TAG = "papermill-error-cell-tag"  # papermill's failure banner and anchor
PARAMETER_TAGS = ("parameters", "injected-parameters")
GENERATED_TAG = "workbench-generated"

_TEMPLATE = r"""
{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}
<style type="text/css">
details.wb-code { margin: 2px 0; }
details.wb-code > summary { cursor: pointer; color: var(--jp-ui-font-color2, #616161); font-size: 85%; }
.wb-status { border-left: 4px solid #d32f2f; padding: 4px 12px; background: #fdecea; }
.wb-culprit { border-left: 4px solid #f57c00; padding: 2px 12px; margin: 8px 0; }
details.wb-traceback > summary { cursor: pointer; }
details.wb-traceback pre { font-size: 85%; overflow-x: auto; }
</style>
{%- endblock extra_css -%}
{%- block data_svg scoped -%}
<div class="jp-RenderedSVG jp-OutputArea-output {{ extra_class }}" data-mime-type="image/svg+xml">
{{ output.data['image/svg+xml'] }}
</div>
{%- endblock data_svg -%}
{% block input_group -%}
{%- if cell.source.strip() -%}
<details class="wb-code"><summary>code</summary>
{{ super() }}
</details>
{%- endif -%}
{%- endblock input_group %}
"""

_REMOTE_TAG = re.compile(
    r"<script\b[^>]*\bsrc\s*=\s*[\"']?\s*(?:https?:)?//[^>]*>\s*</script>"
    r"|<link\b[^>]*\bhref\s*=\s*[\"']?\s*(?:https?:)?//[^>]*>", re.I)
_EXTERNAL = re.compile(
    r"<(?:script|img|iframe|embed|source|audio|video|track|input|frame)\b[^>]*\bsrc\s*=\s*[\"']?\s*(?:https?:)?//"
    r"|<link\b[^>]*\bhref\s*=\s*[\"']?\s*(?:https?:)?//"
    r"|@import\s+(?:url\()?\s*[\"']?\s*(?:https?:)?//"
    r"|url\(\s*[\"']?\s*(?:https?:)?//"
    r"|\bimport\s*\(\s*[\"'](?:https?:)?//", re.I)
_REMOVED = "<!-- remote resource removed: reports open offline -->"
_SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.I | re.S)
_QUOTED_URL = re.compile(r"[\"'`](?:https?:)?//[\w-]+(?:\.[\w-]+)+")
_VEGALITE = re.compile(r"^application/vnd\.vegalite\.v\d+(?:\.\d+)*\+json$")
_VEGA = re.compile(r"^application/vnd\.vega\.v\d+(?:\.\d+)*\+json$")


def external_refs(html: str) -> list[str]:
    """What in ``html`` would load something from the network (empty: it opens offline): remote
    ``src``/``href`` of loading tags, CSS imports and urls, and URLs quoted in scripts (loaders)."""
    refs = [m.group(0)[:160] for m in _EXTERNAL.finditer(html)]
    for m in _SCRIPT.finditer(html):
        if "json" not in m.group(1).lower():  # data blocks (widget state) load nothing
            refs += [u.group(0)[:160] for u in _QUOTED_URL.finditer(m.group(2))]
    return refs


def altair_spec(html: str) -> tuple[str, dict[str, Any]] | None:
    """The (mode, spec) inside Altair's HTML renderer output (which loads Vega from a CDN), if it is one."""
    if "vegaEmbed" not in html:
        return None
    end = html.rfind("</script>")
    start = html.rfind("})(", 0, end)
    if start < 0:
        return None
    try:
        decoder = json.JSONDecoder()
        spec, i = decoder.raw_decode(html, start + 3)
        rest = html[i:].lstrip().lstrip(",").lstrip()
        opts = decoder.raw_decode(rest)[0] if rest.startswith("{") else {}
    except ValueError:
        return None
    return str(opts.get("mode", "vega-lite")), spec


def _tags(cell: Any) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _markdown(source: str) -> Any:
    return nbformat.v4.new_markdown_cell(source, metadata={"tags": [GENERATED_TAG]})


def _html_cell(html: str) -> Any:
    out = nbformat.v4.new_output("display_data", data={"text/html": html, "text/plain": ""})
    return nbformat.v4.new_code_cell("", outputs=[out], metadata={"tags": [GENERATED_TAG]})


def _has_output(cells: list[Any]) -> bool:
    return any(c.cell_type == "code" and c.get("outputs") for c in cells)


def status_html(result: dict[str, Any]) -> str:
    """The top-of-report block of a failed run: what failed, whether the host is restored, how to resume."""
    f = result.get("failure") or {}
    esc = html.escape
    lines = [f"<b>❌ Run failed: {esc(str(f.get('kind', 'unknown')))}.</b> {esc(str(f.get('message', '')))}"]
    restored = result.get("host_restored")
    if restored is not None:
        lines.append(f"Host restored: <b>{'yes' if restored else 'NO'}</b>.")
    n = len(result.get("trials") or [])
    if n:
        lines.append(f"{n} trial(s) were recorded; rerunning with the same parameters reuses them.")
    return '<div class="wb-status">' + "".join(f"<p>{line}</p>" for line in lines) + "</div>"


def arrange(nb: Any, result: dict[str, Any] | None = None) -> Any:
    """The report's cell order: title, status, conclusion, body, provenance, parameters."""
    from workbench.runbooks import show

    cells = list(nb.cells)
    banner = [c for c in cells if ERROR_MARKER_TAG in _tags(c) and 'id="papermill-error-cell"' not in c.source]
    title = next((c for c in cells if c.cell_type == "markdown" and c.source.lstrip().startswith("# ")), None)
    conclusion = [c for c in cells if "conclusion" in _tags(c)]
    provenance = [c for c in cells if "provenance" in _tags(c) and c not in conclusion]
    params = [c for c in cells if set(_tags(c)) & set(PARAMETER_TAGS)]
    placed = {id(c) for c in [*banner, *conclusion, *provenance, *params]} | ({id(title)} if title else set())
    body = [c for c in cells if id(c) not in placed]
    status: list[Any] = []
    if result and result.get("status") not in (None, "ok") and _has_output(conclusion):
        status.append(_html_cell(status_html(result)))
    if result and not _has_output(conclusion) and result.get("conclusion"):
        conclusion = [c for c in conclusion if c.cell_type == "markdown"] or [_markdown("## Conclusion")]
        conclusion.append(_markdown(show.conclusion(result).data + "\n\n*(from result.json: the conclusion "
                                    "cells did not run)*"))
    if result and not _has_output(provenance) and (result.get("provenance") or result.get("params")):
        provenance = [c for c in provenance if c.cell_type == "markdown"] or [_markdown("## Provenance")]
        provenance.append(_html_cell(show.provenance(result).data))
    if params:
        params.insert(0, _markdown("### Parameters cells"))
    out = copy.copy(nb)
    out.cells = [*banner, *([title] if title else []), *status, *conclusion, *body, *provenance, *params]
    return out


def _vl_version(spec: dict[str, Any]) -> str | None:
    import vl_convert

    m = re.search(r"/v(\d+)\.(\d+)", str(spec.get("$schema", "")))
    if not m:
        return None
    want = f"{m.group(1)}.{m.group(2)}"
    return want if want in vl_convert.get_vegalite_versions() else None


def charts_to_svg(nb: Any) -> int:
    """Replace Vega-Lite and Vega outputs (and Altair's CDN-loading HTML) by inline SVG, and any other
    output that would load code from the network by a note; returns how many charts were converted."""
    import vl_convert

    n = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data") or {}
            html = data.get("text/html")
            found = altair_spec("".join(html) if isinstance(html, list) else html) if html else None
            if found is not None:
                mode, spec = found
                data["application/vnd.vega.v5+json" if mode == "vega" else "application/vnd.vegalite.v6+json"] = spec
            for mime in list(data):
                if not (_VEGALITE.match(mime) or _VEGA.match(mime)):
                    continue
                spec = data.pop(mime)
                spec = json.loads(spec) if isinstance(spec, str) else dict(spec)
                try:
                    if _VEGALITE.match(mime):
                        svg = vl_convert.vegalite_to_svg(spec, vl_version=_vl_version(spec), allowed_base_urls=[])
                    else:
                        svg = vl_convert.vega_to_svg(spec, allowed_base_urls=[])
                except Exception as exc:  # a chart that needs the network or is invalid: say so, keep going
                    data["text/plain"] = f"[chart not rendered offline: {str(exc).splitlines()[0][:200]}]"
                    continue
                data.pop("text/html", None)  # a renderer's HTML would win over SVG and needs a CDN
                data["image/svg+xml"] = svg
                n += 1
            html = data.get("text/html")
            if html:
                html = _REMOTE_TAG.sub(_REMOVED, "".join(html) if isinstance(html, list) else html)
                data["text/html"] = html if not external_refs(html) else (
                    "<p><i>[this output loads code from the network: left out of the offline report]</i></p>")
    return n


@functools.lru_cache(maxsize=1)
def _exporter() -> HTMLExporter:
    return HTMLExporter(template_name="lab", extra_loaders=[DictLoader({"workbench_report.html.j2": _TEMPLATE})],
                        template_file="workbench_report.html.j2", embed_images=True,
                        exclude_input_prompt=True, exclude_output_prompt=True)


def render_html(nb: Any, *, result: dict[str, Any] | None = None, title: str = "",
                redactor: Redactor | None = None) -> str:
    """The report's HTML text for ``nb`` (not written anywhere)."""
    nb = arrange(copy.deepcopy(nb), result)
    charts_to_svg(nb)
    head = next((c.source.lstrip()[2:].splitlines()[0] for c in nb.cells
                 if c.cell_type == "markdown" and c.source.lstrip().startswith("# ")), "Runbook report")
    nb.metadata["title"] = title or (f"{head} — {result['run_id']}" if result and result.get("run_id") else head)
    html, _ = _exporter().from_notebook_node(nb, resources={"metadata": {"name": nb.metadata["title"]}})
    html = _REMOTE_TAG.sub(_REMOVED, html)
    html = (redactor or Redactor()).text(html)
    refs = external_refs(html)
    if refs:
        raise WorkbenchError(f"report would load from the network: {refs[:3]}; fix the template or the output")
    return html


def _write(run_dir: Path, html: str) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / REPORT_NAME
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(path)
    return path


def export_fallback(run_dir: str | Path, result: dict[str, Any], why: str, *,
                    redactor: Redactor | None = None) -> Path:
    """A plain ``report.html`` from ``result.json`` alone, for when the notebook cannot be rendered."""
    from workbench.runbooks import show

    esc = html.escape
    body = [f"<h1>Run {esc(str(result.get('run_id', '')))}: {esc(str(result.get('runbook', '')))}</h1>",
            f"<p><i>The full report could not be rendered: {esc(why)}</i></p>"]
    if result.get("status") not in (None, "ok"):
        body.append(status_html(result))
    body += [f"<h2>Conclusion</h2><p>{esc(str(result.get('conclusion', '')))}</p>", "<h2>Provenance</h2>",
             show.provenance(result).data]
    page = ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>"
            f"{esc(str(result.get('run_id', 'run')))}</title></head><body>{''.join(body)}</body></html>")
    return _write(Path(run_dir), (redactor or Redactor()).text(page))


def export_html(notebook: str | Path | Any, run_dir: str | Path, *, redactor: Redactor | None = None,
                result: dict[str, Any] | None = None) -> Path:
    """Write ``run_dir/report.html`` for ``notebook`` (a path or a NotebookNode); returns its path.

    ``result`` defaults to ``run_dir/result.json`` when there is one."""
    run_dir = Path(run_dir)
    nb = nbformat.read(str(notebook), as_version=4) if isinstance(notebook, str | Path) else notebook
    if result is None:
        try:
            result = json.loads((run_dir / "result.json").read_text())
        except (OSError, ValueError):
            result = None
    return _write(run_dir, render_html(nb, result=result, redactor=redactor))
