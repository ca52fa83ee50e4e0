"""A real AIPerf 0.13.0 run read by the ingest, set against the server's own send stamps.

The fixture (tests/fixtures/captured/aiperf/sim-k26-c1-nagle, README there) is what
``bench/client_accuracy.py --against sim --nagle --clients aiperf`` left: AIPerf's artifact files
and the simulated K2.6 server's stamps of the same 11 requests (1 warmup, 10 measured, c=1)."""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path

import pytest

from workbench.bench.ingest import load_results, recompute

RUN = Path(__file__).parents[2] / "fixtures" / "captured" / "aiperf" / "sim-k26-c1-nagle"


def _stamps() -> list[dict]:
    lines = [json.loads(x) for x in (RUN / "server_stamps.jsonl").read_text().splitlines()]
    return sorted(lines, key=lambda s: s["t_recv"])


def test_the_warmup_is_dropped_and_the_summary_is_the_profiling_phase() -> None:
    r = load_results(RUN)
    t = r.table.iloc[0]
    assert r.format == "aiperf" and len(r.requests) == 10 and len(_stamps()) == 11
    assert (t["completed"], t["failed"], t["concurrency"]) == (10, 0, 1)
    assert (t["total_input_tokens"], t["total_output_tokens"]) == (320, 640)


def test_aiperf_s_itl_is_per_token_and_its_inter_chunk_latency_is_per_chunk() -> None:
    """DDTree sends ~3.3 tokens a chunk: AIPerf's inter_token_latency (our TPOT) is a third of the chunk gap."""
    r = load_results(RUN)
    t, ours = r.table.iloc[0], recompute(r.requests)
    assert t["tpot_p50_ms"] == pytest.approx(3.2019, abs=1e-3) and t["itl_p50_ms"] == pytest.approx(11.0225, abs=1e-3)
    assert ours["tokens_per_chunk"] == pytest.approx(3.316, abs=1e-3)
    for col in ("ttft_p50_ms", "tpot_p50_ms", "itl_p50_ms", "itl_p99_ms"):
        assert ours[col] == pytest.approx(t[col], abs=0.01), col


def test_against_the_stamps_a_kept_alive_connection_reads_the_first_chunk_a_delayed_ack_late() -> None:
    """Without TCP_NODELAY every measured request's TTFT is 5-27 ms over the server's; ITL is not."""
    r = load_results(RUN)
    reqs = r.requests.sort_values("start_unix")
    measured = _stamps()[-10:]  # the warmup came first
    server_ttft = [next(t for t, has in s["chunks"] if has) - s["t_recv"] for s in measured]
    errors_ms = [(a - b) * 1000 for a, b in zip(reqs["ttft_s"], server_ttft, strict=True)]
    assert min(errors_ms) > 5 and statistics.median(errors_ms) == pytest.approx(17.44, abs=0.01)
    reused = [json.loads(x)["metrics"]["http_req_connection_reused"]["value"]
              for x in (RUN / "profile_export.jsonl").read_text().splitlines()]
    assert reused == [0] + [1] * 10  # one connection, opened by the warmup request
    gaps = [b - a for s in measured for a, b in itertools.pairwise([t for t, has in s["chunks"] if has])]
    assert abs(r.table.iloc[0]["itl_p50_ms"] - statistics.median(gaps) * 1000) < 0.5
