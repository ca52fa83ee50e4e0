"""Load-generation core shared by the httpx client and the host client (standard library only).

This module is shipped to GPU hosts next to ``hostclient.py`` and run there by the host's
``python3``, so it imports nothing outside the standard library and nothing from ``workbench``.
It holds everything that decides *what* is measured, so both clients produce the same records:

- ``LoadSpec``: one run (endpoint, workload, fixed concurrency or an open-loop rate with
  burstiness, count- or duration-bounded, warmup, seed);
- ``request_for`` / ``calibrate``: request ``i``'s prompt and output length — a dataset item
  (text or chat messages), or synthetic words sized from the server's own
  ``usage.prompt_tokens`` (no tokenizer, no model download), with length ranges and shared prefixes;
- ``Recorder``: turns the bytes of one streamed response into one per-request record;
- ``run_load``: the asyncio scheduler (warmup, then fixed concurrency or Poisson arrivals), with
  the client's self-check (event-loop lag, CPU time).

A transport is ``async def send(body: bytes, rec: Recorder) -> None``: it calls ``rec.begin()``
right before connecting, ``rec.status(code)``, ``rec.feed(bytes)`` for each piece of the
de-chunked body as it arrives, and ``rec.fail(message)`` on any error. The record schema and
the metric definitions are documented in ``workbench.bench.metrics``.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

RECORD_VERSION = 1
# Keys of every per-request record, in order (both clients emit exactly these).
RECORD_KEYS = (
    "kind", "v", "id", "phase", "start_unix", "sched_delay_s", "ttft_s", "e2e_s",
    "chunk_s", "chunk_tokens", "input_tokens", "output_tokens", "http_status", "error",
)
# Common English words that are one token in the usual BPE vocabularies.
WORDS = tuple(
    ["the", "of", "and", "to", "in", "is", "was", "for", "that", "on", "as", "with", "by", "he", "at", "from", "his", "it", "an", "are", "were", "which", "be", "this", "has", "had", "not", "but", "one", "new", "first", "also", "after", "who", "they", "her", "she", "two", "been", "other", "when", "there", "all", "during", "into", "school", "time", "may", "years", "more", "most", "only", "over", "city", "some", "world", "would", "where", "later", "up", "such", "used", "many", "can", "state", "about", "national", "out", "known", "university", "united", "then", "made", "high", "part", "well", "year", "both", "under", "three", "team", "where", "each", "family", "so", "did", "last", "south", "north"]
)

Send = Callable[[bytes, "Recorder"], Awaitable[None]]
Prompt = str | list[dict[str, Any]]  # completion text, or chat messages
REDACTED = "<redacted>"


@dataclass
class LoadSpec:
    """One load run against an OpenAI-compatible server.

    ``concurrency`` alone: closed loop with that many requests in flight. ``rate`` (requests/s):
    open-loop arrivals, with ``concurrency`` (if set) capping the requests in flight; the gaps
    are gamma-distributed with shape ``burstiness`` and mean 1/rate (1.0: Poisson; < 1 burstier,
    > 1 more even), as ``vllm bench serve --burstiness``.

    Workload: ``dataset`` items (``{"prompt": str}`` or ``{"messages": [...]}``, optional
    ``output_len`` in tokens or ``output_words``) used in order and cycled; else synthetic prompts
    of ``input_len`` tokens and ``output_len`` output tokens, each drawn uniformly from
    ``[L(1 - range_ratio), L(1 + range_ratio)]``; with ``prefix_groups`` > 0 every prompt starts
    with one of that many shared prefixes of ``prefix_len`` tokens (request ``i`` in group
    ``i % prefix_groups``), then its own ``input_len`` tokens.

    Bounds: ``num_requests`` measured requests, or with ``duration_s`` no new measured request
    starts after that many seconds (``num_requests`` is then a cap). ``flush_cache``: POST the
    server's ``/flush_cache`` (SGLang) before the run. ``headers`` (e.g. the API key) are sent
    with every request and never written into records (see ``public_dict``).
    """

    url: str
    model: str = ""
    api: str = "completions"  # "completions" or "chat"
    input_len: int = 128
    output_len: int = 128
    num_requests: int = 32
    concurrency: int | None = 1
    rate: float | None = None
    warmup: int = 1
    seed: int = 0
    ignore_eos: bool = True
    timeout_s: float = 600.0
    tokens_per_word: tuple[float, float] | None = None  # (a, b): prompt tokens = a + b * words
    extra_body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # may hold the API key
    burstiness: float = 1.0
    duration_s: float | None = None
    range_ratio: float = 0.0
    prefix_len: int = 0
    prefix_groups: int = 0
    dataset: list[dict[str, Any]] = field(default_factory=list)
    flush_cache: bool = False

    def __post_init__(self) -> None:
        if self.api not in ("completions", "chat"):
            raise ValueError(f"api must be 'completions' or 'chat', not {self.api!r}")
        if self.rate is None and not self.concurrency:
            raise ValueError("give a concurrency, a Poisson rate, or both")
        if self.rate is not None and self.rate <= 0:
            raise ValueError(f"rate must be > 0 requests/s, not {self.rate}")
        if self.num_requests < 1 or self.output_len < 1 or self.input_len < 1:
            raise ValueError("num_requests, input_len and output_len must be >= 1")
        if self.tokens_per_word is not None:
            self.tokens_per_word = (float(self.tokens_per_word[0]), float(self.tokens_per_word[1]))
        if not self.burstiness > 0:
            raise ValueError(f"burstiness must be > 0, not {self.burstiness}")
        if self.duration_s is not None and not self.duration_s > 0:
            raise ValueError(f"duration_s must be > 0 seconds, not {self.duration_s}")
        if not 0 <= self.range_ratio < 1:
            raise ValueError(f"range_ratio must be in [0, 1), not {self.range_ratio}")
        if self.prefix_len < 0 or self.prefix_groups < 0 or (self.prefix_groups > 0) != (self.prefix_len > 0):
            raise ValueError("shared prefixes need both prefix_len >= 1 and prefix_groups >= 1 (or neither)")
        for n, item in enumerate(self.dataset):
            check_item(item, f"dataset item {n}", self.api)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def public_dict(self) -> dict[str, Any]:
        """``to_dict`` for records and saved tables: header values redacted, dataset items counted."""
        d = asdict(self)
        d["headers"] = {k: REDACTED for k in self.headers}
        d["dataset"] = len(self.dataset)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoadSpec:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def endpoint(self) -> str:
        return self.url.rstrip("/") + ("/v1/completions" if self.api == "completions" else "/v1/chat/completions")


def check_item(item: Any, where: str, api: str) -> None:
    """Raise ``ValueError`` naming ``where`` if ``item`` is not a usable dataset item for ``api``."""
    if not isinstance(item, dict) or ("prompt" in item) == ("messages" in item):
        raise ValueError(f"{where} needs exactly one of 'prompt' (text) or 'messages' (chat)")
    if "prompt" in item and not (isinstance(item["prompt"], str) and item["prompt"]):
        raise ValueError(f"{where}: 'prompt' must be a non-empty string")
    if "messages" in item:
        msgs = item["messages"]
        if not (isinstance(msgs, list) and msgs and all(isinstance(m, dict) and "role" in m and "content" in m
                                                        for m in msgs)):
            raise ValueError(f"{where}: 'messages' must be a non-empty list of {{role, content}}")
        if api != "chat":
            raise ValueError(f"{where} holds chat messages: run it with api='chat'")
    for key in ("output_len", "output_words"):
        v = item.get(key)
        if v is not None and not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
            raise ValueError(f"{where}: {key!r} must be an integer >= 1, not {v!r}")


def build_body(spec: LoadSpec, prompt: Prompt, max_tokens: int, *, stream: bool = True) -> bytes:
    body: dict[str, Any] = {"model": spec.model, "max_tokens": max_tokens, "temperature": 0.0, "stream": stream}
    if spec.api == "chat":
        body["messages"] = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    if stream:  # per-chunk usage gives exact tokens per chunk on SGLang and vLLM
        body["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
    if spec.ignore_eos:
        body["ignore_eos"] = True
    body.update(spec.extra_body)
    return json.dumps(body).encode()


def words_for(spec: LoadSpec, tokens: int | None = None) -> int:
    """Words of a synthetic prompt of ``tokens`` (default ``input_len``) tokens, template included."""
    a, b = spec.tokens_per_word or (0.0, 1.0)
    return max(1, round(((spec.input_len if tokens is None else tokens) - a) / b))


def _drawn(length: int, ratio: float, rng: random.Random) -> int:
    """A length drawn uniformly from [L(1 - ratio), L(1 + ratio)] (vLLM's random range ratio)."""
    if not ratio:
        return length
    return max(1, rng.randint(math.floor(length * (1 - ratio)), math.ceil(length * (1 + ratio))))


def shared_prefix(spec: LoadSpec, group: int) -> str:
    """The shared prefix of ``group``: ``prefix_len`` tokens of words, the same for every request in it."""
    b = (spec.tokens_per_word or (0.0, 1.0))[1]
    rng = random.Random(f"{spec.seed}:prefix:{group}")
    return " ".join([f"g{group}", *rng.choices(WORDS, k=max(0, round(spec.prefix_len / b) - 1))])


def request_for(spec: LoadSpec, i: int) -> tuple[Prompt, int]:
    """Request ``i``'s prompt and ``max_tokens``: seeded per index, identical across clients and runs.

    Synthetic prompts start with their index (after the shared prefix, if any), so no two share
    a cacheable prefix beyond the one intended.
    """
    if spec.dataset:
        item = spec.dataset[i % len(spec.dataset)]
        out = item.get("output_len")
        if out is None and item.get("output_words"):
            out = max(1, round(item["output_words"] * (spec.tokens_per_word or (0.0, 1.0))[1]))
        prompt: Prompt = item["messages"] if "messages" in item else item["prompt"]
        return prompt, int(out or spec.output_len)
    rng = random.Random(f"{spec.seed}:{i}")
    in_len, out_len = _drawn(spec.input_len, spec.range_ratio, rng), _drawn(spec.output_len, spec.range_ratio, rng)
    text = " ".join([str(i), *rng.choices(WORDS, k=max(0, words_for(spec, in_len) - 1))])
    if spec.prefix_groups:
        text = shared_prefix(spec, i % spec.prefix_groups) + " " + text
    return text, out_len


def build_prompts(spec: LoadSpec, count: int) -> list[Prompt]:
    """The prompts of requests ``0 .. count - 1`` (see ``request_for``)."""
    return [request_for(spec, i)[0] for i in range(count)]


def arrival_gap(rng: random.Random, rate: float, burstiness: float) -> float:
    """One gap between open-loop arrivals: gamma(shape=burstiness, mean=1/rate); exponential at 1."""
    if burstiness == 1.0:
        return rng.expovariate(rate)
    return rng.gammavariate(burstiness, 1.0 / (rate * burstiness))


def http_json(url: str, body: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
              timeout: float = 60.0) -> dict[str, Any]:
    """GET (or POST ``body``) ``url`` and decode the JSON answer."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        out: dict[str, Any] = json.loads(resp.read())
        return out


def discover_model(url: str, headers: dict[str, str] | None = None) -> str:
    """The first model id the server lists at ``/v1/models``."""
    return str(http_json(url.rstrip("/") + "/v1/models", headers=headers)["data"][0]["id"])


def flush_cache(url: str, headers: dict[str, str] | None = None, timeout: float = 60.0) -> str:
    """POST SGLang's ``/flush_cache`` (drop the radix/prefix cache); returns the server's answer.

    SGLang answers 400 while requests are running: that is raised, not ignored, since the next
    point would then run on a warm cache.
    """
    req = urllib.request.Request(url.rstrip("/") + "/flush_cache", data=b"", method="POST", headers=headers or {})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return str(resp.read().decode("utf-8", "replace").strip())


def calibrate(spec: LoadSpec, probes: tuple[int, int] = (16, 144)) -> tuple[float, float]:
    """Fit prompt tokens = a + b * words from two non-streamed 1-token probes.

    ``a`` absorbs the chat template and BOS tokens; ``b`` is the tokenizer's tokens per word.
    """
    counts = []
    for n in probes:
        probe = LoadSpec.from_dict({**spec.to_dict(), "tokens_per_word": None, "seed": spec.seed + 7919})
        prompt = " ".join(random.Random(n).choices(WORDS, k=n))
        body = json.loads(build_body(probe, prompt, 1, stream=False))
        answer = http_json(spec.endpoint, body, spec.headers, timeout=spec.timeout_s)
        tokens = (answer.get("usage") or {}).get("prompt_tokens")
        if not isinstance(tokens, int):
            raise ValueError(f"{spec.endpoint} reported no usage.prompt_tokens; pass tokens_per_word=(a, b)")
        counts.append(tokens)
    b = (counts[1] - counts[0]) / (probes[1] - probes[0])
    if b <= 0:
        raise ValueError(f"prompt tokens did not grow with the prompt ({counts}); pass tokens_per_word")
    return (counts[0] - b * probes[0], b)


class Recorder:
    """Collects one request's timeline from the raw SSE bytes of its response."""

    def __init__(self, rid: int, phase: str, origin: tuple[float, float], sched: float) -> None:
        self.rid, self.phase, self.sched = rid, phase, sched
        self._perf0, self._unix0 = origin
        self.t_start = self.t_end = 0.0
        self.chunks: list[float] = []
        self.tokens: list[int | None] = []
        self.http_status: int | None = None
        self.error: str | None = None
        self.done = False
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self._buf = b""
        self._data: list[bytes] = []

    def begin(self) -> None:
        self.t_start = time.perf_counter()

    def status(self, code: int) -> None:
        self.http_status = code

    def fail(self, message: str) -> None:
        if self.error is None:
            self.error = message

    def feed(self, data: bytes) -> None:
        now = time.perf_counter()
        *lines, self._buf = (self._buf + data).split(b"\n")
        for raw in lines:
            line = raw.rstrip(b"\r")
            if not line:  # a blank line ends an event
                if self._data:
                    self._event(b"\n".join(self._data), now)
                    self._data = []
            elif line.startswith(b"data:"):
                self._data.append(line[5:].lstrip(b" "))

    def _event(self, payload: bytes, now: float) -> None:
        if payload == b"[DONE]":
            self.done = True
            return
        try:
            obj = json.loads(payload)
        except ValueError:
            self.fail(f"undecodable event: {payload[:120]!r}")
            return
        if not isinstance(obj, dict):
            return
        if "error" in obj:
            err = obj["error"]
            self.fail(f"server error event: {(err.get('message') if isinstance(err, dict) else err)!s:.300}")
            return
        before = self.completion_tokens
        usage = obj.get("usage")
        counted = isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int)
        if isinstance(usage, dict):
            self.prompt_tokens = usage.get("prompt_tokens", self.prompt_tokens)
            if counted:
                self.completion_tokens = usage["completion_tokens"]
        text = ""
        for choice in obj.get("choices") or ():
            delta = choice.get("delta") or {}
            text += choice.get("text") or delta.get("content") or delta.get("reasoning_content") or ""
        added = (self.completion_tokens or 0) - (before or 0) if counted else None
        if text or (added and obj.get("choices")):
            self.chunks.append(now - self.t_start)
            self.tokens.append(added)

    def finish(self) -> dict[str, Any]:
        self.t_end = time.perf_counter()
        if self.error is None and self.http_status is not None and self.http_status >= 400:
            self.error = f"HTTP {self.http_status}"
        if self.error is None and not self.done:
            self.error = "stream ended before [DONE]"
        out = self.completion_tokens
        if out is None:
            out = len(self.chunks) if self.chunks else None
        return {
            "kind": "request", "v": RECORD_VERSION, "id": self.rid, "phase": self.phase,
            "start_unix": self._unix0 + (self.t_start - self._perf0),
            "sched_delay_s": self.t_start - self.sched,
            "ttft_s": self.chunks[0] if self.chunks else None,
            "e2e_s": self.t_end - self.t_start,
            "chunk_s": self.chunks, "chunk_tokens": self.tokens,
            "input_tokens": self.prompt_tokens, "output_tokens": out,
            "http_status": self.http_status, "error": self.error,
        }


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * q / 100
    lo = math.floor(k)
    return s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (k - lo)


async def _lag_monitor(samples: list[float], stop: asyncio.Event, interval: float = 0.005) -> None:
    """Measure how late the event loop wakes a sleeper: the client's own scheduling lag."""
    while not stop.is_set():
        t = time.perf_counter()
        await asyncio.sleep(interval)
        samples.append(time.perf_counter() - t - interval)


async def run_load(spec: LoadSpec, send: Send, on_record: Callable[[dict[str, Any]], None] | None = None,
                   client: str = "") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run ``spec.warmup`` warmup requests, then ``spec.num_requests`` measured ones.

    Returns (records, run): one record per request (warmups included, ``phase="warmup"``) and
    the run's self-check (CPU time, event-loop lag, measured window).
    """
    origin = (time.perf_counter(), time.time())
    records: list[dict[str, Any]] = []
    lag: list[float] = []
    stop = asyncio.Event()
    monitor = asyncio.ensure_future(_lag_monitor(lag, stop))

    async def one(rid: int, phase: str, sched: float) -> None:
        rec = Recorder(rid, phase, origin, sched)
        rec.begin()  # the transport calls begin() again right before connecting
        try:
            prompt, max_tokens = request_for(spec, rid)
            await asyncio.wait_for(send(build_body(spec, prompt, max_tokens), rec), spec.timeout_s)
        except TimeoutError:
            rec.fail(f"timed out after {spec.timeout_s} s")
        except Exception as exc:  # a transport bug must not kill the run: record it
            rec.fail(f"{type(exc).__name__}: {exc}")
        record = rec.finish()
        records.append(record)
        if on_record is not None:
            on_record(record)

    deadline = math.inf  # with duration_s: no measured request starts after it

    async def closed_loop(ids: range, phase: str, width: int) -> None:
        queue = iter(ids)

        async def worker() -> None:
            for rid in queue:
                if time.perf_counter() >= deadline:
                    return
                await one(rid, phase, time.perf_counter())

        await asyncio.gather(*(worker() for _ in range(max(1, min(width, len(ids))))))

    try:
        if spec.warmup:
            await closed_loop(range(spec.warmup), "warmup", spec.concurrency or 1)
        measured = range(spec.warmup, spec.warmup + spec.num_requests)
        lag.clear()  # the self-check covers the measured phase only
        cpu_measure0, perf_measure0 = time.process_time(), time.perf_counter()
        if spec.duration_s is not None:
            deadline = perf_measure0 + spec.duration_s
        if spec.rate is None:
            await closed_loop(measured, "measure", spec.concurrency or 1)
        else:
            rng = random.Random(spec.seed + 1)
            cap = asyncio.Semaphore(spec.concurrency) if spec.concurrency else None
            tasks, t = [], time.perf_counter()

            async def capped(rid: int, sched: float) -> None:
                if cap is None:
                    await one(rid, "measure", sched)
                    return
                async with cap:
                    await one(rid, "measure", sched)

            for rid in measured:
                if t >= deadline:
                    break
                delay = t - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.ensure_future(capped(rid, t)))
                t += arrival_gap(rng, spec.rate, spec.burstiness)
            await asyncio.gather(*tasks)
        wall = time.perf_counter() - perf_measure0
        cpu = time.process_time() - cpu_measure0
    finally:
        stop.set()
        await monitor
    lag_ms = [x * 1000 for x in lag]
    run = {
        "kind": "run", "v": RECORD_VERSION, "client": client, "spec": spec.public_dict(),
        "t0_unix": origin[1], "cpu_s": cpu, "wall_s": wall, "cpu_frac": cpu / wall if wall > 0 else None,
        "loop_lag_p50_ms": _pct(lag_ms, 50), "loop_lag_p99_ms": _pct(lag_ms, 99),
        "loop_lag_max_ms": max(lag_ms) if lag_ms else None, "loop_lag_samples": len(lag_ms),
    }
    records.sort(key=lambda r: r["id"])
    return records, run
