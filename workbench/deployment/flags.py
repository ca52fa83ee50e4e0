"""What must be the same on every node, and what differs by design (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench.errors import ConfigError
from workbench.variants import EditValue, normalize_edits

# Set per node by the deployment itself; a variant never edits them.
NODE_FLAGS = frozenset({"--node-rank", "--dist-init-addr", "--nccl-init-addr", "--nnodes"})


def check_edits(edits: Mapping[str, EditValue] | Sequence[tuple[str, EditValue]]) -> tuple[tuple[str, EditValue], ...]:
    """The edits, normalized; node-specific flags refused before anything touches a host."""
    norm = normalize_edits(edits)
    bad = sorted({flag for flag, _ in norm if flag in NODE_FLAGS})
    if bad:
        raise ConfigError(f"{', '.join(bad)} differ by node and are set by the deployment; a variant edits "
                          "only flags that are the same on every node")
    return norm


def flag_map(argv: Sequence[str]) -> dict[str, Any]:
    """``--flag value`` / ``--flag=value`` / bare ``--flag`` (True) of a server command line."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok.startswith("--"):
            name, eq, value = tok.partition("=")
            if eq:
                out[name] = value
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                out[name] = argv[i + 1]
                i += 1
            else:
                out[name] = True
        i += 1
    return out


def differences(argvs: Mapping[str, Sequence[str]]) -> dict[str, dict[str, Any]]:
    """Flags (node-specific ones aside) whose value is not the same on every node: flag -> {node: value}."""
    maps = {node: flag_map(argv) for node, argv in argvs.items()}
    flags = sorted({f for m in maps.values() for f in m} - NODE_FLAGS)
    out = {}
    for f in flags:
        values = {node: m.get(f) for node, m in maps.items()}
        if len({repr(v) for v in values.values()}) > 1:
            out[f] = values
    return out
