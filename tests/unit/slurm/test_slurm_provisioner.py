"""The testbed's slurm provisioner, written into a tree here (no host booted): what each host gets."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from workbench.slurm.script import JobScript
from workbench.testbed import slurm_hosts
from workbench.testbed.slurm import BASE_SCRIPT, MULTINODE_SCRIPT


@pytest.fixture
def trees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    monkeypatch.setenv("WORKBENCH_TESTBED_DIR", str(tmp_path / "state"))
    out = {}
    for host in ("gpu-d", "gpu-e"):
        root = tmp_path / host
        (root / "etc/systemd/system/multi-user.target.wants").mkdir(parents=True)
        for unit in ("sglang-k26-ddtree.service", "slurmctld.service", "slurmd.service", "munge.service"):
            (root / "etc/systemd/system/multi-user.target.wants" / unit).symlink_to(f"/lib/systemd/system/{unit}")
        (root / "etc/passwd").write_text("root:x:0:0::/root:/bin/sh\nmunge:x:4242:4343::/nonexistent:/bin/false\n")
        out[host] = root
    return out


def test_each_host_gets_the_cluster_and_the_controller_registers_it(trees: dict[str, Path]) -> None:
    if os.geteuid() != 0:
        pytest.skip("device nodes and chown need root")
    prov = slurm_hosts.SlurmProvisioner(layer=Path("/nonexistent"))
    for host, root in trees.items():
        prov.install(root, host)
    d, e = trees["gpu-d"], trees["gpu-e"]
    conf = (d / "etc/slurm/slurm.conf").read_text()
    assert conf == (e / "etc/slurm/slurm.conf").read_text()
    assert "ProctrackType=proctrack/linuxproc" in conf and "TaskPlugin=task/none" in conf
    assert "SlurmctldHost=gpu-d(10.213.0.14)" in conf and "NodeName=gpu-e NodeAddr=10.213.0.15" in conf
    key_d, key_e = d / "etc/munge/munge.key", e / "etc/munge/munge.key"
    assert key_d.read_bytes() == key_e.read_bytes() and len(key_d.read_bytes()) == 1024
    st = key_d.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4242, 4343, 0o400)  # the tree's munge user
    devs = sorted((d / "var/lib/workbench-gpus").iterdir())
    assert len(devs) == 8 and all(stat.S_ISCHR(p.stat().st_mode) for p in devs)
    wants = {p.name for p in (e / "etc/systemd/system/multi-user.target.wants").iterdir()}
    assert wants == {"slurmd.service", "munge.service"}  # no controller, no baseline unit on a node
    assert "slurmctld.service" in {p.name for p in (d / "etc/systemd/system/multi-user.target.wants").iterdir()}
    shared = slurm_hosts.shared_dir()
    assert {p.name for p in (shared / "scripts").iterdir()} == {BASE_SCRIPT, MULTINODE_SCRIPT}
    base = JobScript((shared / "scripts" / BASE_SCRIPT).read_text())
    assert "--gres=gpu:8" in base.headers and "SIM_GPU_STATE_DIR" not in base.text  # each node a host of its own
    assert "--output=/shared/logs/%x-%j.log" in base.headers
    reg = json.loads(slurm_hosts.registry_file().read_text())
    assert reg["clusters"]["testbed"] == {"submit_host": "gpu-d", "script_dir": "/shared/scripts", "partition": "gpu"}
    assert prov.nspawn_args("gpu-e") == [f"--bind={shared}:/shared"] and prov.nspawn_args("gpu-a") == []
    assert prov.lower("gpu-a") is None and prov.after_boot("gpu-e") is None


def test_hosts_outside_the_cluster_are_left_alone(trees: dict[str, Path], tmp_path: Path) -> None:
    root = tmp_path / "gpu-a"
    root.mkdir()
    slurm_hosts.SlurmProvisioner(layer=Path("/nonexistent")).install(root, "gpu-a")
    assert list(root.iterdir()) == []
