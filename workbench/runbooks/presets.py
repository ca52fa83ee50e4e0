"""Presets: named parameter sets of a runbook, kept as data (``workbench/runbooks/presets/RUNBOOK.toml``).

``workbench run factorial --preset isolate-ep-vs-nvls`` starts from the preset's parameters; the
ones given on the command line win.  A preset may name the bases it is the default for
(``default_for``, shell patterns of unit or container names, ``.service`` optional): a run of that
runbook on such a base that names no preset and leaves out a parameter the preset gives starts
from it (``workbench run bisect -p base_unit sglang-k26-ddtree`` bisects the seeds' edits), and the
result says which preset it was.  A preset may carry an ``alias``: a runbook's old name
(``isolate_ep_vs_nvls``), which then resolves to the generic runbook with that preset, so old
command lines keep working.  Presets give no host: every deployment names its own.
"""

from __future__ import annotations

import fnmatch
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
    default_for: tuple[str, ...] = ()

    def is_default_for(self, base: str) -> bool:
        """Whether ``base`` (a unit or container name, ``.service`` optional) is one of its bases."""
        name = base.removesuffix(".service")
        return any(fnmatch.fnmatchcase(name, pat.removesuffix(".service")) for pat in self.default_for)


def _load(path: Path) -> dict[str, Preset]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    out = {}
    for name, body in data.items():
        if not isinstance(body, dict) or not isinstance(body.get("params", {}), dict):
            raise ConfigError(f"{path}: preset {name!r} must be a table with a [params] table")
        unknown = set(body) - {"description", "alias", "params", "default_for"}
        if unknown:
            raise ConfigError(f"{path}: preset {name!r} has unknown key(s) {sorted(unknown)}")
        default_for = body.get("default_for", [])
        if not isinstance(default_for, list) or not all(isinstance(p, str) and p for p in default_for):
            raise ConfigError(f"{path}: preset {name!r}: default_for must be a list of unit name patterns")
        out[name] = Preset(path.stem, name, str(body.get("description", "")), str(body.get("alias", "")),
                           dict(body.get("params", {})), tuple(default_for))
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


def default_for(runbook: str, params: Mapping[str, Any], directory: Path = PRESETS_DIR) -> Preset | None:
    """The preset of ``runbook`` that is the default for the base in ``params`` (``base_unit``) and
    gives a parameter ``params`` leaves out; None when no preset is, or when two are (never guess)."""
    base = params.get("base_unit")
    if not isinstance(base, str) or not base:
        return None
    found = [p for p in presets(runbook, directory).values()
             if p.is_default_for(base) and set(p.params) - set(params)]
    return found[0] if len(found) == 1 else None


def resolve(runbook: str, preset: str = "", directory: Path = PRESETS_DIR,
            params: Mapping[str, Any] | None = None) -> tuple[str, Preset | None]:
    """(runbook, preset or None) for a runbook name or an old name that is now a preset; with
    ``params`` and no preset named, the preset that is the default for their base (:func:`default_for`).

    An old name with ``--preset`` as well is refused (it already is a preset)."""
    alias = aliases(directory).get(runbook)
    if alias is not None:
        if preset and preset != alias.name:
            raise ConfigError(f"{runbook!r} is the preset {alias.name!r} of {alias.runbook!r}; "
                              f"run `workbench run {alias.runbook} --preset {preset}` instead")
        return alias.runbook, alias
    if preset:
        return runbook, find(runbook, preset, directory)
    return runbook, default_for(runbook, params, directory) if params is not None else None


def apply(preset: Preset | None, params: Mapping[str, Any]) -> dict[str, Any]:
    """The preset's parameters with ``params`` over them (given ones win)."""
    return {**(preset.params if preset else {}), **params}
