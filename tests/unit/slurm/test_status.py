"""``workbench status slurm:NAME``: a job's GPUs and user from real records, and the text it prints."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from workbench.cli.slurm import status_lines
from workbench.slurm import facts

FIX = Path(__file__).parents[2] / "fixtures" / "slurm" / "22.05"


def test_gpus_per_node_and_user_from_a_real_running_job() -> None:
    job = facts.parse_job((FIX / "show_job_running.out").read_text().strip())
    assert facts.job_gpus_per_node(job) == 8 and facts.job_user(job) == "root"
    for tres, n in (("gres/gpu:h100=4", 4), ("gres:gpu:h100:2,gres:gpu:a100:1", 3), ("", 0), ("gres:shard:2", 0)):
        other = dataclasses.replace(job, fields={**job.fields, "TresPerNode": tres})
        assert facts.job_gpus_per_node(other) == n, tres


def test_status_text_names_every_node_its_jobs_and_ours() -> None:
    st = {"cluster": "testbed",
          "partitions": [{"name": "gpu", "state": "UP", "nodes": "node[1-2]", "default": True, "max_time": "UNLIMITED"}],
          "nodes": [{"name": "node1", "state": "allocated", "gres": "gpu:8", "gpus": 8, "gpus_used": 8,
                     "cpus": "2/0/0/2", "reason": None, "jobs": [{"job_id": "7", "name": "train", "user": "alice",
                                                                   "ours": False}]},
                    {"name": "node2", "state": "drained", "gres": "gpu:8", "gpus": 8, "gpus_used": 0,
                     "cpus": "0/0/2/2", "reason": "bad gpu", "jobs": []}],
          "jobs": [{"job_id": "9", "name": "wb-bisect-1", "state": "PENDING", "reason": "Resources", "nodes": ""}]}
    text = "\n".join(status_lines(st))
    assert "partition gpu*: UP, nodes node[1-2]" in text
    assert "running: 7 train (alice)" in text and "gpus 8/8 used" in text
    assert "drained (bad gpu)" in text and "running: -" in text
    assert "workbench jobs: 1" in text and "wb-bisect-1" in text and "PENDING (Resources)" in text


def test_job_lines_name_state_reason_nodes_exit_code_and_times_from_real_records() -> None:
    from workbench.slurm.cluster import job_row

    rows = {n: job_row(facts.parse_job((FIX / f"show_job_{n}.out").read_text().strip()))
            for n in ("pending", "running", "failed")}
    st = {"cluster": "testbed", "partitions": [], "nodes": [], "jobs": list(rows.values())}
    text = status_lines(st)
    pending, running, failed = (next(x for x in text if f" {r['job_id']} " in x) for r in rows.values())
    assert rows["pending"]["state"] == "PENDING" and f"PENDING ({rows['pending']['reason']})" in pending
    assert " exit " not in pending and " end " not in pending
    assert f"RUNNING on {rows['running']['nodes']}" in running and " start 20" in running and " end " not in running
    f = rows["failed"]
    assert f["state"] == "FAILED" and f"exit {f['exit_status']}" in failed and f["exit_status"] != 0
    assert f" start {f['start']:%Y-%m-%dT%H:%M:%S} end {f['end']:%Y-%m-%dT%H:%M:%S}" in failed


def test_status_says_whether_the_cluster_keeps_accounting_and_marks_sacct_s_records() -> None:
    from workbench.slurm.cluster import job_row

    [failed] = [j for j in facts.parse_sacct((FIX / "sacct_jobs.out").read_text()) if j.state == "FAILED"]
    st = {"cluster": "testbed", "accounting": True, "partitions": [], "nodes": [], "jobs": [job_row(failed)]}
    text = status_lines(st)
    assert text[0] == "cluster testbed (accounting: sacct)"
    assert any(f" {failed.job_id} " in x and "exit 3" in x and x.endswith("[sacct]") for x in text), text
    assert status_lines({**st, "accounting": False, "jobs": []})[0] == \
        "cluster testbed (no accounting: a job the controller purged is gone)"


def test_a_job_s_head_node_and_how_a_node_is_reached(tmp_path, monkeypatch) -> None:
    import json

    from workbench.errors import ConfigError
    from workbench.hosts import LocalHost
    from workbench.slurm.clusters import connect_cluster

    job = facts.parse_job((FIX / "show_job_running.out").read_text().strip())
    assert job.head == job.nodes[0] == "localhost"
    assert dataclasses.replace(job, nodes=("n2", "n3")).head == "n2" and dataclasses.replace(job, nodes=()).head == ""
    path = tmp_path / "slurm.json"
    monkeypatch.setenv("WORKBENCH_SLURM_CLUSTERS", str(path))
    path.write_text(json.dumps({"clusters": {"c": {"submit_host": "local", "node_hosts": {"node1": "local"}}}}))
    cluster = connect_cluster("slurm:c")
    assert isinstance(cluster.node_host("node1"), LocalHost) and cluster.node_hosts == {"node1": "local"}
    path.write_text(json.dumps({"clusters": {"c": {"submit_host": "local", "node_hosts": ["node1"]}}}))
    with pytest.raises(ConfigError, match="node_hosts must map"):
        connect_cluster("slurm:c")
