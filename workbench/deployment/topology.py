"""How each engine's command lines form one server over several nodes (pure).

Three ways are known, told apart by the command lines themselves (never by a setting):

* **SGLang** (``--nnodes N --node-rank R --dist-init-addr HOST:PORT``): every node names the head's
  rendezvous address; node 0 serves HTTP.
* **vLLM, multi-node** (``--nnodes/-n N --node-rank/-r R --master-addr HOST [--master-port P]``,
  ``--headless`` on every node but the head): one model spread over the nodes' GPUs by vLLM's own
  multiprocessing executor; the others reach the head's ``--master-addr``.
* **vLLM, data parallel** (``--data-parallel-size/-dp D --data-parallel-size-local/-dpl L
  --data-parallel-address/-dpa HOST [--data-parallel-rpc-port/-dpp P]``, ``--data-parallel-start-rank/-dpr``
  on the others, each the sum of the local sizes before it): replicas on every node, coordinated by
  the head.

Each way says which flags are the node's own (a variant never edits them), what each node's line
must hold (:func:`check` names every node, flag, expected and found value that does not fit) and
which log lines tell that a node began and passed its rendezvous.  A vLLM line is one whose command
runs vLLM (``vllm serve``, ``-m vllm.entrypoints...``); any other is read as SGLang's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# vLLM's short spellings (its argparse aliases) of the flags read here, and of its parallel sizes.
ALIASES = {
    "-n": "--nnodes", "-r": "--node-rank",
    "-dp": "--data-parallel-size", "-dpl": "--data-parallel-size-local", "-dpr": "--data-parallel-start-rank",
    "-dpn": "--data-parallel-rank", "-dpa": "--data-parallel-address", "-dpp": "--data-parallel-rpc-port",
    "-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size",
}
Problem = tuple[str, str, str, str, str]  # node, host, flag, expected, found
Check = Callable[[Sequence[tuple[str, str, int]], Mapping[str, Mapping[str, Any]]], list[Problem]]
# Both engines' defaults when a flag is absent (one node, rank 0).
COUNT_DEFAULTS = {"--nnodes": "1", "--node-rank": "0"}


def canonical(flag: str) -> str:
    """One spelling per flag: vLLM's short aliases and its ``--snake_case`` spellings as ``--long-form``."""
    flag = ALIASES.get(flag, flag)
    return "--" + flag[2:].replace("_", "-") if flag.startswith("--") else flag


def runs_vllm(argv: Sequence[str]) -> bool:
    """The command runs vLLM: ``vllm serve``, ``python -m vllm.entrypoints.openai.api_server``, a path to it."""
    return any(t == "vllm" or t.startswith("vllm.") or t.endswith("/vllm") for t in argv[:4])


@dataclass(frozen=True)
class Topology:
    """One engine's way of forming a server over nodes."""

    name: str
    node_flags: frozenset[str]  # canonical spellings set per node by the deployment
    check: Check  # (nodes, flag maps by label) -> every node, flag, expected and found value that does not fit


SGLANG_INIT_ADDR = ("--dist-init-addr", "--nccl-init-addr")  # SGLang's name and its older alias
# A node began its rendezvous / passed it, in each engine's words (SGLang's scheduler; vLLM's
# parallel_state: init_distributed_environment's line, then the ranks' assignment once the group formed).
RENDEZVOUS_BEGIN = re.compile(r"Init torch distributed begin\.|world_size=\d+ rank=\d+ local_rank=\d+ "
                              r"distributed_init_method=")
RENDEZVOUS_JOINED = re.compile(r"Init torch distributed ends\.|rank \d+ in world size \d+ is assigned as")
_DP_MARKS = ("--data-parallel-address", "--data-parallel-start-rank", "--data-parallel-size-local")


def _shown(value: Any, default: str | None) -> str:
    if value is not None:
        return str(value)
    return f"absent (default {default})" if default is not None else "absent"


def _same_as_head(problems: list[Problem], nodes: Sequence[tuple[str, str, int]], maps: Mapping[str, Mapping[str, Any]],
                  flag: str, *, default: str | None, what: str) -> None:
    """Every node's ``flag`` equals the head's (the head must give one where there is no default)."""
    head = nodes[0][0]
    want = maps[head].get(flag)
    if want is None and default is None:
        problems.append((head, nodes[0][1], flag, what, "absent"))
        return
    want_s = str(want if want is not None else default)
    for label, host, _ in nodes[1:]:
        got = maps[label].get(flag)
        if str(got if got is not None else default) != want_s:
            problems.append((label, host, flag, f"{want_s} (the head's)", _shown(got, default)))


def _counts(problems: list[Problem], nodes: Sequence[tuple[str, str, int]], maps: Mapping[str, Mapping[str, Any]]) -> None:
    """``--nnodes`` = the number of nodes and ``--node-rank`` = the node's rank on every node."""
    for label, host, rank in nodes:
        for flag, want in (("--nnodes", str(len(nodes))), ("--node-rank", str(rank))):
            got = maps[label].get(flag)
            if str(got if got is not None else COUNT_DEFAULTS[flag]) != want:
                problems.append((label, host, flag, want, _shown(got, COUNT_DEFAULTS[flag])))


def _headless(problems: list[Problem], nodes: Sequence[tuple[str, str, int]], maps: Mapping[str, Mapping[str, Any]],
              *, workers_must: bool) -> None:
    """The head serves HTTP (no ``--headless``); the others run ``--headless`` where ``workers_must``."""
    label, host, _ = nodes[0]
    if maps[label].get("--headless"):
        problems.append((label, host, "--headless", "absent (the head serves HTTP)", "present"))
    for label, host, _ in nodes[1:]:
        if workers_must and not maps[label].get("--headless"):
            problems.append((label, host, "--headless", "present (only the head serves HTTP)", "absent"))


def _check_sglang(nodes: Sequence[tuple[str, str, int]], maps: Mapping[str, Mapping[str, Any]]) -> list[Problem]:
    problems: list[Problem] = []
    _counts(problems, nodes, maps)

    def addr(m: Mapping[str, Any]) -> str | None:
        value = next((m[f] for f in SGLANG_INIT_ADDR if f in m), None)
        return None if value is None else str(value)

    head_addr = addr(maps[nodes[0][0]])
    for label, host, _ in nodes:
        got = addr(maps[label])
        if head_addr is None:
            if label == nodes[0][0]:
                problems.append((label, host, "--dist-init-addr", "HOST:PORT (the head's rendezvous address)",
                                 "absent"))
        elif got != head_addr:
            problems.append((label, host, "--dist-init-addr", f"{head_addr} (the head's)", _shown(got, None)))
    return problems


def _check_vllm_multinode(nodes: Sequence[tuple[str, str, int]], maps: Mapping[str, Mapping[str, Any]]) -> list[Problem]:
    problems: list[Problem] = []
    _counts(problems, nodes, maps)
    _same_as_head(problems, nodes, maps, "--master-addr", default=None,
                  what="HOST (the head's address; vLLM's default 127.0.0.1 reaches no other node)")
    _same_as_head(problems, nodes, maps, "--master-port", default="29501", what="")
    _headless(problems, nodes, maps, workers_must=True)
    return problems


def _int(value: Any) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def _check_vllm_dp(nodes: Sequence[tuple[str, str, int]], maps: Mapping[str, Mapping[str, Any]]) -> list[Problem]:
    problems: list[Problem] = []
    _same_as_head(problems, nodes, maps, "--data-parallel-size", default="1", what="")
    _same_as_head(problems, nodes, maps, "--data-parallel-address", default=None,
                  what="HOST (the head's address, which every node reaches)")
    _same_as_head(problems, nodes, maps, "--data-parallel-rpc-port", default="13345", what="")
    # a node after the head may serve its own replicas (vLLM's hybrid load balancing, the default
    # with a start rank) or none (--headless): both form the server
    _headless(problems, nodes, maps, workers_must=False)
    start = 0
    for label, host, _ in nodes:
        m = maps[label]
        local = _int(m.get("--data-parallel-size-local"))
        got = m.get("--data-parallel-start-rank")
        if str(got if got is not None else 0) != str(start):
            problems.append((label, host, "--data-parallel-start-rank",
                             f"{start} (the local sizes of the nodes before it)", _shown(got, "0")))
        if local is None:
            problems.append((label, host, "--data-parallel-size-local", "this node's number of replicas",
                             _shown(m.get("--data-parallel-size-local"), None)))
            return problems
        start += local
    size = maps[nodes[0][0]].get("--data-parallel-size", "1")
    if str(start) != str(size):
        label, host, _ = nodes[0]
        problems.append((label, host, "--data-parallel-size", f"{start} (the sum of the nodes' local sizes)", str(size)))
    return problems


SGLANG = Topology("sglang", frozenset({"--node-rank", "--nnodes", *SGLANG_INIT_ADDR}), _check_sglang)
VLLM_MULTINODE = Topology("vllm-multinode",
                          frozenset({"--node-rank", "--nnodes", "--master-addr", "--master-port", "--headless"}),
                          _check_vllm_multinode)
VLLM_DP = Topology("vllm-dp", frozenset({"--data-parallel-start-rank", "--data-parallel-rank",
                                         "--data-parallel-size-local", "--data-parallel-address",
                                         "--data-parallel-rpc-port", "--headless"}), _check_vllm_dp)
ALL_NODE_FLAGS = SGLANG.node_flags | VLLM_MULTINODE.node_flags | VLLM_DP.node_flags


def topology_of(argvs: Mapping[str, Sequence[str]], maps: Mapping[str, Mapping[str, Any]]) -> Topology:
    """Which way the nodes' command lines form the server: vLLM's when any runs vLLM, its data
    parallelism when any line gives a data-parallel address, start rank or local size (see the module)."""
    if not any(runs_vllm(a) for a in argvs.values()):
        return SGLANG
    if any(f in m for m in maps.values() for f in _DP_MARKS):
        return VLLM_DP
    return VLLM_MULTINODE
