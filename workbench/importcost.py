"""Third-party imports that cost seconds at start-up for a feature we never use, put off until it is used.

jsonschema is imported by nbformat, altair and papermill: by every ``workbench run``, every runbook's
kernel, every report and the panel. When ``rfc3987_syntax`` is installed (jupyter-events asks for it),
jsonschema imports it at once, and that module compiles 38 lark grammars as it is imported: 1.5 s of a
1.8 s ``import jsonschema`` on a 2-core machine, paid again in each process. Only jsonschema's ``iri``
format check calls it. :func:`defer_rfc3987_syntax` puts a module in its place whose attributes import the
real one on first use, so that check still works, later. Nothing changes where jsonschema was imported
first or the module is not installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

DEFERRED = "rfc3987_syntax"


def defer_rfc3987_syntax() -> None:
    """Put a stand-in for ``rfc3987_syntax`` in ``sys.modules`` (see the module's docstring)."""
    if DEFERRED in sys.modules or "jsonschema" in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(DEFERRED)
    except (ImportError, ValueError):
        return
    if spec is None:
        return
    stand_in = types.ModuleType(DEFERRED, "Stand-in for rfc3987_syntax: imports it on first use (workbench.importcost).")
    stand_in.__spec__ = spec  # find_spec() still says where the real one is
    lock = threading.Lock()

    def real() -> Any:
        with lock:
            if sys.modules.get(DEFERRED) is stand_in:
                del sys.modules[DEFERRED]
            return importlib.import_module(DEFERRED)

    def is_valid_syntax(rule: str, value: str) -> bool:  # what jsonschema imports by name
        return bool(real().is_valid_syntax(rule, value))

    def attribute(name: str) -> Any:  # PEP 562; the import system's own questions (__path__...) stay unanswered
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(real(), name)

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    stand_in.__getattr__ = attribute  # type: ignore[method-assign]
    sys.modules[DEFERRED] = stand_in
