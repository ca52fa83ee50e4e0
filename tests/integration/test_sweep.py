"""The sweep runbook on the testbed (issue 18's contract): a 2x2 grid over the seeds' base, the
EP8 configurations recorded as failed with the NoneType signature (not fatal to the sweep), a
Pareto front and a best configuration under SLOs, the host as found; then a known culprit from a
bisect in the same data dir makes the sweep skip those configurations without starting them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from workbench.lock import HostLock
from workbench.runbooks.execute import execute
from workbench.runbooks.report import external_refs
from workbench.services import SystemdServices
from workbench.session import leftover_record
from workbench.ssh import SSHHost

pytestmark = pytest.mark.testbed
BASE = "sglang-k26-ddtree.service"
LOCK_WAIT = 300.0
GRID = {"--cuda-graph-max-bs": ["64", "128"], "--ep-size": ["1", "8"]}
SMALL = {"concurrency": [1, 16], "repeats": 2, "input_len": 32, "output_len": 48, "num_requests": 8,
         "requests_per_concurrency": 1, "warmup": 1, "lock_wait": LOCK_WAIT}


def _as_found(ssh_config: str, was_running: bool) -> None:
    host = SSHHost("gpu-a", ssh_config=ssh_config)
    try:
        svc = SystemdServices(host)
        with HostLock(host, purpose="test: host as found", wait=LOCK_WAIT):
            assert leftover_record(host) is None and svc.variant_files() == {}
            assert svc.status(BASE).running is was_running
    finally:
        host.close()


def test_sweep_grid_with_failing_configs_pareto_and_best(testbed, ssh_config, tmp_path: Path) -> None:
    host = SSHHost("gpu-a", ssh_config=ssh_config)
    was_running = SystemdServices(host).status(BASE).running
    host.close()
    params = {"host": "gpu-a", "base_unit": BASE, "grid": GRID, "slo_ttft_p99_ms": 5000.0, **SMALL}
    # the contract's line (no base_unit: the one server running on gpu-a), with what keeps it short
    from workbench.cli import main

    short = [w for k, v in SMALL.items() if k != "concurrency" for w in ("-p", k, json.dumps(v))]
    code = main(["--ssh-config", ssh_config, "run", "sweep", "-p", "host", "gpu-a", "-p", "grid", json.dumps(GRID),
                 "-p", "concurrency", "[1,16]", "-p", "slo_ttft_p99_ms", "5000", *short, "--data-dir", str(tmp_path),
                 "--no-progress", "--timeout", "540"])
    (run_dir,) = (tmp_path / "runs").iterdir()
    res = json.loads((run_dir / "result.json").read_text())
    assert code == 0 and res["base_unit"] == BASE, res.get("failure")
    assert res["status"] == "ok", res.get("failure")
    configs = res["configs"]
    assert len(configs) == 4 and res["host_restored"] is True
    for c in configs:
        ep = dict((f, v) for f, v in c["edits"])["--ep-size"]
        if ep == "8":
            assert c["outcome"] == "failed" and c["exception_type"] == "AttributeError", c
            assert c["phase"] == "cuda_graph_capture" and "NoneType" in c["signature"] and c["points"] == []
        else:
            assert c["outcome"] == "ready", c
            assert [p["concurrency"] for p in c["points"]] == [1, 16]
            for p in c["points"]:
                assert p["output_tok_s"] > 0 and p["ttft_p99_ms"] > 0 and p["tpot_p99_ms"] > 0
                assert p["tok_s_per_gpu"] == pytest.approx(p["output_tok_s"] / 8, rel=0.01)
    assert res["pareto"] and all(configs[f["config"]]["outcome"] == "ready" for f in res["pareto"])
    assert res["best"] is not None and dict(map(tuple, res["best"]["edits"]))["--ep-size"] == "1"
    assert "did not start" in res["conclusion"] and "AttributeError" in res["conclusion"]
    html = (run_dir / "report.html").read_text()
    assert external_refs(html) == [] and "Pareto" in html
    _as_found(ssh_config, was_running)

    # A bisect of this base found --ep-size 8: the next sweep skips those configurations.
    fake = tmp_path / "runs" / "earlier-bisect"
    fake.mkdir(parents=True)
    (fake / "result.json").write_text(json.dumps({
        "runbook": "bisect", "status": "ok", "host": "gpu-a", "base_unit": BASE,
        "culprits": [{"edits": [["--ep-size", "8"]], "signature": "AttributeError@x"}]}))
    again = execute("sweep", {**params, "grid": {"--ep-size": ["1", "8"]}, "concurrency": [1]},
                    data_dir=tmp_path, progress=False, timeout=540).result
    assert [c["outcome"] for c in again["configs"]] == ["ready", "skipped"]
    assert "earlier bisect" in again["configs"][1]["reason"] and again["server_starts"] == 1
    _as_found(ssh_config, was_running)


def test_a_keyed_configuration_on_a_rate_ladder_with_a_dataset_leaves_no_key(
        testbed, ssh_config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 18: a server started with --api-key, benchmarked from a runbook — the key in the grid (as the
    server's flag) and in the controller's environment (api_key_env, as the load's bearer token); a
    request-rate ladder with a dataset shipped to the host and duration-bounded points. The points carry
    their rate, every request got through, and the key is in no file of the run."""
    key = "wbitkey-" + "5c0ffee1" * 4
    monkeypatch.setenv("WB_IT_SIM_KEY", key)
    host = SSHHost("gpu-a", ssh_config=ssh_config)
    was_running = SystemdServices(host).status(BASE).running
    host.close()
    dataset = Path(__file__).parents[1] / "fixtures" / "bench" / "datasets" / "custom.jsonl"
    params = {"host": "gpu-a", "base_unit": BASE, "grid": {"--api-key": [key]}, "request_rate": [4, 8],
              "max_concurrency": 8, "burstiness": 0.5, "duration_s": 3, "dataset": str(dataset),
              "api_key_env": "WB_IT_SIM_KEY", "percentiles": [95], "goodput": {"ttft": 5000}, "flush_cache": True,
              "repeats": 1, "warmup": 1, "lock_wait": LOCK_WAIT}
    out = execute("sweep", params, data_dir=tmp_path, progress=False, timeout=540)
    res = out.result
    assert res["status"] == "ok", res.get("failure")
    (config,) = res["configs"]
    assert config["outcome"] == "ready", config
    assert [(p["rate"], p["concurrency"]) for p in config["points"]] == [(4.0, 8), (8.0, 8)]
    assert all(p["output_tok_s"] > 0 and "goodput_rps" in p for p in config["points"])
    assert res["request_rate"] == [4.0, 8.0] and res["concurrency"] == []
    assert res["pareto"] and all("rate" in f for f in res["pareto"]) and "/s:" in res["conclusion"]
    results = pd.read_parquet(out.run_dir / "results.parquet")
    assert (results["failed"] == 0).all() and set(results["dataset_items"]) == {3}
    assert {"ttft_p95_ms", "input_throughput", "total_token_throughput"} <= set(results.columns)
    assert res["params"]["api_key_env"] == "WB_IT_SIM_KEY" and res["params"]["grid"] == {"--api-key": ["[REDACTED]"]}
    for path in out.run_dir.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path.name
    _as_found(ssh_config, was_running)


# A server that stopped answering (a job being cancelled, a drain that never ends): it still
# listens, so connections open, and nothing answers them. It says when the first one waits.
HUNG = ("import select, socket, time\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(16)\n"
        "print(s.getsockname()[1], flush=True)\n"
        "select.select([s], [], [])\n"
        "print('a client waits', flush=True)\n"
        "time.sleep(900)\n")


def test_a_sweep_of_a_server_that_stopped_answering_ends_at_once_when_stopped(testbed, ssh_config, host_a) -> None:
    import threading
    import time

    from workbench.errors import HostError, Stopped
    from workbench.hosts import closed_on
    from workbench.runbooks import measure
    from workbench.runbooks.loadparams import LoadParams

    hung = host_a.stream(["python3", "-c", HUNG])
    try:
        port = int(hung.readline(timeout=60) or 0)
        params = LoadParams(concurrency=[1, 4], repeats=3, num_requests=8, warmup=1, model_spec="kimi-k2.6")
        stop = threading.Event()
        ended: list[BaseException] = []

        def sweep() -> None:  # as the Slurm runbooks measure a job's server from its node
            try:
                with closed_on(SSHHost("gpu-a", ssh_config=ssh_config), stop) as node:
                    measure.sweep_unit(node, port, params, {"variant": "hung"}, stop=stop)
            except BaseException as exc:
                ended.append(exc)

        thread = threading.Thread(target=sweep)
        thread.start()
        assert (hung.readline(timeout=180) or "").strip() == "a client waits"  # left alone, it would wait minutes
        stop.set()
        stopped = time.monotonic()
        thread.join(120)
        assert not thread.is_alive(), "the sweep hung after its stop"
        assert time.monotonic() - stopped < 20
        assert len(ended) == 1 and isinstance(ended[0], Stopped), ended
        assert isinstance(ended[0].__cause__, HostError)  # the load run its closed connection ended
        # the load client did not outlive its connection; its shipped files were removed
        assert host_a.run(["pgrep", "-f", "^python3 /tmp/workbench-bench[.].*/hostclient[.]py"]).exited == 1
        assert host_a.run("ls -d /tmp/workbench-bench.* 2>/dev/null").stdout == ""
    finally:
        hung.close()
