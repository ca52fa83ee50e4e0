"""A job's output as the journal frame: one invocation per job, the node and rank of each line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from workbench.slurm import facts
from workbench.slurm.journal import job_rows

FIX = Path(__file__).parents[2] / "fixtures" / "slurm" / "22.05"


def _job():
    return facts.parse_job((FIX / "show_job_running.out").read_text().strip())


def test_an_unlabelled_single_node_log_is_one_job_in_file_order() -> None:
    job = _job()
    rows = job_rows(job, "[2026-12-01 10:00:00 TP0] Load weight begin.\nplain line\n")
    assert rows["message"] == ["[2026-12-01 10:00:00 TP0] Load weight begin.", "plain line"]
    assert rows["invocation"] == [job.job_id] * 2 and rows["unit"] == [job.name] * 2
    assert rows["host"] == [job.node_list] * 2 and rows["identifier"] == ["job", "job"]
    assert rows["usec"][1] == rows["usec"][0] + 1 and rows["usec"][0] > 0


def test_srun_labels_name_the_task_and_its_node() -> None:
    job = dataclasses.replace(_job(), nodes=("node1", "node2"), node_list="node[1-2]")
    rows = job_rows(job, "0: [TP0] ready\n1: Traceback (most recent call last):\n   1: x\nunlabelled\n")
    assert rows["message"] == ["[TP0] ready", "Traceback (most recent call last):", "x", "unlabelled"]
    assert rows["host"] == ["node1", "node2", "node2", "node1"]
    assert rows["identifier"] == ["task 0", "task 1", "task 1", "job"]
