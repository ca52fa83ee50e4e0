"""Which global ranks this node runs, and the rendezvous its ranks join (``--nnodes > 1``)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any

from .distsim import DistSetup

CLOCK_OFFSET_ENV = "SGLANG_SIM_CLOCK_OFFSET"
# Flags that shape the communicators or the sequence of collectives: nodes that disagree on any
# of them meet in different collectives and hang until the NCCL watchdog fires.
COLLECTIVE_FLAGS = (
    "tp_size",
    "pp_size",
    "dp_size",
    "ep_size",
    "nnodes",
    "enable_dp_attention",
    "moe_a2a_backend",
    "enable_nccl_nvls",
    "enable_symm_mem",
    "enable_flashinfer_allreduce_fusion",
    "disable_custom_all_reduce",
    "cuda_graph_max_bs",
    "cuda_graph_bs",
    "disable_cuda_graph",
    "speculative_algorithm",
    "speculative_num_draft_tokens",
)
DEFAULT_DIST_TIMEOUT_S = 600  # torch's default NCCL process-group timeout


@dataclass(frozen=True)
class NodeLayout:
    ranks: range
    dist: DistSetup | None
    error: str | None = None


def clock_offset() -> float:
    """Seconds the simulated host's log clock runs ahead (``$SGLANG_SIM_CLOCK_OFFSET``)."""
    try:
        return float(os.environ.get(CLOCK_OFFSET_ENV, "0") or 0)
    except ValueError:
        return 0.0


def collective_digest(server_args: Any) -> str:
    values = {k: getattr(server_args, k, None) for k in COLLECTIVE_FLAGS}
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:16]


def node_layout(server_args: Any, world: int) -> NodeLayout:
    nnodes, node_rank = server_args.nnodes, server_args.node_rank
    if nnodes < 1 or not 0 <= node_rank < nnodes:
        return NodeLayout(range(0), None, f"--node-rank {node_rank} must be in [0, --nnodes {nnodes})")
    if nnodes == 1:
        return NodeLayout(range(world), None)
    if world % nnodes:
        return NodeLayout(range(0), None, f"world size {world} is not divisible by --nnodes {nnodes}")
    if server_args.dp_size > 1 or server_args.pp_size > 1:
        return NodeLayout(range(0), None, "sglang-sim: multi-node needs --dp-size 1 and --pp-size 1")
    addr = server_args.dist_init_addr or ""
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit():
        return NodeLayout(
            range(0), None, f"--dist-init-addr must be HOST:PORT with --nnodes {nnodes}; got {addr!r}"
        )
    per_node = world // nnodes
    timeout_s = server_args.dist_timeout or DEFAULT_DIST_TIMEOUT_S
    dist = DistSetup(
        host=host.strip("[]"),
        port=int(port),
        world=world,
        nnodes=nnodes,
        node_rank=node_rank,
        digest=collective_digest(server_args),
        timeout_ms=int(timeout_s * 1000),
        scale=server_args.sim_time_scale,
        clock_offset=clock_offset(),
    )
    return NodeLayout(range(node_rank * per_node, (node_rank + 1) * per_node), dist)
