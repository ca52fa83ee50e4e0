"""What must be the same on every node, and what differs by design (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench.deployment.topology import ALL_NODE_FLAGS, Topology, canonical, topology_of
from workbench.errors import ConfigError, DeploymentMismatch
from workbench.variants import EditValue, is_flag, normalize_edits

# Set per node by the deployment itself, in any engine's way (see topology); a variant never edits them.
NODE_FLAGS = ALL_NODE_FLAGS


def check_topology(deployment: str, nodes: Sequence[tuple[str, str, int]], argvs: Mapping[str, Sequence[str]],
                   ) -> Topology:
    """Refuse command lines that cannot form this deployment (pure: the caller read them first); return
    the way they form it.

    ``nodes`` are (label, host, rank) in rank order, the head first; ``argvs`` each node's command
    line by label.  What each way needs is :mod:`workbench.deployment.topology`'s (SGLang: every node
    says ``--nnodes`` = the number of nodes and ``--node-rank`` = its own rank, absent meaning 1 and 0,
    and names the head's ``--dist-init-addr``).  A :class:`DeploymentMismatch` names every node, flag,
    expected and found value that does not fit."""
    maps = {label: flag_map(argvs[label]) for label, _, _ in nodes}
    topo = topology_of(argvs, maps)
    problems = topo.check(nodes, maps)
    if problems:
        said = "; ".join(f"{node} ({host}): {flag} expected {want}, found {got}"
                         for node, host, flag, want, got in problems)
        raise DeploymentMismatch(f"deployment {deployment}: its nodes' command lines do not form it: {said}. "
                                 "Nothing was stopped or started: fix the unit (or container) or the ranks in "
                                 "the deployments file", deployment=deployment, problems=problems)
    return topo


def check_edits(edits: Mapping[str, EditValue] | Sequence[tuple[str, EditValue]]) -> tuple[tuple[str, EditValue], ...]:
    """The edits, normalized; node-specific flags refused before anything touches a host."""
    norm = normalize_edits(edits)
    bad = sorted({flag for flag, _ in norm if canonical(flag) in NODE_FLAGS})
    if bad:
        raise ConfigError(f"{', '.join(bad)} differ by node and are set by the deployment; a variant edits "
                          "only flags that are the same on every node")
    return norm


def flag_map(argv: Sequence[str]) -> dict[str, Any]:
    """``--flag value`` / ``--flag=value`` / bare ``--flag`` (True) / vLLM's ``-dp 2`` of a server
    command line, each flag under its one spelling (:func:`~workbench.deployment.topology.canonical`)."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        tok = argv[i]
        if is_flag(tok):
            name, eq, value = tok.partition("=")
            name = canonical(name)
            if eq:
                out[name] = value
            elif i + 1 < len(argv) and not is_flag(argv[i + 1]):
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
