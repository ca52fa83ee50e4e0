"""``workbench status slurm:NAME``: a job's GPUs and user from real records, and the text it prints."""

from __future__ import annotations

import dataclasses
from pathlib import Path

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
