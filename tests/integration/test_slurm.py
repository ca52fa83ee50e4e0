"""A real Slurm cluster (Debian's slurm-wlm, munge) on this machine: job scripts as services,
trials as jobs, the seeds' culprits found by jobs the scheduler placed, and no job left behind."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from workbench.errors import ConfigError
from workbench.slurm import JobNotFound, SubmitError
from workbench.slurm.script import JobScript
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


def _why(found, events=()) -> str:
    """The conclusion, the trials' timeout events, with the job record, timeline and log end of each
    trial that timed out or failed naming no exception (a log read short, or a job the scheduler
    still called running)."""
    parts = [found.conclusion(), *(f"{k}: {t}" for k, t in events if k == "timeout")]
    for t in found.trials:
        if t.outcome == "timeout" or (t.outcome == "failed" and not t.exception_type):
            parts.append(f"job {t.job_id} {t.outcome} ({t.state}, {t.reason}) {t.edits} after "
                         f"{t.run_seconds:.1f} s, {t.timeline}:\n{t.log_excerpt[-3000:]}")
    return "\n".join(parts)


def test_bisect_finds_both_culprits_with_trials_as_jobs(cluster) -> None:
    edits = [EP8, NVLS, ("--enable-flashinfer-allreduce-fusion", True)]
    events: list[tuple[str, str]] = []
    found = bisect_jobs(cluster, BASE_SCRIPT, edits, timeout=120, on_event=lambda k, t: events.append((k, t)))
    got = {tuple(tuple(e) for e in c["edits"]): (c["exception_type"], c["phase"]) for c in found.culprits}
    assert got == {(EP8,): ("AttributeError", "cuda_graph_capture"),
                   (EP8, NVLS): ("RuntimeError", "cuda_graph_capture")}, _why(found, events)
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


def test_a_start_past_its_timeout_is_cancelled_and_keeps_the_log_s_end(cluster) -> None:
    slow = {"SGLANG_SIM_TIME_SCALE": "1"}  # a start of minutes (100 times the default), of which it waits 3 s
    trial = run_job_trial(cluster, cluster.read_script(BASE_SCRIPT), [], timeout=3, env=slow)
    assert trial.outcome == "timeout" and trial.phase != "serving", trial
    log = cluster.log(cluster.job(trial.job_id))  # the cancelled job wrote no more after the trial read it
    assert trial.log_excerpt.splitlines() == log.splitlines()[-80:] and (log or not trial.timeline), trial
    assert trial.state in ("CANCELLED", "COMPLETING") and _active(cluster) == []


def test_a_server_that_never_stops_logging_still_times_out(cluster, tmp_path) -> None:
    chatty = JobScript(f"#!/bin/bash\n#SBATCH --output={tmp_path}/chatty-%j.log\n# workbench: server\n"
                       "python3 -c 'while True: print(\"waiting for the rendezvous\", flush=True)' --port 0\n")
    trial = run_job_trial(cluster, chatty, [], timeout=3)
    assert trial.outcome == "timeout" and trial.run_seconds < 30, trial.run_seconds
    assert "waiting for the rendezvous" in trial.log_excerpt
    assert trial.state in ("CANCELLED", "COMPLETING") and _active(cluster) == []


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


# -- the CLI: ``workbench status slurm:testbed`` and ``workbench run bisect -p host slurm:testbed`` -----------

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli_env(cluster, tmp_path):
    """The environment of a ``workbench`` process that knows this cluster as ``slurm:testbed``."""
    bed = LocalSlurm(Path(cluster.script_dir).parent)
    bed.register(tmp_path / "slurm.json")
    return {**os.environ, "PYTHONPATH": str(ROOT), "WORKBENCH_SLURM_CLUSTERS": str(tmp_path / "slurm.json")}


def _cli(env, *argv: str, **kw):
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "workbench", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, **kw)


def test_cli_status_lists_partitions_nodes_with_their_jobs_and_ours(cluster, cli_env) -> None:
    import json

    base = cluster.read_script(BASE_SCRIPT)
    seen: dict[str, object] = {}

    def look(kind: str, text: str) -> None:
        if kind == "running":  # a job of ours holds a node: status must show it there and in our jobs
            p = _cli(cli_env, "status", "slurm:testbed", "--json")
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
            seen["json"] = json.loads(out)
            p = _cli(cli_env, "status", "slurm:testbed")
            seen["text"], _ = p.communicate(timeout=60)

    trial = run_job_trial(cluster, base, [], timeout=120, on_event=look, job_name="status-probe")
    st = seen["json"]
    assert isinstance(st, dict) and st["cluster"] == "testbed"
    assert [p["name"] for p in st["partitions"]] == ["gpu"] and st["partitions"][0]["default"] is True
    assert {n["name"] for n in st["nodes"]} == {"node1", "node2"}
    node = next(n for n in st["nodes"] if n["name"] == trial.node)
    assert node["gres"].startswith("gpu:8") and node["gpus"] == 8 and node["gpus_used"] == 8
    assert [j["job_id"] for j in node["jobs"]] == [trial.job_id] and node["jobs"][0]["ours"] is True
    ours = [j for j in st["jobs"] if j["job_id"] == trial.job_id]
    assert ours and ours[0]["state"] == "RUNNING" and ours[0]["name"] == "wb-status-probe"
    text = str(seen["text"])
    assert "partition gpu*" in text and f"running: {trial.job_id} wb-status-probe (root)" in text
    assert "gpus 8/8 used" in text and "workbench jobs:" in text
    # and once it ended: nothing running on the nodes, none of ours pending or running
    p = _cli(cli_env, "status", "slurm:testbed", "--json")
    out, _ = p.communicate(timeout=60)
    after = json.loads(out)
    assert all(n["jobs"] == [] and n["gpus_used"] == 0 for n in after["nodes"])
    assert all(j["state"] not in ("RUNNING", "PENDING") for j in after["jobs"])


def test_cli_status_of_an_unknown_cluster_is_a_clear_error(cli_env) -> None:
    p = _cli(cli_env, "status", "slurm:nosuch")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2, out + err
    assert "no Slurm cluster 'nosuch'" in err and "known: testbed" in err


def test_cli_run_bisect_on_the_cluster_finds_the_seeds_culprits_with_jobs(cluster, cli_env, tmp_path) -> None:
    import json

    edits = json.dumps({"--ep-size": "8", "--enable-nccl-nvls": True, "--enable-flashinfer-allreduce-fusion": True})
    p = _cli(cli_env, "run", "bisect", "-p", "host", "slurm:testbed", "-p", "base_unit", BASE_SCRIPT,
             "-p", "edits", edits, "-p", "max_parallel", "2", "-p", "start_timeout", "120",
             "--data-dir", str(tmp_path / "data"), "--no-progress")
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, out + err
    run_dir = Path(next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("run directory:")))
    result = json.loads((run_dir / "result.json").read_text())
    got = {tuple(tuple(e) for e in c["edits"]): (c["exception_type"], c["phase"]) for c in result["culprits"]}
    assert got == {(EP8,): ("AttributeError", "cuda_graph_capture"),
                   (EP8, NVLS): ("RuntimeError", "cuda_graph_capture")}, result["conclusion"]
    assert result["host_restored"] is True and result["jobs_left"] == [] and result["guarantee"]["complete"]
    assert {t["host"].split("/")[-1] for t in result["trials"]} == {"node1", "node2"}  # two in flight, two nodes
    assert all(t["host"].startswith("slurm:testbed/") for t in result["trials"])
    assert (run_dir / "trials.parquet").exists() and (run_dir / "report.html").exists()
    assert "culprit: --ep-size 8 -> AttributeError" in out
    assert all(c.get("ranks") and c.get("where") for c in result["culprits"]), result["culprits"]
    ran = {j.job_id: j.name for j in cluster.jobs()}
    assert sum(name.startswith(f"wb-{run_dir.name}-bisect-") for name in ran.values()) == result["server_starts"]
    assert _active(cluster) == []


def test_cli_run_bisect_refuses_bad_slurm_options_before_submitting(cluster, cli_env, tmp_path) -> None:
    before = {j.job_id for j in cluster.jobs()}
    p = _cli(cli_env, "run", "bisect", "--preset", "seeds-k26", "-p", "host", "slurm:testbed", "-p", "base_unit",
             BASE_SCRIPT, "-p", "max_parallel", "0", "--data-dir", str(tmp_path / "data"), "--no-progress")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 2 and "max_parallel" in err, out + err
    p = _cli(cli_env, "run", "bisect", "--preset", "seeds-k26", "-p", "host", "slurm:testbed", "-p", "base_unit",
             BASE_SCRIPT, "-p", "partition", "gpu;rm -rf /", "--data-dir", str(tmp_path / "data"), "--no-progress")
    out, err = p.communicate(timeout=300)
    assert p.returncode != 0 and "--partition" in out + err, out + err
    assert {j.job_id for j in cluster.jobs()} == before  # nothing was submitted


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_signalled_run_cancels_its_jobs(cluster, cli_env, tmp_path, sig) -> None:
    import json
    import signal
    import time

    p = _cli(cli_env, "run", "bisect", "--preset", "seeds-k26", "-p", "host", "slurm:testbed", "-p", "base_unit",
             BASE_SCRIPT, "-p", "max_parallel", "2", "-p", "start_timeout", "120", "--data-dir", str(tmp_path / "data"),
             "--no-progress")
    deadline = time.monotonic() + 120
    while not any(j.running for j in cluster.jobs()):  # only the scheduler can say a trial job runs
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.2)
    p.send_signal(getattr(signal, sig))
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, out + err
    assert _active(cluster) == [], cluster.jobs()
    run_dir = Path(next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("run directory:")))
    result = json.loads((run_dir / "result.json").read_text())
    assert result["failure"]["kind"] == "interrupted" and result["host_restored"] is True
    ours = [j for j in cluster.jobs() if j.name.startswith(f"wb-{run_dir.name}-")]
    assert ours and all(j.state in ("CANCELLED", "COMPLETED", "FAILED") for j in ours)


# -- a multi-node server as one job over two nodes --------------------------------------------------------


def test_two_node_server_is_one_job_over_both_nodes_and_serves(cluster) -> None:
    from workbench.testbed.slurm import MULTINODE_SCRIPT

    script = cluster.read_script(MULTINODE_SCRIPT)
    assert "--nodes=2" in script.headers and script.argv[2] == "sglang.launch_server"
    seen: dict[str, object] = {}

    def look(kind: str, text: str) -> None:
        if kind == "running":
            st = cluster.status()
            seen["nodes"] = {n["name"]: [j["job_id"] for j in n["jobs"]] for n in st["nodes"]}

    trial = run_job_trial(cluster, script, [], timeout=180, on_event=look)
    assert trial.ok and trial.phase == "serving", trial
    assert trial.node == "node[1-2]" and seen["nodes"] == {"node1": [trial.job_id], "node2": [trial.job_id]}
    log = cluster.log(cluster.job(trial.job_id))
    # one task per node (srun --label): node rank from SLURM_NODEID, the rendezvous at node1's address
    node0 = [line for line in log.splitlines() if line.startswith("0: ")]
    node1 = [line for line in log.splitlines() if line.startswith("1: ")]
    assert any("TP0]" in line for line in node0) and any("TP15]" in line for line in node1)
    assert not any("TP15]" in line for line in node0) and not any("TP0]" in line for line in node1)
    assert any("node_rank=1" in line for line in node1) and any("dist_init_addr='10.214.0.1:" in line for line in node1)
    assert any("The server is fired up" in line for line in node0)
    assert _active(cluster) == []


def test_two_node_failure_as_one_job_names_the_phase(cluster) -> None:
    from workbench.testbed.slurm import MULTINODE_SCRIPT

    trial = run_job_trial(cluster, cluster.read_script(MULTINODE_SCRIPT), [EP8], timeout=180)
    assert (trial.outcome, trial.exception_type, trial.phase) == ("failed", "AttributeError", "cuda_graph_capture"), trial
    assert trial.state in ("FAILED", "CANCELLED") and _active(cluster) == []
    assert trial.ranks and trial.where, trial  # the root cause's ranks and innermost frame, labels stripped


def _kernel_pid(parent: int) -> int:
    """The runbook's kernel: the ipykernel child of the ``workbench run`` process."""
    for task in Path(f"/proc/{parent}/task").iterdir():  # the kernel is started from one of its threads
        for child in (task / "children").read_text().split():
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if any(b"ipykernel" in a for a in argv):
                return int(child)
    raise AssertionError(f"no kernel under {parent}")


def test_killed_kernel_leaves_no_job_behind(cluster, cli_env, tmp_path) -> None:
    """The kernel is SIGKILLed mid-trial (its cell cancels nothing): ``workbench run`` cancels the run's
    jobs by name afterwards."""
    import json
    import signal
    import time

    p = _cli(cli_env, "run", "bisect", "--preset", "seeds-k26", "-p", "host", "slurm:testbed", "-p", "base_unit",
             BASE_SCRIPT, "-p", "max_parallel", "2", "-p", "start_timeout", "120", "--data-dir", str(tmp_path / "data"),
             "--no-progress")
    deadline = time.monotonic() + 120
    while not any(j.running for j in cluster.jobs()):  # only the scheduler can say a trial job runs
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.2)
    os.kill(_kernel_pid(p.pid), signal.SIGKILL)
    out, err = p.communicate(timeout=180)
    assert p.returncode == 3, out + err  # the kernel died
    assert _active(cluster) == [], cluster.jobs()
    run_dir = Path(next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("run directory:")))
    result = json.loads((run_dir / "result.json").read_text())
    assert result["host_restored"] is True and result["restore_notes"] == ["slurm:testbed: no job of the run left"]
    ours = [j for j in cluster.jobs() if j.name.startswith(f"wb-{run_dir.name}-")]
    assert ours and all(j.state == "CANCELLED" for j in ours), ours


def test_runs_reuse_the_ledger_s_trials_of_the_script_on_the_cluster(cluster, cli_env, tmp_path) -> None:
    """A second factorial in the same data directory submits no job; a bisect of the same edit reuses the
    factorial's verdict (the same keys as on a host: cluster, fingerprint, script text, edits); rerun starts."""
    import json

    data = str(tmp_path / "data")

    def run(*argv: str) -> tuple[dict, str]:
        p = _cli(cli_env, "run", *argv, "-p", "host", "slurm:testbed", "-p", "base_unit", BASE_SCRIPT,
                 "-p", "start_timeout", "120", "--data-dir", data, "--no-progress")
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, out + err
        run_dir = Path(next(x.split(": ", 1)[1] for x in out.splitlines() if x.startswith("run directory:")))
        return json.loads((run_dir / "result.json").read_text()), run_dir.name

    factors = json.dumps({"--ep-size": "8"})
    first, _ = run("factorial", "-p", "factors", factors, "-p", "max_parallel", "2")
    assert first["server_starts"] == 2 and not any(m["reused"] for m in first["matrix"])
    again, run_id = run("factorial", "-p", "factors", factors, "-p", "max_parallel", "2")
    assert again["server_starts"] == 0 and all(m["reused"] for m in again["matrix"])
    assert [(m["outcome"], m["exception_type"], m["job_id"]) for m in again["matrix"]] == \
        [(m["outcome"], m["exception_type"], m["job_id"]) for m in first["matrix"]]
    assert not any(j.name.startswith(f"wb-{run_id}-") for j in cluster.jobs())  # not one job submitted
    found, run_id = run("bisect", "-p", "edits", factors)
    assert found["server_starts"] == 0 and [t["reused"] for t in found["trials"]] == [True]
    assert [(c["edits"], c["exception_type"]) for c in found["culprits"]] == [([list(EP8)], "AttributeError")]
    assert not any(j.name.startswith(f"wb-{run_id}-") for j in cluster.jobs())
    fresh, _ = run("bisect", "-p", "edits", factors, "-p", "rerun", "true")
    assert fresh["server_starts"] == 1 and fresh["culprits"] == found["culprits"]
    assert _active(cluster) == []


LOAD = ["-p", "concurrency", "[1, 2]", "-p", "repeats", "2", "-p", "num_requests", "4", "-p",
        "requests_per_concurrency", "0", "-p", "warmup", "1", "-p", "output_len", "16", "-p", "model_spec",
        "kimi-k2.6", "-p", "telemetry", "false", "-p", "start_timeout", "180"]


def test_a_two_node_job_script_as_ab_arms_and_as_sweep_configurations(cluster, cli_env, tmp_path) -> None:
    """Each arm / configuration is one job over both nodes; its server is measured at the job's first
    node (task 0 serves HTTP; node1 is reached as ``local``: the cluster's ``node_hosts``)."""
    import json

    from workbench.testbed.slurm import MULTINODE_SCRIPT

    def run(*argv: str) -> dict:
        p = _cli(cli_env, "run", *argv, "-p", "host", "slurm:testbed", "-p", "base_unit", MULTINODE_SCRIPT, *LOAD,
                 "--data-dir", str(tmp_path / "data"), "--no-progress")
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, out + err
        run_dir = Path(next(x.split(": ", 1)[1] for x in out.splitlines() if x.startswith("run directory:")))
        return json.loads((run_dir / "result.json").read_text())

    ab = run("ab", "-p", "edits", json.dumps({"--enable-nccl-nvls": True}), "-p", "max_parallel", "2")
    assert ab["status"] == "ok", ab["failure"]
    a, b = ab["arms"]["A"], ab["arms"]["B"]
    assert a["node"] == b["node"] == "node[1-2]" and a["job_id"] != b["job_id"] and b["failure"] is None
    assert max(a["queue_seconds"], b["queue_seconds"]) > 0  # both want both nodes: one waited for the other
    assert all(pt["output_throughput"] > 0 for pt in a["points"] + b["points"])
    assert [r["concurrency"] for r in ab["speedup"]] == [1, 2] and ab["server_starts"] == 2
    assert ab["jobs_left"] == [] and ab["host_restored"] is True

    grid = {"--ep-size": [None, "8"]}
    sw = run("sweep", "-p", "grid", json.dumps(grid), "-p", "max_parallel", "2")
    got = {tuple(v for _, v in r["edits"]): (r["outcome"], r["exception_type"], r["phase"], bool(r["points"]),
                                             r["node"]) for r in sw["configs"]}
    assert got == {(None,): ("ready", None, "serving", True, "node[1-2]"),
                   ("8",): ("failed", "AttributeError", "cuda_graph_capture", False, "node[1-2]")}
    assert sw["best"] is not None and sw["jobs_left"] == [] and sw["host_restored"] is True
    assert _active(cluster) == []
