"""Fault files: parse and validate the TOML, evaluate conditions over flags, pick the strike.

Format: ``workbench/sim/README.md`` ("Fault files").  At most one fault strikes per server start:
among the faults whose condition holds (and whose probability draw succeeds, and whose rank set is
not empty for this world size), the one with the earliest phase; ties go to the first in the file.
"""

from __future__ import annotations

import os
import random
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import PHASES
from .catalogue import CUBLAS_STATUSES, KINDS, NCCL_ERRORS
from .tokenizer import request_seed

DEFAULT_FAULT_FILE = "/etc/sglang-sim/faults.toml"
FAULT_FILE_ENV = "SGLANG_SIM_FAULT_FILE"
PACKAGED_FAULT_FILE = os.path.join(
    os.path.dirname(os.path.dirname(__file__)), "default_faults.toml"
)
_FAULT_KEYS = {
    "id",
    "description",
    "phase",
    "kind",
    "ranks",
    "node",
    "when",
    "probability",
    "after_seconds",
    "after_requests",
    "params",
}
_WHEN_KEYS = ("all_of", "any_of", "none_of")


class FaultFileError(ValueError):
    """A fault file that cannot be used; the message names the file, the key and the reason."""


@dataclass(frozen=True)
class FlagInfo:
    dest: str
    type: str  # "bool" | "int" | "float" | "str"


@dataclass(frozen=True)
class FlagView:
    """The launch flags as conditions see them: option spellings, effective values, given dests."""

    options: Mapping[str, FlagInfo]
    values: Mapping[str, Any]
    given: frozenset[str]


@dataclass(frozen=True)
class Term:
    text: str
    flag: FlagInfo
    value: Any = None
    has_value: bool = False

    def holds(self, view: FlagView) -> bool:
        actual = view.values.get(self.flag.dest)
        if self.flag.type == "bool":
            want = self.value if self.has_value else True
            return bool(actual) == want
        if not self.has_value:
            return self.flag.dest in view.given
        if actual is None:
            return False
        if self.flag.type == "float":
            return abs(float(actual) - float(self.value)) < 1e-9
        return bool(actual == self.value)


@dataclass(frozen=True)
class Fault:
    index: int
    id: str
    phase: str
    kind: str
    ranks: Any = "all"
    all_of: tuple[Term, ...] = ()
    any_of: tuple[Term, ...] = ()
    none_of: tuple[Term, ...] = ()
    probability: float = 1.0
    after_seconds: float = 0.0
    after_requests: int = 0
    params: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    node: int | None = None

    def condition_holds(self, view: FlagView) -> bool:
        return (
            all(t.holds(view) for t in self.all_of)
            and (not self.any_of or any(t.holds(view) for t in self.any_of))
            and not any(t.holds(view) for t in self.none_of)
        )

    def resolve_ranks(self, world_size: int, seed: int, nnodes: int = 1) -> tuple[int, ...]:
        """Global ranks the fault names; with ``node`` set, only that node's share of them."""
        ranks = self._named_ranks(world_size, seed)
        if self.node is None:
            return ranks
        per_node = world_size // max(nnodes, 1)
        lo, hi = self.node * per_node, (self.node + 1) * per_node
        if self.ranks == "all" or isinstance(self.ranks, list):
            return tuple(r for r in ranks if lo <= r < hi)
        count = min(int(self.ranks["count"]), per_node)
        rng = random.Random(request_seed(seed, "ranks", self.id))
        return tuple(sorted(rng.sample(range(lo, hi), count))) if hi <= world_size else ()

    def _named_ranks(self, world_size: int, seed: int) -> tuple[int, ...]:
        if self.ranks == "all":
            return tuple(range(world_size))
        if isinstance(self.ranks, list):
            return tuple(sorted({r for r in self.ranks if r < world_size}))
        count = min(int(self.ranks["count"]), world_size)
        rng = random.Random(request_seed(seed, "ranks", self.id))
        return tuple(sorted(rng.sample(range(world_size), count)))


@dataclass(frozen=True)
class Strike:
    """The fault that will strike in this server start, and on which global ranks."""

    fault: Fault
    ranks: tuple[int, ...]

    @property
    def phase(self) -> str:
        return self.fault.phase

    @property
    def kind(self) -> str:
        return self.fault.kind


def find_fault_file(cli_path: str | None) -> str:
    """Lookup order: --sim-fault-file, $SGLANG_SIM_FAULT_FILE, /etc/sglang-sim/faults.toml, packaged."""
    if cli_path:
        return cli_path
    env = os.environ.get(FAULT_FILE_ENV)
    if env:
        return env
    if os.path.exists(DEFAULT_FAULT_FILE):
        return DEFAULT_FAULT_FILE
    return PACKAGED_FAULT_FILE


def load_fault_file(path: str, options: Mapping[str, FlagInfo]) -> list[Fault]:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise FaultFileError(f"{path}: cannot read: {e.strerror or e}") from e
    except tomllib.TOMLDecodeError as e:
        raise FaultFileError(f"{path}: invalid TOML: {e}") from e
    return parse_faults(data, path, options)


def parse_faults(
    data: Mapping[str, Any], path: str, options: Mapping[str, FlagInfo]
) -> list[Fault]:
    extra = set(data) - {"version", "fault"}
    if extra:
        raise FaultFileError(f"{path}: {sorted(extra)[0]}: unknown top-level key")
    version = data.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise FaultFileError(f"{path}: version: unsupported version {version!r} (expected 1)")
    raw = data.get("fault", [])
    if not isinstance(raw, list):
        raise FaultFileError(f"{path}: fault: must be an array of tables ([[fault]])")
    faults = [_parse_fault(i, item, path, options) for i, item in enumerate(raw)]
    ids = [f.id for f in faults]
    for i, fid in enumerate(ids):
        if fid in ids[:i]:
            raise FaultFileError(f"{path}: fault[{i}].id: duplicate id {fid!r}")
    return faults


def _parse_fault(i: int, item: Any, path: str, options: Mapping[str, FlagInfo]) -> Fault:
    where = f"{path}: fault[{i}]"
    if not isinstance(item, dict):
        raise FaultFileError(f"{where}: must be a table")

    def err(key: str, reason: str) -> FaultFileError:
        return FaultFileError(f"{where}.{key}: {reason}")

    fid = item.get("id", f"fault-{i}")
    if not isinstance(fid, str) or not fid:
        raise err("id", "must be a non-empty string")
    where = f"{path}: fault[{i}] ({fid})"
    for key in item:
        if key not in _FAULT_KEYS:
            raise err(key, "unknown key")
    desc = item.get("description", "")
    if not isinstance(desc, str):
        raise err("description", "must be a string")
    phase = item.get("phase")
    if phase not in PHASES:
        raise err("phase", f"must be one of {', '.join(PHASES)}; got {phase!r}")
    kind = item.get("kind")
    if kind not in KINDS:
        raise err("kind", f"must be one of {', '.join(KINDS)}; got {kind!r}")
    if phase not in KINDS[kind].phases:
        raise err(
            "phase",
            f"kind {kind!r} cannot strike in {phase!r} (allowed: {', '.join(KINDS[kind].phases)})",
        )
    ranks = item.get("ranks", "all")
    if ranks == "all":
        pass
    elif isinstance(ranks, list):
        if not ranks or not all(
            isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in ranks
        ):
            raise err("ranks", "a list must hold non-negative integers (global ranks)")
    elif isinstance(ranks, dict):
        if set(ranks) != {"count"} or not isinstance(ranks["count"], int) or ranks["count"] < 1:
            raise err("ranks", "a table must be {count = N} with N >= 1")
    else:
        raise err("ranks", f'must be "all", a list of ranks or {{count = N}}; got {ranks!r}')
    node = item.get("node")
    if node is not None and (isinstance(node, bool) or not isinstance(node, int) or node < 0):
        raise err("node", "must be a node rank (integer >= 0)")
    when = item.get("when", {})
    if not isinstance(when, dict):
        raise err("when", "must be a table with all_of / any_of / none_of")
    terms: dict[str, tuple[Term, ...]] = {}
    for key in when:
        if key not in _WHEN_KEYS:
            raise err(f"when.{key}", "unknown key (expected all_of, any_of, none_of)")
    for key in _WHEN_KEYS:
        value = when.get(key, [])
        if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
            raise err(f"when.{key}", 'must be a list of strings like "--ep-size=8"')
        terms[key] = tuple(
            _parse_term(t, options, lambda r, k=key: err(f"when.{k}", r)) for t in value
        )
    prob = item.get("probability", 1.0)
    if isinstance(prob, bool) or not isinstance(prob, int | float) or not 0.0 <= prob <= 1.0:
        raise err("probability", "must be a number in [0, 1]")
    after_s = item.get("after_seconds", 0.0)
    if isinstance(after_s, bool) or not isinstance(after_s, int | float) or after_s < 0:
        raise err("after_seconds", "must be a number >= 0")
    after_n = item.get("after_requests", 0)
    if isinstance(after_n, bool) or not isinstance(after_n, int) or after_n < 0:
        raise err("after_requests", "must be an integer >= 0")
    if phase != "serving" and (after_s or after_n):
        raise err(
            "after_seconds" if after_s else "after_requests",
            "only faults in phase 'serving' take triggers",
        )
    params = _parse_params(kind, phase, item.get("params", {}), lambda k, r: err(f"params.{k}", r))
    return Fault(
        index=i,
        id=fid,
        phase=phase,
        kind=kind,
        ranks=ranks,
        all_of=terms["all_of"],
        any_of=terms["any_of"],
        none_of=terms["none_of"],
        probability=float(prob),
        after_seconds=float(after_s),
        after_requests=after_n,
        params=params,
        description=desc,
        node=node,
    )


def _parse_term(text: str, options: Mapping[str, FlagInfo], err: Any) -> Term:
    flag, sep, raw = text.partition("=")
    flag = flag.strip()
    if not flag.startswith("--") or flag not in options:
        raise err(f"{text!r}: unknown flag {flag!r}")
    info = options[flag]
    if not sep:
        return Term(text, info)
    raw = raw.strip()
    value: Any
    try:
        if info.type == "bool":
            low = raw.lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(raw)
            value = low in ("true", "1", "yes")
        elif info.type == "int":
            value = int(raw)
        elif info.type == "float":
            value = float(raw)
        else:
            value = raw
    except ValueError:
        raise err(f"{text!r}: {raw!r} is not a valid {info.type} for {flag}") from None
    return Term(text, info, value, True)


def _parse_params(kind: str, phase: str, params: Any, err: Any) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise err("*", "must be a table")
    defaults = KINDS[kind].params
    out = dict(defaults)
    for key, value in params.items():
        if key not in defaults:
            raise err(
                key, f"unknown parameter for kind {kind!r} (known: {', '.join(defaults) or 'none'})"
            )
        out[key] = value
    if kind == "cublas" and out["status"] not in CUBLAS_STATUSES:
        raise err("status", f"must be one of {', '.join(CUBLAS_STATUSES)}")
    if kind == "nccl" and out["error"] not in NCCL_ERRORS:
        raise err("error", f"must be one of {', '.join(NCCL_ERRORS)}")
    if kind == "cuda_oom":
        t = out["tried_gib"]
        if isinstance(t, bool) or not isinstance(t, int | float) or t < 0:
            raise err("tried_gib", "must be a number >= 0 (0 = pick a size fitting the phase)")
    if kind == "weight_key_error" and (not isinstance(out["name"], str) or not out["name"]):
        raise err("name", "must be a non-empty string")
    return out


def select_strike(
    faults: list[Fault],
    view: FlagView,
    world_size: int,
    seed: int,
    warmup_enabled: bool = True,
    graphs_enabled: bool = True,
    nnodes: int = 1,
) -> Strike | None:
    """The single fault that strikes for these flags, or None.

    Faults of a phase the server skips (warmup with --skip-server-warmup, cuda_graph_capture with
    --disable-cuda-graph) never strike and do not shadow later ones.
    """
    best: tuple[int, int, Strike] | None = None
    for f in faults:
        if f.phase == "warmup" and not warmup_enabled:
            continue
        if f.phase == "cuda_graph_capture" and not graphs_enabled:
            continue
        if not f.condition_holds(view):
            continue
        if f.probability < 1.0:
            draw = random.Random(request_seed(seed, "probability", f.id)).random()
            if draw >= f.probability:
                continue
        ranks = f.resolve_ranks(world_size, seed, nnodes)
        if not ranks:
            continue
        key = (PHASES.index(f.phase), f.index)
        if best is None or key < best[:2]:
            best = (key[0], key[1], Strike(f, ranks))
    return best[2] if best else None
