"""Presets: named parameter sets of a runbook, kept as data (``workbench/runbooks/presets/RUNBOOK.toml``).

``workbench run factorial --preset isolate-ep-vs-nvls`` starts from the preset's parameters; the
ones given on the command line win.  A preset may carry an ``alias``: a runbook's old name
(``isolate_ep_vs_nvls``), which then resolves to the generic runbook with that preset, so old
command lines keep working.  Presets give no host: every deployment names its own.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError

PRESETS_DIR = Path(__file__).resolve().parent / "presets"


@dataclass(frozen=True)
class Preset:
    runbook: str
    name: str
    description: str = ""
    alias: str = ""
    params: dict[str, Any] = field(default_factory=dict)


def _load(path: Path) -> dict[str, Preset]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    out = {}
    for name, body in data.items():
        if not isinstance(body, dict) or not isinstance(body.get("params", {}), dict):
            raise ConfigError(f"{path}: preset {name!r} must be a table with a [params] table")
        unknown = set(body) - {"description", "alias", "params"}
        if unknown:
            raise ConfigError(f"{path}: preset {name!r} has unknown key(s) {sorted(unknown)}")
        out[name] = Preset(path.stem, name, str(body.get("description", "")), str(body.get("alias", "")),
                           dict(body.get("params", {})))
    return out


def presets(runbook: str, directory: Path = PRESETS_DIR) -> dict[str, Preset]:
    """The presets of ``runbook`` by name (none: an empty mapping)."""
    path = directory / f"{runbook}.toml"
    return _load(path) if path.is_file() else {}


def every_preset(directory: Path = PRESETS_DIR) -> list[Preset]:
    return [p for path in sorted(directory.glob("*.toml")) for p in _load(path).values()]


def aliases(directory: Path = PRESETS_DIR) -> dict[str, Preset]:
    """Old runbook names -> the preset each now is."""
    return {p.alias: p for p in every_preset(directory) if p.alias}


def find(runbook: str, name: str, directory: Path = PRESETS_DIR) -> Preset:
    """The preset ``name`` of ``runbook``; a ConfigError naming the ones there are."""
    found = presets(runbook, directory)
    if name not in found:
        there = ", ".join(sorted(found)) or "none"
        raise ConfigError(f"runbook {runbook!r} has no preset {name!r}; its presets: {there}")
    return found[name]


def resolve(runbook: str, preset: str = "", directory: Path = PRESETS_DIR) -> tuple[str, Preset | None]:
    """(runbook, preset or None) for a runbook name or an old name that is now a preset.

    An old name with ``--preset`` as well is refused (it already is a preset)."""
    alias = aliases(directory).get(runbook)
    if alias is not None:
        if preset and preset != alias.name:
            raise ConfigError(f"{runbook!r} is the preset {alias.name!r} of {alias.runbook!r}; "
                              f"run `workbench run {alias.runbook} --preset {preset}` instead")
        return alias.runbook, alias
    return runbook, find(runbook, preset, directory) if preset else None


def apply(preset: Preset | None, params: Mapping[str, Any]) -> dict[str, Any]:
    """The preset's parameters with ``params`` over them (given ones win)."""
    return {**(preset.params if preset else {}), **params}
