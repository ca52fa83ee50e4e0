"""The measuring runbooks' load path end to end against the simulated SGLang server started with
``--api-key`` on 127.0.0.1: a rate ladder with a dataset and the key from the environment, the host
client shipped through a (local) Host as on a GPU host, the points keyed by rate in a typed result —
and the key in no file of the run directory and no progress line."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.unit.bench.conftest import SIM_API_KEY
from workbench.hosts import LocalHost
from workbench.runbooks import measure
from workbench.runbooks.benchmark import BenchmarkParams
from workbench.runbooks.schemas import BenchmarkResult
from workbench.runbooks.skeleton import RunbookRun

DATA = Path(__file__).parents[2] / "fixtures" / "bench" / "datasets"


@pytest.fixture(autouse=True)
def no_ambient_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("WORKBENCH_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize("load_from", ["host", "tunnel"])
def test_a_keyed_server_measured_on_a_rate_ladder_leaves_no_key_behind(
        keyed_sim_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, load_from: str) -> None:
    monkeypatch.setenv("SIM_KEY", SIM_API_KEY)
    monkeypatch.setenv("SIM_TEAM", "team-canary-31")
    port = urlsplit(keyed_sim_url).port
    assert port is not None
    params = BenchmarkParams(host="local", unit="sim.service", data_dir=str(tmp_path), load_from=load_from,
                             request_rate=[20.0, 40.0], max_concurrency=4, burstiness=0.5, repeats=1,
                             dataset=str(DATA / "custom.jsonl"), num_requests=3, warmup=1, flush_cache=True,
                             api_key_env="SIM_KEY", headers=["X-Team=SIM_TEAM"], percentiles=[95],
                             goodput={"ttft": 60000}, telemetry=False, server_metrics=False)
    lines: list[str] = []
    with RunbookRun("benchmark", params, BenchmarkResult, progress=lines.append) as rr:
        rr.set(host="local", unit="sim.service", port=port, load_from=load_from, concurrency=[],
               request_rate=params.request_rate, repeats=1, points=[])
        sweep = measure.sweep_unit(LocalHost("local"), port, params, {"variant": "sim"})
        rr.tell(f"server said: unauthorized key {SIM_API_KEY} for team team-canary-31")  # as if echoed
        rr.table("results", sweep.results)
        rr.table("requests", sweep.requests)
        rr.conclude("measured", points=measure.points(sweep.results, by=(params.ladder,)))
    result = rr.result
    assert result["status"] == "ok", result.get("failure")
    pts = result["points"]
    assert [(p["rate"], p["concurrency"]) for p in pts] == [(20.0, 4), (40.0, 4)]
    for p in pts:
        assert p["failed"] == 0 and {"ttft_p95_ms", "input_throughput", "total_token_throughput"} <= set(p)
        assert p["goodput_rps"] > 0  # a 60 s TTFT bound: every request is good
    assert set(sweep.results["dataset_items"]) == {3} and set(sweep.results["burstiness"]) == {0.5}
    # the key and the header value: in no file of the run and no progress line; the names stay readable
    blob = b"".join(f.read_bytes() for f in Path(rr.run.dir).rglob("*") if f.is_file())
    assert SIM_API_KEY.encode() not in blob and b"team-canary-31" not in blob
    assert not any(SIM_API_KEY in line or "team-canary-31" in line for line in lines)
    assert result["params"]["api_key_env"] == "SIM_KEY" and result["params"]["headers"] == ["X-Team=SIM_TEAM"]
