"""The server's own time series during a run, from its Prometheus ``/metrics``.

``MetricsSampler(url)`` polls ``/metrics`` in the background while a benchmark runs; ``.stop()``
returns one row per poll with the series people read a serving run by:

- ``running`` / ``queued`` — requests in the batch / waiting: SGLang ``sglang:num_running_reqs``,
  ``sglang:num_queue_reqs``; vLLM ``vllm:num_requests_running``, ``vllm:num_requests_waiting``
  (summed over DP ranks / engines);
- ``kv_cache_usage`` — the KV cache's used fraction (0-1): SGLang ``sglang:token_usage`` (used KV
  tokens / pool), vLLM ``vllm:kv_cache_usage_perc`` (older: ``vllm:gpu_cache_usage_perc``; a
  fraction despite its name); ``used_tokens`` — SGLang ``sglang:num_used_tokens`` (mean over ranks);
- ``spec_accept_length`` — SGLang's ``sglang:spec_accept_length`` gauge (the last batch only:
  its multiprocess mode is ``mostrecent``; 0 before any verify, read as no value); for vLLM the
  windowed ``1 + d(accepted tokens) / d(drafts)`` between two polls;
- ``generation_tok_s`` / ``prompt_tok_s`` — the token counters' rates between two polls
  (``*:generation_tokens_total``, ``*:prompt_tokens_total``).

``time_unix`` is this machine's clock at the poll's answer.  A poll that fails is counted in
``attrs["errors"]`` and skipped: a run never fails for its time series.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
import pandas as pd

from workbench.errors import ParseError
from workbench.telemetry import Samples, parse_metrics

# column -> (metric names, first present wins; how ranks combine)
GAUGES: dict[str, tuple[tuple[str, ...], str]] = {
    "running": (("sglang:num_running_reqs", "vllm:num_requests_running"), "sum"),
    "queued": (("sglang:num_queue_reqs", "vllm:num_requests_waiting"), "sum"),
    "kv_cache_usage": (("sglang:token_usage", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"), "mean"),
    "used_tokens": (("sglang:num_used_tokens",), "mean"),
    "spec_accept_length": (("sglang:spec_accept_length",), "mean"),
}
COUNTERS: dict[str, tuple[str, ...]] = {
    "generation_tokens": ("sglang:generation_tokens_total", "vllm:generation_tokens_total"),
    "prompt_tokens": ("sglang:prompt_tokens_total", "vllm:prompt_tokens_total"),
    "spec_drafts": ("vllm:spec_decode_num_drafts_total",),
    "spec_accepted": ("vllm:spec_decode_num_accepted_tokens_total",),
}
SERIES = ("running", "queued", "kv_cache_usage", "spec_accept_length", "generation_tok_s")


def _first(samples: Samples, names: Sequence[str]) -> list[float] | None:
    for name in names:
        if samples.get(name):
            return list(samples[name].values())
    return None


def sample_row(samples: Samples, t: float) -> dict[str, Any]:
    """One poll: the gauges, and the raw counters the rates are computed from."""
    row: dict[str, Any] = {"time_unix": t}
    for col, (names, how) in GAUGES.items():
        values = _first(samples, names)
        row[col] = None if values is None else float(np.sum(values) if how == "sum" else np.mean(values))
    if row["spec_accept_length"] is not None and row["spec_accept_length"] < 1.0:
        row["spec_accept_length"] = None  # no verify yet (a real acceptance length is >= 1)
    for col, names in COUNTERS.items():
        values = _first(samples, names)
        row[col] = None if values is None else float(np.sum(values))
    return row


def series_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The polls as a table, with the counters turned into rates between consecutive polls."""
    df = pd.DataFrame(list(rows))
    if df.empty:
        return df
    df = df.sort_values("time_unix", ignore_index=True)
    dt = df["time_unix"].diff()
    for col in ("generation_tokens", "prompt_tokens"):
        if col in df and df[col].notna().any():
            # a counter that went down is a restarted server: no rate for that interval
            d = df[col].astype(float).diff()
            df[f"{col.removesuffix('_tokens')}_tok_s"] = (d / dt).where(d >= 0)
    if "spec_drafts" in df and df["spec_drafts"].notna().any():
        drafts, accepted = df["spec_drafts"].astype(float).diff(), df["spec_accepted"].astype(float).diff()
        windowed = (1 + accepted / drafts).where(drafts > 0)
        df["spec_accept_length"] = df["spec_accept_length"].astype(float).fillna(windowed)
    return df


def summary(frame: pd.DataFrame) -> dict[str, Any]:
    """Peaks and means for result.json (None where the server does not export the series)."""
    def stat(col: str, how: str) -> float | None:
        if col not in frame or frame[col].isna().all():
            return None
        s = frame[col].astype(float)
        return round(float(s.max() if how == "max" else s.mean()), 4)

    return {"samples": len(frame), "errors": int(frame.attrs.get("errors", 0)),
            "peak_running": stat("running", "max"), "peak_queued": stat("queued", "max"),
            "peak_kv_cache_usage": stat("kv_cache_usage", "max"),
            "mean_spec_accept_length": stat("spec_accept_length", "mean"),
            "peak_generation_tok_s": stat("generation_tok_s", "max")}


class MetricsSampler:
    """Poll ``url/metrics`` every ``interval_s`` in a thread: ``with MetricsSampler(url) as m: ...; m.frame``."""

    def __init__(self, url: str, interval_s: float = 0.5, *, timeout: float = 5.0) -> None:
        if not interval_s > 0:
            raise ValueError("interval_s must be > 0")
        self.url = url.rstrip("/") + "/metrics"
        self.interval_s, self.timeout = interval_s, timeout
        self.rows: list[dict[str, Any]] = []
        self.errors = 0
        self.last_error = ""
        self.frame = pd.DataFrame()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _poll(self, client: httpx.Client) -> None:
        try:
            r = client.get(self.url)
            r.raise_for_status()
            self.rows.append(sample_row(parse_metrics(r.text), time.time()))
        except (httpx.HTTPError, ParseError) as exc:
            self.errors += 1
            self.last_error = f"{type(exc).__name__}: {exc}"

    def _run(self) -> None:
        with httpx.Client(timeout=self.timeout, trust_env=False) as client:
            while True:
                self._poll(client)
                if self._stop.wait(self.interval_s):
                    self._poll(client)  # one last poll: the series covers the end of the run
                    return

    def start(self) -> MetricsSampler:
        self._thread = threading.Thread(target=self._run, daemon=True, name="metrics-sampler")
        self._thread.start()
        return self

    def stop(self) -> pd.DataFrame:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout * 2 + self.interval_s)
        self.frame = series_frame(self.rows)
        self.frame.attrs.update(errors=self.errors, last_error=self.last_error, interval_s=self.interval_s)
        return self.frame

    def __enter__(self) -> MetricsSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
