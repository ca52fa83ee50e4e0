"""Sanitizing an executed notebook: nothing secret and no address survives in it.

Papermill writes parameter values into the ``injected-parameters`` cell and into
``metadata.papermill.parameters`` (papermill #271, #706).  :func:`sanitize`
rebuilds that cell from the redacted values (names kept, so the run stays
reproducible with the secrets given again by reference), redacts the metadata,
and passes every source, output (stream, error, text/*, SVG, JSON, Vega-Lite...)
and metadata through the :class:`~workbench.redact.Redactor`; binary images are
kept as they are, cell attachments other than images are dropped.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import nbformat

from workbench.redact import Redactor

_BINARY = ("image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf")


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _clean_output(out: dict[str, Any], r: Redactor) -> dict[str, Any]:
    kind = out.get("output_type")
    if kind == "stream":
        out["text"] = r.text(_text(out.get("text", "")))
    elif kind == "error":
        out["ename"] = r.text(str(out.get("ename", "")))
        out["evalue"] = r.text(str(out.get("evalue", "")))
        out["traceback"] = [r.text(str(line)) for line in out.get("traceback", [])]
    data = out.get("data")
    if isinstance(data, dict):
        for mime, value in list(data.items()):
            if mime in _BINARY:
                continue
            data[mime] = r.text(_text(value)) if isinstance(value, str | list) and (
                mime.startswith("text/") or mime.endswith("+xml") or isinstance(value, str)) else r.obj(value)
    if "metadata" in out:
        out["metadata"] = r.obj(out["metadata"])
    return out


def injected_source(params: Mapping[str, Any], language: str = "python") -> str:
    """The injected-parameters cell as kept: the given names, their values redacted."""
    from papermill.translators import translate_parameters

    return translate_parameters("python3", language, dict(params),
                                "Parameters (injected by workbench run; secrets and addresses redacted)")


def sanitize(nb: Any, redactor: Redactor, params: Mapping[str, Any] | None = None, *,
             notebook_path: str | None = None) -> Any:
    """A copy of an executed notebook with nothing secret left: the injected cell rebuilt from redacted
    values, ``metadata.papermill.parameters`` redacted, every source, output and metadata redacted."""
    nb = copy.deepcopy(nb)
    meta = nb.get("metadata", {})
    pm = meta.get("papermill")
    if params is None:
        params = (pm or {}).get("parameters") or {}
    redactor.learn(dict(params))
    safe = redactor.obj(dict(params))
    language = str(meta.get("kernelspec", {}).get("language") or "python")
    for cell in nb.get("cells", []):
        tags = cell.get("metadata", {}).get("tags", [])
        if "injected-parameters" in tags:
            cell["source"] = injected_source(safe, language)
        else:
            cell["source"] = redactor.text(_text(cell.get("source", "")))
        cell["metadata"] = redactor.obj(cell.get("metadata", {}))
        if "outputs" in cell:
            cell["outputs"] = [_clean_output(o, redactor) for o in cell["outputs"]]
        if "attachments" in cell:
            cell["attachments"] = {k: v for k, v in cell["attachments"].items()
                                   if set(v) <= set(_BINARY)}  # images only
    if isinstance(pm, dict):
        pm["parameters"] = safe
        pm["environment_variables"] = {}
        if notebook_path is not None:
            pm["output_path"] = notebook_path
    nb["metadata"] = redactor.obj(meta)
    return nbformat.from_dict(nb)
