"""The testbed's multinode provisioner writes the 2-node unit per node and the deployment file."""

from __future__ import annotations

from workbench.deployment.model import parse_deployments
from workbench.services.base import exec_argv
from workbench.testbed.multinode import SITE, UNIT
from workbench.testbed.provision import PROVISIONERS


def test_registered_and_installs_one_unit_per_node(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_TESTBED_DIR", str(tmp_path / "state"))
    (prov,) = PROVISIONERS.make(["multinode"])
    for host in ("gpu-a", "gpu-b", "gpu-c"):
        prov.install(tmp_path / host, host)
    argvs = {h: exec_argv((tmp_path / h / "etc/systemd/system" / UNIT).read_text()) for h in ("gpu-a", "gpu-b")}
    for rank, host in enumerate(("gpu-a", "gpu-b")):
        argv = argvs[host]
        assert argv[argv.index("--node-rank") + 1] == str(rank)
        assert argv[argv.index("--dist-init-addr") + 1] == "10.213.0.11:20000"
        assert argv[argv.index("--tp-size") + 1] == "16" and argv[argv.index("--nnodes") + 1] == "2"
    assert (tmp_path / "gpu-a" / SITE.lstrip("/") / "sglang" / "launch_server.py").is_file()
    assert not (tmp_path / "gpu-c" / "etc/systemd/system" / UNIT).exists()  # two nodes: gpu-a and gpu-b only
    dep = parse_deployments((tmp_path / "state" / "deployments.toml").read_text())["k26-2node"]
    assert dep.hosts == ("gpu-a", "gpu-b") and dep.port == 30002
    prov.install(tmp_path / "gpu-a", "gpu-a")  # a refresh into a running host: same files again
    assert exec_argv((tmp_path / "gpu-a" / "etc/systemd/system" / UNIT).read_text()) == argvs["gpu-a"]


def test_the_two_node_unit_reads_its_own_fault_file(tmp_path, monkeypatch):
    from workbench.testbed.multinode import FAULT_FILE
    from workbench.unitfile import UnitFile

    monkeypatch.setenv("WORKBENCH_TESTBED_DIR", str(tmp_path / "state"))
    (prov,) = PROVISIONERS.make(["multinode"])
    prov.install(tmp_path / "gpu-b", "gpu-b")
    unit = UnitFile.parse((tmp_path / "gpu-b" / "etc/systemd/system" / UNIT).read_text())
    assert f"SGLANG_SIM_FAULT_FILE={FAULT_FILE}" in unit.get_all("Service", "Environment")
    faults = (tmp_path / "gpu-b" / FAULT_FILE.lstrip("/")).read_text()
    assert 'id = "ep8-nvls-cublas"' in faults  # the simulator's defaults until a test writes 2-node faults
    assert not (tmp_path / "gpu-b" / "etc/sglang-sim/faults.toml").exists()  # the single-node file is not ours
