"""A short sweep against the simulated SGLang server: measured tok/s matches its performance model."""

from __future__ import annotations

import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench.bench.loadcore import LoadSpec
from workbench.bench.sweep import local_runner, run_sweep
from workbench.sim.simcore.hostcfg import GpuHost
from workbench.sim.simcore.perf import Deployment, ModelSpec, PerfModel

MODELS = Path(__file__).parents[3] / "workbench" / "testbed" / "models"  # the testbed's model dirs
READY = "The server is fired up and ready to roll!"
TOLERANCE = 0.15  # measured windows include prefill and ramp-up, the model is steady state


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def sim_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    state = tmp_path_factory.mktemp("gpu-state")
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.sim.server", "--model-path", str(MODELS / "Kimi-K2.6"), "--tp-size", "8",
         "--speculative-algorithm", "DDTREE", "--speculative-draft-model-path", str(MODELS / "Kimi-K2.6-DFlash"),
         "--speculative-num-draft-tokens", "16", "--trust-remote-code", "--host", "127.0.0.1", "--port", str(port), "--enable-metrics",
         "--sim-gpu-state-dir", str(state)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=Path(__file__).parents[3])
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen = []
    while True:
        line = lines.get(timeout=120)
        if line is None:
            pytest.fail("simulated server exited before it was ready:\n" + "".join(seen[-30:]))
        seen.append(line)
        if READY in line:
            break
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_sweep_matches_the_simulators_model(sim_url: str) -> None:
    base = LoadSpec(url=sim_url, input_len=1000, output_len=300, num_requests=2, warmup=1)
    result = run_sweep(base, [1, 4], runner=local_runner(progress=False), labels={"variant": "ddtree"},
                       requests_per_concurrency=1, server_url=sim_url)
    r = result.results.set_index("concurrency")
    assert (r["failed"] == 0).all() and (r["total_output_tokens"] == r["completed"] * 300).all()
    model = PerfModel(ModelSpec(), GpuHost(), Deployment(tp=8, spec_algorithm="DDTREE", spec_num_draft_tokens=16))
    for c in (1, 4):
        expected = model.throughput(c, ctx_tokens=1150)
        assert r.loc[c, "output_throughput"] == pytest.approx(expected, rel=TOLERANCE), (c, expected)
    # speculative decoding shows as several tokens per streamed chunk
    assert (r["tokens_per_chunk"] > 2).all()
    # the server's own counters cover exactly the measured requests (warmup ran outside the window)
    assert (r["server_generation_tokens"] == r["total_output_tokens"]).all()
    assert (r["spec_accept_length"] > 2).all() and r["spec_engine"].eq("sglang").all()
    scaling = r.loc[4, "output_throughput"] / r.loc[1, "output_throughput"]
    assert scaling == pytest.approx(model.throughput(4, 1150) / model.throughput(1, 1150), rel=TOLERANCE)
