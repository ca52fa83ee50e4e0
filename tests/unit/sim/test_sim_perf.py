"""Performance model: calibration against the seeds, NVLS effect, live throughput."""

from __future__ import annotations

import json
import threading
import time

import httpx
from simhelpers import DDTREE

from workbench.sim.simcore.hostcfg import GpuHost
from workbench.sim.simcore.perf import Deployment, ModelSpec, PerfModel
from workbench.sim.simcore.tokenizer import count_tokens

K26 = ModelSpec()
B300 = GpuHost()
SPEC = dict(spec_algorithm="DDTREE", spec_num_draft_tokens=16)


def test_model_hits_the_seeds_figures():
    ar = PerfModel(K26, B300, Deployment(tp=8))
    ddtree = PerfModel(K26, B300, Deployment(tp=8, **SPEC))
    assert abs(ar.throughput(1, 1250) - 133) < 1
    assert abs(ddtree.throughput(1, 1250) - 285) < 2
    assert abs(ddtree.throughput(64, 1250) - 3795) < 20
    assert 2.0 < ddtree.throughput(1, 1250) / ar.throughput(1, 1250) < 2.3


def test_nvls_makes_a_small_measurable_difference():
    for dep in (dict(tp=8), dict(tp=8, **SPEC)):
        off = PerfModel(K26, B300, Deployment(**dep)).throughput(1, 1250)
        on = PerfModel(K26, B300, Deployment(nvls=True, **dep)).throughput(1, 1250)
        assert 1.005 < on / off < 1.05


def test_step_time_grows_with_batch_and_bytes():
    m = PerfModel(K26, B300, Deployment(tp=8))
    steps = [m.decode_step_s(bs, bs * 1000) for bs in (1, 8, 64, 256)]
    assert steps == sorted(steps)
    assert m.touched_fraction(1) < 0.03 < m.touched_fraction(64) < 1.0
    no_graph = PerfModel(K26, B300, Deployment(tp=8, cuda_graph=False))
    assert no_graph.decode_step_s(1, 1000) > 1.5 * m.decode_step_s(1, 1000)


def test_accept_length_sampling_mean():
    m = PerfModel(K26, B300, Deployment(tp=8, **SPEC))
    draws = [m.sample_accepted((i + 0.5) / 20000) for i in range(20000)]
    assert abs(sum(draws) / len(draws) - m.accept_length) < 0.05
    assert min(draws) == 1 and max(draws) == 17


def measure_window(url: str, concurrency: int, window_s: float = 4.0) -> float:
    """Streamed tokens/s across ``concurrency`` long requests, counted once all are decoding."""
    counts = [0] * concurrency
    started = threading.Barrier(concurrency + 1)
    stop = threading.Event()

    def one(i: int) -> None:
        body = {
            "prompt": f"benchmark request {i} " * 150,
            "max_tokens": 20000,
            "ignore_eos": True,
            "stream": True,
        }
        first = True
        with httpx.stream("POST", f"{url}/v1/completions", json=body, timeout=120) as r:
            for line in r.iter_lines():
                if not line.startswith("data: {"):
                    continue
                counts[i] += count_tokens(json.loads(line[6:])["choices"][0]["text"])
                if first:
                    first = False
                    started.wait()
                if stop.is_set():
                    return

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(concurrency)]
    for t in threads:
        t.start()
    started.wait(timeout=60)
    before, t0 = sum(counts), time.monotonic()
    stop.wait(window_s)  # the measurement window itself
    after, t1 = sum(counts), time.monotonic()
    stop.set()
    return (after - before) / (t1 - t0)


def test_live_throughput_within_15_percent_of_the_seeds(start_server):
    """c=1 ~285 tok/s and c=64 ~3795 tok/s total for TP8 + DDTree (short windows, +-15%)."""
    s = start_server(["--tp-size", "8", *DDTREE])
    assert s.wait_for("The server is fired up and ready to roll!")
    c1 = measure_window(s.url, 1, window_s=5.0)
    c64 = measure_window(s.url, 64)
    assert 0.85 * 285 < c1 < 1.15 * 285, c1
    assert 0.85 * 3795 < c64 < 1.15 * 3795, c64
