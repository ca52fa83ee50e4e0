"""The simulated server's send-time stamps (SGLANG_SIM_STAMPS): what a client's TTFT/ITL are checked against."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from simhelpers import DDTREE, SimServer

from workbench.sim.simcore.stamps import has_output


@pytest.fixture(scope="module")
def stamped(tmp_path_factory):
    d = tmp_path_factory.mktemp("stamps")
    s = SimServer(["--tp", "4", "--served-model-name", "kimi-k2.6", *DDTREE], d / "state",
                  env={"SGLANG_SIM_STAMPS": str(d / "stamps.jsonl")})
    assert s.wait_for("The server is fired up and ready to roll!")
    yield s, d / "stamps.jsonl"
    assert s.stop() == 0


def _stamp_lines(path, n: int, bound: float = 30.0) -> list[str]:
    """The first ``n`` complete lines of the stamps file: the server writes a request's stamp after
    its last chunk left, so the client can see [DONE] before the line is there."""
    deadline = time.monotonic() + bound
    while True:
        text = path.read_text() if path.exists() else ""
        lines = text.splitlines()[: text.count("\n")]
        if len(lines) >= n or time.monotonic() > deadline:
            return lines
        time.sleep(0.02)


def test_every_streamed_chunk_is_stamped_after_it_left(stamped):
    server, path = stamped
    body = {"model": "kimi-k2.6", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 24,
            "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}}
    pieces, arrivals = [], []
    before = time.time()
    with httpx.stream("POST", f"{server.url}/v1/chat/completions", json=body, timeout=30) as r:
        for line in r.iter_lines():
            if line.startswith("data:"):
                pieces.append(line)
                arrivals.append(time.time())
    (stamp,) = [json.loads(x) for x in _stamp_lines(path, 1)]
    chunks = stamp["chunks"]
    assert stamp["path"] == "/v1/chat/completions" and before <= stamp["t_recv"] <= chunks[0][0]
    assert len(chunks) == len(pieces)  # one stamp per SSE event, [DONE] included
    assert [has for _, has in chunks] == [has_output(p) for p in pieces]
    assert [t for t, _ in chunks] == sorted(t for t, _ in chunks)
    # each stamp is taken after its chunk was flushed, so before the client saw the next one
    assert all(t <= later for (t, _), later in zip(chunks, arrivals[1:], strict=False))
    assert not chunks[-1][1] and sum(has for _, has in chunks) >= 1  # usage and [DONE] carry no output


@pytest.mark.parametrize("piece, has", [
    ('data: {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}', False),
    ('data: {"choices": [{"index": 0, "delta": {"content": " tok"}}]}', True),
    ('data: {"choices": [{"index": 0, "text": " tok"}]}', True),
    ('data: {"choices": [], "usage": {"completion_tokens": 3}}', False),
    ("data: [DONE]", False),
])
def test_which_pieces_carry_output(piece, has):
    assert has_output(piece + "\n\n") is has
