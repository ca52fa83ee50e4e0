"""Load generation, canonical metrics, sweeps and other tools' results.

- ``LoadSpec`` + ``run_local`` / ``run_async`` (httpx, from this machine) or ``run_on_host``
  (the standard-library host client, shipped over the Host seam) -> (records, run self-check);
- ``summarize`` / ``request_frame`` / ``SLO``: the canonical metrics (definitions in
  ``workbench.bench.metrics`` and docs/metrics.md);
- ``run_sweep`` / ``write_sweep`` / ``read_sweep``: concurrency sweeps with repeats and labels;
- ``load_results``: SGLang, vLLM, GuideLLM and AIPerf result files in the same table;
- ``load_workload``: ShareGPT / JSONL datasets as ``LoadSpec.dataset`` items;
- ``pareto_front``: the non-dominated (tok/s per user, tok/s per GPU) points; charts in ``workbench.bench.charts``.
"""

from workbench.bench.client import run_async, run_local
from workbench.bench.ingest import Ingested, load_results, recompute
from workbench.bench.loadcore import RECORD_KEYS, LoadSpec
from workbench.bench.metrics import SLO, client_check, request_frame, summarize
from workbench.bench.pareto import pareto_front
from workbench.bench.remote import run_on_host
from workbench.bench.sweep import (
    SweepResult,
    host_runner,
    local_runner,
    read_sweep,
    run_sweep,
    write_sweep,
)
from workbench.bench.workloads import load_workload

__all__ = [
    "RECORD_KEYS", "SLO", "Ingested", "LoadSpec", "SweepResult", "client_check", "host_runner", "load_results",
    "load_workload", "local_runner", "pareto_front", "read_sweep", "recompute", "request_frame", "run_async", "run_local", "run_on_host", "run_sweep",
    "summarize", "write_sweep",
]
