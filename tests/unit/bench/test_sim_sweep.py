"""A short sweep against the simulated SGLang server: measured tok/s within its performance model."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.unit.bench.conftest import serve_sim
from workbench.bench.loadcore import LoadSpec
from workbench.bench.sweep import local_runner, run_sweep
from workbench.sim.simcore.hostcfg import GpuHost
from workbench.sim.simcore.perf import Deployment, ModelSpec, PerfModel

TOLERANCE = 0.15  # measured windows include prefill and ramp-up, the model is steady state


@pytest.fixture(scope="module")
def sim_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve_sim(tmp_path_factory.mktemp("gpu-state"))


def test_sweep_matches_the_simulators_model(sim_url: str) -> None:
    base = LoadSpec(url=sim_url, input_len=1000, output_len=300, num_requests=2, warmup=1)
    result = run_sweep(base, [1, 4], runner=local_runner(progress=False), labels={"variant": "ddtree"},
                       requests_per_concurrency=1, server_url=sim_url)
    r = result.results.set_index("concurrency")
    assert (r["failed"] == 0).all() and (r["total_output_tokens"] == r["completed"] * 300).all()
    model = PerfModel(ModelSpec(), GpuHost(), Deployment(tp=8, spec_algorithm="DDTREE", spec_num_draft_tokens=16))
    # The server paces tokens by its model on the wall clock: no client can measure more than the model
    # allows; how close it comes depends on the machine's load (a speed, so bench/sim_ceiling.py's).
    for c in (1, 4):
        expected = model.throughput(c, ctx_tokens=1150)
        assert 0 < r.loc[c, "output_throughput"] <= expected * (1 + TOLERANCE), (c, expected)
    # speculative decoding shows as several tokens per streamed chunk
    assert (r["tokens_per_chunk"] > 2).all()
    # the server's own counters cover exactly the measured requests (warmup ran outside the window)
    assert (r["server_generation_tokens"] == r["total_output_tokens"]).all()
    assert (r["spec_accept_length"] > 2).all() and r["spec_engine"].eq("sglang").all()
    # more concurrency gives more tokens a second; no upper bound on the ratio: it divides by c=1's speed,
    # which load alone lowers (a fresh-clone run measured 2.86 against the model's 2.37 +15 %), and each
    # level's own ceiling is asserted above
    assert r.loc[4, "output_throughput"] > r.loc[1, "output_throughput"]
