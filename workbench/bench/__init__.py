"""Load generation, canonical metrics, sweeps and other tools' results.

- ``LoadSpec`` + ``run_local`` / ``run_async`` (httpx, from this machine) or ``run_on_host``
  (the standard-library host client, shipped over the Host seam) -> (records, run self-check);
- ``summarize`` / ``request_frame`` / ``SLO``: the canonical metrics (definitions in
  ``workbench.bench.metrics`` and docs/metrics.md);
- ``run_sweep`` / ``write_sweep`` / ``read_sweep``: concurrency sweeps with repeats and labels;
- ``load_results``: SGLang, vLLM, GuideLLM and AIPerf result files in the same table.
"""

from workbench.bench.client import run_async, run_local
from workbench.bench.ingest import Ingested, load_results, recompute
from workbench.bench.loadcore import RECORD_KEYS, LoadSpec
from workbench.bench.metrics import SLO, client_check, request_frame, summarize
from workbench.bench.remote import run_on_host
from workbench.bench.sweep import (
    SweepResult,
    host_runner,
    local_runner,
    read_sweep,
    run_sweep,
    write_sweep,
)

__all__ = [
    "RECORD_KEYS", "SLO", "Ingested", "LoadSpec", "SweepResult", "client_check", "host_runner", "load_results",
    "local_runner", "read_sweep", "recompute", "request_frame", "run_async", "run_local", "run_on_host", "run_sweep",
    "summarize", "write_sweep",
]
