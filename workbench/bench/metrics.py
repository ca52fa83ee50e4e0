"""Canonical benchmark metrics: one definition each, computed from per-request records.

A *record* (``loadcore.Recorder.finish``; both clients emit the same keys) holds, for one request:
``start_unix`` (wall clock at send), ``ttft_s``, ``e2e_s``, ``chunk_s`` (arrival of every
streamed chunk that carried output, seconds after send), ``chunk_tokens`` (tokens in each chunk,
from the server's cumulative ``usage`` when it reports it per chunk, else null),
``input_tokens``/``output_tokens`` (the server's ``usage``; without usage, output = chunks), ``error`` (null when it succeeded),
``http_status``, ``sched_delay_s`` (send time minus intended time) and ``phase``
(``warmup`` or ``measure``). Every aggregate below can be recomputed from them.

Definitions (only ``phase == "measure"`` records count; latencies over successful requests):

- **TTFT** = arrival of the first chunk with output - send time.
- **E2E** = end of the response - send time.
- **TPOT** = (E2E - TTFT) / (n - 1), n = output tokens (usage); undefined for n <= 1.
  This is what vLLM and SGLang call TPOT; GuideLLM and AIPerf call it ``inter_token_latency``.
- **ITL** = gap between consecutive output chunks, pooled over all requests. Under speculative
  decoding a chunk carries several tokens, so ITL ~ TPOT x tokens per chunk.
- **tokens per chunk** = sum of output tokens / sum of output chunks: tracks the speculative
  acceptance length as the client sees it (1.0 without speculation).
- **duration** = last end - first send, over measured requests (warmup excluded).
- **output tok/s** (``output_throughput``) = sum of output tokens of successful requests / duration;
  **input tok/s** (``input_throughput``) = their prompt tokens (server ``usage``) / duration;
  **total tok/s** (``total_token_throughput``) = input + output; **request/s** = successful requests / duration.
- **concurrency achieved** = sum of E2E / duration (requests in flight on average).
- **percentiles**: linear interpolation (numpy's default), named ``{metric}_p{q}_ms`` (``q`` as
  given: ``p95``, ``p99.9``); the defaults are ``PERCENTILES`` (50, 90, 95, 99), any list may be asked for.
- **burst fraction** = share of successful requests with 4+ output chunks whose chunks all arrived
  within ``BURST_SPAN_S`` (1 ms) of each other: the server generated them over time but delivered
  them at once (an output process starved of CPU, a proxy buffering the stream). TTFT and ITL of
  such requests measure delivery, not generation; ``delivery_note`` says so when it is >= 10%.
- **goodput** (under an ``SLO``) = successful requests meeting every set bound / duration (an
  undefined TPOT, n = 1, violates no TPOT bound, as in vLLM); ``goodput_output_throughput`` = their
  output tokens / duration; ``good_fraction`` = their share of measured requests.

Client self-check (from the run record): ``cpu_frac`` = client CPU seconds / wall seconds of the
measured phase (the event loop is one thread, so ~1.0 means saturated); ``loop_lag_*_ms`` = how
late the event loop wakes a 5 ms sleeper. A run is **client-bound** when cpu_frac >=
``CPU_LIMIT`` or the median loop lag >= ``LAG_LIMIT_MS`` (its timestamps are then late by about
that much), or, for uncapped Poisson runs, when the median send delay >= ``SEND_DELAY_LIMIT_MS``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

PERCENTILES: tuple[float, ...] = (50, 90, 95, 99)
CPU_LIMIT = 0.85
LAG_LIMIT_MS = 1.0
SEND_DELAY_LIMIT_MS = 10.0
BURST_SPAN_S = 0.001
BURST_NOTE_FRACTION = 0.10
LATENCIES = ("ttft", "tpot", "itl", "e2e")


@dataclass(frozen=True)
class SLO:
    """Service-level bounds for goodput; ``None`` leaves a bound out."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None


def request_frame(records: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """One row per request with the derived per-request metrics (seconds)."""
    rows = []
    for r in records:
        if r.get("kind", "request") != "request":
            continue
        chunks = r.get("chunk_s") or []
        n = r.get("output_tokens")
        ttft, e2e = r.get("ttft_s"), r.get("e2e_s")
        gaps = np.diff(chunks) if len(chunks) > 1 else np.array([])
        row = {k: v for k, v in r.items() if k not in ("chunk_s", "chunk_tokens", "kind", "v")}
        row.update(
            ok=r.get("error") is None,
            end_unix=r["start_unix"] + e2e if e2e is not None else np.nan,
            tpot_s=(e2e - ttft) / (n - 1) if n and n > 1 and ttft is not None and e2e is not None else np.nan,
            n_chunks=len(chunks),
            itl_mean_s=float(gaps.mean()) if gaps.size else np.nan,
            tokens_per_chunk=n / len(chunks) if n and chunks else np.nan,
        )
        rows.append(row)
    return pd.DataFrame(rows)


def itl_values(records: Iterable[dict[str, Any]]) -> np.ndarray:
    """All chunk gaps (seconds) of successful measured requests, pooled."""
    gaps = [np.diff(r["chunk_s"]) for r in records
            if r.get("phase") == "measure" and r.get("error") is None and len(r.get("chunk_s") or []) > 1]
    return np.concatenate(gaps) if gaps else np.array([])


def percentile_key(name: str, q: float) -> str:
    """The column of percentile ``q`` of ``name``: ``ttft_p95_ms``, ``itl_p99.9_ms``."""
    return f"{name}_p{float(q):g}_ms"


def check_percentiles(percentiles: Sequence[float]) -> tuple[float, ...]:
    """The percentiles as a tuple, or ``ValueError`` if one is outside [0, 100]."""
    qs = tuple(float(q) for q in percentiles)
    if not qs or any(not 0 <= q <= 100 for q in qs):
        raise ValueError(f"percentiles must be numbers in [0, 100], not {list(percentiles)}")
    return qs


def _stats(name: str, values_s: Any, percentiles: Sequence[float]) -> dict[str, float]:
    v = np.asarray(values_s, dtype=float) * 1000
    v = v[~np.isnan(v)]
    out = {f"{name}_mean_ms": float(v.mean()) if v.size else np.nan}
    for q in percentiles:
        out[percentile_key(name, q)] = float(np.percentile(v, q)) if v.size else np.nan
    return out


def summarize(records: Sequence[dict[str, Any]], run: dict[str, Any] | None = None, *,
              slo: SLO | None = None, percentiles: Sequence[float] = PERCENTILES) -> dict[str, Any]:
    """The canonical aggregate of one run (measured requests only), plus the client self-check."""
    percentiles = check_percentiles(percentiles)
    measured = [r for r in records if r.get("kind", "request") == "request" and r.get("phase") == "measure"]
    df = request_frame(measured)
    out: dict[str, Any] = {"requests": len(df)}
    if df.empty:
        return out | client_check(run, df)
    ok = df[df["ok"]]
    duration = float(df["end_unix"].max() - df["start_unix"].min())
    tokens = float(ok["output_tokens"].fillna(0).sum())
    prompt_tokens = float(ok["input_tokens"].fillna(0).sum())
    chunks = float(ok["n_chunks"].sum())

    def rate(x: float) -> float:
        return x / duration if duration > 0 else np.nan

    out.update(
        completed=len(ok), failed=int((~df["ok"]).sum()), duration_s=duration,
        total_input_tokens=prompt_tokens, total_output_tokens=tokens,
        request_throughput=rate(len(ok)), output_throughput=rate(tokens), input_throughput=rate(prompt_tokens),
        total_token_throughput=rate(prompt_tokens + tokens),
        concurrency_achieved=float(df["e2e_s"].sum()) / duration if duration > 0 else np.nan,
        tokens_per_chunk=tokens / chunks if chunks else np.nan,
    )
    out |= burst_check(measured)
    out |= _stats("ttft", ok["ttft_s"], percentiles)
    out |= _stats("tpot", ok["tpot_s"], percentiles)
    out |= _stats("itl", itl_values(measured), percentiles)
    out |= _stats("e2e", ok["e2e_s"], percentiles)
    if slo is not None:
        good = ok
        for col, bound in (("ttft_s", slo.ttft_ms), ("tpot_s", slo.tpot_ms), ("e2e_s", slo.e2e_ms)):
            if bound is not None:
                # an undefined TPOT (one output token) has nothing to violate, as in vLLM's goodput
                good = good[good[col].fillna(0.0 if col == "tpot_s" else np.inf) * 1000 <= bound]
        out["goodput_rps"] = rate(len(good))
        out["goodput_output_throughput"] = rate(float(good["output_tokens"].fillna(0).sum()))
        out["good_fraction"] = len(good) / len(df)
    return out | client_check(run, df)


def burst_check(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``burst_fraction`` (see the module's definitions) and a ``delivery_note`` when it is high."""
    spans = [r["chunk_s"][-1] - r["chunk_s"][0] for r in records
             if not r.get("error") and len(r.get("chunk_s") or ()) >= 4]
    if not spans:
        return {"burst_fraction": np.nan, "delivery_note": ""}
    frac = sum(1 for s in spans if s <= BURST_SPAN_S) / len(spans)
    note = ""
    if frac >= BURST_NOTE_FRACTION:
        note = (f"{frac:.0%} of responses arrived in one burst: their TTFT and ITL measure the server's "
                "delivery, not generation (is its HTTP/output process short of CPU?)")
    return {"burst_fraction": frac, "delivery_note": note}


def client_check(run: dict[str, Any] | None, df: pd.DataFrame | None = None) -> dict[str, Any]:
    """The client's self-check columns and the client-bound verdict with its reason."""
    run = run or {}
    delay = float(df["sched_delay_s"].median() * 1000) if df is not None and not df.empty else np.nan
    out = {
        "client": run.get("client"), "client_cpu_frac": run.get("cpu_frac"),
        "loop_lag_p50_ms": run.get("loop_lag_p50_ms"), "loop_lag_p99_ms": run.get("loop_lag_p99_ms"),
        "send_delay_p50_ms": delay,
    }
    reasons = []
    if (run.get("cpu_frac") or 0) >= CPU_LIMIT:
        reasons.append(f"client CPU {run['cpu_frac']:.0%} of one core >= {CPU_LIMIT:.0%}")
    if (run.get("loop_lag_p50_ms") or 0) >= LAG_LIMIT_MS:
        reasons.append(f"median event-loop lag {run['loop_lag_p50_ms']:.2f} ms >= {LAG_LIMIT_MS} ms")
    spec = run.get("spec") or {}
    if spec.get("rate") and not spec.get("concurrency") and delay >= SEND_DELAY_LIMIT_MS:
        reasons.append(f"median send delay {delay:.1f} ms >= {SEND_DELAY_LIMIT_MS} ms behind the Poisson schedule")
    out["client_bound"] = bool(reasons)
    out["client_bound_reason"] = "; ".join(reasons)
    return out
