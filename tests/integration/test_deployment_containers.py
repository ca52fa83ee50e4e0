"""A deployment with a container node: node 0 the 2-node unit on gpu-a, node 1 a podman container on gpu-c.

The testbed has one container host (gpu-c) and a deployment's nodes are distinct hosts, so the container
node pairs with gpu-a's unit: every step (status, start, variant, restore, journal) goes through each
host's backend seam, a unit on one node and a container on the other.  The container node is created
(not started) by :func:`workbench.testbed.multinode.ensure_container_node`; gpu-c's baseline container
``sglang-k26-ddtree`` is made room for and left as found (same id and definition, running).
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

import pytest

from tests.integration import test_deployment as td
from tests.integration.test_containers import _as_found, _definition, host_c
from tests.integration.test_deployment import BASELINE, NODE1_TP9, tree_digest
from workbench.deployment.control import DeploymentSession, status
from workbench.deployment.journals import first_failure, read_nodes
from workbench.deployment.model import parse_deployments
from workbench.services import WithContainers, services_for
from workbench.testbed import multinode

pytestmark = pytest.mark.testbed
two_nodes = td.two_nodes  # installs the 2-node unit on gpu-a (and gpu-b)
__all__ = ["host_c", "two_nodes"]


def _node_container(host) -> dict[str, object]:
    """The container node as found: its id and definition, and whether it runs."""
    (c,) = json.loads(host.run(["podman", "container", "inspect", multinode.CONTAINER_NODE], check=True).stdout)
    return {"id": c["Id"], "create": c["Config"]["CreateCommand"], "env": c["Config"]["Env"],
            "image": c["Image"], "running": c["State"]["Running"]}


@pytest.fixture(scope="module")
def mixed(testbed, two_nodes, host_c):
    _dep, hosts = two_nodes
    multinode.ensure_container_node(host_c, multinode.MultinodeProvisioner(subnet=testbed.subnet).init_addr())
    dep = parse_deployments(multinode.mixed_deployment_toml())[multinode.MIXED_DEPLOYMENT]
    return dep, {"gpu-a": hosts["gpu-a"], "gpu-c": host_c}


@contextlib.contextmanager
def as_found(hosts):
    """Both nodes as found afterwards: gpu-a's unit files and state; gpu-c's baseline container (id,
    definition, running, no variant containers) and the container node (id, definition, state)."""
    before = (tree_digest(hosts["gpu-a"]), _definition(hosts["gpu-c"]), _node_container(hosts["gpu-c"]))
    yield
    assert tree_digest(hosts["gpu-a"]) == before[0]
    _as_found(hosts["gpu-c"], before[1])
    assert _node_container(hosts["gpu-c"]) == before[2]


def _session(dep, hosts):
    return DeploymentSession(dep, hosts, purpose="test_deployment_containers", ready_timeout=300,
                             make_room=(BASELINE,), lock_wait=300)


def test_container_node_is_seen_through_the_seam(mixed):
    dep, hosts = mixed
    svc = services_for(hosts["gpu-c"])
    assert isinstance(svc, WithContainers) and svc.container_of(multinode.CONTAINER_NODE) is not None
    st = status(dep, hosts)
    assert [(r["node"], r["host"], r["unit"]) for r in st.rows()] == [
        ("node0", "gpu-a", multinode.UNIT), ("node1", "gpu-c", multinode.CONTAINER_NODE)]


def test_healthy_start_of_the_mixed_deployment_serves_with_the_containers_ranks(mixed):
    dep, hosts = mixed
    with as_found(hosts), _session(dep, hosts) as ds:
        out = ds.start_base(timeout=300)
        assert out.ok, out.describe()
        assert out.phase == "serving"
        res = hosts["gpu-a"].run(["python3", "-c", "import urllib.request as u;"
                                  f"print(u.urlopen('http://127.0.0.1:{dep.port}/health_generate').status)"],
                                 check=True)
        assert res.stdout.strip() == "200"
        st = status(dep, ds.services_by_host())
        assert st.overall == "running", st.rows()
        frames = read_nodes(dep, {n.label: ds.sessions[n.label].svc for n in dep.nodes})
        ranks = {label: set(re.findall(r"\[[\d\- :]+ (TP\d+)\]", "\n".join(f["message"].fillna(""))))
                 for label, f in frames.items()}
        assert ranks["node0"] == {f"TP{i}" for i in range(8)}
        assert ranks["node1"] == {f"TP{i}" for i in range(8, 16)}  # from the container's log


def test_variant_on_both_nodes_is_restored_on_both(mixed):
    dep, hosts = mixed
    with as_found(hosts), _session(dep, hosts) as ds:
        trial = ds.run_variant({"--enable-nccl-nvls": True}, timeout=300)
        assert trial.outcome.ok, trial.outcome.describe()
        assert trial.variants["node1"].startswith(f"{multinode.CONTAINER_NODE}-wb-")
        for n in dep.nodes:
            text = ds.sessions[n.label].svc.unit_text(trial.variants[n.label])
            assert "--enable-nccl-nvls" in text and f"--node-rank {n.rank}" in text
        created = hosts["gpu-c"].run(["podman", "ps", "-a", "--format", "{{.Names}}"], check=True).stdout.split()
        # a container (a variant's name is unit-style; the seam drops .service), beside its base until the restore
        assert trial.variants["node1"].removesuffix(".service") in created


@contextlib.contextmanager
def container_node_faults(host, text: str):
    """gpu-c's 2-node fault file (mounted read-only into the container node) holds ``text``; defaults after."""
    default = (Path(multinode.__file__).parents[1] / "sim" / "default_faults.toml").read_bytes()
    host.put(text.encode(), multinode.FAULT_FILE)
    try:
        yield
    finally:
        host.put(default, multinode.FAULT_FILE)


def test_a_fault_on_the_container_node_is_named_with_its_node_and_phase(mixed):
    dep, hosts = mixed
    with as_found(hosts), container_node_faults(hosts["gpu-c"], NODE1_TP9), _session(dep, hosts) as ds:
        trial = ds.run_variant({}, timeout=300)
        assert not trial.outcome.ok
        assert trial.outcome.failed_node == "node1", trial.outcome.describe()
        frames = read_nodes(dep, {n.label: ds.sessions[n.label].svc for n in dep.nodes}, trial.variants)
    cause = first_failure(frames)
    assert cause is not None
    assert (cause.node, cause.rank, cause.phase) == ("node1", "node1/TP9", "cuda_graph_capture"), cause.describe()
    assert cause.exception_type == "RuntimeError" and dep.node(cause.node).host == "gpu-c"
