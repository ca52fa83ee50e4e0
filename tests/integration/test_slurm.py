"""A real Slurm cluster (Debian's slurm-wlm, munge) on this machine: job scripts as services,
trials as jobs, the seeds' culprits found by jobs the scheduler placed, and no job left behind."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from workbench.errors import ConfigError
from workbench.slurm import JobNotFound, SubmitError
from workbench.slurm.search import bisect_jobs, factorial_jobs
from workbench.slurm.trial import run_job_trial, run_many
from workbench.testbed.slurm import BASE_SCRIPT, LocalSlurm, available

EP8 = ("--ep-size", "8")
NVLS = ("--enable-nccl-nvls", True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    ok, why = available()
    if not ok:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Slurm tests: {why}")
        pytest.skip(why)
    bed = LocalSlurm(tmp_path_factory.mktemp("slurm"), nodes=2)
    c = bed.up()
    yield c
    bed.down()


def _active(cluster) -> list[str]:
    return [j.job_id for j in cluster.jobs() if not j.ended]


def test_status_lists_partitions_nodes_and_jobs(cluster) -> None:
    st = cluster.status()
    assert st["cluster"] == "testbed"
    assert [p["name"] for p in st["partitions"]] == ["gpu"]
    assert st["nodes"][0]["gpus"] == 8 and st["nodes"][0]["state"] in ("idle", "mixed", "allocated")


def test_baseline_serves_as_a_job_and_is_cancelled_after(cluster) -> None:
    events: list[tuple[str, str]] = []
    trial = run_job_trial(cluster, cluster.read_script(BASE_SCRIPT), [], timeout=120,
                          on_event=lambda k, t: events.append((k, t)))
    assert trial.ok and trial.phase == "serving", trial
    assert trial.queue_seconds is not None and trial.node in ("node1", "node2")
    assert [k for k, _ in events][:2] == ["submitted", "running"]
    assert any(k == "phase" and t == "cuda_graph_capture" for k, t in events)
    assert cluster.job(trial.job_id).state in ("CANCELLED", "COMPLETING")
    assert _active(cluster) == []


def test_seeds_failures_as_jobs(cluster) -> None:
    base = cluster.read_script(BASE_SCRIPT)
    ep8 = run_job_trial(cluster, base, [EP8], timeout=120)
    both = run_job_trial(cluster, base, [EP8, NVLS], timeout=120)
    assert (ep8.outcome, ep8.exception_type, ep8.phase) == ("failed", "AttributeError", "cuda_graph_capture")
    assert "topk_ids" in (ep8.message or "")
    assert (both.exception_type, both.phase) == ("RuntimeError", "cuda_graph_capture")
    assert "CUBLAS" in (both.message or "")
    assert ep8.state == "FAILED" and _active(cluster) == []


def test_bisect_finds_both_culprits_with_trials_as_jobs(cluster) -> None:
    edits = [EP8, NVLS, ("--enable-flashinfer-allreduce-fusion", True)]
    found = bisect_jobs(cluster, BASE_SCRIPT, edits, timeout=120)
    got = {tuple(tuple(e) for e in c["edits"]): (c["exception_type"], c["phase"]) for c in found.culprits}
    assert got == {(EP8,): ("AttributeError", "cuda_graph_capture"),
                   (EP8, NVLS): ("RuntimeError", "cuda_graph_capture")}, found.conclusion()
    assert found.jobs_left == [] and _active(cluster) == []
    assert found.starts <= 7 and "queue wait" in found.conclusion()
    assert found.guarantee.get("complete") is True, found.guarantee


def test_bisect_with_two_jobs_in_flight_finds_the_same(cluster) -> None:
    edits = [EP8, NVLS, ("--enable-flashinfer-allreduce-fusion", True)]
    found = bisect_jobs(cluster, BASE_SCRIPT, edits, max_parallel=2, timeout=120)
    got = {tuple(tuple(e) for e in c["edits"]) for c in found.culprits}
    assert got == {(EP8,), (EP8, NVLS)} and found.jobs_left == []
    assert {t.node for t in found.trials} == {"node1", "node2"}


def test_factorial_with_two_in_flight_uses_both_nodes(cluster) -> None:
    found = factorial_jobs(cluster, BASE_SCRIPT, [EP8, NVLS], max_parallel=2, timeout=120)
    assert len(found.trials) == 3 and found.jobs_left == []
    assert {tuple(tuple(e) for e in c["edits"]) for c in found.culprits} == {(EP8,), (EP8, NVLS)}
    assert {t.node for t in found.trials} == {"node1", "node2"}
    assert found.wall_seconds < sum(t.run_seconds + (t.queue_seconds or 0) for t in found.trials)


def test_more_in_flight_than_nodes_queue_and_the_wait_is_reported_apart(cluster) -> None:
    trials = run_many(cluster, cluster.read_script(BASE_SCRIPT), [[EP8]] * 3, max_parallel=3, timeout=120)
    assert [t.exception_type for t in trials] == ["AttributeError"] * 3
    # two nodes, gres gpu:8 a job: the third waits in the queue, and its wait is not run time
    assert max(t.queue_seconds or 0 for t in trials) >= 2.0
    assert all(t.run_seconds < 60 for t in trials) and _active(cluster) == []


def test_interrupted_trial_cancels_its_job(cluster) -> None:
    seen: dict[str, str] = {}

    def stop(kind: str, text: str) -> None:
        if kind == "running":
            seen["job"] = text.split()[1]
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_job_trial(cluster, cluster.read_script(BASE_SCRIPT), [], timeout=120, on_event=stop)
    assert cluster.job(seen["job"]).state in ("CANCELLED", "COMPLETING")
    assert _active(cluster) == []


def test_bad_input_is_refused_before_or_by_the_scheduler(cluster) -> None:
    base = cluster.read_script(BASE_SCRIPT)
    with pytest.raises(ConfigError):
        run_job_trial(cluster, base, [], timeout=-5)
    with pytest.raises(ConfigError):
        cluster.read_script("../etc/passwd")
    with pytest.raises(JobNotFound):
        cluster.job("999999")
    cluster.partition, old = "nosuch", cluster.partition
    try:
        with pytest.raises(SubmitError, match="invalid partition"):
            run_job_trial(cluster, base, [], timeout=60)
    finally:
        cluster.partition = old
    assert _active(cluster) == []


def test_parallel_trials_do_not_interfere(cluster) -> None:
    base = cluster.read_script(BASE_SCRIPT)
    out: list = []
    threads = [threading.Thread(target=lambda: out.append(run_job_trial(cluster, base, [EP8], timeout=120)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert [t.exception_type for t in out] == ["AttributeError", "AttributeError"]
    assert _active(cluster) == []


def test_cluster_by_name_from_the_testbed_file(cluster, tmp_path, monkeypatch) -> None:
    from workbench.slurm.clusters import connect_cluster
    from workbench.testbed.slurm import LocalSlurm

    monkeypatch.setenv("WORKBENCH_TESTBED_DIR", str(tmp_path))
    monkeypatch.setenv("WORKBENCH_SLURM_CLUSTERS", str(tmp_path / "none.toml"))
    with pytest.raises(ConfigError, match="no Slurm cluster 'testbed'"):
        connect_cluster("slurm:testbed")
    bed = LocalSlurm(Path(cluster.script_dir).parent)
    bed.register(tmp_path / "slurm.json")
    again = connect_cluster("slurm:testbed")
    assert again.status()["nodes"][0]["gpus"] == 8
    assert again.read_script(BASE_SCRIPT).argv[2] == "sglang.launch_server"
