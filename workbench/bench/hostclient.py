"""The load client that runs on the GPU host, next to the server (standard library only).

Network latency between the notebook's machine and the host adds to every TTFT, so
``workbench.bench.remote`` ships this file and ``loadcore.py`` to the host and runs::

    python3 hostclient.py SPEC.json

where SPEC.json is a ``LoadSpec`` as JSON. It prints one JSON line per request as each one
finishes (the records of ``loadcore``, identical to the httpx client's), then one ``"kind": "run"``
line with the run's self-check. Transport: asyncio streams over raw sockets, one connection
per request, HTTP/1.1 with chunked or length-delimited bodies.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import sys
from typing import Any
from urllib.parse import urlsplit

try:  # inside the package
    from workbench.bench.loadcore import (
        LoadSpec,
        Recorder,
        calibrate,
        discover_model,
        flush_cache,
        run_load,
    )
except ImportError:  # shipped next to loadcore.py on the host
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from loadcore import (  # type: ignore[no-redef]
        LoadSpec,
        Recorder,
        calibrate,
        discover_model,
        flush_cache,
        run_load,
    )

MAX_ERROR_BODY = 2048


class RawTransport:
    """POST a body to one URL over a fresh socket and feed the response to a ``Recorder``."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self.head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
            f"Accept: text/event-stream\r\nConnection: close\r\n{extra}"
        )

    async def __call__(self, body: bytes, rec: Recorder) -> None:
        rec.begin()
        try:
            reader, writer = await asyncio.open_connection(
                self.host, self.port, ssl=ssl.create_default_context() if self.tls else None, limit=1 << 22
            )
        except OSError as exc:
            rec.fail(f"connect failed: {exc}")
            return
        try:
            writer.write(f"{self.head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
            head = await reader.readuntil(b"\r\n\r\n")
            status_line, *header_lines = head.decode("latin-1").split("\r\n")
            rec.status(int(status_line.split()[1]))
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
            if rec.http_status is not None and rec.http_status >= 400:
                text = await reader.read(MAX_ERROR_BODY)
                rec.fail(f"HTTP {rec.http_status}: {text.decode('utf-8', 'replace').strip()[:300]}")
                return
            if "chunked" in headers.get("transfer-encoding", "").lower():
                await _dechunk(reader, rec)
            elif "content-length" in headers:
                remaining = int(headers["content-length"])
                while remaining > 0:
                    data = await reader.read(min(remaining, 1 << 16))
                    if not data:
                        raise asyncio.IncompleteReadError(b"", remaining)
                    remaining -= len(data)
                    rec.feed(data)
            else:
                while data := await reader.read(1 << 16):
                    rec.feed(data)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError) as exc:
            rec.fail(f"connection closed mid-response: {type(exc).__name__}")
        except (ValueError, IndexError) as exc:
            rec.fail(f"malformed HTTP response: {exc}")
        finally:
            writer.close()


async def _dechunk(reader: asyncio.StreamReader, rec: Recorder) -> None:
    """Feed the body of a chunked response, one network read at a time.

    Whatever one read brings (often many small chunks, one SSE event each) is decoded in memory
    and fed at once: one await per read instead of two per chunk, and the timestamp is the read's.
    """
    buf = b""
    size = -1  # bytes left in the current chunk including its CRLF; -1: a size line comes next
    while True:
        data = await reader.read(1 << 16)
        if not data:
            raise asyncio.IncompleteReadError(buf, None)
        buf += data
        body: list[bytes] = []
        while True:
            if size < 0:
                nl = buf.find(b"\r\n")
                if nl < 0:
                    break
                size = int(buf[:nl].split(b";")[0], 16)
                buf = buf[nl + 2 :]
                if size == 0:  # last chunk (trailers, if any, are ignored)
                    if body:
                        rec.feed(b"".join(body))
                    return
                size += 2
            if len(buf) < size:
                break
            body.append(buf[: size - 2])
            buf, size = buf[size:], -1
        if body:
            rec.feed(b"".join(body))


def prepare(spec: LoadSpec) -> LoadSpec:
    """Fill in the model name and the prompt calibration by asking the server; flush its cache if asked.

    The flush comes last, so the calibration probes leave nothing cached either.
    """
    if not spec.model:
        spec.model = discover_model(spec.url, spec.headers)
    if spec.tokens_per_word is None:
        spec.tokens_per_word = calibrate(spec)
    if spec.flush_cache:
        flush_cache(spec.url, spec.headers, timeout=min(spec.timeout_s, 60.0))
    return spec


def run(spec: LoadSpec, out: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run ``spec`` with the raw-socket transport, writing JSON lines to ``out`` as they come."""

    def emit(obj: dict[str, Any]) -> None:
        if out is not None:
            out.write(json.dumps(obj) + "\n")
            out.flush()

    spec = prepare(spec)
    records, info = asyncio.run(run_load(spec, RawTransport(spec.endpoint, spec.headers), emit, client="hostclient"))
    emit(info)
    return records, info


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python3 hostclient.py SPEC.json", file=sys.stderr)
        return 2
    with open(args[0]) as f:
        spec = LoadSpec.from_dict(json.load(f))
    run(spec, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
