"""An OpenAI-compatible streaming server with a fixed, known schedule (standard library only).

Used to check a load client's measurements: every streamed request gets its first chunk
``ttft_ms`` after the request arrives and one chunk ``itl_ms`` after each previous one, each carrying
``tokens_per_chunk`` tokens (one token = the word " tok"), until ``max_tokens`` are sent.
Each chunk is due ``itl_ms`` after the previous one actually went out (so a late server slows
down rather than bursting), and asyncio timers wake up to ~1 ms late, so the server records when
it actually sent each chunk: ``GET /stats`` returns the lateness of every
chunk and the actual gap between consecutive chunks of each request, the reference a client's
measured ITL is compared with.

Usage is reported as the OpenAI API does: a final usage-only chunk when the request asks for
``stream_options.include_usage``, cumulative usage on every chunk with ``continuous_usage_stats``.
A prompt's token count is its number of words (chat adds ``CHAT_OVERHEAD``). The model name
selects a fault: ``fail-NNN`` answers HTTP NNN, ``close-after-K`` drops the connection after
K chunks, ``error-after-K`` sends an SSE error event after K chunks. ``POST /flush_cache`` answers
as SGLang does and is counted: ``/stats`` lists ``flushes`` (the request count at each flush) and
``seen`` (per request: ``max_tokens``, prompt words and chat roles), so a test can check what a
client sent, and when it flushed.

Run it as ``python3 -m workbench.bench.fixedserver --port 0 --itl-ms 10``: it prints
``READY <port>`` once listening.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import threading
import time
from typing import Any

CHAT_OVERHEAD = 5


class FixedScheduleServer:
    """The server; ``with FixedScheduleServer(...) as url:`` runs it on a background thread."""

    def __init__(self, *, ttft_ms: float = 20.0, itl_ms: float = 10.0, tokens_per_chunk: int = 1,
                 host: str = "127.0.0.1", port: int = 0, continuous_usage: bool = True) -> None:
        self.ttft, self.itl, self.k = ttft_ms / 1000, itl_ms / 1000, tokens_per_chunk
        self.host, self.port, self.continuous_usage = host, port, continuous_usage
        self.lateness: list[float] = []
        self.gaps: list[float] = []  # actual send-time gaps between consecutive chunks of a request
        self.requests = 0
        self.flushes: list[int] = []
        self.seen: list[dict[str, Any]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._connection, self.host, self.port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                request_line, *lines = head.decode("latin-1").split("\r\n")
                method, path = request_line.split()[:2]
                headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines if h)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                keep = await self._handle(method, path, body, writer)
                if not keep or headers.get("connection", "").lower() == "close":
                    return
        except ConnectionError:
            return
        finally:
            writer.close()

    async def _handle(self, method: str, path: str, body: bytes, w: asyncio.StreamWriter) -> bool:
        t0 = time.perf_counter()
        if method == "GET" and path == "/v1/models":
            return await self._json(w, 200, {"object": "list", "data": [{"id": "fixed", "object": "model"}]})
        if method == "GET" and path == "/health":
            return await self._json(w, 200, {})
        if method == "GET" and path == "/stats":
            return await self._json(w, 200, {"requests": self.requests, "lateness_s": self.lateness, "gaps_s": self.gaps,
                                             "flushes": self.flushes, "seen": self.seen})
        if method == "POST" and path == "/flush_cache":
            self.flushes.append(self.requests)
            return await self._json(w, 200, {"message": "Cache flushed."})
        if method != "POST" or path not in ("/v1/completions", "/v1/chat/completions"):
            return await self._json(w, 404, {"error": {"message": f"no route {method} {path}"}})
        req = json.loads(body)
        self.requests += 1
        model = str(req.get("model", ""))
        if model.startswith("fail-"):
            return await self._json(w, int(model[5:]), {"error": {"message": "injected failure"}})
        chat = path.endswith("chat/completions")
        text = req["messages"][-1]["content"] if chat else req["prompt"]
        if isinstance(text, list):  # content parts: [{"type": "text", "text": ...}]
            text = " ".join(p.get("text", "") for p in text if isinstance(p, dict))
        usage = {"prompt_tokens": len(str(text).split()) + (CHAT_OVERHEAD if chat else 0), "completion_tokens": 0}
        n = int(req.get("max_tokens") or req.get("max_completion_tokens") or 16)
        self.seen.append({"max_tokens": n, "prompt_words": len(str(text).split()), "prompt_head": str(text)[:40],
                          "roles": [m.get("role") for m in req["messages"]] if chat else None})
        head = {"id": f"cmpl-{self.requests}", "created": int(time.time()), "model": model,
                "object": "chat.completion.chunk" if chat else "text_completion"}
        if not req.get("stream"):
            usage["completion_tokens"] = n
            choice = {"index": 0, "finish_reason": "length",
                      **({"message": {"role": "assistant", "content": " tok" * n}} if chat else {"text": " tok" * n})}
            return await self._json(w, 200, {**head, "object": "chat.completion" if chat else "text_completion",
                                             "choices": [choice], "usage": usage})
        opts = req.get("stream_options") or {}
        per_chunk_usage = self.continuous_usage and bool(opts.get("continuous_usage_stats"))
        fault, _, after = model.partition("-after-")
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        if chat:  # the role-only first chunk of OpenAI-style servers
            await self._event(w, {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})
        chunks = math.ceil(n / self.k)
        last = 0.0
        for j in range(chunks):
            if after and j == int(after):
                if fault == "close":
                    return False
                await self._event(w, {"error": {"message": "injected error", "code": 500}})
                break
            # due itl after the previous chunk really went out: a late server slows down, never bursts
            target = t0 + self.ttft if j == 0 else last + self.itl
            delay = target - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tokens = min(self.k, n - j * self.k)
            usage["completion_tokens"] += tokens
            finish = "length" if j == chunks - 1 else None
            choice = ({"index": 0, "delta": {"content": " tok" * tokens}, "finish_reason": finish} if chat
                      else {"index": 0, "text": " tok" * tokens, "logprobs": None, "finish_reason": finish})
            chunk: dict[str, Any] = {**head, "choices": [choice]}
            if per_chunk_usage:
                chunk["usage"] = dict(usage)
            sent = time.perf_counter()
            self.lateness.append(sent - target)
            if j:
                self.gaps.append(sent - last)
            last = sent
            await self._event(w, chunk)
        if opts.get("include_usage"):
            await self._event(w, {**head, "choices": [], "usage": usage})
        w.write(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
        await w.drain()
        return True

    @staticmethod
    async def _event(w: asyncio.StreamWriter, obj: dict[str, Any]) -> None:
        data = b"data: " + json.dumps(obj).encode() + b"\n\n"
        w.write(b"%x\r\n%s\r\n" % (len(data), data))
        await w.drain()

    @staticmethod
    async def _json(w: asyncio.StreamWriter, code: int, obj: dict[str, Any]) -> bool:
        data = json.dumps(obj).encode()
        w.write(b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (code, len(data), data))
        await w.drain()
        return True

    def __enter__(self) -> str:
        ready = threading.Event()

        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self.start())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, name="fixed-schedule-server", daemon=True)
        self._thread.start()
        ready.wait()
        return self.url

    def __exit__(self, *exc: object) -> None:
        loop = self._loop
        if loop is None or self._thread is None or self._server is None:
            return
        server = self._server

        async def shutdown() -> None:
            server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join()
        loop.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ttft-ms", type=float, default=20.0)
    p.add_argument("--itl-ms", type=float, default=10.0)
    p.add_argument("--tokens-per-chunk", type=int, default=1)
    a = p.parse_args(argv)
    srv = FixedScheduleServer(ttft_ms=a.ttft_ms, itl_ms=a.itl_ms, tokens_per_chunk=a.tokens_per_chunk, host=a.host, port=a.port)

    async def serve() -> None:
        await srv.start()
        print(f"READY {srv.port}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
