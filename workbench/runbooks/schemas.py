"""Typed models of every runbook's ``result.json`` and of the traceback JSON, and their JSON Schemas.

The runbooks write plain dicts (their docstrings describe them); these pydantic models say the
same in types, so a consumer can validate a result or generate code from
``docs/schemas/*.schema.json``.  ``python -m workbench.runbooks.schemas`` writes the schemas;
a test checks they are up to date and that real results validate.  Every model allows extra
keys: a runbook may add a field before its schema does (consumers must ignore unknown keys),
and the keys a run that failed early never wrote are optional.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "docs" / "schemas"
Edit = list[Any]  # [flag, value]: value a string, true (a switch), a list of strings, or null (removed)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class FrameRef(_Open):
    file: str
    line: int | None = None
    function: str


class Failure(_Open):
    kind: str = Field(description="cell_error, kernel_died, ssh_lost, host_locked, timeout, interrupted, ...")
    message: str


class RunResult(_Open):
    """The keys every runbook's result.json has (written by the runbook or completed by `workbench run`)."""

    run_id: str
    runbook: str
    preset: str | None = Field(None, description="the preset the parameters started from (presets/RUNBOOK.toml)")
    status: Literal["ok", "failed"]
    conclusion: str = ""
    failure: Failure | None = None
    host_restored: bool | None = None
    restore_notes: list[str] | None = None
    server_starts: int | None = None
    wall_seconds: float | None = None
    started: float | None = Field(None, description="epoch seconds")
    finished: float | None = Field(None, description="epoch seconds")
    params: dict[str, Any] = Field(default_factory=dict, description="the validated parameters, redacted")
    provenance: dict[str, Any] = Field(default_factory=dict)


class TrialSummary(_Open):
    edits: list[Edit]
    outcome: str = Field(description="ready | failed | timeout")
    phase: str | None = None
    exception_type: str | None = None
    signature: str | None = None
    signature_id: str | None = None
    seconds: float | None = None
    reused: bool = False
    host: str | None = Field(None, description="the host it ran on (or, reused, was recorded on)")


class Culprit(_Open):
    edits: list[Edit]
    signature: str = Field(description="readable (with signature_id) or, in older results, the hash id")
    signature_id: str | None = Field(None, description="the hash id, e.g. RuntimeError@bf5b7c54f7")
    exception_type: str | None = None
    phase: str | None = None
    message: str | None = None
    innermost_frame: FrameRef | None = None
    ranks: list[str] | None = None
    traceback: str | None = None
    blockers: list[Edit] | None = Field(None, description="edits among the edits seen to stop this failure")
    related: list[str] | None = Field(None, description="signature ids of the same exception in other phases")


class Guarantee(_Open):
    complete: bool = Field(description="no fault of the documented shape could hide in the sets not started")
    statement: str = Field(description="what was proven, in words")
    sets_tested: int
    sets_total: int = Field(description="2^n - 1: what the full factorial starts")
    untested: list[list[Edit]] = Field(default_factory=list, description="sets that could still show a culprit")
    unexplained: list[list[Edit]] = Field(default_factory=list,
                                          description="trials no fault of the documented shape explains")


class BisectResult(RunResult):
    runbook: Literal["bisect"]
    host: str | None = None
    hosts: list[str] | None = None
    base_unit: str | None = None
    edits: list[Edit] = Field(default_factory=list)
    culprits: list[Culprit] = Field(default_factory=list)
    guarantee: Guarantee | None = Field(None, description="absent in results older than the fault-model search")
    trials: list[TrialSummary] = Field(default_factory=list)


class MatrixRow(_Open):
    factors: dict[str, bool]
    outcome: str
    phase: str | None = None
    exception_type: str | None = None
    signature: str | None = None
    seconds: float | None = None
    reused: bool | None = None
    host: str | None = None


class FactorialResult(RunResult):
    runbook: Literal["factorial", "isolate_ep_vs_nvls"] = Field(description="isolate_ep_vs_nvls: results of "
                                                                "before it became a preset")
    hosts: list[str] = Field(default_factory=list)
    base_unit: str | None = None
    factors: list[Edit] = Field(default_factory=list)
    matrix: list[MatrixRow] = Field(default_factory=list)
    causes: list[dict[str, Any]] = Field(default_factory=list)
    no_effect: list[str] = Field(default_factory=list)
    hosts_report: list[dict[str, Any]] | None = None


class BenchPoint(_Open):
    concurrency: int | None = Field(None, description="requests in flight; a rate point: its cap (null: none)")
    rate: float | None = Field(None, description="requests/s offered, when a request-rate ladder drove the sweep")
    repeats: int | None = None
    output_throughput: float | None = Field(None, description="mean tok/s over repeats")
    request_throughput: float | None = None
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    itl_p50_ms: float | None = None
    input_throughput: float | None = Field(None, description="prompt tok/s (the server's usage)")
    total_token_throughput: float | None = Field(None, description="input + output tok/s")
    goodput_rps: float | None = Field(None, description="requests/s meeting every goodput SLO (goodput given)")
    failed: int | None = None


class Bottleneck(_Open):
    gpu: str | None = None
    n_gpus: int | None = None
    model: str | None = None
    note: str | None = None
    points: list[dict[str, Any]] = Field(default_factory=list)
    verdict: str | None = None


class ServerSeries(_Open):
    """The server's /metrics over the run (workbench.servermetrics.summary); null where not exported."""

    samples: int
    errors: int = 0
    peak_running: float | None = None
    peak_queued: float | None = None
    peak_kv_cache_usage: float | None = Field(None, description="fraction of the KV cache in use, 0-1")
    mean_spec_accept_length: float | None = None
    peak_generation_tok_s: float | None = None


class BenchmarkResult(RunResult):
    runbook: Literal["benchmark"]
    host: str | None = None
    unit: str | None = None
    port: int | None = None
    load_from: str | None = Field(None, description="host | tunnel")
    concurrency: list[int] = Field(default_factory=list, description="the concurrency ladder ([] with request_rate)")
    request_rate: list[float] = Field(default_factory=list, description="the request-rate ladder (req/s), if any")
    repeats: int | None = None
    points: list[BenchPoint] = Field(default_factory=list)
    bottleneck: Bottleneck | None = None
    server_series: ServerSeries | None = None


class Arm(_Open):
    unit: str | None = None
    started: bool | None = None
    start: dict[str, Any] | None = None
    points: list[BenchPoint] = Field(default_factory=list)
    failure: dict[str, Any] | None = None


class Speedup(_Open):
    concurrency: int | None = None
    rate: float | None = Field(None, description="requests/s, when a request-rate ladder drove the sweep")
    speedup: float | None = None
    lo: float | None = None
    hi: float | None = None
    repeats: int | None = None
    verdict: str | None = None


class ABResult(RunResult):
    runbook: Literal["ab", "test_nvls_on_tp8"] = Field(description="test_nvls_on_tp8: results of before it became a "
                                                       "preset")
    hosts: list[str] = Field(default_factory=list)
    base_unit: str | None = None
    edits: list[Edit] = Field(default_factory=list)
    a_edits: list[Edit] = Field(default_factory=list, description="arm A's edits of the base; empty: the base")
    variant_unit: str | None = None
    metric: str | None = None
    confidence: float | None = None
    arms: dict[str, Arm] = Field(default_factory=dict)
    speedup: list[Speedup] = Field(default_factory=list)
    verdict: str | None = None
    bottleneck: dict[str, Bottleneck] | None = None
    hosts_report: list[dict[str, Any]] | None = None


class RootCauseJSON(_Open):
    kind: Literal["exception", "log_line"]
    exception_type: str | None = None
    message: str
    line: int
    innermost_frame: FrameRef | None = None
    phase: str
    ranks: list[str]


class FailureJSON(_Open):
    signature: str
    exception_type: str | None = None
    message: str | None = None
    innermost_frame: FrameRef | None = None
    phase: str
    ranks: list[str]
    occurrences: int
    tracebacks: list[int]


class TriageResult(RunResult):
    runbook: Literal["triage"]
    host: str | None = None
    unit: str | None = None
    invocation: dict[str, Any] | None = None
    source: str | None = None
    journal_lines: int | None = None
    journal_lost: str | None = None
    variant_of: str | None = None
    flag_diff: list[Edit] | None = None
    flags_source: str | None = None
    root_cause: RootCauseJSON | None = None
    final: dict[str, Any] | None = None
    failures: list[FailureJSON] = Field(default_factory=list)
    phases: list[dict[str, Any]] = Field(default_factory=list)
    failed_in: str | None = None
    likely_cause: str | None = None


class SweepPoint(_Open):
    concurrency: int | None = Field(description="requests in flight; a rate point: its cap (null: none)")
    rate: float | None = Field(None, description="requests/s offered, when a request-rate ladder drove the sweep")
    repeats: int
    output_tok_s: float
    output_tok_s_lo: float | None = None
    output_tok_s_hi: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None
    tok_s_per_user: float | None = None
    tok_s_per_gpu: float | None = None
    gpus: int
    slo_met: bool
    search: bool = Field(False, description="measured by the SLO search (slo_search), not on the ladder")


class SloLimit(_Open):
    """Where a configuration stops meeting the SLOs (slo_search; workbench.slosearch)."""

    variable: Literal["concurrency", "rate"]
    value: int | float | None = Field(description="the highest concurrency (or req/s) measured that met the SLOs, "
                                                  "below the lowest that missed; null: none met them")
    failing: int | float | None = Field(description="the lowest value measured that missed them; null: every "
                                                    "point met them")
    bound: Literal["exact", "within", "at_least", "none"] = Field(
        description="exact: no value between was left to try (rate: within the tolerance); within: the search "
                    "points ran out first; at_least: the ladder's top met the SLOs (the limit is higher); none: "
                    "no value measured met them")
    probes: list[int | float] = Field(default_factory=list, description="the values the search measured, in order")
    output_tok_s: float | None = Field(None, description="mean output tok/s at the limit")
    words: str = Field(description="the limit in a sentence")


class SweepConfig(_Open):
    edits: list[Edit]
    outcome: Literal["ready", "failed", "timeout", "skipped", ""]
    signature: str | None = Field(None, description="readable: type, normalised message, phase")
    signature_id: str | None = Field(None, description="the hash id, e.g. AttributeError@b18d5cd60d")
    exception_type: str | None = None
    phase: str | None = None
    reason: str | None = None
    points: list[SweepPoint] = Field(default_factory=list)
    slo_limit: SloLimit | None = Field(None, description="with slo_search, a configuration that served")


class SweepResult(RunResult):
    runbook: Literal["sweep"]
    host: str | None = None
    base_unit: str | None = None
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    slo: dict[str, float | None] = Field(default_factory=dict)
    concurrency: list[int] = Field(default_factory=list, description="the concurrency ladder ([] with request_rate)")
    request_rate: list[float] = Field(default_factory=list, description="the request-rate ladder (req/s), if any")
    configs: list[SweepConfig] = Field(default_factory=list)
    pareto: list[dict[str, Any]] = Field(default_factory=list)
    best: dict[str, Any] | None = Field(None, description="the best point under the SLOs and its edits; with "
                                                          "slo_search, picked among the configurations' SLO limits "
                                                          "(then it carries its slo_limit)")


class TracebackBlock(_Open):
    rank: str | None = None
    start_line: int
    end_line: int
    frames: list[dict[str, Any]]
    exception_type: str | None = None
    message: str | None = None
    truncated: bool
    chained_from: int | None = None
    chain: Literal["cause", "context"] | None = None


class TracebacksJSON(_Open):
    """``workbench tracebacks --json`` (docs/tracebacks.md)."""

    tracebacks: list[TracebackBlock]
    failures: list[FailureJSON]
    final: dict[str, Any] | None = None
    root_cause: RootCauseJSON | None = None


IsolateResult = FactorialResult  # the old name
RESULT_MODELS: dict[str, type[RunResult]] = {
    "bisect": BisectResult, "factorial": FactorialResult, "benchmark": BenchmarkResult,
    "ab": ABResult, "triage": TriageResult, "sweep": SweepResult,
}
# Results written under a runbook's old name (now a preset) validate against the runbook's model.
OLD_NAMES = {"isolate_ep_vs_nvls": "factorial", "test_nvls_on_tp8": "ab"}


def schemas() -> dict[str, dict[str, Any]]:
    """File name -> JSON Schema, for every runbook's result.json and the traceback JSON."""
    out = {f"{name}.result.schema.json": model.model_json_schema() for name, model in RESULT_MODELS.items()}
    out["tracebacks.schema.json"] = TracebacksJSON.model_json_schema()
    for name, schema in out.items():
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["$id"] = f"docs/schemas/{name}"
    return out


def validate_result(result: dict[str, Any]) -> RunResult:
    """A result.json checked against its runbook's model (pydantic's ValidationError if it does not fit)."""
    name = str(result.get("runbook"))
    return RESULT_MODELS[OLD_NAMES.get(name, name)].model_validate(result)


def main() -> int:
    SCHEMA_DIR.mkdir(parents=True, exist_ok=True)
    for name, schema in schemas().items():
        (SCHEMA_DIR / name).write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote docs/schemas/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
