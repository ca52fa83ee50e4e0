"""Prometheus text exposition of SGLang's metric families (what /metrics returns)."""

from __future__ import annotations

import threading
from typing import Any

TTFT_BUCKETS = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400]
ITL_BUCKETS = [
    0.002,
    0.004,
    0.006,
    0.008,
    0.010,
    0.015,
    0.020,
    0.025,
    0.030,
    0.035,
    0.040,
    0.060,
    0.080,
    0.100,
    0.200,
    0.400,
    0.600,
    0.800,
    1.000,
    2.000,
    4.000,
    6.000,
    8.000,
]
E2E_BUCKETS = [
    0.1,
    0.2,
    0.4,
    0.6,
    0.8,
    1,
    2,
    4,
    6,
    8,
    10,
    20,
    40,
    60,
    80,
    100,
    200,
    400,
    600,
    1200,
    1800,
    2400,
]


def _num(v: float) -> str:
    if v == float("inf"):
        return "+Inf"
    return repr(float(v))


def _labels(labels: dict[str, str]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return "{" + inner + "}"


class Histogram:
    def __init__(self, name: str, doc: str, buckets: list[float]) -> None:
        self.name, self.doc, self.buckets = name, doc, buckets
        self.counts = [0] * (len(buckets) + 1)
        self.sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float, count: int = 1) -> None:
        with self._lock:
            for i, b in enumerate(self.buckets):
                if value <= b:
                    self.counts[i] += count
                    break
            else:
                self.counts[-1] += count
            self.sum += value * count

    def render(self, labels: dict[str, str]) -> list[str]:
        out = [f"# HELP {self.name} {self.doc}", f"# TYPE {self.name} histogram"]
        acc = 0
        for b, c in zip([*self.buckets, float("inf")], self.counts, strict=True):
            acc += c
            out.append(f"{self.name}_bucket{_labels({**labels, 'le': _num(b)})} {_num(acc)}")
        out.append(f"{self.name}_count{_labels(labels)} {_num(acc)}")
        out.append(f"{self.name}_sum{_labels(labels)} {_num(self.sum)}")
        return out


class TokenizerMetricsCollector:
    """Counters and histograms the tokenizer manager updates as requests finish.

    ``sglang:spec_verify_calls_total`` (speculative servers only) sums every finished
    request's verify calls, counted with ``sglang:generation_tokens_total`` when the
    request finishes, so the ratio of their deltas over a window is SGLang's own
    accept length (completion tokens / verify calls) for the requests of that window.
    """

    def __init__(self, model_name: str, *, speculative: bool = False) -> None:
        self.labels = {"model_name": model_name}
        self.speculative = speculative
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self.spec_verify_calls_total = 0
        self.num_requests_total = 0
        self.num_aborted_requests_total = 0
        self.ttft = Histogram(
            "sglang:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            TTFT_BUCKETS,
        )
        self.itl = Histogram(
            "sglang:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            ITL_BUCKETS,
        )
        self.e2e = Histogram(
            "sglang:e2e_request_latency_seconds",
            "Histogram of End-to-end request latency in seconds",
            E2E_BUCKETS,
        )

    def render(self) -> list[str]:
        out = []
        for name, doc, value in (
            (
                "sglang:prompt_tokens_total",
                "Number of prefill tokens processed.",
                self.prompt_tokens_total,
            ),
            (
                "sglang:generation_tokens_total",
                "Number of generation tokens processed.",
                self.generation_tokens_total,
            ),
            ("sglang:cached_tokens_total", "Number of cached prompt tokens.", 0),
            ("sglang:num_requests_total", "Number of requests processed.", self.num_requests_total),
            (
                "sglang:num_aborted_requests_total",
                "Number of requests aborted.",
                self.num_aborted_requests_total,
            ),
        ):
            out += [
                f"# HELP {name} {doc}",
                f"# TYPE {name} counter",
                f"{name}{_labels(self.labels)} {_num(value)}",
            ]
        if self.speculative:
            name = "sglang:spec_verify_calls_total"
            out += [
                f"# HELP {name} Number of speculative verify calls of finished requests.",
                f"# TYPE {name} counter",
                f"{name}{_labels(self.labels)} {_num(self.spec_verify_calls_total)}",
            ]
        for h in (self.ttft, self.itl, self.e2e):
            out += h.render(self.labels)
        return out


SCHEDULER_GAUGES = [
    ("sglang:num_running_reqs", "The number of running requests.", "num_running_reqs"),
    ("sglang:num_used_tokens", "The number of used tokens.", "num_used_tokens"),
    ("sglang:token_usage", "The token usage.", "token_usage"),
    ("sglang:gen_throughput", "The generation throughput (token/s).", "gen_throughput"),
    ("sglang:num_queue_reqs", "The number of requests in the waiting queue.", "num_queue_reqs"),
    ("sglang:num_grammar_queue_reqs", "The number of requests in the grammar waiting queue.", None),
    ("sglang:cache_hit_rate", "The prefix cache hit rate.", None),
    (
        "sglang:max_total_num_tokens",
        "Maximum total number of tokens in the KV cache pool.",
        "max_total_num_tokens",
    ),
    (
        "sglang:spec_accept_length",
        "The average acceptance length of speculative decoding.",
        "spec_accept_length",
    ),
    ("sglang:num_retracted_reqs", "The number of retracted requests.", None),
]


def render_scheduler_gauges(
    stats: list[dict[str, Any]], model_name: str, tp_size: int
) -> list[str]:
    out = []
    for name, doc, key in SCHEDULER_GAUGES:
        out += [f"# HELP {name} {doc}", f"# TYPE {name} gauge"]
        for dp, st in enumerate(stats):
            labels = {
                "engine_type": "unified",
                "model_name": model_name,
                "pp_rank": "0",
                "tp_rank": "0",
            }
            if len(stats) > 1:
                labels["dp_rank"] = str(dp)
            value = st.get(key) if key else 0.0
            out.append(f"{name}{_labels(labels)} {_num(value or 0.0)}")
    return out
