"""Typed runbook parameters, validated before anything touches a host.

Each runbook has a pydantic model; its notebook's ``parameters`` cell mirrors the
model (names, types, defaults, one-line help in comments, which is what
``papermill --help-notebook`` shows) and the next cell calls :func:`validate`
on the notebook's globals.  A wrong name, type or value fails at once with one
clear message listing every problem.  Dict and list parameters may arrive as
JSON text (``papermill -p edits '{"--ep-size": 8}'``; a duplicate key is refused).
A parameter without a default is required (the host, the unit: nothing is tied to one
deployment); a missing one is named in the error (``workbench run`` exits 2).
Flag edits (:data:`Edits`) are checked as the Python API checks them
(:func:`workbench.inputs.check_edits`: flags as keys, at least one edit), and every
number must be finite (``start_timeout=nan`` is refused, not read as a default).
"""

from __future__ import annotations

import math
import types
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from workbench.errors import ConfigError
from workbench.inputs import check_edits, loads_json

M = TypeVar("M", bound="RunbookParams")
# Names a kernel defines by itself; anything else unknown came from the injected cell.
_KERNEL_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}

EditJSON = str | bool | int | float | None | list[str | int | float]


def _edits(value: Any) -> Any:
    if not isinstance(value, dict):
        raise ValueError(f"give flag edits as a mapping such as {{\"--ep-size\": 8}}, not {value!r}")
    try:
        check_edits(value)
    except ConfigError as exc:
        raise ValueError(str(exc).removeprefix("edits: ")) from None
    return value


# Flag edits as a parameter: what the Python API takes ({"--ep-size": 8, "--enable-nccl-nvls": true}).
if TYPE_CHECKING:  # mypy: any mapping of flags (dict is invariant; the runbooks' defaults are narrower)
    Edits = dict[str, Any]
else:
    Edits = Annotated[dict[str, EditJSON], BeforeValidator(_edits)]


class RunbookParams(BaseModel):
    """Common parameters of every runbook."""

    model_config = ConfigDict(extra="forbid")

    data_dir: str = Field("data", description="where runs are recorded (data/runs/<run-id>)")
    run_id: str = Field("", description="run id; empty: a new one")
    ssh_config: str = Field("", description="ssh_config to resolve host aliases; empty: the default")

    @model_validator(mode="after")
    def _finite(self) -> RunbookParams:
        bad = [n for n, v in self if isinstance(v, float) and not math.isfinite(v)]
        if bad:
            raise ValueError(f"{', '.join(bad)}: must be a finite number")
        return self

    @classmethod
    def from_namespace(cls: type[M], namespace: dict[str, Any]) -> M:
        return validate(cls, namespace)


def _user_names(namespace: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, value in namespace.items():
        if name.startswith("_") or name in _KERNEL_NAMES:
            continue
        if isinstance(value, types.ModuleType | types.FunctionType | type) or callable(value):
            continue
        out[name] = value
    return out


def validate(model: type[M], namespace: dict[str, Any]) -> M:
    """The parameters in ``namespace`` (a notebook's globals) as a validated ``model``."""
    given = _user_names(namespace)
    fields = model.model_fields
    unknown = sorted(set(given) - set(fields))
    if unknown:
        raise ConfigError(f"unknown parameter(s) {unknown}; this runbook takes: {sorted(fields)}")
    values = {}
    for name, value in given.items():
        if value is None and fields[name].is_required():
            continue  # the notebook's placeholder for a required parameter nobody gave
        annotation = str(fields[name].annotation)
        if isinstance(value, str) and ("dict" in annotation or "list" in annotation) and value.strip()[:1] in "{[":
            value = loads_json(value, f"parameter {name}")
        values[name] = value
    try:
        return model(**values)
    except ValidationError as exc:
        missing = [str(e["loc"][0]) for e in exc.errors() if e["type"] == "missing" and e["loc"]]
        problems = [
            (f"{'.'.join(str(p) for p in e['loc'])}: " if e["loc"] else "") + e["msg"].removeprefix("Value error, ")
            for e in exc.errors() if e["type"] != "missing"]
        if missing:
            problems.insert(0, f"missing required parameter(s) {', '.join(missing)} (give each with -p NAME VALUE "
                               "or --host, or start from a preset: --preset NAME)")
        raise ConfigError(f"invalid parameters for {model.__name__}: {'; '.join(problems)}") from None
