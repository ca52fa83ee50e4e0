"""Checks of what a user gives, run before anything touches a host or starts a kernel.

One entry point per kind of input, shared by the Python API, the ``workbench`` command
and the runbooks' parameters, so the three refuse the same things with the same words:

* :func:`check_timeout`: seconds that are a real number, finite and > 0 (``-5``, ``0``,
  ``nan`` and ``inf`` are refused, never read as "the default");
* :func:`check_edits`: flag edits as :func:`workbench.variants.normalize_edits` takes them
  (keys are flags such as ``--ep-size``; values strings, numbers, booleans, None or lists),
  and refused when empty where an empty set means nothing to try;
* :func:`loads_json`: JSON text with duplicate keys refused (``json.loads`` keeps the last).

Each raises :class:`~workbench.errors.ConfigError` (the command exits 2).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.errors import ConfigError
from workbench.variants import EditValue, normalize_edits

__all__ = ["check_edits", "check_timeout", "loads_json"]


def check_timeout(value: Any, name: str = "timeout") -> float:
    """``value`` as seconds: a finite number > 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name} must be a number of seconds, not {value!r}")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(f"{name} must be a finite number of seconds > 0, not {value!r}")
    return seconds


def check_edits(edits: Mapping[str, Any] | Sequence[tuple[str, Any]], *, allow_empty: bool = False,
                name: str = "edits") -> tuple[tuple[str, EditValue], ...]:
    """The edits normalized (see :func:`~workbench.variants.normalize_edits`); an empty set is
    refused unless ``allow_empty`` (a variant without edits tries nothing)."""
    if not isinstance(edits, Mapping | list | tuple):
        raise ConfigError(f"{name}: give flag edits as a mapping such as {{\"--ep-size\": 8}}, not {edits!r}")
    try:
        out = normalize_edits(edits)
    except ConfigError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    if not out and not allow_empty:
        raise ConfigError(f"{name}: no flag edits given; say which flags to set, add or remove "
                          "(for example {\"--ep-size\": 8, \"--enable-nccl-nvls\": true})")
    return out


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ConfigError(f"duplicate key {key!r} in JSON (which one was meant?)")
        out[key] = value
    return out


def loads_json(text: str, name: str = "value") -> Any:
    """JSON text parsed, refusing duplicate keys and the non-standard NaN/Infinity."""
    def constant(word: str) -> Any:
        raise ConfigError(f"{name}: {word} is not a JSON number")

    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=constant)
    except ConfigError as exc:
        raise ConfigError(f"{name}: {exc}" if not str(exc).startswith(name) else str(exc)) from None
    except ValueError as exc:
        raise ConfigError(f"{name}: not valid JSON: {exc}") from None
