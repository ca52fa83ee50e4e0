"""The canonical definitions on hand-made records, where every number can be checked by hand."""

from __future__ import annotations

import math

import pytest

from workbench.bench.metrics import SLO, client_check, itl_values, request_frame, summarize


def rec(i: int, start: float, chunks: list[float], e2e: float, n: int, *, phase: str = "measure",
        error: str | None = None, tokens: list[int] | None = None) -> dict:
    return {"kind": "request", "v": 1, "id": i, "phase": phase, "start_unix": start, "sched_delay_s": 0.001 * i,
            "ttft_s": chunks[0] if chunks else None, "e2e_s": e2e, "chunk_s": chunks,
            "chunk_tokens": tokens or [None] * len(chunks), "input_tokens": 100, "output_tokens": n,
            "http_status": 200 if error is None else 500, "error": error}


RECORDS = [
    rec(0, 99.0, [0.5, 0.6], 0.6, 2, phase="warmup"),  # never counted
    rec(1, 100.0, [0.1, 0.2, 0.3, 0.4], 0.4, 4),  # TTFT 100 ms, 3 gaps of 100 ms, TPOT (400-100)/3 = 100 ms
    rec(2, 100.5, [0.2, 0.4, 0.6], 0.7, 6, tokens=[2, 2, 2]),  # TTFT 200, gaps 200, TPOT (700-200)/5 = 100
    rec(3, 101.0, [0.3], 0.3, 1),  # one token: no TPOT, no gap
    rec(4, 101.0, [0.1], 2.0, 0, error="HTTP 500: boom"),  # failed: ends at 103.0
]


def test_summary_by_hand() -> None:
    s = summarize(RECORDS)
    assert (s["requests"], s["completed"], s["failed"]) == (4, 3, 1)
    assert s["duration_s"] == pytest.approx(103.0 - 100.0)  # first measured send -> last end (the failed one)
    assert s["total_output_tokens"] == 11 and s["total_input_tokens"] == 300
    assert s["output_throughput"] == pytest.approx(11 / 3) and s["request_throughput"] == pytest.approx(1.0)
    assert s["ttft_p50_ms"] == pytest.approx(200) and s["ttft_mean_ms"] == pytest.approx(200)
    assert s["tpot_mean_ms"] == pytest.approx(100) and s["tpot_p99_ms"] == pytest.approx(100)
    # pooled gaps: 100, 100, 100, 200, 200 -> median 100, p90 by linear interpolation 200
    assert sorted(itl_values(RECORDS) * 1000) == pytest.approx([100, 100, 100, 200, 200])
    assert s["itl_p50_ms"] == pytest.approx(100) and s["itl_p90_ms"] == pytest.approx(200)
    assert s["e2e_p50_ms"] == pytest.approx(400)
    assert s["tokens_per_chunk"] == pytest.approx(11 / 8)  # 4 + 3 + 1 chunks
    assert s["concurrency_achieved"] == pytest.approx((0.4 + 0.7 + 0.3 + 2.0) / 3)


def test_goodput_under_slos() -> None:
    s = summarize(RECORDS, slo=SLO(ttft_ms=150))
    assert s["goodput_rps"] == pytest.approx(1 / 3) and s["good_fraction"] == pytest.approx(1 / 4)
    s = summarize(RECORDS, slo=SLO(ttft_ms=350, tpot_ms=150))  # request 3 has no TPOT: nothing to violate
    assert s["goodput_rps"] == pytest.approx(3 / 3)
    assert summarize(RECORDS, slo=SLO(tpot_ms=50))["goodput_rps"] == pytest.approx(1 / 3)
    assert summarize(RECORDS, slo=SLO(e2e_ms=500))["goodput_rps"] == pytest.approx(2 / 3)


def test_request_frame_keeps_everything_to_recompute() -> None:
    df = request_frame(RECORDS).set_index("id")
    assert df.loc[2, "tpot_s"] == pytest.approx(0.1) and math.isnan(df.loc[3, "tpot_s"])
    assert df.loc[2, "tokens_per_chunk"] == 2 and df.loc[4, "ok"] == False  # noqa: E712
    assert df.loc[4, "end_unix"] == pytest.approx(103.0)


def test_empty_and_all_failed_runs() -> None:
    assert summarize([])["requests"] == 0
    s = summarize([RECORDS[4]])
    assert s["completed"] == 0 and s["output_throughput"] == 0 and math.isnan(s["ttft_p50_ms"])


@pytest.mark.parametrize(
    ("run", "bound", "reason"),
    [
        ({"cpu_frac": 0.3, "loop_lag_p50_ms": 0.2}, False, ""),
        ({"cpu_frac": 0.95, "loop_lag_p50_ms": 0.2}, True, "client CPU 95% of one core"),
        ({"cpu_frac": 0.3, "loop_lag_p50_ms": 2.5}, True, "median event-loop lag 2.50 ms"),
    ],
)
def test_client_bound_verdict(run: dict, bound: bool, reason: str) -> None:
    out = client_check(run)
    assert out["client_bound"] is bound and reason in out["client_bound_reason"]


def test_poisson_send_delay_marks_the_client_bound_only_without_a_cap() -> None:
    late = [dict(r, sched_delay_s=0.05) for r in RECORDS]
    uncapped = {"cpu_frac": 0.2, "loop_lag_p50_ms": 0.1, "spec": {"rate": 10.0, "concurrency": None}}
    assert summarize(late, uncapped)["client_bound"]
    capped = dict(uncapped, spec={"rate": 10.0, "concurrency": 4})  # waiting for a slot is the server's doing
    assert not summarize(late, capped)["client_bound"]


def test_burst_delivery_is_counted_and_named() -> None:
    """Chunks generated over 200 ms but delivered in one read (vLLM's API server starved of CPU on
    the testbed, measured): TTFT = E2E for those; the summary says how many and why it matters."""
    streamed = [rec(i, 100.0 + i, [0.01 + 0.003 * k for k in range(64)], 0.2, 64) for i in range(1, 8)]
    burst = [rec(i, 110.0 + i, [0.2] * 64, 0.2005, 64) for i in range(1, 4)]
    few = [rec(20, 120.0, [0.2, 0.2], 0.2, 2)]  # under 4 chunks: no evidence either way
    s = summarize(streamed + burst + few)
    assert s["burst_fraction"] == pytest.approx(3 / 10)
    assert s["delivery_note"].startswith("30% of responses arrived in one burst")
    clean = summarize(streamed)
    assert clean["burst_fraction"] == 0 and clean["delivery_note"] == ""
