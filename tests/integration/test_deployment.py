"""A 2-node deployment on the testbed: gpu-a (node 0) + gpu-b (node 1), TP16 = 8 + 8.

The multinode provisioner's files are put into the running hosts the way ``testbed up`` refreshes
provisioned files (later: have ``wanted_provision`` ask for ``multinode`` and drop that step).
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
from pathlib import Path

import pandas as pd
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


NODE1_TP9 = ('version = 1\n[[fault]]\nid = "node1-tp9"\nphase = "cuda_graph_capture"\nkind = "cublas"\n'
             'ranks = [9]\nnode = 1\n')


@contextlib.contextmanager
def two_node_faults(hosts, text: str):
    """The 2-node unit's own fault file (``multinode.FAULT_FILE``) holds ``text``; its defaults after."""
    default = (Path(multinode.__file__).parents[1] / "sim" / "default_faults.toml").read_bytes()
    for host in hosts.values():
        host.put(text.encode(), multinode.FAULT_FILE)
    try:
        yield
    finally:
        for host in hosts.values():
            host.put(default, multinode.FAULT_FILE)


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    from workbench.cli import main

    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_status_start_stop_tracebacks_and_journal_of_the_deployment(testbed, two_nodes, capsys):
    """``workbench status|start|stop|tracebacks|journal`` with ``gpu-a,gpu-b``: the contract's commands."""
    import json

    dep, hosts = two_nodes
    ssh = ["--ssh-config", str(testbed.ssh_config)]
    before = {h: tree_digest(host) for h, host in hosts.items()}
    with two_node_faults(hosts, NODE1_TP9), _session(dep, hosts) as ds:
        for n in dep.nodes:  # the session puts the 2-node unit back as found (stopped) whatever the CLI did
            ds.sessions[n.label].protect(n.unit)
        code, out, err = cli(capsys, "start", "gpu-a,gpu-b", multinode.UNIT, "--wait", "--timeout", "300", *ssh)
        assert code == 1, (out, err)
        assert "FAILED (node1)" in out, out
        code, out, _ = cli(capsys, "tracebacks", "--host", "gpu-a,gpu-b", "--unit", multinode.UNIT, "--json", *ssh)
        assert code == 1
        doc = json.loads(out)
        assert doc["root_cause"]["rank"] == "node1/TP9", doc["root_cause"]
        assert doc["root_cause"]["host"] == "gpu-b" and doc["root_cause"]["phase"] == "cuda_graph_capture"
        assert set(doc["nodes"]) == {"node0", "node1"} and set(doc["clock_offsets"]) == {"node0", "node1"}
        code, out, _ = cli(capsys, "tracebacks", "--host", "gpu-a,gpu-b", "--unit", "k26-2node", *ssh)
        assert code == 1 and "first failure across nodes: node1/TP9 in cuda_graph_capture" in out, out
        code, out, err = cli(capsys, "journal", "gpu-a,gpu-b", multinode.UNIT, "--json", *ssh)
        assert code == 0
        rows = [json.loads(line) for line in out.splitlines()]
        assert {r["node"] for r in rows} == {"node0", "node1"}
        assert {r["host"] for r in rows} == {"gpu-a", "gpu-b"}
        times = [r["time"] for r in rows]
        assert times == sorted(times)  # corrected time order across the nodes
        assert "node1 gpu-b: clock" in err and "node0 gpu-a: clock" in err, err
        code, out, _ = cli(capsys, "journal", "gpu-a,gpu-b", multinode.UNIT, "--rank", "node1/TP9", *ssh)
        assert code == 0 and out and all(" gpu-b/node1 " in line for line in out.splitlines() if line[:1] != " ")
        code, out, _ = cli(capsys, "status", "gpu-a,gpu-b", multinode.UNIT, "--json", *ssh)
        doc = json.loads(out)
        assert code == 0 and doc["overall"] == "stopped"  # a failed judged start is stopped on every node
        assert [r["host"] for r in doc["nodes"]] == ["gpu-a", "gpu-b"]
    with _session(dep, hosts) as ds:
        for n in dep.nodes:
            ds.sessions[n.label].protect(n.unit)
        code, out, err = cli(capsys, "start", "k26-2node", "--wait", "--timeout", "300", *ssh)
        assert code == 0 and "READY" in out, (out, err)
        code, out, _ = cli(capsys, "status", "gpu-a,gpu-b", "k26-2node", *ssh)
        assert code == 0 and out.startswith("k26-2node: RUNNING"), out
        code, out, _ = cli(capsys, "stop", "gpu-a,gpu-b", multinode.UNIT, *ssh)
        assert code == 0
        assert [line.split()[0] for line in out.splitlines()] == ["node0", "node1"]  # the head first
        code, out, _ = cli(capsys, "status", "k26-2node", *ssh)
        assert code == 0 and out.startswith("k26-2node: STOPPED"), out
    assert {h: tree_digest(host) for h, host in hosts.items()} == before


NVLS_NODE1 = ('version = 1\n[[fault]]\nid = "nvls-node1-tp9"\nwhen.all_of = ["--enable-nccl-nvls"]\n'
              'phase = "cuda_graph_capture"\nkind = "cublas"\nranks = [9]\nnode = 1\n')
ROOT = Path(__file__).parents[2]


def test_bisect_on_the_deployment_finds_the_node1_culprit_and_restores_both(testbed, two_nodes, tmp_path):
    """``workbench run bisect -p hosts '["gpu-a","gpu-b"]' -p base_unit sglang-k26-2node.service``: each trial
    starts the whole deployment; the culprit's root cause is node1/TP9; both hosts are left as found."""
    import json
    import os
    import sys

    _dep, hosts = two_nodes
    before = {h: tree_digest(host) for h, host in hosts.items()}
    edits = {"--enable-nccl-nvls": True, "--disable-custom-all-reduce": True}
    cmd = [sys.executable, "-m", "workbench", "--ssh-config", str(testbed.ssh_config), "run", "bisect",
           "--data-dir", str(tmp_path), "--no-progress", "-p", "hosts", json.dumps(list(multinode.NODES)),
           "-p", "base_unit", multinode.UNIT, "-p", "edits", json.dumps(edits), "-p", "start_timeout", "300",
           "-p", "lock_wait", "300", "-p", "stop_units", json.dumps([BASELINE])]
    with two_node_faults(hosts, NVLS_NODE1):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1500,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
    (result_path,) = tmp_path.glob("runs/*/result.json")
    result = json.loads(result_path.read_text())
    assert result["status"] == "ok", (result["failure"], proc.stderr[-3000:])
    assert [c["edits"] for c in result["culprits"]] == [[["--enable-nccl-nvls", True]]], result["conclusion"]
    culprit = result["culprits"][0]
    assert culprit["ranks"] == ["node1/TP9"] and culprit["phase"] == "cuda_graph_capture", culprit
    assert culprit["exception_type"] == "RuntimeError"
    assert result["host_restored"] is True and result["hosts"] == list(multinode.NODES)
    assert result["server_starts"] >= 2
    print(f"\nDEPLOYMENT-BISECT starts={result['server_starts']} wall={result['wall_seconds']} s "
          f"trials={[round(t['seconds'], 1) for t in result['trials']]}")
    assert {h: tree_digest(host) for h, host in hosts.items()} == before


GUARD_STATE = ("systemctl is-active sglang-k26-2node.service {base}; "
               "grep -l '^X-WorkbenchVariantOf=' /run/systemd/system/*.service 2>/dev/null | wc -l; "
               "systemctl list-units --plain --no-legend 'sglang-k26-2node-wb-*' | grep -c running || true; "
               "test -e /run/workbench/session.json && echo record || echo no-record")


def _plain_state(ssh_config: str, host: str) -> list[str]:
    """A node as plain ssh sees it (no workbench code): 2-node unit, baseline, variant files, variants
    running, the session record."""
    try:
        return subprocess.run(["ssh", "-F", ssh_config, "-o", "ConnectTimeout=3", host,
                               GUARD_STATE.format(base=BASELINE)], capture_output=True, text=True,
                              timeout=10).stdout.split()
    except subprocess.TimeoutExpired:
        return ["no answer"]


@pytest.mark.parametrize("command", ["variant", "bisect"])
def test_controller_killed_during_a_deployment_variant_both_nodes_restore_themselves(testbed, two_nodes, tmp_path,
                                                                                     command):
    """SIGKILL to ``workbench deployment variant``, or to ``workbench run bisect`` on the deployment, while a
    variant runs on both nodes: each node's guard puts its node back, with no further workbench command;
    measured from the kill."""
    import json
    import os
    import sys
    import time

    ssh = str(testbed.ssh_config)
    if command == "variant":
        cmd = [sys.executable, "-m", "workbench", "--ssh-config", ssh, "deployment", "variant", multinode.DEPLOYMENT,
               "--set", "mem-fraction-static=0.8", "--make-room", BASELINE, "--timeout", "300", "--lock-wait", "300"]
    else:
        cmd = [sys.executable, "-m", "workbench", "--ssh-config", ssh, "run", "bisect", "--data-dir", str(tmp_path),
               "--no-progress", "-p", "hosts", json.dumps(list(multinode.NODES)), "-p", "base_unit", multinode.UNIT,
               "-p", "edits", json.dumps({"--enable-nccl-nvls": True, "--disable-custom-all-reduce": True}),
               "-p", "start_timeout", "300", "-p", "lock_wait", "300", "-p", "stop_units", json.dumps([BASELINE])]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    found: dict[str, list[str]] = {}
    try:
        deadline = time.monotonic() + 600
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, f"the {command} ended before the kill"
            states = {h: _plain_state(ssh, h) for h in multinode.NODES}
            if all(s[2:4] == ["1", "1"] for s in states.values()):  # placed and running on both nodes
                break
            time.sleep(0.3)
        for h in multinode.NODES:  # the state found, as each node's session recorded it
            record = subprocess.run(["ssh", "-F", ssh, h, "cat /run/workbench/session.json"],
                                    capture_output=True, text=True, timeout=10).stdout
            snaps = json.loads(record)["snapshots"]
            found[h] = [("active" if snaps[u]["running"] else "inactive") if u in snaps else "?"
                        for u in (multinode.UNIT, BASELINE)] + ["0", "0", "no-record"]
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    gone = time.monotonic()
    waited = {}
    for h in multinode.NODES:
        while (state := [s.replace("failed", "inactive") for s in _plain_state(ssh, h)]) != found[h]:
            assert time.monotonic() - gone < 60, f"{h} not restored 60 s after the kill: {state} (found {found[h]})"
            time.sleep(0.2)
        waited[h] = time.monotonic() - gone
    print(f"\nDEPLOYMENT-GUARD-RESTORE ({command}) " + " ".join(f"{h}={s:.2f}s" for h, s in waited.items()),
          flush=True)


SKEW_S = 3.0


def test_one_host_with_a_skewed_clock_is_measured_and_corrected_in_the_merged_journal(testbed, two_nodes):
    """gpu-b's journald and its SSH sessions run SKEW_S ahead (libfaketime; see workbench/testbed/skew.py for
    why not ``date -s`` or a time namespace): the offset is measured over a new connection and taken off, so
    the rendezvous every rank of both nodes passes at one moment lines up across the nodes again."""
    import time

    from workbench.deployment.topology import RENDEZVOUS_JOINED
    from workbench.testbed import skew

    dep, hosts = two_nodes
    root = Path(next(h.root for h in testbed.hosts if h.name == "gpu-b"))
    realtime = subprocess.run(["unshare", "--time", "--monotonic", "1000", "date", "+%s.%N"], capture_output=True,
                              text=True, check=True).stdout
    assert abs(float(realtime) - time.time()) < 1.0  # a time namespace leaves CLOCK_REALTIME alone: no use here
    before = {h: tree_digest(host) for h, host in hosts.items()}
    with skew.skewed_clock(hosts["gpu-b"], root, SKEW_S):
        fresh = {"gpu-a": hosts["gpu-a"], "gpu-b": SSHHost("gpu-b", ssh_config=str(testbed.ssh_config))}
        try:
            offsets = {n.label: measure_offset(fresh[n.host]) for n in dep.nodes}
            assert abs(offsets["node1"].offset - SKEW_S) < 0.3, offsets["node1"].describe()
            assert abs(offsets["node0"].offset) < 0.3, offsets["node0"].describe()
            with _session(dep, fresh) as ds:
                out = ds.start_base(timeout=300)
                assert out.ok, out.describe()
                frames = read_nodes(dep, {n.label: ds.sessions[n.label].svc for n in dep.nodes})
        finally:
            fresh["gpu-b"].close()
    assert {h: tree_digest(host) for h, host in hosts.items()} == before

    def joined(frame) -> pd.Series:
        own = frame[frame["message"].fillna("").str.contains(RENDEZVOUS_JOINED)]
        assert len(own) == 8, len(own)  # every rank of the node
        return own["time"]

    raw = (joined(frames["node1"]).median() - joined(frames["node0"]).median()).total_seconds()
    assert abs(raw - SKEW_S) < 0.5, raw  # the journal of gpu-b really ran ahead
    merged = merge(frames, {k: v.offset for k, v in offsets.items()})
    ends = merged[merged["message"].fillna("").str.contains(RENDEZVOUS_JOINED)]
    by_node = ends.groupby("node")["time_corrected"].median()
    corrected = (by_node["node1"] - by_node["node0"]).total_seconds()
    assert abs(corrected) < 0.5, corrected  # one moment again
    assert merged.attrs["clock_offsets"]["node1"] == offsets["node1"].offset
    print(f"\nCLOCK-SKEW set {SKEW_S:+.1f} s; measured {offsets['node1'].describe()}; rendezvous node1-node0 "
          f"raw {raw:+.3f} s, corrected {corrected:+.3f} s")
    again = SSHHost("gpu-b", ssh_config=str(testbed.ssh_config))
    try:
        after = measure_offset(again)
    finally:
        again.close()
    assert abs(after.offset) < 0.3, after.describe()  # the clock is back


def test_flags_that_differ_between_nodes_are_shown_and_named_when_the_start_hangs(testbed, two_nodes, capsys):
    """gpu-b's unit gets ``--enable-nccl-nvls`` alone (a runtime override): status says so, and the start
    that hangs in the first collective until the watchdog names node1 and the flag, not a timed-out rank."""
    import json

    dep, hosts = two_nodes
    before = {h: tree_digest(host) for h, host in hosts.items()}
    override = f"/run/systemd/system/{multinode.UNIT}.d/workbench-test-mismatch.conf"  # /etc would shadow a unit in /run
    argv = multinode.MultinodeProvisioner(subnet=testbed.subnet).unit_text(1).split("ExecStart=", 1)[1].split("\n")[0]
    hosts["gpu-b"].put(f"[Service]\nExecStart=\nExecStart={argv} --enable-nccl-nvls\n".encode(), override)
    hosts["gpu-b"].run(["systemctl", "daemon-reload"], check=True)
    try:
        code, shown, _ = cli(capsys, "status", "k26-2node", "--json", "--ssh-config", str(testbed.ssh_config))
        assert code == 0  # both stopped: not degraded
        assert json.loads(shown)["flag_differences"] == {"--enable-nccl-nvls": {"node0": None, "node1": True}}
        with _session(dep, hosts) as ds:
            out = ds.start_base(timeout=300)
        assert not out.ok
        assert out.failed_node == "node1", out.describe()
        assert "flags differ between nodes (--enable-nccl-nvls: node0=absent node1=True)" in out.reason
        frames = read_nodes(dep, {n.label: ds.sessions[n.label].svc for n in dep.nodes})
        text0 = "\n".join(frames["node0"]["message"].fillna(""))
        assert "Watchdog caught collective operation timeout" in text0  # the head's ranks hung, as on real NCCL
    finally:
        hosts["gpu-b"].run(["sh", "-c", f"rm -rf /run/systemd/system/{multinode.UNIT}.d && systemctl daemon-reload"],
                           check=True)
    assert {h: tree_digest(host) for h, host in hosts.items()} == before


SWAPPED = """[deployment.k26-swapped]
unit = "sglang-k26-2node.service"
port = 30002
[[deployment.k26-swapped.node]]
host = "gpu-b"
rank = 0
[[deployment.k26-swapped.node]]
host = "gpu-a"
rank = 1
"""


def _untouched(host) -> str:
    """What any stop, start or session would change: unit files and state (tree_digest), the invocation of
    the 2-node unit and of the baseline (a make-room stop and restart gives a new one), the session record."""
    inv = host.run(["systemctl", "show", "-p", "InvocationID", "--value", multinode.UNIT, BASELINE], check=True).stdout
    rec = host.run("test -e /run/workbench/session.json && echo record || echo no-record").stdout
    return tree_digest(host) + inv + rec


def test_ranks_that_do_not_fit_the_deployment_are_refused_before_either_host_is_touched(
        testbed, two_nodes, tmp_path, monkeypatch, capsys):
    """gpu-b as rank 0 and gpu-a as rank 1 in the file, the units saying the opposite: ``workbench deployment
    start`` and ``status`` exit 2 naming node, flag, expected and found; a bisect on it is bad input (exit 2)
    with no trial; neither host changed (its baseline not even made room for).

    The test holds both hosts' locks throughout (other sessions on the shared testbed wait), so what it
    compares cannot move under it, and the refusals, asked with ``--lock-wait 0``, show they came before
    any lock was tried: a lock tried would be ``LockHeld`` (exit 3, ``host_locked``)."""
    from workbench.lock import HostLock
    from workbench.runbooks.execute import execute

    _dep, hosts = two_nodes
    path = tmp_path / "deployments.toml"
    path.write_text(SWAPPED)
    monkeypatch.setenv("WORKBENCH_DEPLOYMENTS", str(path))
    ssh = ["--ssh-config", str(testbed.ssh_config)]
    with contextlib.ExitStack() as locks:
        for h in multinode.NODES:  # node order, as every deployment session takes them
            locks.enter_context(HostLock(hosts[h], purpose="test: deployment refused before any lock", wait=600))
        _refused_untouched(testbed, hosts, tmp_path, capsys, ssh, execute)


def _refused_untouched(testbed, hosts, tmp_path, capsys, ssh, execute) -> None:
    before = {h: _untouched(host) for h, host in hosts.items()}
    assert all(b.endswith("no-record\n") for b in before.values()), before
    said = "node0 (gpu-b): --node-rank expected 0, found 1; node1 (gpu-a): --node-rank expected 1, found 0"
    code, out, err = cli(capsys, "deployment", "start", "k26-swapped", "--make-room", BASELINE, "--lock-wait", "0",
                         *ssh)
    assert code == 2 and said in err, (out, err)
    code, out, err = cli(capsys, "start", "gpu-b,gpu-a", multinode.UNIT, "--wait", *ssh)
    assert code == 2 and said in err, (out, err)
    code, out, err = cli(capsys, "status", "k26-swapped", "--json", *ssh)
    assert code == 2 and said in err
    assert json.loads(out)["mismatch"][0] == {"node": "node0", "host": "gpu-b", "flag": "--node-rank",
                                              "expected": "0", "found": "1"}
    outcome = execute("bisect", {"hosts": ["gpu-b", "gpu-a"], "base_unit": multinode.UNIT,
                                 "ssh_config": str(testbed.ssh_config), "edits": {"--enable-nccl-nvls": True},
                                 "stop_units": [BASELINE], "lock_wait": 0, "start_timeout": 300},
                      data_dir=str(tmp_path), progress=False)
    assert outcome.kind == "bad_parameters" and outcome.exit_code == 2, outcome.result.get("failure")
    assert said in outcome.result["failure"]["message"]
    assert outcome.result.get("trials") == [] and outcome.result.get("server_starts") == 0
    common = {"hosts": ["gpu-b", "gpu-a"], "base_unit": multinode.UNIT, "ssh_config": str(testbed.ssh_config),
              "stop_units": [BASELINE], "lock_wait": 0, "start_timeout": 300}
    for runbook, extra in (("factorial", {"factors": {"--enable-nccl-nvls": True}}),
                           ("ab", {"edits": {"--enable-nccl-nvls": True}, "concurrency": [1], "repeats": 2})):
        outcome = execute(runbook, {**common, **extra}, data_dir=str(tmp_path), progress=False)
        assert outcome.kind == "bad_parameters" and outcome.exit_code == 2, (runbook, outcome.result.get("failure"))
        assert said in outcome.result["failure"]["message"], runbook
        assert outcome.result.get("server_starts") in (0, None), runbook
    assert {h: _untouched(host) for h, host in hosts.items()} == before
