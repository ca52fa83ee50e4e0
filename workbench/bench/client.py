"""The asyncio streaming load client on httpx, run from the notebook's machine.

Same scheduler, prompts and records as the host client (``loadcore``); only the transport
differs. Use ``run_local(spec)`` from a script or CLI, ``await run_async(spec)`` inside a
running event loop (JupyterLab). Over a network, TTFT includes the round trip: prefer
``workbench.bench.remote.run_on_host`` for latency figures.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.error
from collections.abc import Callable
from typing import Any

import httpx
from tqdm.auto import tqdm

from workbench.bench.hostclient import prepare
from workbench.bench.loadcore import LoadSpec, Recorder, run_load
from workbench.errors import ConfigError, HostError
from workbench.redact import clip

Records = list[dict[str, Any]]


class HttpxTransport:
    """Streams one POST into a ``Recorder``, each request on an ``httpx.AsyncClient`` of its own.

    A free client (one keep-alive connection each) is reused by the next request, so a closed loop
    of ``c`` workers holds ``c`` clients. One shared client with a large pool is not used: httpcore
    scans its whole pool on every request and release (O(connections) each), which at 64 streams
    delayed TTFT by seconds on this machine.
    """

    def __init__(self, url: str, headers: dict[str, str], timeout: httpx.Timeout) -> None:
        self.url, self.timeout = url, timeout
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream", **headers}
        self._free: list[httpx.AsyncClient] = []
        self._all: list[httpx.AsyncClient] = []
        # one TLS context for all clients (building one reads the CA bundle: ~30-100 ms of blocked loop)
        self._tls: ssl.SSLContext | bool = ssl.create_default_context() if url.startswith("https:") else False

    def _client(self) -> httpx.AsyncClient:
        if self._free:
            return self._free.pop()
        c = httpx.AsyncClient(limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
                              timeout=self.timeout, trust_env=False, verify=self._tls)
        self._all.append(c)
        return c

    async def __call__(self, body: bytes, rec: Recorder) -> None:
        client = self._client()
        try:
            rec.begin()
            async with client.stream("POST", self.url, content=body, headers=self.headers) as resp:
                rec.status(resp.status_code)
                if resp.status_code >= 400:
                    text = (await resp.aread()).decode("utf-8", "replace").strip()
                    rec.fail(f"HTTP {resp.status_code}: {clip(text, 300)}")
                    return
                async for data in resp.aiter_raw():
                    rec.feed(data)
        except httpx.RemoteProtocolError as exc:
            rec.fail(f"connection closed mid-response: {exc}")
        except httpx.TransportError as exc:
            rec.fail(f"{type(exc).__name__}: {exc}")
        finally:
            self._free.append(client)

    async def aclose(self) -> None:
        for c in self._all:
            await c.aclose()


def _prepare(spec: LoadSpec) -> LoadSpec:
    try:
        return prepare(spec)
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace").strip()[:300]
        raise HostError(f"{spec.url} answered HTTP {exc.code} while preparing the run ({exc.url}): {detail}"
                        + ("; is the API key right?" if exc.code in (401, 403) else "")) from exc
    except (urllib.error.URLError, OSError) as exc:
        raise HostError(f"cannot reach {spec.url} to prepare the run: {exc}; is the server up?") from exc
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


async def run_async(spec: LoadSpec, *, progress: bool = True,
                    on_record: Callable[[dict[str, Any]], None] | None = None) -> tuple[Records, dict[str, Any]]:
    """Run ``spec`` on the current event loop; returns (records, run self-check)."""
    spec = await asyncio.to_thread(_prepare, spec)
    bar = tqdm(total=spec.warmup + spec.num_requests, desc=_describe(spec), disable=not progress, unit="req")

    def done(record: dict[str, Any]) -> None:
        bar.update(1)
        if on_record is not None:
            on_record(record)

    transport = HttpxTransport(spec.endpoint, spec.headers, httpx.Timeout(spec.timeout_s, connect=min(spec.timeout_s, 30.0)))
    try:
        return await run_load(spec, transport, done, client="httpx")
    finally:
        await transport.aclose()
        bar.close()


def run_local(spec: LoadSpec, *, progress: bool = True) -> tuple[Records, dict[str, Any]]:
    """Blocking form of ``run_async`` for scripts and the CLI (no running event loop)."""
    return asyncio.run(run_async(spec, progress=progress))


def _describe(spec: LoadSpec) -> str:
    return f"c={spec.concurrency}" if spec.rate is None else f"rate={spec.rate}/s cap={spec.concurrency}"
