"""What must be the same on every node, and what differs by design (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench.errors import ConfigError, DeploymentMismatch
from workbench.variants import EditValue, normalize_edits

# Set per node by the deployment itself; a variant never edits them.
NODE_FLAGS = frozenset({"--node-rank", "--dist-init-addr", "--nccl-init-addr", "--nnodes"})


# SGLang's defaults when a flag is absent (``--nnodes 1``, ``--node-rank 0``); the init address has none.
TOPOLOGY_DEFAULTS = {"--nnodes": "1", "--node-rank": "0"}
INIT_ADDR_FLAGS = ("--dist-init-addr", "--nccl-init-addr")  # SGLang's name and its older alias


def _init_addr(flags: Mapping[str, Any]) -> str | None:
    value = next((flags[f] for f in INIT_ADDR_FLAGS if f in flags), None)
    return None if value is None else str(value)


def check_topology(deployment: str, nodes: Sequence[tuple[str, str, int]], argvs: Mapping[str, Sequence[str]],
                   ) -> None:
    """Refuse command lines that cannot form this deployment (pure: the caller read them first).

    ``nodes`` are (label, host, rank) in rank order, the head first; ``argvs`` each node's command
    line by label.  Every node must say ``--nnodes`` = the number of nodes and ``--node-rank`` = its
    own rank (absent: SGLang's defaults, 1 and 0), and name the head's ``--dist-init-addr`` (or its
    alias ``--nccl-init-addr``; the head must give one).  A :class:`DeploymentMismatch` names every
    node, flag, expected and found value that does not fit."""
    count = str(len(nodes))
    maps = {label: flag_map(argvs[label]) for label, _, _ in nodes}
    head_addr = _init_addr(maps[nodes[0][0]])
    problems: list[tuple[str, str, str, str, str]] = []
    for label, host, rank in nodes:
        flags = maps[label]
        for flag, want in (("--nnodes", count), ("--node-rank", str(rank))):
            got = flags.get(flag)
            shown = str(got) if got is not None else f"absent (default {TOPOLOGY_DEFAULTS[flag]})"
            if str(got if got is not None else TOPOLOGY_DEFAULTS[flag]) != want:
                problems.append((label, host, flag, want, shown))
        addr = _init_addr(flags)
        if head_addr is None:
            if label == nodes[0][0]:
                problems.append((label, host, "--dist-init-addr", "HOST:PORT (the head's rendezvous address)",
                                 "absent"))
        elif addr != head_addr:
            problems.append((label, host, "--dist-init-addr", f"{head_addr} (the head's)",
                             addr if addr is not None else "absent"))
    if problems:
        said = "; ".join(f"{node} ({host}): {flag} expected {want}, found {got}"
                         for node, host, flag, want, got in problems)
        raise DeploymentMismatch(f"deployment {deployment}: its nodes' command lines do not form it: {said}. "
                                 "Nothing was stopped or started: fix the unit (or container) or the ranks in "
                                 "the deployments file", deployment=deployment, problems=problems)


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
