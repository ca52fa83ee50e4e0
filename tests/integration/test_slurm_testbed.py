"""The testbed's Slurm cluster inside the nspawn hosts (``testbed up --provision sim,slurm``): slurmctld on
gpu-d, slurmd on gpu-d and gpu-e, reached by SSH like every host; the issue's contract end to end."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.testbed
ROOT = Path(__file__).resolve().parents[2]
BASE = "sglang-k26-ddtree.sbatch"
EDITS = {"--ep-size": "8", "--enable-nccl-nvls": True, "--enable-flashinfer-allreduce-fusion": True}


@pytest.fixture(scope="module")
def slurm_testbed(testbed):
    from workbench.testbed import testbed as tb

    names = [h.name for h in testbed.hosts]
    if "gpu-d" not in names:
        # hosts join in name order: gpu-c is the containers provisioner's, so it comes with it
        extra = ["containers"] if "gpu-c" not in names else []
        testbed = tb.up(len(testbed.hosts), provision=tuple(dict.fromkeys([*tb.provisioned(testbed), *extra, "slurm"])))
    from workbench.slurm.clusters import connect_cluster

    cluster = connect_cluster("slurm:testbed", ssh_config=str(testbed.ssh_config))
    deadline = time.monotonic() + 60
    while not all(n.state == "idle" for n in cluster.nodes()):  # slurmd on gpu-e registers by itself
        assert time.monotonic() < deadline, cluster.nodes()
        time.sleep(0.5)
    yield testbed, cluster
    cluster.host.close()


def _ssh(testbed, host: str, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ssh", "-F", str(testbed.ssh_config), host, command], capture_output=True, text=True,
                          timeout=60)


def _cli(testbed, *argv: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORKBENCH_SLURM_CLUSTERS": "/nonexistent/slurm.toml"}
    return subprocess.Popen([sys.executable, "-m", "workbench", "--ssh-config", str(testbed.ssh_config), *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)


def _active(cluster) -> list[str]:
    return [j.job_id for j in cluster.jobs() if not j.ended]


def test_the_daemons_run_inside_the_nspawn_hosts(slurm_testbed) -> None:
    testbed, _ = slurm_testbed
    assert _ssh(testbed, "gpu-d", "systemctl is-active munge slurmctld slurmd").stdout.split() == ["active"] * 3
    e = _ssh(testbed, "gpu-e", "systemctl is-active munge slurmd; systemctl is-enabled slurmctld")
    assert e.stdout.split()[:2] == ["active", "active"] and "enabled" not in e.stdout.split()[2:]
    # the hosts' own baseline unit is not running: the node's GPUs belong to its jobs
    assert _ssh(testbed, "gpu-e", "systemctl is-active sglang-k26-ddtree.service").stdout.strip() != "active"
    # job output lands in the directory both hosts share
    assert _ssh(testbed, "gpu-e", "test -f /shared/scripts/" + BASE).returncode == 0
    st = json.loads(_cli(testbed, "testbed", "status", "--json").communicate(timeout=60)[0])
    assert "slurm" in st["provision"] and {"gpu-d", "gpu-e"} <= {h["name"] for h in st["hosts"]}


def test_cli_status_slurm_testbed(slurm_testbed) -> None:
    testbed, _ = slurm_testbed
    p = _cli(testbed, "status", "slurm:testbed", "--json")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    st = json.loads(out)
    assert st["cluster"] == "testbed" and [p["name"] for p in st["partitions"]] == ["gpu"]
    assert {n["name"]: (n["gres"], n["gpus"]) for n in st["nodes"]} == {"gpu-d": ("gpu:8", 8), "gpu-e": ("gpu:8", 8)}
    p = _cli(testbed, "status", "slurm:testbed")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and "node gpu-e" in out and "workbench jobs:" in out, out + err


def test_contract_bisect_on_slurm_testbed_with_two_in_flight(slurm_testbed, tmp_path) -> None:
    testbed, cluster = slurm_testbed
    p = _cli(testbed, "run", "bisect", "-p", "host", "slurm:testbed", "-p", "base_unit", BASE,
             "-p", "edits", json.dumps(EDITS), "-p", "max_parallel", "2", "-p", "start_timeout", "180",
             "--data-dir", str(tmp_path / "data"), "--no-progress")
    out, err = p.communicate(timeout=900)
    assert p.returncode == 0, out + err
    run_dir = Path(next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("run directory:")))
    result = json.loads((run_dir / "result.json").read_text())
    got = {tuple(tuple(e) for e in c["edits"]): (c["exception_type"], c["phase"]) for c in result["culprits"]}
    assert got == {(("--ep-size", "8"),): ("AttributeError", "cuda_graph_capture"),
                   (("--ep-size", "8"), ("--enable-nccl-nvls", True)): ("RuntimeError", "cuda_graph_capture")}
    assert {t["host"] for t in result["trials"]} == {"slurm:testbed/gpu-d", "slurm:testbed/gpu-e"}
    assert result["jobs_left"] == [] and result["host_restored"] is True and _active(cluster) == []
    squeue = _ssh(testbed, "gpu-d", "squeue -h -o '%j'").stdout.split()
    assert not [name for name in squeue if name.startswith("wb-")]


def test_two_node_server_as_one_job_on_the_testbed_hosts(slurm_testbed) -> None:
    from workbench.slurm.trial import run_job_trial
    from workbench.testbed.slurm import MULTINODE_SCRIPT

    testbed, cluster = slurm_testbed
    answers: list[str] = []
    head = next(h.address for h in testbed.hosts if h.name == "gpu-d")

    code = ("import json, sys, urllib.request\n"
            "body = json.dumps({'model': 'kimi-k2.6', 'prompt': 'hi', 'max_tokens': 4}).encode()\n"
            "req = urllib.request.Request(sys.argv[1], data=body, headers={'Content-Type': 'application/json'})\n"
            "print(urllib.request.urlopen(req, timeout=30).status)\n")

    def ask(kind: str, text: str) -> None:
        if kind == "phase" and text == "serving":  # the server on node 0 answers a completion from gpu-a
            r = _ssh(testbed, "gpu-a", shlex.join(["python3", "-c", code, f"http://{head}:30000/v1/completions"]))
            answers.append(r.stdout.strip() or r.stderr)

    trial = run_job_trial(cluster, cluster.read_script(MULTINODE_SCRIPT), [], timeout=180, on_event=ask)
    assert trial.ok and trial.node == "gpu-d,gpu-e", trial
    assert answers == ["200"]
    log = cluster.log(cluster.job(trial.job_id))
    assert any(line.startswith("1: ") and "TP15]" in line for line in log.splitlines())
    assert _active(cluster) == []


def test_sigterm_cancels_the_runs_jobs_on_the_testbed(slurm_testbed, tmp_path) -> None:
    testbed, cluster = slurm_testbed
    p = _cli(testbed, "run", "bisect", "--preset", "seeds-k26", "-p", "host", "slurm:testbed", "-p", "base_unit",
             BASE, "-p", "max_parallel", "2", "-p", "start_timeout", "180", "--data-dir", str(tmp_path / "data"),
             "--no-progress")
    deadline = time.monotonic() + 180
    while not any(j.running for j in cluster.jobs()):  # only the scheduler can say a trial job runs
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=180)
    assert p.returncode == 130, out + err
    assert _active(cluster) == []
    squeue = _ssh(testbed, "gpu-d", "squeue -h -o '%j %T'").stdout
    assert "wb-" not in squeue, squeue


def test_cli_variant_of_a_job_script_is_one_job_cancelled_after(slurm_testbed) -> None:
    testbed, cluster = slurm_testbed
    before = {j.job_id for j in cluster.jobs()}
    p = _cli(testbed, "variant", "slurm:testbed", BASE, "--set", "ep-size=8", "--plan")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and "--ep-size 8" in out and out.startswith("#!/bin/bash"), out + err
    p = _cli(testbed, "variant", "slurm:testbed", BASE, "--set", "ep-size=8", "--keep")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2 and "--keep" in err, out + err
    assert {j.job_id for j in cluster.jobs()} == before  # neither submitted anything
    p = _cli(testbed, "variant", "slurm:testbed", BASE, "--set", "ep-size=8", "--json", "--timeout", "180")
    out, err = p.communicate(timeout=300)
    assert p.returncode == 1, out + err
    row = json.loads(out)
    assert (row["outcome"], row["phase"], row["exception_type"]) == ("failed", "cuda_graph_capture", "AttributeError")
    assert row["node"] in ("gpu-d", "gpu-e") and "running: job" in err and _active(cluster) == []
