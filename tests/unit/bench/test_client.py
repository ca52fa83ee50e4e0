"""The load clients against a fixed-schedule server on 127.0.0.1.

Timing checks are correctness checks with stated tolerances: a chunk cannot arrive before the
server's schedule sends it (exact lower bounds), and the medians are within ``TOL_MS`` of the
schedule (asyncio timers make the server up to ~1 ms late per chunk; CI machines are loaded).
"""

from __future__ import annotations

import random
import statistics

import pytest

from workbench.bench import client, hostclient
from workbench.bench.loadcore import RECORD_KEYS, LoadSpec
from workbench.bench.metrics import itl_values, summarize

TTFT_MS, ITL_MS = 40.0, 20.0  # the schedule of the conftest servers (checked below)
TOL_MS = 8.0  # stated tolerance for median gaps (ITL, TPOT) against the schedule (loaded 2-core CI box)
# TTFT also holds the client's own per-request work (httpx: 5-15 ms on a loaded 2-core box)
TTFT_TOL_MS = 25.0
TAIL_S = 0.2  # last chunk to the end of the stream: the server sends both at once; the rest is the client's load
CLIENTS = {"httpx": lambda s: client.run_local(s, progress=False), "hostclient": hostclient.run}


def spec_for(url: str, **kw: object) -> LoadSpec:
    base: dict[str, object] = {"url": url, "input_len": 40, "output_len": 12, "num_requests": 8, "concurrency": 4, "warmup": 2}
    return LoadSpec(**(base | kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", CLIENTS)
def test_measures_the_known_schedule(server: str, name: str, schedule: tuple[float, float]) -> None:
    assert schedule == (TTFT_MS, ITL_MS)
    records, run = CLIENTS[name](spec_for(server))
    assert run["client"] == name and all(tuple(r) == RECORD_KEYS for r in records)
    s = summarize(records, run)
    assert s["completed"] == 8 and s["failed"] == 0
    assert s["total_output_tokens"] == 8 * 12 and s["total_input_tokens"] == 8 * 40
    assert s["tokens_per_chunk"] == 1.0
    # lower bounds are exact: nothing arrives before the schedule sends it
    assert min(r["ttft_s"] for r in records) * 1000 >= TTFT_MS
    assert s["ttft_p50_ms"] == pytest.approx(TTFT_MS, abs=TTFT_TOL_MS)
    assert s["itl_p50_ms"] == pytest.approx(ITL_MS, abs=TOL_MS)
    assert s["tpot_p50_ms"] == pytest.approx(ITL_MS, abs=TOL_MS)
    # each chunk leaves the server at least ITL after the previous one: E2E has an exact lower bound
    assert min(r["e2e_s"] for r in records) * 1000 >= TTFT_MS + 11 * ITL_MS
    # E2E ends after the request's own last chunk (exact) and before a whole request more could have run
    # (TAIL_S, under one request's 260 ms: E2E taken at another request's end or from another origin is
    # caught). The tail itself is the server's [DONE] plus the client's scheduling, which CI's load stretched
    # past 25 ms; against the schedule E2E's lateness adds up over 11 gaps, so its band is 11 gap tolerances
    assert all(r["chunk_s"][-1] <= r["e2e_s"] <= r["chunk_s"][-1] + TAIL_S for r in records)
    assert TTFT_MS + 11 * ITL_MS <= s["e2e_p50_ms"] <= TTFT_MS + 11 * ITL_MS + TTFT_TOL_MS + 11 * TOL_MS


def test_tokens_per_chunk_tracks_multi_token_chunks(spec_server: str) -> None:
    records, run = client.run_local(spec_for(spec_server, output_len=21, num_requests=4), progress=False)
    s = summarize(records, run)
    assert len(records) == 6 and all(r["chunk_tokens"] == [3] * 7 for r in records)
    assert s["tokens_per_chunk"] == 3.0
    # ITL counts chunk gaps; TPOT divides each request's time after its first chunk by its tokens after
    # the first (21 - 1), not by its chunk gaps (6): the two readings are 3.3x apart, so a 10% band
    # around the tokens' reading (from the records' own times: the machine's load cannot move it)
    # tells them apart
    assert s["itl_p50_ms"] == pytest.approx(ITL_MS, abs=TOL_MS)
    # the summary reads the measured requests only (the spec's 2 warm-ups are records too, and under
    # load they are the slow ones)
    median = statistics.median((r["e2e_s"] - r["ttft_s"]) * 1000 for r in records if r["phase"] == "measure")
    assert s["tpot_p50_ms"] == pytest.approx(median / 20, rel=0.1)
    assert s["tpot_p50_ms"] != pytest.approx(median / 6, rel=0.1)


def test_warmup_requests_are_recorded_but_excluded(server: str) -> None:
    records, run = client.run_local(spec_for(server, warmup=3, num_requests=5, concurrency=2), progress=False)
    assert [r["phase"] for r in records] == ["warmup"] * 3 + ["measure"] * 5
    assert [r["id"] for r in records] == list(range(8))
    s = summarize(records, run)
    assert s["requests"] == 5 and s["total_output_tokens"] == 5 * 12
    first_measured = min(r["start_unix"] for r in records if r["phase"] == "measure")
    last_warmup_end = max(r["start_unix"] + r["e2e_s"] for r in records if r["phase"] == "warmup")
    assert first_measured >= last_warmup_end  # measurement starts after every warmup finished
    assert s["duration_s"] <= max(r["start_unix"] + r["e2e_s"] for r in records) - first_measured + 1e-6


@pytest.mark.parametrize("name", CLIENTS)
def test_poisson_arrivals_follow_the_seeded_schedule(server: str, name: str) -> None:
    spec = spec_for(server, concurrency=None, rate=40.0, num_requests=12, warmup=0, seed=5)
    records, run = CLIENTS[name](spec)
    assert all(r["error"] is None for r in records)
    assert run["spec"]["rate"] == 40.0 and summarize(records, run)["completed"] == 12
    intended = [r["start_unix"] - r["sched_delay_s"] for r in records]
    rng, t, expected = random.Random(6), 0.0, []
    for _ in records:
        expected.append(t)
        t += rng.expovariate(40.0)
    assert [x - intended[0] for x in intended] == pytest.approx(expected, abs=1e-6)
    assert all(r["sched_delay_s"] >= 0 for r in records)


@pytest.mark.parametrize("name", CLIENTS)
@pytest.mark.parametrize(
    ("model", "status", "message", "chunks"),
    [
        ("fail-500", 500, "HTTP 500: {\"error\"", 0),
        ("fail-429", 429, "HTTP 429", 0),
        ("close-after-3", 200, "closed mid-response", 3),
        ("error-after-2", 200, "server error event: injected error", 2),
    ],
)
def test_failures_are_recorded_as_errors(server: str, name: str, model: str, status: int, message: str, chunks: int) -> None:
    spec = spec_for(server, model=model, num_requests=2, warmup=0, concurrency=2, tokens_per_word=(0, 1))
    records, run = CLIENTS[name](spec)
    assert [r["http_status"] for r in records] == [status, status]
    assert all(message in (r["error"] or "") for r in records), [r["error"] for r in records]
    assert [len(r["chunk_s"]) for r in records] == [chunks, chunks]
    s = summarize(records, run)
    assert s["completed"] == 0 and s["failed"] == 2 and s["total_output_tokens"] == 0


def test_unreachable_server_is_recorded_not_raised() -> None:
    spec = spec_for("http://127.0.0.1:9", model="m", tokens_per_word=(0, 1), num_requests=2, warmup=0)
    records, _ = hostclient.run(spec)
    assert all(r["error"] and r["error"].startswith("connect failed") for r in records)


def test_chat_prompts_are_sized_by_the_servers_usage(server: str) -> None:
    records, _ = client.run_local(spec_for(server, api="chat", input_len=64, num_requests=3), progress=False)
    # the fixed server counts one token per word plus 5 for the chat template; calibration finds both
    assert [r["input_tokens"] for r in records] == [64] * 5
    assert all(r["output_tokens"] == 12 and r["error"] is None for r in records)


def test_hostclient_and_httpx_records_agree(server: str) -> None:
    a, _ = hostclient.run(spec_for(server))
    b, _ = client.run_local(spec_for(server), progress=False)
    assert [tuple(r) for r in a] == [tuple(r) for r in b]
    same = ("id", "phase", "input_tokens", "output_tokens", "http_status", "error", "chunk_tokens")
    assert [[r[k] for k in same] for r in a] == [[r[k] for k in same] for r in b]
    assert statistics.median(itl_values(a)) == pytest.approx(statistics.median(itl_values(b)), abs=TOL_MS / 1000)
