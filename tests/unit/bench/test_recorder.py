"""The SSE decoding of one response into a record, fed byte pieces as a transport would."""

from __future__ import annotations

import json

from workbench.bench.loadcore import RECORD_KEYS, LoadSpec, Recorder, build_body, build_prompts


def feed_all(pieces: list[bytes], status: int = 200) -> dict:
    rec = Recorder(7, "measure", (0.0, 1000.0), 0.0)
    rec.begin()
    rec.status(status)
    for p in pieces:
        rec.feed(p)
    return rec.finish()


def ev(obj: dict | str) -> bytes:
    return b"data: " + (obj.encode() if isinstance(obj, str) else json.dumps(obj).encode()) + b"\r\n\r\n"


def test_events_split_anywhere_and_crlf_line_endings() -> None:
    stream = b"".join([
        b": keep-alive comment\r\n\r\n",
        ev({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),  # role-only: no output
        ev({"choices": [{"index": 0, "delta": {"reasoning_content": "think"}}], "usage": {"prompt_tokens": 9, "completion_tokens": 1}}),
        ev({"choices": [{"index": 0, "delta": {"content": "a b c"}}], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}),
        ev({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}),
        ev("[DONE]"),
    ])
    r = feed_all([stream[i:i + 7] for i in range(0, len(stream), 7)])
    assert tuple(r) == RECORD_KEYS
    assert r["error"] is None and len(r["chunk_s"]) == 2 and r["chunk_tokens"] == [1, 3]
    assert (r["input_tokens"], r["output_tokens"]) == (9, 4) and r["start_unix"] >= 1000.0


def test_multiline_data_and_text_completions_without_usage() -> None:
    r = feed_all([b'data: {"choices":\ndata: [{"text": "x"}]}\n\n', ev({"choices": [{"text": "y"}]}), ev("[DONE]")])
    assert r["error"] is None and r["chunk_tokens"] == [None, None] and r["output_tokens"] == 2


def test_errors() -> None:
    assert feed_all([ev({"choices": [{"text": "x"}]})])["error"] == "stream ended before [DONE]"
    assert feed_all([ev({"error": {"message": "overloaded"}})])["error"] == "server error event: overloaded"
    assert feed_all([b"data: {not json\n\n"])["error"].startswith("undecodable event")
    assert feed_all([], status=503)["error"] == "HTTP 503"


def test_request_bodies_and_prompts() -> None:
    spec = LoadSpec(url="http://h:1/", model="m", api="chat", input_len=20, tokens_per_word=(5.0, 1.0), extra_body={"top_k": 1})
    body = json.loads(build_body(spec, "hello", 8))
    assert body["messages"] == [{"role": "user", "content": "hello"}] and body["max_tokens"] == 8
    assert body["ignore_eos"] is True and body["top_k"] == 1 and body["stream_options"]["continuous_usage_stats"]
    prompts = build_prompts(spec, 3)
    assert [len(p.split()) for p in prompts] == [15, 15, 15] and len(set(prompts)) == 3
    assert prompts == build_prompts(spec, 3)  # seeded: identical across clients and runs
    assert spec.endpoint == "http://h:1/v1/chat/completions"
