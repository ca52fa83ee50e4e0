"""The factorial and A/B runbooks with their trials as jobs on the testbed's Slurm cluster
(``-p host slurm:testbed``): the seeds' EP8/NVLS edits, results asserted, no job of ours left."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from tests.integration import test_slurm_testbed as _tb
from tests.integration.test_slurm_testbed import BASE, _active, _cli, _ssh

slurm_testbed = _tb.slurm_testbed  # the cluster's fixture, shared with the contract's tests

pytestmark = pytest.mark.testbed
EP8_NVLS = {"--ep-size": "8", "--enable-nccl-nvls": True}


def _result(out: str) -> dict:
    run_dir = Path(next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("run directory:")))
    return json.loads((run_dir / "result.json").read_text())


def _none_of_ours(testbed, cluster) -> None:
    assert _active(cluster) == []
    squeue = _ssh(testbed, "gpu-d", "squeue -h -o '%j %T'").stdout
    assert "wb-" not in squeue, squeue


def test_factorial_on_slurm_testbed_with_two_in_flight(slurm_testbed, tmp_path) -> None:
    testbed, cluster = slurm_testbed
    p = _cli(testbed, "run", "factorial", "-p", "host", "slurm:testbed", "-p", "base_unit", BASE,
             "-p", "factors", json.dumps(EP8_NVLS), "-p", "max_parallel", "2", "-p", "start_timeout", "180",
             "--data-dir", str(tmp_path / "data"), "--no-progress")
    out, err = p.communicate(timeout=900)
    assert p.returncode == 0, out + err
    result = _result(out)
    outcomes = {tuple(f for f, on in m["factors"].items() if on): (m["outcome"], m["exception_type"], m["phase"])
                for m in result["matrix"]}
    assert outcomes == {(): ("ready", None, "serving"),
                        ("--enable-nccl-nvls",): ("ready", None, "serving"),
                        ("--ep-size",): ("failed", "AttributeError", "cuda_graph_capture"),
                        ("--ep-size", "--enable-nccl-nvls"): ("failed", "RuntimeError", "cuda_graph_capture")}
    causes = {tuple(c["factors"]): (c["exception_type"], c["phase"]) for c in result["causes"]}
    assert causes == {("--ep-size",): ("AttributeError", "cuda_graph_capture"),
                      ("--ep-size", "--enable-nccl-nvls"): ("RuntimeError", "cuda_graph_capture")}
    # every row a job of its own, its wait in the queue apart from its run time
    assert len({m["job_id"] for m in result["matrix"]}) == 4
    assert all(m["queue_seconds"] is not None and m["queue_seconds"] >= 0 for m in result["matrix"])
    assert {m["host"] for m in result["matrix"]} == {"slurm:testbed/gpu-d", "slurm:testbed/gpu-e"}
    assert result["server_starts"] == 4 and result["jobs_left"] == [] and result["host_restored"] is True
    assert "--ep-size 8 alone causes" in result["conclusion"]
    _none_of_ours(testbed, cluster)


def test_sigterm_cancels_the_factorials_jobs(slurm_testbed, tmp_path) -> None:
    testbed, cluster = slurm_testbed
    p = _cli(testbed, "run", "factorial", "-p", "host", "slurm:testbed", "-p", "base_unit", BASE,
             "-p", "factors", json.dumps(EP8_NVLS), "-p", "max_parallel", "2", "-p", "start_timeout", "180",
             "--data-dir", str(tmp_path / "data"), "--no-progress")
    deadline = time.monotonic() + 180
    while not any(j.running and "-factorial-" in j.name for j in cluster.jobs()):  # only the scheduler can say
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=180)
    assert p.returncode == 130, out + err
    _none_of_ours(testbed, cluster)


LOAD = ["-p", "concurrency", "[1, 4]", "-p", "repeats", "2", "-p", "num_requests", "8", "-p", "requests_per_concurrency",
        "0", "-p", "warmup", "1", "-p", "output_len", "32", "-p", "model_spec", "kimi-k2.6", "-p", "start_timeout", "180"]


def test_ab_on_slurm_testbed_measures_both_arms_as_jobs(slurm_testbed, tmp_path) -> None:
    testbed, cluster = slurm_testbed
    p = _cli(testbed, "run", "ab", "-p", "host", "slurm:testbed", "-p", "base_unit", BASE,
             "-p", "edits", json.dumps({"--enable-nccl-nvls": True}), *LOAD,
             "--data-dir", str(tmp_path / "data"), "--no-progress")
    out, err = p.communicate(timeout=900)
    assert p.returncode == 0, out + err
    result = _result(out)
    assert result["status"] == "ok" and result["hosts"] == ["slurm:testbed"]
    a, b = result["arms"]["A"], result["arms"]["B"]
    assert a["job_id"] != b["job_id"] and {a["node"], b["node"]} <= {"gpu-d", "gpu-e"}
    assert a["queue_seconds"] >= 0 and b["queue_seconds"] >= 0 and b["failure"] is None
    assert [pt["concurrency"] for pt in a["points"]] == [1, 4] == [pt["concurrency"] for pt in b["points"]]
    assert all(pt["output_throughput"] > 0 for pt in a["points"] + b["points"])
    assert [r["concurrency"] for r in result["speedup"]] == [1, 4] and all(r["repeats"] == 2 for r in result["speedup"])
    assert result["verdict"] in ("better", "worse", "no significant difference", "mixed")
    assert result["server_starts"] == 2 and result["jobs_left"] == [] and result["host_restored"] is True
    _none_of_ours(testbed, cluster)


def test_ab_on_slurm_b_with_the_seeds_edits_does_not_start(slurm_testbed, tmp_path) -> None:
    testbed, cluster = slurm_testbed
    p = _cli(testbed, "run", "ab", "-p", "host", "slurm:testbed", "-p", "base_unit", BASE,
             "-p", "edits", json.dumps(EP8_NVLS), "-p", "max_parallel", "2", *LOAD,
             "--data-dir", str(tmp_path / "data"), "--no-progress")
    out, err = p.communicate(timeout=900)
    assert p.returncode == 0, out + err
    result = _result(out)
    assert result["verdict"] == "B does not start"
    fail = result["arms"]["B"]["failure"]
    assert (fail["exception_type"], fail["phase"]) == ("RuntimeError", "cuda_graph_capture"), fail
    assert result["arms"]["A"]["points"] and not result["arms"]["B"]["points"]
    assert result["jobs_left"] == [] and result["host_restored"] is True
    _none_of_ours(testbed, cluster)


def test_sweep_on_slurm_testbed_measures_the_configs_that_start(slurm_testbed, tmp_path) -> None:
    testbed, cluster = slurm_testbed
    grid = {"--ep-size": [None, "8"], "--enable-nccl-nvls": [False, True]}
    p = _cli(testbed, "run", "sweep", "-p", "host", "slurm:testbed", "-p", "base_unit", BASE,
             "-p", "grid", json.dumps(grid), "-p", "max_parallel", "2", *LOAD, "--data-dir", str(tmp_path / "data"), "--no-progress")
    out, err = p.communicate(timeout=900)
    assert p.returncode == 0, out + err
    result = _result(out)
    got = {tuple(v for _, v in r["edits"]): (r["outcome"], r["exception_type"], r["phase"], bool(r["points"]))
           for r in result["configs"]}
    # false: the flag removed (None), as the grid writes it
    assert got == {(None, None): ("ready", None, "serving", True), (None, True): ("ready", None, "serving", True),
                   ("8", None): ("failed", "AttributeError", "cuda_graph_capture", False),
                   ("8", True): ("failed", "RuntimeError", "cuda_graph_capture", False)}
    assert all(r["queue_seconds"] >= 0 and r["node"] in ("gpu-d", "gpu-e") for r in result["configs"])
    assert len({r["job_id"] for r in result["configs"]}) == 4 and result["server_starts"] == 4
    assert result["best"] is not None and result["best"]["edits"][0] == ["--ep-size", None]
    assert "2 of 4 configurations did not start" in result["conclusion"]
    assert result["jobs_left"] == [] and result["host_restored"] is True
    _none_of_ours(testbed, cluster)


def test_sigterm_while_a_config_is_measured_cancels_the_sweeps_jobs(slurm_testbed, tmp_path) -> None:
    import queue
    import threading

    testbed, cluster = slurm_testbed
    grid = {"--enable-nccl-nvls": [False, True]}
    load = [*LOAD, "-p", "repeats", "3", "-p", "num_requests", "200"]  # a sweep long enough to be stopped in
    p = _cli(testbed, "run", "sweep", "-p", "host", "slurm:testbed", "-p", "base_unit", BASE,
             "-p", "grid", json.dumps(grid), "-p", "max_parallel", "2", *load, "--data-dir", str(tmp_path / "data"))
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in p.stderr], daemon=True).start()
    seen = ""
    while "sweeping" not in seen:  # the live progress says a job's server is being measured
        seen = lines.get(timeout=180)
    p.send_signal(signal.SIGTERM)
    started = time.monotonic()
    p.wait(timeout=180)
    assert p.returncode == 130 and time.monotonic() - started < 60, seen  # the measurement ends with its connections
    _none_of_ours(testbed, cluster)
