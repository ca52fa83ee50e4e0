"""Factorial and A/B on the 2-node deployment (gpu-a node 0 + gpu-b node 1): every combination, and
each arm, is a start of the whole deployment; both hosts are left as found.  Through the CLI
(``workbench run factorial|ab -p hosts '["gpu-a","gpu-b"]' -p base_unit sglang-k26-2node.service``),
each run in a subprocess of this tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.integration import test_deployment as td
from tests.integration.test_deployment import BASELINE, NVLS_NODE1, tree_digest, two_node_faults
from workbench.testbed import multinode

two_nodes = td.two_nodes  # the 2-node fixture (module scope here too)

ROOT = Path(__file__).parents[2]
NVLS, NO_CAR = "--enable-nccl-nvls", "--disable-custom-all-reduce"


def run_cli(testbed: Any, tmp_path: Path, runbook: str, **params: Any) -> tuple[dict[str, Any], str]:
    cmd = [sys.executable, "-m", "workbench", "--ssh-config", str(testbed.ssh_config), "run", runbook,
           "--data-dir", str(tmp_path), "-p", "hosts", json.dumps(list(multinode.NODES)),
           "-p", "base_unit", multinode.UNIT, "-p", "start_timeout", "300", "-p", "lock_wait", "300",
           "-p", "stop_units", json.dumps([BASELINE])]
    for k, v in params.items():
        cmd += ["-p", k, v if isinstance(v, str) else json.dumps(v)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1500, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    (path,) = tmp_path.glob("runs/*/result.json")
    return json.loads(path.read_text()), proc.stdout[-3000:] + proc.stderr[-3000:]


def test_factorial_on_the_deployment_names_node1_and_the_phase_and_restores_both(testbed, two_nodes, tmp_path):
    """2 factors, a fault on node 1's TP9 when NVLS is on: the two NVLS combinations fail with node1/TP9 in
    CUDA graph capture, 4 starts of the whole deployment, recorded under the head; both hosts as found."""
    _dep, hosts = two_nodes
    before = {h: tree_digest(host) for h, host in hosts.items()}
    with two_node_faults(hosts, NVLS_NODE1):
        result, out = run_cli(testbed, tmp_path, "factorial", factors={NVLS: True, NO_CAR: True}, rerun=True)
    assert result["status"] == "ok", (result["failure"], out)
    rows = {tuple(f for f, on in m["factors"].items() if on): m for m in result["matrix"]}
    assert set(rows) == {(), (NVLS,), (NO_CAR,), (NVLS, NO_CAR)}
    for combo, m in rows.items():
        assert m["host"] == "gpu-a" and not m["reused"], m
        if NVLS in combo:
            assert (m["outcome"], m["phase"], m["ranks"], m["exception_type"]) == \
                ("failed", "cuda_graph_capture", ["node1/TP9"], "RuntimeError"), m
        else:
            assert m["outcome"] == "ready", m
    assert [(c["factors"], c["ranks"], c["phase"]) for c in result["causes"]] == \
        [([NVLS], ["node1/TP9"], "cuda_graph_capture")], result["conclusion"]
    assert result["no_effect"] == [NO_CAR]
    assert result["server_starts"] == 4 and result["host_restored"] is True
    assert [(r["host"], r["restored"], r["error"]) for r in result["hosts_report"]] == \
        [("gpu-a", True, None), ("gpu-b", True, None)]
    print(f"\nDEPLOYMENT-FACTORIAL starts={result['server_starts']} wall={result['wall_seconds']} s")
    assert {h: tree_digest(host) for h, host in hosts.items()} == before


SMALL = {"concurrency": [1, 4], "repeats": 2, "input_len": 64, "output_len": 96, "num_requests": 8,
         "requests_per_concurrency": 4, "warmup": 1, "gpu_interval_ms": 200}


def test_ab_on_the_deployment_measures_both_arms_at_the_head_and_restores_both(testbed, two_nodes, tmp_path):
    """A = the deployment started as a whole, B = the same edit on both nodes; both swept at the head's
    port; a verdict with intervals; both hosts as found."""
    _dep, hosts = two_nodes
    before = {h: tree_digest(host) for h, host in hosts.items()}
    result, out = run_cli(testbed, tmp_path, "ab", edits={NO_CAR: True}, **SMALL)
    assert result["status"] == "ok", (result["failure"], out)
    assert result["hosts_report"] == [{"host": "gpu-a", "repeats": 2, "restored": True, "error": None}]
    a, b = result["arms"]["A"], result["arms"]["B"]
    assert a["unit"] == multinode.UNIT and b["unit"].startswith("sglang-k26-2node-wb-"), (a, b)
    assert b["start"]["outcome"] == "ready" and b["failure"] is None
    for arm in (a, b):
        assert [p["concurrency"] for p in arm["points"]] == [1, 4]
        assert all(p["failed"] == 0 and p["output_throughput"] > 0 for p in arm["points"]), arm["points"]
    assert [r["concurrency"] for r in result["speedup"]] == [1, 4] and result["verdict"] is not None
    assert result["host_restored"] is True and result["provenance"]["deployment"] == multinode.DEPLOYMENT
    print(f"\nDEPLOYMENT-AB starts={result['server_starts']} wall={result['wall_seconds']} s "
          f"verdict={result['verdict']} speedup={[round(r['speedup'], 3) for r in result['speedup']]}")
    assert {h: tree_digest(host) for h, host in hosts.items()} == before


def test_ab_on_the_deployment_whose_b_does_not_start_names_node1(testbed, two_nodes, tmp_path):
    """B (NVLS on both nodes) fails on node 1's TP9: the answer, not a failed run; both hosts as found."""
    _dep, hosts = two_nodes
    before = {h: tree_digest(host) for h, host in hosts.items()}
    with two_node_faults(hosts, NVLS_NODE1):
        result, out = run_cli(testbed, tmp_path, "ab", edits={NVLS: True}, **SMALL)
    assert result["status"] == "ok", (result["failure"], out)
    assert result["verdict"] == "B does not start"
    fail = result["arms"]["B"]["failure"]
    assert (fail["node"], fail["ranks"], fail["phase"], fail["exception_type"]) == \
        ("node1", ["node1/TP9"], "cuda_graph_capture", "RuntimeError"), fail
    assert result["host_restored"] is True
    assert {h: tree_digest(host) for h, host in hosts.items()} == before
