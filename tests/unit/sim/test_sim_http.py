"""The HTTP API against a live simulated server, with a real client (httpx)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest
from simhelpers import DDTREE, REPO, SimServer

from workbench.sim.simcore.tokenizer import count_tokens


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = SimServer(
        ["--tp", "4", "--enable-metrics", "--served-model-name", "kimi-k2.6", *DDTREE],
        tmp_path_factory.mktemp("state"),
    )
    assert s.wait_for("The server is fired up and ready to roll!")
    yield s
    assert s.stop() == 0


def test_health_models_and_info(server):
    with httpx.Client(base_url=server.url) as c:
        assert c.get("/health").status_code == 200
        models = c.get("/v1/models").json()
        assert models["object"] == "list"
        card = models["data"][0]
        assert (card["id"], card["owned_by"], card["max_model_len"]) == (
            "kimi-k2.6",
            "sglang",
            262144,
        )
        r = c.get("/v1/models/other")
        assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
        assert c.get("/nope").json() == {"detail": "Not Found"}


def test_chat_usage_matches_synthetic_tokenizer(server):
    body = {
        "model": "kimi-k2.6",
        "messages": [{"role": "user", "content": "Hello there"}],
        "max_tokens": 37,
        "ignore_eos": True,
    }
    r = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=30)
    assert r.status_code == 200
    out = r.json()
    choice = out["choices"][0]
    assert out["object"] == "chat.completion" and choice["finish_reason"] == "length"
    assert out["usage"]["completion_tokens"] == 37 == count_tokens(choice["message"]["content"])
    assert out["usage"]["prompt_tokens"] == 3 + 4 + count_tokens("Hello there")
    again = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=30).json()
    assert again["choices"][0]["message"]["content"] == choice["message"]["content"]


def test_stream_with_usage(server):
    body = {
        "model": "kimi-k2.6",
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "max_tokens": 50,
        "ignore_eos": True,
        "stream_options": {"include_usage": True},
    }
    events = []
    with httpx.stream("POST", f"{server.url}/v1/chat/completions", json=body, timeout=30) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(line[6:])
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"]["content"] or "" for c in chunks if c["choices"])
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    usage = chunks[-1]["usage"]
    assert chunks[-1]["choices"] == [] and usage["completion_tokens"] == 50 == count_tokens(text)
    # speculative decoding: a chunk usually carries several tokens
    assert len(chunks) - 3 < 50


def test_completion_stops_on_eos_without_ignore_eos(server):
    r = httpx.post(
        f"{server.url}/v1/completions",
        json={"prompt": "Once upon a time", "max_tokens": 5000},
        timeout=60,
    ).json()
    assert r["choices"][0]["finish_reason"] == "stop"
    assert r["choices"][0]["matched_stop"] == 163586
    assert r["usage"]["completion_tokens"] < 5000


def test_error_responses(server):
    url = f"{server.url}/v1/chat/completions"
    bad = httpx.post(url, content=b"{bad", headers={"content-type": "application/json"})
    assert bad.status_code == 400
    assert bad.json()["type"] == "Bad Request" and "json_invalid" in bad.json()["message"]
    missing = httpx.post(url, json={"model": "x"})
    assert missing.status_code == 400 and "'missing'" in missing.json()["message"]
    empty = httpx.post(url, json={"messages": []})
    assert empty.json() == {
        "object": "error",
        "message": "Messages cannot be empty.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
    long_prompt = "word " * 300000
    too_long = httpx.post(
        url, json={"messages": [{"role": "user", "content": long_prompt}]}, timeout=30
    )
    assert too_long.status_code == 400
    assert (
        "is longer than the model's context length (262144 tokens)." in too_long.json()["message"]
    )
    # SGLang's Python route does not validate the model name (issues #7035, #31404)
    other = httpx.post(
        url,
        json={
            "model": "no-such-model",
            "max_tokens": 2,
            "messages": [{"role": "user", "content": "x"}],
        },
        timeout=30,
    )
    assert other.status_code == 200 and other.json()["model"] == "no-such-model"


def test_metrics_and_server_info(server):
    httpx.post(
        f"{server.url}/v1/completions",
        json={"prompt": "x", "max_tokens": 40, "ignore_eos": True},
        timeout=30,
    )
    text = httpx.get(f"{server.url}/metrics").text
    for name in (
        "sglang:num_running_reqs{",
        "sglang:gen_throughput{",
        "sglang:spec_accept_length{",
        'sglang:prompt_tokens_total{model_name="kimi-k2.6"}',
        'sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="kimi-k2.6"}',
        "# TYPE sglang:e2e_request_latency_seconds histogram",
    ):
        assert name in text
    info = httpx.get(f"{server.url}/get_server_info").json()
    assert info["tp_size"] == 4 and info["speculative_algorithm"] == "DDTREE"
    assert not any(k.startswith("sim_") for k in info)
    assert info["internal_states"][0]["avg_spec_accept_length"] > 1.5


def test_spec_verify_calls_give_the_accept_length_of_a_window(server):
    """Counter deltas around a window: generation tokens / verify calls = SGLang's accept length."""
    from workbench.telemetry import parse_metrics, spec_acceptance

    before = parse_metrics(httpx.get(f"{server.url}/metrics").text)
    for i in range(3):
        r = httpx.post(
            f"{server.url}/v1/completions",
            json={"prompt": f"window {i}", "max_tokens": 64, "ignore_eos": True},
            timeout=30,
        )
        assert r.status_code == 200
    text = httpx.get(f"{server.url}/metrics").text
    assert "# TYPE sglang:spec_verify_calls_total counter" in text
    spec = spec_acceptance(before, parse_metrics(text))
    assert spec["windowed"] and spec["engine"] == "sglang"
    # 3 requests x 64 tokens: one from prefill, the rest from verify steps of ~3.8 tokens each
    assert 17 * 3 <= spec["verify_calls"] <= 63 * 3
    assert 2.0 < spec["accept_length"] < 5.0


def test_nvidia_smi_sees_the_rank_processes(server):
    env = {**os.environ, "SIM_GPU_STATE_DIR": str(server.state_dir), "SGLANG_SIM_HOST_FILE": ""}
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "workbench/sim/nvidia_smi.py"),
            "--query-compute-apps=pid,process_name,used_memory",
            "--format=csv,noheader,nounits",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [r.split(", ") for r in out.splitlines()]
    assert [r[1] for r in rows] == [f"sglang::scheduler_TP{i}" for i in range(4)]
    def ppid(pid: int) -> int:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])

    for pid, _name, mem in rows:
        # forked by the server's fork server (one import of the scheduler for all ranks), a child of the server
        assert ppid(ppid(int(pid))) == server.proc.pid
        assert int(mem) > 200_000


def test_health_is_503_until_warmup_done(start_server):
    s = start_server(["--tp", "4", "--sim-speed", "0.0002"])
    assert s.wait_for("Uvicorn running on")
    assert httpx.get(f"{s.url}/health").status_code == 503
    assert httpx.get(f"{s.url}/get_model_info").status_code == 200


def test_port_in_use_fails_like_uvicorn(start_server):
    import socket

    s = start_server(["--tp", "4"])
    with socket.socket() as blocker:
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind(("127.0.0.1", s.port))
        blocker.listen()
        assert s.wait_exit() == 1
    assert (
        f"ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', "
        f"{s.port}): address already in use"
    ) in s.text
    assert "Application shutdown complete." in s.text


def test_only_speculative_servers_count_verify_calls():
    from workbench.sim.sglang.srt.metrics.collector import TokenizerMetricsCollector

    assert "spec_verify_calls_total" not in "\n".join(TokenizerMetricsCollector("m").render())
    assert "spec_verify_calls_total" in "\n".join(TokenizerMetricsCollector("m", speculative=True).render())
