"""Ended jobs on a real Slurm cluster with accounting (Debian's slurmdbd over MariaDB, one node):
once the controller has purged a job (``MinJobAge`` 2 s here; it purges once a minute), its state
and exit code come from ``sacct``, and every verb that names the job says what it knows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.slurm import facts
from workbench.slurm.trial import run_job_trial
from workbench.testbed.slurm import BASE_SCRIPT, LocalSlurm, available

ROOT = Path(__file__).resolve().parents[2]
PURGE_WAIT = 130.0  # the controller purges ended jobs once a minute: two rounds at most


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    ok, why = available(accounting=True)
    if not ok:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Slurm tests: {why}")
        pytest.skip(why)
    bed = LocalSlurm(tmp_path_factory.mktemp("slurm-acct"), nodes=1, accounting=True, min_job_age=2)
    bed.up()
    yield bed
    bed.down()


@pytest.fixture(scope="module")
def env(bed, tmp_path_factory):
    path = tmp_path_factory.mktemp("clusters") / "slurm.json"
    bed.register(path)
    return {**os.environ, "PYTHONPATH": str(ROOT), "WORKBENCH_SLURM_CLUSTERS": str(path)}


def _cli(env, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workbench", *argv], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=180)


def test_a_purged_job_keeps_its_state_and_exit_code_in_sacct(bed, env) -> None:
    cluster = bed.cluster()
    assert cluster.accounting is True
    trial = run_job_trial(cluster, cluster.read_script(BASE_SCRIPT), [("--ep-size", "8")], job_name="acct-ep8",
                          timeout=120)
    assert trial.outcome == "failed" and trial.state == "FAILED", trial
    live = cluster.job(trial.job_id)
    assert live.source == "scontrol" and live.stdout
    # the accounting record of a job the controller still knows says the same
    [rec] = cluster.accounting_jobs([trial.job_id]) or []
    assert (rec.state, rec.exit_status, rec.node_list, rec.name) == (live.state, live.exit_status, live.node_list,
                                                                      live.name)
    deadline = time.monotonic() + PURGE_WAIT
    while cluster._run(facts.show_job(trial.job_id)).ok:  # only the controller can say it purged the job
        assert time.monotonic() < deadline, "the controller kept the job"
        time.sleep(1.0)
    job = cluster.job(trial.job_id)
    assert (job.source, job.state, job.exit_status, job.node_list) == ("sacct", "FAILED", live.exit_status, "node1")
    assert job.start_time == live.start_time and job.end_time == live.end_time
    assert [j.job_id for j in cluster.history() or []] == [trial.job_id]

    # status of the job id and of its name: from sacct, marked so
    st = json.loads(_cli(env, "status", "slurm:testbed", trial.job_id, "--json").stdout)
    assert st["accounting"] is True
    assert [(j["job_id"], j["state"], j["source"]) for j in st["jobs"]] == [(trial.job_id, "FAILED", "sacct")]
    by_name = json.loads(_cli(env, "status", "slurm:testbed", "wb-acct-ep8", "--json").stdout)  # sacct --name
    assert [j["job_id"] for j in by_name["jobs"]] == [trial.job_id]
    text = _cli(env, "status", "slurm:testbed", "wb-acct-*")
    assert text.returncode == 0 and "(accounting: sacct)" in text.stdout, text.stderr
    assert f"{trial.job_id} wb-acct-ep8" in text.stdout and "FAILED" in text.stdout and "[sacct]" in text.stdout
    # stop: nothing to cancel, the last state said; journal: its output path is not in the record
    p = _cli(env, "stop", "slurm:testbed", trial.job_id)
    assert p.returncode == 0 and f"job {trial.job_id} wb-acct-ep8: failed" in p.stdout, p.stdout + p.stderr
    p = _cli(env, "journal", "slurm:testbed", trial.job_id)
    assert p.returncode == 2 and "records no output path" in p.stderr and "purged" in p.stderr, p.stderr
    p = _cli(env, "status", "slurm:testbed", "999999")
    assert p.returncode == 2 and "its accounting has no record of it" in p.stderr, p.stderr

