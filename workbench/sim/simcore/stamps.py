"""Server-side send times of streamed chunks: the reference a load client's TTFT and ITL are checked against.

With ``SGLANG_SIM_STAMPS=/path/stamps.jsonl`` in its environment the simulated server appends,
per streamed response, one JSON line: ``t_recv`` (wall clock when the request line was read),
``path``, and ``chunks`` — ``[t_sent, has_output]`` per chunk, ``t_sent`` taken right after the
chunk was flushed to the socket, ``has_output`` whether it carried generated text (a role-only or
usage-only chunk does not).  Off (no variable): nothing is recorded.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

ENV = "SGLANG_SIM_STAMPS"
_lock = threading.Lock()


def path() -> str | None:
    return os.environ.get(ENV) or None


def has_output(piece: str) -> bool:
    """Whether an SSE ``data:`` piece carries generated text (completions ``text``, chat ``delta.content``)."""
    for line in piece.splitlines():
        if not line.startswith("data:") or line.strip() == "data: [DONE]":
            continue
        try:
            body = json.loads(line[5:])
        except ValueError:
            continue
        for choice in body.get("choices") or []:
            if choice.get("text") or (choice.get("delta") or {}).get("content"):
                return True
        if body.get("text"):  # /generate
            return True
    return False


def record(where: str, t_recv: float, request_path: str, chunks: list[list[Any]]) -> None:
    line = json.dumps({"t_recv": t_recv, "path": request_path, "chunks": chunks})
    with _lock, open(where, "a", encoding="utf-8") as f:
        f.write(line + "\n")
