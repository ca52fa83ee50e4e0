"""Workloads: dataset files, synthetic length ranges and shared prefixes, open-loop burstiness,
duration bounds and cache flushes, checked against what the fixed-schedule server received."""

from __future__ import annotations

import json
import random
import re
import statistics
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench.bench import client, hostclient
from workbench.bench.fixedserver import FixedScheduleServer
from workbench.bench.loadcore import LoadSpec, arrival_gap, request_for
from workbench.bench.metrics import summarize
from workbench.bench.workloads import load_workload
from workbench.errors import ConfigError

DATA = Path(__file__).parents[2] / "fixtures" / "bench" / "datasets"
CLIENTS = {"httpx": lambda s: client.run_local(s, progress=False), "hostclient": hostclient.run}


@pytest.fixture
def fixed() -> Iterator[tuple[str, FixedScheduleServer]]:
    """A fresh fast fixed-schedule server per test, so its ``/stats`` hold this test's requests only."""
    srv = FixedScheduleServer(ttft_ms=5.0, itl_ms=2.0)
    with srv as url:
        yield url, srv


def stats(url: str) -> dict:
    with urllib.request.urlopen(url + "/stats") as resp:
        return json.loads(resp.read())


def test_sharegpt_takes_the_first_human_gpt_pair_and_skips_the_rest() -> None:
    items = load_workload(DATA / "sharegpt_sample.json", seed=0)
    prompts = sorted(it["prompt"] for it in items)
    # 7 conversations: one human-only, one empty and one with an empty reply are skipped
    assert len(items) == 4
    assert prompts[0].startswith("Explain in two sentences") and any("NVLS" in p for p in prompts)
    by_prompt = {it["prompt"]: it for it in items}
    kv = next(p for p in prompts if p.startswith("Explain"))
    assert by_prompt[kv]["output_words"] == 40  # 26 + 14 words: the first gpt reply's words, not the later turns'
    # a gpt greeting before the first human turn is passed over
    assert any(p.startswith("List three reasons") for p in prompts)
    # with the chat API the system turn becomes the system message
    chat = load_workload(DATA / "sharegpt_sample.json", chat=True)
    msgs = next(it["messages"] for it in chat if "messages" in it)
    assert [m["role"] for m in msgs] == ["system", "user"] and "NVLS" in msgs[1]["content"]
    # seeded shuffle and count
    assert load_workload(DATA / "sharegpt_sample.json", seed=3, count=2) == load_workload(
        DATA / "sharegpt_sample.json", seed=3)[:2]
    fixed_len = load_workload(DATA / "sharegpt_sample.json", output_len=9)
    assert all(it["output_len"] == 9 and "output_words" not in it for it in fixed_len)


def test_custom_jsonl_and_chat_jsonl() -> None:
    items = load_workload(DATA / "custom.jsonl", seed=1)
    assert sorted(it.get("output_len", 0) for it in items) == [0, 3, 7]  # blank line skipped, output_len optional
    chat = load_workload(DATA / "chat.jsonl", chat=True)
    assert sorted(len(it["messages"]) for it in chat) == [2, 3]


@pytest.mark.parametrize(
    ("name", "kw", "message"),
    [
        ("chat.jsonl", {}, "run it with the chat API"),
        ("bad_output_len.jsonl", {}, "line 2: 'output_len' must be an integer >= 1"),
        ("truncated.jsonl", {}, "line 2 is not JSON"),
        ("no_prompt.jsonl", {}, "line 1 needs exactly one of 'prompt' (text) or 'messages'"),
        ("missing.json", {}, "cannot read the dataset"),
        ("custom.jsonl", {"fmt": "csv"}, "format must be one of"),
    ],
)
def test_bad_datasets_fail_before_any_request(name: str, kw: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_workload(DATA / name, **kw)


def test_spec_rejects_bad_workloads() -> None:
    with pytest.raises(ValueError, match="run it with api='chat'"):
        LoadSpec(url="http://h:1", dataset=[{"messages": [{"role": "user", "content": "x"}]}])
    with pytest.raises(ValueError, match="range_ratio"):
        LoadSpec(url="http://h:1", range_ratio=1.0)
    with pytest.raises(ValueError, match="prefix_len >= 1 and prefix_groups >= 1"):
        LoadSpec(url="http://h:1", prefix_len=32)
    with pytest.raises(ValueError, match="burstiness"):
        LoadSpec(url="http://h:1", rate=1.0, burstiness=0)
    with pytest.raises(ValueError, match="duration_s"):
        LoadSpec(url="http://h:1", duration_s=0)


def test_synthetic_lengths_follow_the_range_ratio() -> None:
    spec = LoadSpec(url="http://h:1", input_len=100, output_len=50, range_ratio=0.5, tokens_per_word=(0.0, 1.0))
    draws = [request_for(spec, i) for i in range(400)]
    ins, outs = [len(str(p).split()) for p, _ in draws], [o for _, o in draws]
    assert min(ins) >= 50 and max(ins) <= 150 and min(outs) >= 25 and max(outs) <= 75
    assert statistics.mean(ins) == pytest.approx(100, rel=0.05) and len(set(outs)) > 30
    assert draws == [request_for(spec, i) for i in range(400)]  # seeded per index
    flat = LoadSpec(url="http://h:1", input_len=100, output_len=50, tokens_per_word=(0.0, 1.0))
    assert {o for _, o in (request_for(flat, i) for i in range(20))} == {50}


def test_shared_prefix_groups() -> None:
    spec = LoadSpec(url="http://h:1", input_len=20, prefix_len=30, prefix_groups=3, tokens_per_word=(0.0, 1.0))
    prompts = [str(request_for(spec, i)[0]) for i in range(9)]
    heads = [" ".join(p.split()[:30]) for p in prompts]
    assert len(set(heads)) == 3 and heads[0] == heads[3] == heads[6] and heads[0] != heads[1]
    assert all(len(p.split()) == 50 for p in prompts)
    assert len({" ".join(p.split()[30:]) for p in prompts}) == 9  # the rest is each request's own


@pytest.mark.parametrize("burstiness", [0.25, 1.0, 4.0])
def test_gamma_gaps_keep_the_mean_rate_and_change_the_spread(burstiness: float) -> None:
    rng = random.Random(1)
    gaps = [arrival_gap(rng, 10.0, burstiness) for _ in range(20_000)]
    assert statistics.mean(gaps) == pytest.approx(0.1, rel=0.05)
    # coefficient of variation of a gamma(k) is 1/sqrt(k): Poisson 1, burstier above, smoother below
    assert statistics.pstdev(gaps) / statistics.mean(gaps) == pytest.approx(burstiness ** -0.5, rel=0.07)


@pytest.mark.parametrize("name", CLIENTS)
def test_dataset_items_reach_the_server(fixed: tuple[str, FixedScheduleServer], name: str) -> None:
    url, _srv = fixed
    items = load_workload(DATA / "custom.jsonl", seed=0)
    spec = LoadSpec(url=url, dataset=items, num_requests=6, warmup=0, concurrency=2, output_len=5)
    records, run = CLIENTS[name](spec)
    seen = stats(url)["seen"][2:]  # after the two calibration probes
    want = {it["prompt"][:40]: it.get("output_len", 5) for it in items}
    assert sorted(s["prompt_head"] for s in seen) == sorted([it["prompt"][:40] for it in items] * 2)
    assert all(s["max_tokens"] == want[s["prompt_head"]] for s in seen)
    assert all(r["error"] is None for r in records)
    assert run["spec"]["dataset"] == 3  # counted, not copied into the run record


def test_chat_messages_and_sharegpt_output_words(fixed: tuple[str, FixedScheduleServer]) -> None:
    url, _srv = fixed
    spec = LoadSpec(url=url, api="chat", dataset=load_workload(DATA / "chat.jsonl", chat=True), num_requests=2,
                    warmup=0, concurrency=1)
    records, _ = client.run_local(spec, progress=False)
    roles = sorted(tuple(s["roles"]) for s in stats(url)["seen"][2:])
    assert roles == [("system", "user"), ("user", "assistant", "user")]
    assert sorted(r["output_tokens"] for r in records) == [4, 5]
    # ShareGPT output words become tokens through the server's calibration (1 token per word here)
    sg = LoadSpec(url=url, dataset=load_workload(DATA / "sharegpt_sample.json"), num_requests=4, warmup=0)
    recs, _ = client.run_local(sg, progress=False)
    want = sorted(it["output_words"] for it in load_workload(DATA / "sharegpt_sample.json"))
    assert sorted(r["output_tokens"] for r in recs) == want


@pytest.mark.parametrize("name", CLIENTS)
def test_duration_bounds_the_measured_phase(fixed: tuple[str, FixedScheduleServer], name: str) -> None:
    url, _srv = fixed
    # each request takes ~5 + 9 x 2 = 23 ms; at c=2 a 0.3 s window starts ~26 of them, far below the cap
    spec = LoadSpec(url=url, input_len=8, output_len=10, num_requests=100_000, concurrency=2, warmup=1, duration_s=0.3)
    records, run = CLIENTS[name](spec)
    measured = [r for r in records if r["phase"] == "measure"]
    first = min(r["start_unix"] for r in measured)
    assert 4 <= len(measured) < 200
    assert max(r["start_unix"] for r in measured) - first < 0.3 + 0.05  # nothing started after the deadline
    assert summarize(records, run)["failed"] == 0


def test_duration_bounds_an_open_loop_too(fixed: tuple[str, FixedScheduleServer]) -> None:
    url, _srv = fixed
    spec = LoadSpec(url=url, input_len=8, output_len=4, num_requests=100_000, concurrency=None, rate=50.0,
                    burstiness=0.5, warmup=0, duration_s=0.4, seed=2)
    records, _ = client.run_local(spec, progress=False)
    intended = sorted(r["start_unix"] - r["sched_delay_s"] for r in records)
    assert intended[-1] - intended[0] < 0.4
    # the schedule is the seeded gamma one: replay it
    rng, t, expected = random.Random(3), 0.0, []
    while t < 0.4:
        expected.append(t)
        t += arrival_gap(rng, 50.0, 0.5)
    assert [x - intended[0] for x in intended] == pytest.approx(expected[: len(intended)], abs=2e-3)
    assert len(intended) == len(expected)


@pytest.mark.parametrize("name", CLIENTS)
def test_flush_cache_runs_after_calibration_before_the_run(fixed: tuple[str, FixedScheduleServer], name: str) -> None:
    url, _srv = fixed
    spec = LoadSpec(url=url, input_len=8, output_len=2, num_requests=2, warmup=1, flush_cache=True)
    CLIENTS[name](spec)
    assert stats(url)["flushes"] == [2]  # after the two calibration probes, before warmup and measurement
    CLIENTS[name](LoadSpec(url=url, input_len=8, output_len=2, num_requests=1, warmup=0))
    assert stats(url)["flushes"] == [2]  # not asked: not flushed


def test_sweep_flushes_once_per_point_before_its_warmup(fixed: tuple[str, FixedScheduleServer]) -> None:
    from workbench.bench.sweep import local_runner, run_sweep

    url, _srv = fixed
    base = LoadSpec(url=url, input_len=8, output_len=2, num_requests=2, warmup=1, flush_cache=True)
    # with server_url the warmup runs as a run of its own: the flush must still come before it, once
    result = run_sweep(base, [1, 2], runner=local_runner(progress=False), server_url=url)
    seen = stats(url)
    # point 1: 2 calibration probes, flush, 1 warmup, 2 measured; point 2 (calibration reused): flush, 1 + 2
    assert seen["flushes"] == [2, 5]
    assert seen["requests"] == 8 and list(result.results["completed"]) == [2, 2]
