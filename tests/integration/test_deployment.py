"""A 2-node deployment on the testbed: gpu-a (node 0) + gpu-b (node 1), TP16 = 8 + 8.

The multinode provisioner's files are put into the running hosts the way ``testbed up`` refreshes
provisioned files (later: have ``wanted_provision`` ask for ``multinode`` and drop that step).
"""

from __future__ import annotations

import contextlib
import re
import subprocess
from pathlib import Path

import pytest

from workbench.deployment.clock import measure_offset
from workbench.deployment.control import DeploymentSession, flag_differences
from workbench.deployment.journals import first_failure, merge, read_nodes
from workbench.deployment.model import parse_deployments
from workbench.ssh import SSHHost
from workbench.testbed import multinode

BASELINE = "sglang-k26-ddtree.service"


def tree_digest(host) -> str:
    """What a deployment session may touch on a host (others' work on the shared testbed aside):
    the unit files of the 2-node unit, its variants and the baseline, and whether the 2-node unit runs
    (the baseline's own state is the HostSession's to verify: it may still be settling after a boot)."""
    files = host.run("find /etc/systemd/system /run/systemd/system -type f \\( -name 'sglang-k26-2node*' -o "
                     f"-name '{BASELINE}' \\) -print0 | sort -z | xargs -0 -r sha256sum", check=True).stdout
    # "failed" and "inactive" are both "not running" (an earlier failed start leaves "failed" on purpose:
    # systemctl status should show it), as the HostSession's own record counts them
    states = host.run(["systemctl", "is-active", multinode.UNIT]).stdout.replace("failed", "inactive")
    return files + states


@pytest.fixture(scope="module")
def two_nodes(testbed):
    prov = multinode.MultinodeProvisioner(subnet=testbed.subnet)
    for h in testbed.hosts:
        prov.install(Path(h.root), h.name)
    hosts = {h: SSHHost(h, ssh_config=str(testbed.ssh_config)) for h in multinode.NODES}
    for host in hosts.values():
        host.run(["systemctl", "daemon-reload"], check=True)
    dep = parse_deployments(multinode.deployment_toml(testbed.subnet))[multinode.DEPLOYMENT]
    yield dep, hosts
    for host in hosts.values():
        host.close()


@contextlib.contextmanager
def unreachable(testbed, node_host: str, target: str):
    """A firewall between two hosts: ``target`` unroutable from ``node_host``'s namespace."""
    ns = next(h.netns for h in testbed.hosts if h.name == node_host)
    addr = next(h.address for h in testbed.hosts if h.name == target)
    subprocess.run(["ip", "netns", "exec", ns, "ip", "route", "add", "unreachable", f"{addr}/32"], check=True)
    try:
        yield
    finally:
        subprocess.run(["ip", "netns", "exec", ns, "ip", "route", "del", "unreachable", f"{addr}/32"], check=True)


def _session(dep, hosts):
    return DeploymentSession(dep, hosts, purpose="test_deployment", ready_timeout=300, make_room=(BASELINE,),
                             lock_wait=240)


def test_healthy_two_node_start_serves_and_both_journals_show_their_ranks(two_nodes):
    dep, hosts = two_nodes
    assert flag_differences(dep, hosts) == {}
    before = {h: tree_digest(host) for h, host in hosts.items()}
    with _session(dep, hosts) as ds:
        out = ds.start_base(timeout=300)
        assert out.ok, out.describe()
        assert out.phase == "serving"
        res = hosts["gpu-a"].run(["python3", "-c", "import urllib.request as u;"
                                  f"print(u.urlopen('http://127.0.0.1:{dep.port}/health_generate').status)"],
                                 check=True)
        assert res.stdout.strip() == "200"
        from workbench.deployment.control import status

        st = status(dep, ds.services_by_host())
        assert st.overall == "running", st.rows()
        frames = read_nodes(dep, {n.label: ds.sessions[n.label].svc for n in dep.nodes})
        ranks = {label: set(re.findall(r"\[[\d\- :]+ (TP\d+)\]", "\n".join(f["message"].fillna(""))))
                 for label, f in frames.items()}
        assert ranks["node0"] == {f"TP{i}" for i in range(8)}
        assert ranks["node1"] == {f"TP{i}" for i in range(8, 16)}
        offsets = {n.label: measure_offset(hosts[n.host]) for n in dep.nodes}
        for off in offsets.values():  # one kernel clock under every nspawn host
            assert abs(off.offset) < 0.5 and off.error < 0.5, off.describe()
        merged = merge(frames, {k: v.offset for k, v in offsets.items()})
        assert set(merged["node"]) == {"node0", "node1"}
        assert merged["time_corrected"].is_monotonic_increasing
    assert {h: tree_digest(host) for h, host in hosts.items()} == before


# Known timing dependence under load (issue 19's note): the judged phase can be startup_other when
# the head's rendezvous lines arrive after the verdict; seen once in two full runs.
@pytest.mark.flaky(reruns=1)
def test_node_that_cannot_reach_the_init_address_is_named(testbed, two_nodes):
    dep, hosts = two_nodes
    with unreachable(testbed, "gpu-b", "gpu-a"), _session(dep, hosts) as ds:
        out = ds.start_base(timeout=300)
    assert not out.ok
    assert out.failed_node == "node1", out.describe()
    assert out.phase == "nccl_init"
    assert "node1" in out.not_joined
    frames = read_nodes(dep, {n.label: ds.sessions[n.label].svc for n in dep.nodes})
    cause = first_failure(frames)
    assert cause is not None and cause.node == "node1" and cause.phase == "nccl_init", cause


def test_variant_on_both_nodes_is_restored_on_both(two_nodes):
    dep, hosts = two_nodes
    before = {h: tree_digest(host) for h, host in hosts.items()}
    with _session(dep, hosts) as ds:
        trial = ds.run_variant({"--enable-nccl-nvls": True}, timeout=300)
        assert trial.outcome.ok, trial.outcome.describe()
        assert set(trial.variants) == {"node0", "node1"}
        for n in dep.nodes:
            text = ds.sessions[n.label].svc.unit_text(trial.variants[n.label])
            assert "--enable-nccl-nvls" in text and f"--node-rank {n.rank}" in text
    assert {h: tree_digest(host) for h, host in hosts.items()} == before


def test_first_failing_node_and_rank_across_nodes(testbed, two_nodes, tmp_path):
    dep, hosts = two_nodes
    fault = ('[[fault]]\nid = "node1-tp9"\nphase = "cuda_graph_capture"\nkind = "cublas"\n'
             'ranks = [9]\nnode = 1\n')
    for host in hosts.values():
        host.put(fault.encode(), "/run/sglang-sim-test/faults.toml")
    try:
        with _session(dep, hosts) as ds:
            trial = ds.run_variant({}, env={"SGLANG_SIM_FAULT_FILE": "/run/sglang-sim-test/faults.toml"},
                                   timeout=300)
            assert not trial.outcome.ok
            assert trial.outcome.failed_node == "node1", trial.outcome.describe()
            frames = read_nodes(dep, {n.label: ds.sessions[n.label].svc for n in dep.nodes}, trial.variants)
    finally:
        for host in hosts.values():
            host.run(["rm", "-rf", "/run/sglang-sim-test"])
    cause = first_failure(frames)
    assert cause is not None
    assert cause.rank == "node1/TP9" and cause.phase == "cuda_graph_capture", cause.describe()
