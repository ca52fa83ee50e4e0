"""The sweep runbook's SLO search end to end without the nspawn testbed: `workbench run sweep` (papermill,
report) on a local testbed of one host (the process backend: the simulated Kimi K2.6 server as a plain
process on a port of its own, not 30000). Each configuration is started as a variant, the ladder
measured, its SLO limit bisected with real load; result.json carries it (its schema), best is picked
at a limit, the conclusion says it in words, the report has the Pareto and the CDFs, the host is restored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from workbench.runbooks.schemas import SCHEMA_DIR

HOST = "gpu-a"
BASE = "sglang-k26-ddtree.service"
PORT = 30480


@pytest.fixture
def local_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    from workbench.hosts import connect
    from workbench.services import services_for
    from workbench.testbed import local
    from workbench.watch import watch_start

    monkeypatch.setenv("WORKBENCH_TESTBED_DIR", str(tmp_path / "tb"))
    monkeypatch.delenv("WORKBENCH_SSH_CONFIG", raising=False)
    monkeypatch.setattr(local, "BASE_PORT", PORT)
    local.up(1, progress=lambda _m: None)
    try:
        out = watch_start(services_for(connect(HOST)), BASE, start=False, timeout=120)
        assert out.ok, out.describe()
        yield HOST
    finally:
        local.down(progress=lambda _m: None)


def test_sweep_finds_each_configurations_slo_limit_on_real_starts(local_host: str, tmp_path: Path) -> None:
    from workbench.hosts import connect
    from workbench.runbooks.execute import execute
    from workbench.services import services_for

    params = {"host": local_host, "base_unit": BASE, "grid": {"--max-running-requests": ["8"]},
              "concurrency": [1, 32], "slo_ttft_p99_ms": 400.0, "slo_search": True, "slo_search_points": 3,
              "repeats": 2, "input_len": 32, "output_len": 32, "num_requests": 8, "requests_per_concurrency": 1,
              "warmup": 1, "telemetry": False, "server_metrics": False, "model_spec": "", "start_timeout": 120}
    out = execute("sweep", params, data_dir=tmp_path / "data", progress=False, timeout=500)
    res = out.result
    assert out.ok, res.get("failure")
    schema = json.loads((SCHEMA_DIR / "sweep.result.schema.json").read_text())
    jsonschema.validate(res, schema)
    (config,) = res["configs"]
    lim = config["slo_limit"]
    # at most 3 search points between c=1 and the first miss, each measured twice
    assert config["outcome"] == "ready" and 1 <= len(lim["probes"]) <= 3
    assert sum(p.get("search", False) for p in config["points"]) == len(lim["probes"])
    assert all(p["repeats"] == 2 for p in config["points"])
    assert lim["bound"] in ("exact", "within", "at_least") and lim["value"] is not None
    met = {p["concurrency"]: p["slo_met"] for p in config["points"]}
    assert met[lim["value"]] and (lim["failing"] is None or not met[lim["failing"]])
    assert res["best"]["slo_limit"]["value"] == lim["value"] == res["best"]["concurrency"]
    assert "SLO limits: --max-running-requests 8: TTFT p99 <= 400 ms held up to c=" in res["conclusion"]
    report = out.report.read_text() if out.report else ""
    assert "Pareto" in report and "TTFT CDF" in report and "ITL CDF" in report
    assert res["host_restored"] is True and res["server_starts"] == 1
    assert services_for(connect(local_host)).status(BASE).running  # the base serves again, as found
