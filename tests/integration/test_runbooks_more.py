"""The A/B, benchmark and triage runbooks end to end (papermill, through ``execute``) on the testbed.

Small sweeps (concurrency 1 and 4, 2 repeats, 96-token requests) keep the module to a few
minutes on two cores: the A/B of NVLS on the simulated TP8 server spread over both hosts (the
fleet), a benchmark of the running base on gpu-b (the seeds' verdict: HBM-bandwidth bound), and
a triage of a failed EP8 variant.  The vLLM A/B (``--max-num-seqs 2`` caps batching, so c=8 must
come out worse) runs only with the vLLM provisioner (``realserver``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from workbench.lock import HostLock
from workbench.runbooks import triage
from workbench.runbooks.execute import execute
from workbench.runbooks.report import external_refs
from workbench.services import SystemdServices
from workbench.session import HostSession, leftover_record
from workbench.ssh import SSHHost
from workbench.watch import watch_start

pytestmark = pytest.mark.testbed
BASE = "sglang-k26-ddtree.service"
VLLM = "vllm-tiny.service"
LOCK_WAIT = 300.0  # other suites may hold a host for a while
SMALL = {"concurrency": [1, 4], "repeats": 2, "input_len": 64, "output_len": 96, "num_requests": 8,
         "requests_per_concurrency": 4, "warmup": 1, "gpu_interval_ms": 200, "lock_wait": LOCK_WAIT}
VERDICTS = {"better", "worse", "no significant difference", "mixed"}


def hosts(ssh_config: str, *names: str) -> list[SSHHost]:
    return [SSHHost(n, ssh_config=ssh_config) for n in names]


def base_running(host: SSHHost) -> bool:
    return SystemdServices(host).status(BASE).running


def assert_untouched(host: SSHHost, base_was_running: bool) -> None:
    """No record, no variant, the base as it was (under the lock: another suite's session may be mid-run)."""
    svc = SystemdServices(host)
    with HostLock(host, purpose="test: check the host is as found", wait=LOCK_WAIT):
        assert leftover_record(host) is None and svc.variant_files() == {}
        assert svc.status(BASE).running is base_was_running


def offline_report(run_dir: Path) -> str:
    html = (run_dir / "report.html").read_text()
    assert external_refs(html) == []
    return html


def run_runbook(name: str, params: dict[str, Any], data_dir: Path) -> dict[str, Any]:
    out = execute(name, params, data_dir=data_dir, progress=False, timeout=540)
    assert out.result["status"] == "ok", out.result.get("failure")
    return out.result | {"_dir": out.run_dir}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("runbooks-more")


@pytest.fixture(scope="module")
def gpu_b_serving(testbed):
    """gpu-b with its base serving, as the testbed boots it (another suite may have left it stopped)."""
    (host,) = hosts(str(testbed.ssh_config), "gpu-b")
    svc = SystemdServices(host)
    with HostLock(host, purpose="test: base running", wait=LOCK_WAIT):
        if not svc.status(BASE).running:
            assert watch_start(svc, BASE, timeout=120).ok
    yield host
    host.close()


def test_ab_of_nvls_over_two_hosts_gives_a_verdict_with_intervals(testbed, ssh_config, data_dir):
    fleet = hosts(ssh_config, "gpu-a", "gpu-b")
    before = {h.name: base_running(h) for h in fleet}
    result = run_runbook("test_nvls_on_tp8", {"hosts": ["gpu-a", "gpu-b"], "start_timeout": 120, **SMALL}, data_dir)
    assert result["verdict"] in VERDICTS and result["edits"] == [["--enable-nccl-nvls", True]]
    assert [r["concurrency"] for r in result["speedup"]] == [1, 4]
    for row in result["speedup"]:
        assert row["lo"] <= row["speedup"] <= row["hi"] and row["repeats"] == 2
        assert row["verdict"] in VERDICTS - {"mixed"}
    assert "95% bootstrap intervals" in result["conclusion"] and result["confidence"] == 0.95
    assert result["host_restored"] is True and result["server_starts"] >= 2
    assert {r["host"]: (r["repeats"], r["restored"], r["error"]) for r in result["hosts_report"]} == \
        {"gpu-a": (1, True, None), "gpu-b": (1, True, None)}
    b = result["arms"]["B"]
    assert b["started"] and b["start"]["outcome"] == "ready" and b["unit"].startswith("sglang-k26-ddtree-wb-")
    assert all(p["spec_windowed"] for p in b["points"])  # acceptance from the server's counters, per window
    assert set(result["bottleneck"]) == {"A", "B"} and result["bottleneck"]["A"]["gpu"] == "B300"
    results = pd.read_parquet(result["_dir"] / "results.parquet")
    assert set(results["host"]) == {"gpu-a", "gpu-b"} and set(results["arm"]) == {"A", "B"}
    assert {"gpu_power_w", "spec_accept_length"} <= set(results.columns)
    assert {p.name for p in result["_dir"].glob("*.parquet")} >= {"results.parquet", "requests.parquet",
                                                                    "telemetry.parquet", "speedup.parquet"}
    assert "<svg" in offline_report(result["_dir"])  # the charts, inline
    for h in fleet:
        assert_untouched(h, before[h.name])
        h.close()


def test_benchmark_of_the_running_base_says_hbm_bandwidth_bound(gpu_b_serving, data_dir):
    result = run_runbook("benchmark", {"host": "gpu-b", "unit": BASE, **SMALL}, data_dir)
    bn = result["bottleneck"]
    assert bn["gpu"] == "B300" and bn["n_gpus"] == 8
    assert [p["label"] for p in bn["points"]] == ["memory-bound", "memory-bound"], bn["verdict"]
    assert bn["verdict"].startswith("HBM-bandwidth bound at decode")
    assert "x below the bandwidth roofline" in result["conclusion"]
    assert [p["concurrency"] for p in result["points"]] == [1, 4]
    assert all(p["failed"] == 0 and p["output_throughput"] > 0 for p in result["points"])
    assert result["points"][0]["spec_accept_length"] > 1.5
    assert {p.name for p in result["_dir"].glob("*.parquet")} == {"results.parquet", "requests.parquet",
                                                                  "itl.parquet", "telemetry.parquet",
                                                                  "roofline.parquet", "server_metrics.parquet"}
    series = result["server_series"]  # the server's own /metrics over the sweep
    assert series["samples"] >= 3 and series["peak_running"] >= 1 and series["peak_generation_tok_s"] > 0
    assert series["mean_spec_accept_length"] > 1
    # throughput, latency, GPU timeline, roofline, server /metrics
    assert offline_report(result["_dir"]).count("<svg") >= 5
    assert_untouched(gpu_b_serving, True)


def test_triage_of_a_failed_ep8_variant_names_the_attribute_error_in_graph_capture(gpu_b_serving, data_dir):
    with HostSession(gpu_b_serving, purpose="test: a failed EP8 variant to triage", lock_wait=LOCK_WAIT,
                     ready_timeout=120) as s:
        trial = s.run_variant(BASE, {"--ep-size": "8"}, keep=True, timeout=120)
        assert trial.outcome.outcome == "failed"
        # read-only: it runs while this session holds the lock, the variant's unit file still there
        result = run_runbook("triage", {"host": "gpu-b", "unit": trial.variant}, data_dir)
    assert result["invocation"]["id"] == trial.outcome.invocation_id
    assert result["root_cause"]["exception_type"] == "AttributeError"
    assert result["failed_in"] == "cuda_graph_capture"
    assert result["variant_of"] == BASE and result["flag_diff"] == [["--ep-size", "8"]]
    assert result["likely_cause"].startswith("Root cause: AttributeError: 'NoneType' object has no attribute "
                                             "'topk_ids' during cuda_graph_capture, innermost frame ")
    assert "differs from its base by --ep-size 8" in result["likely_cause"]
    assert {f["exception_type"] for f in result["failures"]} == {"AttributeError"}
    assert len(result["failures"][0]["ranks"]) == 8
    assert "Likely cause" in offline_report(result["_dir"])
    # once the variant is gone, its name still says what it was made from (the journal stays)
    _, again = triage.run(triage.TriageParams(host="gpu-b", unit=trial.variant, data_dir=str(data_dir)))
    assert again["variant_of"] == BASE and again["root_cause"]["exception_type"] == "AttributeError"
    assert_untouched(gpu_b_serving, True)


@pytest.mark.realserver
@pytest.mark.timeout(900)
def test_ab_on_the_vllm_unit_shows_max_num_seqs_2_is_worse_at_c8(testbed, ssh_config, data_dir):
    (host,) = hosts(ssh_config, "gpu-a")
    if SystemdServices(host).status(VLLM).missing:
        pytest.skip(f"{VLLM} is not installed on gpu-a: bring the testbed up with --provision sim,vllm")
    sim_before = base_running(host)
    result = run_runbook("test_nvls_on_tp8", {
        "hosts": ["gpu-a"], "base_unit": VLLM, "edits": {"--max-num-seqs": "2"}, "health_path": "/health",
        "stop_units": [BASE], "concurrency": [8], "repeats": 3, "input_len": 32, "output_len": 64,
        # a full batch of warmup and 48 requests a repeat: with 1 and 16, arm A (client-bound on CPU vLLM)
        # spread 0.27-0.32x between repeats and the interval took in 1
        "num_requests": 48, "requests_per_concurrency": 6, "warmup": 8, "telemetry": False, "model_spec": "",
        "start_timeout": 300, "lock_wait": LOCK_WAIT}, data_dir)
    (row,) = result["speedup"]
    assert row["concurrency"] == 8 and row["speedup"] < 0.75 and row["hi"] < 1, row
    assert result["verdict"] == "worse" and result["host_restored"] is True
    assert result["arms"]["A"]["started"] is True  # not enabled: the runbook started it, and stopped it again
    svc = SystemdServices(host)
    assert not svc.status(VLLM).running and svc.variant_files() == {} and leftover_record(host) is None
    assert base_running(host) is sim_before
    host.close()
