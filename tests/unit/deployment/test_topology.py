"""vLLM's two ways of forming one server over nodes, beside SGLang's: which way, what must fit, which
flags are the node's own, and the rendezvous lines (real vLLM 0.32 lines from the captured logs)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from workbench.deployment.flags import check_edits, check_topology, differences, flag_map
from workbench.deployment.journals import not_joined
from workbench.deployment.topology import RENDEZVOUS_BEGIN, RENDEZVOUS_JOINED
from workbench.errors import ConfigError, DeploymentMismatch

NODES = [("node0", "gpu-a", 0), ("node1", "gpu-b", 1)]
SERVE = ["/opt/vllm/bin/vllm", "serve", "/models/tiny", "--port", "8000"]
CAPTURED = Path(__file__).parents[2] / "fixtures" / "captured" / "vllm"

# vLLM's multi-node docs: node 0 serves, the others run --headless and reach the head's master address
MN_HEAD = [*SERVE, "--tensor-parallel-size", "2", "--nnodes", "2", "--node-rank", "0", "--master-addr", "10.1.0.1"]
MN_WORKER = [*SERVE, "-tp", "2", "-n", "2", "-r", "1", "--master-addr", "10.1.0.1", "--headless"]
# vLLM's data-parallel docs (the two-node example), the worker in the short spellings
DP_HEAD = [*SERVE, "--data-parallel-size", "4", "--data-parallel-size-local", "2",
           "--data-parallel-address", "10.1.0.1", "--data-parallel-rpc-port", "13345"]
DP_WORKER = [*SERVE, "--headless", "-dp", "4", "-dpl", "2", "-dpr", "2", "-dpa", "10.1.0.1", "-dpp", "13345"]


def test_vllm_multinode_lines_form_the_server_whatever_the_spelling():
    assert check_topology("d", NODES, {"node0": MN_HEAD, "node1": MN_WORKER}).name == "vllm-multinode"
    assert differences({"node0": MN_HEAD, "node1": MN_WORKER}) == {}  # -tp 2 is --tensor-parallel-size 2


def test_vllm_multinode_names_each_node_flag_expected_and_found():
    worker = [*SERVE, "-tp", "2", "--nnodes", "2", "--node-rank", "1", "--master-addr", "10.1.0.9"]
    head = [*SERVE, "-tp", "2", "--nnodes", "2", "--headless"]
    with pytest.raises(DeploymentMismatch) as err:
        check_topology("d", NODES, {"node0": head, "node1": worker})
    assert err.value.problems == [
        ("node0", "gpu-a", "--master-addr", "HOST (the head's address; vLLM's default 127.0.0.1 reaches no other node)",
         "absent"),
        ("node0", "gpu-a", "--headless", "absent (the head serves HTTP)", "present"),
        ("node1", "gpu-b", "--headless", "present (only the head serves HTTP)", "absent"),
    ]
    with pytest.raises(DeploymentMismatch, match=r"node1 \(gpu-b\): --master-addr expected 10.1.0.1 \(the head's\), "
                                                 r"found 10.1.0.9"):
        check_topology("d", NODES, {"node0": MN_HEAD, "node1": [*worker, "--headless"]})
    with pytest.raises(DeploymentMismatch, match=r"--master-port expected 29501 \(the head's\), found 29600"):
        check_topology("d", NODES, {"node0": MN_HEAD, "node1": [*MN_WORKER, "--master-port", "29600"]})


def test_vllm_data_parallel_start_ranks_follow_the_local_sizes():
    assert check_topology("d", NODES, {"node0": DP_HEAD, "node1": DP_WORKER}).name == "vllm-dp"
    hybrid = [w for w in DP_WORKER if w != "--headless"]  # hybrid load balancing: the worker serves its own
    assert check_topology("d", NODES, {"node0": DP_HEAD, "node1": hybrid}).name == "vllm-dp"
    wrong = [*SERVE, "--headless", "-dp", "4", "-dpl", "2", "-dpr", "1", "-dpa", "10.1.0.1"]
    with pytest.raises(DeploymentMismatch) as err:
        check_topology("d", NODES, {"node0": DP_HEAD, "node1": wrong})
    assert err.value.problems == [("node1", "gpu-b", "--data-parallel-start-rank",
                                   "2 (the local sizes of the nodes before it)", "1")]
    three = [*SERVE, "--headless", "-dp", "4", "-dpl", "3", "-dpr", "2", "-dpa", "10.1.0.1"]
    with pytest.raises(DeploymentMismatch, match=r"node0 \(gpu-a\): --data-parallel-size expected 5 \(the sum of "
                                                 r"the nodes' local sizes\), found 4"):
        check_topology("d", NODES, {"node0": DP_HEAD, "node1": three})
    with pytest.raises(DeploymentMismatch, match=r"--data-parallel-address expected 10\.1\.0\.1"):
        check_topology("d", NODES, {"node0": DP_HEAD, "node1": [*SERVE, "-dp", "4", "-dpl", "2", "-dpr", "2"]})


def test_a_variant_never_edits_a_nodes_own_flag_in_any_spelling():
    for flag in ("--master-addr", "-dpa", "--data-parallel-start-rank", "--headless", "-r", "--dist-init-addr"):
        with pytest.raises(ConfigError, match="differ by node"):
            check_edits({flag: "x"})
    assert check_edits({"--max-num-seqs": "8", "-tp": "4"}) == (("--max-num-seqs", "8"), ("-tp", "4"))


def test_flag_map_reads_short_flags_and_negative_values():
    assert flag_map([*SERVE, "-dp", "2", "--seed", "-1", "--enforce-eager", "--max_model_len", "512"]) == {
        "--port": "8000", "--data-parallel-size": "2", "--seed": "-1", "--enforce-eager": True,
        "--max-model-len": "512"}


def test_the_rendezvous_lines_of_real_vllm_and_a_worker_that_never_joined():
    text = (CAPTURED / "startup_ready.log").read_text()
    began = [line for line in text.splitlines() if RENDEZVOUS_BEGIN.search(line)]
    joined = [line for line in text.splitlines() if RENDEZVOUS_JOINED.search(line)]
    assert len(began) == len(joined) == 1  # its one worker begins, then joins
    t0 = pd.Timestamp("2026-11-29 13:25:21", tz="UTC")
    frame = pd.DataFrame({"time": [t0, t0 + pd.Timedelta(seconds=1)], "message": [began[0], "waiting"],
                          "manager": [False, False]})
    done = pd.DataFrame({"time": [t0, t0], "message": [began[0], joined[0]], "manager": [False, False]})
    missing = not_joined({"node0": done, "node1": frame})
    assert [(f.node, f.phase) for f in missing] == [("node1", "nccl_init")]
