"""The base job on a real Slurm cluster (Debian's slurm-wlm, one node): ``workbench start|stop|restart
slurm:NAME SCRIPT`` submit and cancel the job script as the base job, and a variant leaves it alone
unless told to replace it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.slurm.base import base_job_name, base_jobs
from workbench.testbed.slurm import BASE_SCRIPT, LocalSlurm, available

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    ok, why = available()
    if not ok:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Slurm tests: {why}")
        pytest.skip(why)
    bed = LocalSlurm(tmp_path_factory.mktemp("slurm-base"), nodes=1)
    c = bed.up()
    yield c
    bed.down()


@pytest.fixture(scope="module")
def env(cluster, tmp_path_factory):
    path = tmp_path_factory.mktemp("clusters") / "slurm.json"
    LocalSlurm(Path(cluster.script_dir).parent).register(path)
    return {**os.environ, "PYTHONPATH": str(ROOT), "WORKBENCH_SLURM_CLUSTERS": str(path)}


def _cli(env, *argv: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workbench", *argv], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=timeout)


def _live(cluster) -> list[str]:
    return [j.job_id for j in cluster.jobs() if not j.ended]


def test_start_wait_stop_restart_the_base_job(cluster, env) -> None:
    p = _cli(env, "start", "slurm:testbed", BASE_SCRIPT, "--wait", "--timeout", "120")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ready in serving" in p.stdout and "running: job" in p.stderr
    [job] = base_jobs(cluster, BASE_SCRIPT)
    assert job.name == base_job_name(BASE_SCRIPT) == f"wb-base-{BASE_SCRIPT}" and job.running
    assert job.fields.get("TimeLimit") != "00:30:00"  # the script's own limit, not a trial's dead-man switch
    st = json.loads(_cli(env, "status", "slurm:testbed", "--json").stdout)
    assert [j["state"] for j in st["jobs"] if j["job_id"] == job.job_id] == ["RUNNING"]
    again = _cli(env, "start", "slurm:testbed", BASE_SCRIPT)
    assert again.returncode == 1 and f"already has base job {job.job_id}" in again.stderr, again.stderr
    # restart: the old job is cancelled, a new one submitted (not waited for)
    p = _cli(env, "restart", "slurm:testbed", BASE_SCRIPT)
    assert p.returncode == 0, p.stderr
    assert f"job {job.job_id} {job.name}: cancelled" in p.stdout and "submitted: base job of" in p.stdout
    [new] = base_jobs(cluster, BASE_SCRIPT)
    assert new.job_id != job.job_id
    # stop by id, then by script: nothing of ours is left; a second stop names what is missing (exit 2)
    p = _cli(env, "stop", "slurm:testbed", new.job_id)
    assert p.returncode == 0 and f"job {new.job_id}" in p.stdout, p.stderr
    assert _live(cluster) == []
    p = _cli(env, "stop", "slurm:testbed", BASE_SCRIPT)
    assert p.returncode == 2 and "no live base job" in p.stderr, p.stderr


def test_unknown_job_and_bad_options_are_exit_2_before_anything_changes(cluster, env) -> None:
    p = _cli(env, "stop", "slurm:testbed", "999999")
    assert p.returncode == 2 and "no job 999999" in p.stderr, p.stderr
    p = _cli(env, "start", "slurm:testbed", BASE_SCRIPT, "--partition", "gpu;rm")
    assert p.returncode == 2 and "--partition" in p.stderr, p.stderr
    p = _cli(env, "start", "slurm:testbed", BASE_SCRIPT, "--partition", "nosuch")
    assert p.returncode == 1 and "sbatch refused" in p.stderr, p.stderr  # honoured: the scheduler refuses it
    p = _cli(env, "start", "local", "x.service", "--qos", "high")
    assert p.returncode == 2 and "Slurm base job" in p.stderr, p.stderr
    assert _live(cluster) == []


def test_a_failing_base_job_is_judged_with_its_signature_and_cancelled(cluster, env) -> None:
    base = cluster.read_script(BASE_SCRIPT)
    Path(cluster.script_dir, "ep8.sbatch").write_text(base.with_edits([("--ep-size", "8")]).text)
    p = _cli(env, "start", "slurm:testbed", "ep8.sbatch", "--wait", "--timeout", "120")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "failed in" in p.stdout and "[" in p.stdout and "no job left" in p.stderr
    assert _live(cluster) == []
    job_id = p.stdout.split()[1]
    # its output file as the journal: one invocation (the job), the node it ran on, the server's lines
    j = _cli(env, "journal", "slurm:testbed", job_id, "--json")
    assert j.returncode == 0, j.stderr
    rows = [json.loads(x) for x in j.stdout.splitlines()]
    assert rows and {r["invocation"] for r in rows} == {job_id}
    assert any("Traceback" in r["message"] for r in rows) and {r["origin"] for r in rows} == {"unit"}
    by_script = _cli(env, "journal", "slurm:testbed", "ep8.sbatch", "--list")
    assert by_script.returncode == 0, by_script.stderr
    assert job_id in by_script.stdout and "wb-base-ep8.sbatch" in by_script.stdout and "node1" in by_script.stdout
    text = _cli(env, "journal", "slurm:testbed", job_id, "--grep", "Traceback")
    assert text.returncode == 0 and " node1 job: " in text.stdout and " TP1 " in text.stdout, text.stdout
    # and diagnosed as a unit's journal is: the same exception the start verdict named
    t = _cli(env, "tracebacks", "--host", "slurm:testbed", "--unit", "ep8.sbatch", "--json")
    assert t.returncode == 1, t.stdout + t.stderr
    assert json.loads(t.stdout)["root_cause"]["exception_type"] in p.stdout
    t = _cli(env, "tracebacks", "--host", "slurm:testbed", "--unit", "nosuch.sbatch")
    assert t.returncode == 2 and "knows no job" in t.stderr, t.stderr


def test_variant_leaves_the_base_job_alone_unless_told_to_replace_it(cluster, env) -> None:
    p = _cli(env, "start", "slurm:testbed", BASE_SCRIPT, "--wait", "--timeout", "120")
    assert p.returncode == 0, p.stderr
    [job] = base_jobs(cluster, BASE_SCRIPT)
    try:
        # the one node is the base job's: with --replace-base the variant gets it and the base comes back
        p = _cli(env, "variant", "slurm:testbed", BASE_SCRIPT, "--set", "log-level=debug", "--replace-base",
                 "--timeout", "120")
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"base job {job.job_id} cancelled" in p.stderr and "submitted again" in p.stderr
        [back] = base_jobs(cluster, BASE_SCRIPT)
        assert back.job_id != job.job_id
        # without it the variant is a job of its own: it waits for the node, the base job untouched
        v = subprocess.Popen([sys.executable, "-m", "workbench", "variant", "slurm:testbed", BASE_SCRIPT, "--set",
                              "log-level=debug"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                             cwd=ROOT, env=env)
        assert v.stderr is not None
        first = v.stderr.readline()  # "  submitted: job N"
        assert "submitted: job" in first, first
        mine = first.split()[-1]
        assert cluster.job(mine).state == "PENDING"
        assert [j.job_id for j in base_jobs(cluster, BASE_SCRIPT)] == [back.job_id]
        v.terminate()  # SIGTERM: the variant cancels its own job
        v.communicate(timeout=60)
        assert cluster.job(mine).ended
        assert [j.job_id for j in base_jobs(cluster, BASE_SCRIPT)] == [back.job_id]
    finally:
        cluster.cancel(_live(cluster))
    assert _live(cluster) == []


def test_journal_follows_a_job_from_pending_to_its_end(cluster, env) -> None:
    """``journal slurm:NAME JOBID -f``: started while the job waits for the node, it prints the job's
    lines as the server writes them and returns by itself once the job has ended."""
    base = cluster.read_script(BASE_SCRIPT)
    blocker = cluster.submit(base, job_name="follow-blocker", time_limit="5")  # holds the one node
    try:
        job = cluster.submit(base.with_edits([("--ep-size", "8")]), job_name="follow-probe", time_limit="5")
        p = subprocess.Popen([sys.executable, "-m", "workbench", "journal", "slurm:testbed", job, "-f", "-n", "1000",
                              "--json", "--interval", "0.5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=ROOT, env=env)
        assert p.stderr is not None
        first = p.stderr.readline()  # the follower's own word that it waits (it has seen the job pending)
        assert f"job {job} wb-follow-probe pending" in first, first + p.stderr.read()
        deadline = time.monotonic() + 60
        while cluster.job(blocker).state != "RUNNING":
            assert time.monotonic() < deadline and cluster.job(job).state == "PENDING"
            time.sleep(0.2)  # only the scheduler can say the blocker holds the node
        assert p.poll() is None
        cluster.cancel([blocker])
        out, rest = p.communicate(timeout=180)
        err = first + rest
    finally:
        cluster.cancel(_live(cluster))
    assert p.returncode == 0, err
    assert f"job {job} wb-follow-probe pending" in err and f"job {job} wb-follow-probe: FAILED" in err, err
    followed = [json.loads(x) for x in out.splitlines()]
    after = [json.loads(x) for x in _cli(env, "journal", "slurm:testbed", job, "--json").stdout.splitlines()]
    assert [r["message"] for r in followed] == [r["message"] for r in after]  # every line, once, in order
    assert any("Traceback" in r["message"] for r in followed) and {r["invocation"] for r in followed} == {job}
    assert _live(cluster) == []


def test_without_accounting_an_unknown_job_says_so(cluster, env) -> None:
    p = _cli(env, "status", "slurm:testbed", "999999")
    assert p.returncode == 2 and "keeps no accounting" in p.stderr, p.stderr
    p = _cli(env, "status", "slurm:testbed")
    assert p.returncode == 0 and "(no accounting: a job the controller purged is gone)" in p.stdout, p.stdout
