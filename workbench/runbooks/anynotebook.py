"""Any parameterised notebook as a runbook: its parameter model read from its ``parameters`` cell.

``workbench run PATH.ipynb`` runs a notebook that is not one of ours with the same run directory,
ledger entry, sanitising, restore of the hosts it names (``host``/``hosts`` parameters) and
report.  A notebook that names a model (``metadata.workbench.parameters``) is checked against it;
any other gets one built from its ``parameters`` cell (papermill's own parser): each parameter's
type from its annotation or its default's literal, the default as written.  A default that is not
a literal (an expression) becomes required-or-any: the value given is passed as it is.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from pydantic import Field, create_model

from workbench.errors import ConfigError
from workbench.runbooks.params import RunbookParams

_TYPES: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool, "list": list, "dict": dict}


def _annotation(inferred: str | None, default: Any, literal: bool) -> Any:
    base = (inferred or "").split("[", 1)[0].strip()
    if base in _TYPES:
        return _TYPES[base] | None if literal and default is None else _TYPES[base]
    if literal and default is not None and type(default) in _TYPES.values():
        return type(default)
    return Any


def inferred_model(path: Path) -> type[RunbookParams]:
    """A parameter model for ``path`` from its ``parameters`` cell (ConfigError: it has none)."""
    import papermill

    try:
        found = papermill.inspect_notebook(str(path))
    except Exception as exc:  # papermill raises its own and nbformat's errors for a bad file
        raise ConfigError(f"{path}: not a notebook papermill can read: {type(exc).__name__}: {exc}") from None
    if not found:
        raise ConfigError(f"{path} has no cell tagged 'parameters': tag one so its values can be given with -p")
    fields: dict[str, Any] = {}
    for name, info in found.items():
        if name in RunbookParams.model_fields:
            continue
        text = str(info.get("default") or "")
        try:
            default, literal = ast.literal_eval(text), True
        except (ValueError, SyntaxError):
            default, literal = None, False
        fields[name] = (_annotation(info.get("inferred_type_name"), default, literal),
                        Field(default, description=str(info.get("help") or "")))
    model: type[RunbookParams] = create_model(
        f"{path.stem.title().replace('_', '').replace('-', '')}Params", __base__=RunbookParams, **fields)
    return model
