"""The load parameters the measuring runbooks (benchmark, ab, sweep) share, and what they become.

One model, :class:`LoadParams`, with the workloads of ``workbench bench`` (the same code:
:mod:`workbench.bench.options`): datasets, length ranges, shared prefixes, a concurrency
ladder *or* a request-rate ladder (Poisson/gamma arrivals), count- or duration-bounded points,
the API key and headers from the controller's environment, ``/flush_cache`` between points,
the percentiles, goodput SLOs. Everything is checked when the parameters are validated —
before a host is touched (``workbench run`` exits 2): the environment variables are set, the
dataset reads, the ladder is one of the two.

The ladder: ``request_rate`` given (non-empty) drives the points, one per rate; ``concurrency``
must then be left at its default (or ``[]``) and ``max_concurrency`` caps the requests in
flight — a changed ``concurrency`` beside a ``request_rate`` is refused, not silently ignored.

Secrets: ``api_key_env`` and ``headers`` hold variable *names*; the values are read at the
point of use and never stored. :meth:`workbench.redact.Redactor.for_params` learns the values
of the variables they name (:func:`workbench.bench.options.secret_envs`), so the result, the
tables, the notebook and the report are redacted even if a server echoes them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from workbench.bench.loadcore import LoadSpec
from workbench.bench.metrics import check_percentiles
from workbench.bench.options import Workload, dataset_items, goodput_slo, request_headers
from workbench.bench.workloads import FORMATS
from workbench.bottleneck import GPUS, KIMI_K26, ModelSpec
from workbench.runbooks.params import RunbookParams

MODEL_SPECS: dict[str, ModelSpec] = {"kimi-k2.6": KIMI_K26}
LOAD_FROM = ("host", "tunnel")
APIS = ("completions", "chat")
DEFAULT_CONCURRENCY = (1, 4, 16, 64)
ALWAYS_PERCENTILES = (50.0, 99.0)  # the result's points and the sweep's SLOs read p50 and p99


class LoadParams(RunbookParams):
    """The request shape and sweep of a measuring runbook."""

    concurrency: list[int] = Field(default_factory=lambda: list(DEFAULT_CONCURRENCY),
                                   description="requests in flight at each sweep point (the ladder unless "
                                               "request_rate is given)")
    request_rate: list[float] = Field(default_factory=list,
                                      description="requests/s at each sweep point (open loop): given, the rates "
                                                  "drive the sweep instead of concurrency")
    max_concurrency: int = Field(0, ge=0, description="with request_rate: cap on requests in flight (0: none)")
    burstiness: float = Field(1.0, gt=0, description="with request_rate: gamma shape of the arrival gaps "
                                                     "(1 Poisson, < 1 burstier)")
    repeats: int = Field(3, ge=1, description="runs of each point (intervals need at least 2)")
    input_len: int = Field(128, ge=1, description="prompt tokens per request (synthetic prompts)")
    output_len: int = Field(128, ge=1, description="output tokens per request (ignore_eos)")
    range_ratio: float = Field(0.0, ge=0, lt=1, description="synthetic lengths uniform in [L(1-r), L(1+r)]")
    prefix_len: int = Field(0, ge=0, description="shared-prefix tokens (with prefix_groups)")
    prefix_groups: int = Field(0, ge=0, description="number of distinct shared prefixes (0: none)")
    dataset: str = Field("", description="dataset file on this machine (ShareGPT JSON or JSONL: prompt/messages, "
                                         "output_len); shipped inside the load spec; empty: synthetic prompts")
    dataset_format: str = Field("auto", description="auto, sharegpt or jsonl")
    dataset_output_len: int = Field(0, ge=0, description="fixed output tokens for every dataset request (0: the "
                                                         "dataset's)")
    num_requests: int = Field(16, ge=1, description="measured requests per point, at least (not with duration_s)")
    requests_per_concurrency: int = Field(4, ge=0, description="measured requests per point: at least this x "
                                                               "concurrency (concurrency ladder, count-bounded)")
    duration_s: float = Field(0.0, ge=0, description="measure each point for this long (no request starts after "
                                                     "it) instead of a count; 0: count-bounded")
    warmup: int = Field(2, ge=0, description="warmup requests per point, not measured")
    api: str = Field("completions", description="completions or chat")
    ignore_eos: bool = Field(True, description="send ignore_eos (false for servers that reject it)")
    api_key_env: str = Field("", description="controller env var holding the API key (Bearer); empty: "
                                             "WORKBENCH_API_KEY or OPENAI_API_KEY if set; never the key itself")
    headers: list[str] = Field(default_factory=list, description="extra headers, each NAME and ENVVAR joined by an "
                                                                 "equals sign; the value is read from the controller's "
                                                                 "environment")
    flush_cache: bool = Field(False, description="POST the server's /flush_cache before each point (SGLang)")
    percentiles: list[float] = Field(default_factory=lambda: [50.0, 90.0, 95.0, 99.0],
                                     description="latency percentiles of every point (50 and 99 always)")
    goodput: dict[str, float] = Field(default_factory=dict, description='per-request SLOs for goodput (ms), e.g. '
                                                                        '{"ttft": 2000, "tpot": 50, "e2el": 30000}')
    load_from: str = Field("host", description="host: the client runs on the GPU host (TTFT without network); "
                                               "tunnel: from here through SSH")
    telemetry: bool = Field(True, description="sample the host's GPUs with nvidia-smi during the sweep")
    gpu_interval_ms: int = Field(200, ge=50, description="GPU sampling interval (ms); short windows need short intervals")
    server_metrics: bool = Field(True, description="poll the server's /metrics during the sweep (running/queued "
                                                   "requests, KV cache usage, tokens, spec accept length)")
    metrics_interval_ms: int = Field(500, ge=100, description="/metrics polling interval (ms)")
    model_spec: str = Field("auto", description="model for the roofline: auto (the served model's config.json on the "
                                                "host), kimi-k2.6, or empty (no roofline)")
    gpu: str = Field("", description="GPU for the roofline (H100 H200 B200 B300 'RTX PRO 6000'); empty: from nvidia-smi")

    @field_validator("concurrency")
    @classmethod
    def _concurrency(cls, v: list[int]) -> list[int]:
        if any(c < 1 for c in v):
            raise ValueError("each concurrency must be >= 1")
        return v

    @field_validator("request_rate")
    @classmethod
    def _rates(cls, v: list[float]) -> list[float]:
        if any(not r > 0 for r in v):
            raise ValueError("each request rate must be > 0 requests/s")
        return v

    @field_validator("api")
    @classmethod
    def _api(cls, v: str) -> str:
        if v not in APIS:
            raise ValueError(f"api must be one of {APIS}")
        return v

    @field_validator("load_from")
    @classmethod
    def _load_from(cls, v: str) -> str:
        if v not in LOAD_FROM:
            raise ValueError(f"load_from must be one of {LOAD_FROM}")
        return v

    @field_validator("model_spec")
    @classmethod
    def _model_spec(cls, v: str) -> str:
        if v and v != "auto" and v not in MODEL_SPECS:
            raise ValueError(f"model_spec must be empty, auto or one of {sorted(MODEL_SPECS)}")
        return v

    @field_validator("gpu")
    @classmethod
    def _gpu(cls, v: str) -> str:
        if v and v not in GPUS:
            raise ValueError(f"gpu must be empty or one of {sorted(GPUS)}")
        return v

    @field_validator("dataset_format")
    @classmethod
    def _format(cls, v: str) -> str:
        if v not in FORMATS:
            raise ValueError(f"dataset_format must be one of {FORMATS}")
        return v

    @field_validator("dataset")
    @classmethod
    def _dataset(cls, v: str) -> str:
        """An absolute path (the kernel may run elsewhere), of a file that exists."""
        if not v:
            return v
        path = Path(v).expanduser().resolve()
        if not path.is_file():
            raise ValueError(f"dataset {v}: no such file on this machine (the dataset is read here and shipped "
                             "with the load)")
        return str(path)

    @field_validator("percentiles")
    @classmethod
    def _percentiles(cls, v: list[float]) -> list[float]:
        return list(check_percentiles(v))

    @field_validator("goodput")
    @classmethod
    def _goodput(cls, v: dict[str, float]) -> dict[str, float]:
        goodput_slo(v, "goodput")  # a ConfigError (a ValueError) naming the bad bound
        return v

    @model_validator(mode="after")
    def _workload(self) -> LoadParams:
        if self.request_rate and self.concurrency and self.concurrency != list(DEFAULT_CONCURRENCY):
            raise ValueError(f"give concurrency or request_rate, not both: the sweep's points are one ladder "
                             f"(concurrency {self.concurrency}, request_rate {self.request_rate}); with a rate "
                             "ladder cap the requests in flight with max_concurrency")
        if not self.request_rate and not self.concurrency:
            raise ValueError("give at least one concurrency (or a request_rate ladder)")
        if (self.prefix_len > 0) != (self.prefix_groups > 0):
            raise ValueError("shared prefixes need both prefix_len >= 1 and prefix_groups >= 1 (or neither)")
        if self.max_concurrency and not self.request_rate:
            raise ValueError("max_concurrency caps a request_rate ladder; with a concurrency ladder leave it 0")
        self.request_headers()  # the variables are set (their values are not kept)
        if self.dataset:  # the file reads as a dataset for this api
            dataset_items(self.dataset, count=1, fmt=self.dataset_format, chat=self.api == "chat",
                          output_len=self.dataset_output_len or None)
        return self

    # -- what the parameters become ------------------------------------------------------------
    @property
    def ladder(self) -> str:
        """The results column that tells the sweep's points apart: ``rate`` or ``concurrency``."""
        return "rate" if self.request_rate else "concurrency"

    def points_words(self) -> str:
        """``c=[1, 4]`` or ``rate=[2.0, 4.0]/s`` for progress lines."""
        return f"rate={self.request_rate}/s" if self.request_rate else f"c={self.concurrency}"

    def workload(self) -> Workload:
        return Workload(api=self.api, input_len=self.input_len, output_len=self.output_len,
                        num_requests=None if self.duration_s else self.num_requests,
                        requests_per_concurrency=self.requests_per_concurrency, warmup=self.warmup,
                        ignore_eos=self.ignore_eos, max_concurrency=self.max_concurrency or None,
                        burstiness=self.burstiness, duration_s=self.duration_s or None, range_ratio=self.range_ratio,
                        prefix_len=self.prefix_len, prefix_groups=self.prefix_groups, dataset=self.dataset,
                        dataset_format=self.dataset_format, dataset_output_len=self.dataset_output_len or None,
                        flush_cache=self.flush_cache)

    def request_headers(self, environ: Any = None) -> dict[str, str]:
        """The headers (API key, ``headers``) with their values from the environment; never store them."""
        return request_headers(self.api_key_env or None, self.headers, os.environ if environ is None else environ,
                               what=("api_key_env", "headers"))

    def percentiles_measured(self) -> tuple[float, ...]:
        """The percentiles asked for, with p50 and p99 (the points and SLOs read them)."""
        return tuple(sorted({*self.percentiles, *ALWAYS_PERCENTILES}))

    def slo(self) -> Any:
        """The goodput SLO (:class:`workbench.bench.metrics.SLO`), or None."""
        return goodput_slo(self.goodput, "goodput")

    def spec(self, url: str) -> LoadSpec:
        """The base load spec against ``url`` (as the runner sees it), headers from the environment."""
        return self.workload().spec(url, rates=self.request_rate,
                                    concurrencies=[] if self.request_rate else self.concurrency,
                                    headers=self.request_headers())
