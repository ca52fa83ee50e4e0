"""Read other load tools' result files into the canonical table of ``workbench.bench.metrics``.

``load_results(path)`` detects and reads:

- SGLang ``bench_serving`` / ``benchmark.serving`` JSONL (one run per line; ``total_input_tokens``
  or ``total_input`` key names; per-request arrays flat or under ``"details"``);
- vLLM ``bench serve`` JSON (``--save-result``; ``--append-result`` files hold one object per line);
- GuideLLM report JSON (``benchmarks[]``);
- AIPerf exports: the artifact directory, ``profile_export_aiperf.json`` or ``profile_export.jsonl``.

Each run becomes one row with the canonical column names (``ttft_p50_ms``, ``tpot_mean_ms``, ...);
what a file does not have stays NaN and is listed in ``Ingested.missing``. Naming traps are
resolved here: GuideLLM's and AIPerf's ``inter_token_latency`` is our TPOT, AIPerf's
``inter_chunk_latency`` is our ITL, GuideLLM's ``time_per_output_token_ms`` (which includes the
TTFT) is not used. The raw bytes are kept in ``Ingested.raw``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench.bench.metrics import summarize
from workbench.errors import ParseError

STATS = ("mean", "p50", "p90", "p99")
CANONICAL: tuple[str, ...] = (
    "concurrency", "request_rate", "completed", "failed", "duration_s", "total_input_tokens",
    "total_output_tokens", "request_throughput", "output_throughput", "concurrency_achieved",
    "tokens_per_chunk", *(f"{m}_{s}_ms" for m in ("ttft", "tpot", "itl", "e2e") for s in STATS),
    "goodput_rps", "spec_accept_length",
)


@dataclass
class Ingested:
    """One result file in canonical form; ``missing`` lists canonical columns it lacks."""

    format: str
    path: Path
    raw: bytes
    table: pd.DataFrame
    requests: pd.DataFrame | None = None
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """Store the canonical table (Parquet), the per-request rows, and the raw file as it was."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"table": out / f"{self.path.stem}.canonical.parquet", "raw": out / self.path.name}
        self.table.to_parquet(paths["table"], index=False)
        paths["raw"].write_bytes(self.raw)
        if self.requests is not None:
            paths["requests"] = out / f"{self.path.stem}.requests.parquet"
            self.requests.to_parquet(paths["requests"], index=False)
        return paths

    def describe(self) -> str:
        lacks = ", ".join(self.missing) if self.missing else "nothing"
        return f"{self.path.name}: {self.format}, {len(self.table)} run(s); lacks {lacks}"


def _num(x: Any) -> float:
    if x is None or x == "":
        return np.nan
    if isinstance(x, str):
        return math.inf if x.lower() in ("inf", "infinity") else float(x)
    return float(x)


def _json_lines(text: str, source: str) -> list[dict[str, Any]]:
    """Whole-file JSON, else one JSON object per non-empty line."""
    try:
        obj = json.loads(text)
        return obj if isinstance(obj, list) else [obj]
    except ValueError:
        pass
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as exc:
                raise ParseError(f"{source}: line {no} is not JSON: {exc}", source=source, line=no) from exc
    return out


# -- SGLang and vLLM: flat dicts with {mean,median,p*}_{metric}_ms ------------------------------

_FLAT = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e_latency": "e2e", "e2el": "e2e"}


def _flat_stats(d: dict[str, Any]) -> dict[str, float]:
    row: dict[str, float] = {}
    for key, value in d.items():
        m = re.fullmatch(r"(mean|median|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2e_latency|e2el)_ms", key)
        if m and value is not None:
            stat = "p50" if m.group(1) == "median" else m.group(1)
            row[f"{_FLAT[m.group(2)]}_{stat}_ms"] = _num(value)
    return row


def _per_request(d: dict[str, Any], run: int) -> pd.DataFrame | None:
    """The per-request arrays of SGLang / vLLM (flat or under "details"), in seconds."""
    src: dict[str, Any] = d["details"] if isinstance(d.get("details"), dict) else d
    if not isinstance(src.get("ttfts"), list):
        return None
    n = len(src["ttfts"])
    itls = src.get("itls") or [[] for _ in range(n)]
    errors = src.get("errors") or [""] * n
    df = pd.DataFrame({
        "run": run, "ttft_s": [_num(t) for t in src["ttfts"]],
        "input_tokens": src.get("input_lens") or [np.nan] * n, "output_tokens": src.get("output_lens") or [np.nan] * n,
        "n_chunks": [len(i) + 1 for i in itls], "itl_s": itls, "error": [e or None for e in errors],
    })
    # vLLM keeps latencies; SGLang does not: E2E = TTFT + the sum of the chunk gaps
    lat = src.get("latencies")
    df["e2e_s"] = [_num(x) for x in lat] if isinstance(lat, list) and len(lat) == n else df["ttft_s"] + [sum(i) for i in itls]
    df["ok"] = df["error"].isna()
    return df


def _sglang_or_vllm(objs: list[dict[str, Any]], fmt: str) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    rows, reqs = [], []
    for run, d in enumerate(objs):
        details: dict[str, Any] = d["details"] if isinstance(d.get("details"), dict) else d
        row: dict[str, Any] = {
            "run": run, "concurrency": _num(d.get("max_concurrency")), "request_rate": _num(d.get("request_rate")),
            "completed": _num(d.get("completed")), "duration_s": _num(d.get("duration")),
            "total_input_tokens": _num(d.get("total_input_tokens", d.get("total_input"))),
            "total_output_tokens": _num(d.get("total_output_tokens", d.get("total_output"))),
            "request_throughput": _num(d.get("request_throughput")), "output_throughput": _num(d.get("output_throughput")),
            "goodput_rps": _num(d.get("request_goodput")),
            "spec_accept_length": _num(d.get("accept_length", d.get("spec_decode_acceptance_length"))),
        }
        if fmt == "sglang":
            row["concurrency_achieved"] = _num(d.get("concurrency"))
        row["failed"] = _num(d["failed"]) if "failed" in d else (
            float(sum(1 for e in details.get("errors") or [] if e)) if isinstance(details.get("errors"), list) else np.nan)
        row.update(_flat_stats(d))
        per = _per_request(d, run)
        if per is not None:
            ok = per[per["ok"]]
            row["tokens_per_chunk"] = float(ok["output_tokens"].sum() / ok["n_chunks"].sum()) if len(ok) else np.nan
            reqs.append(per)
        row.update({k: v for k, v in d.items() if k in ("backend", "label", "model_id", "dataset_name", "tag", "date")})
        rows.append(row)
    return pd.DataFrame(rows), (pd.concat(reqs, ignore_index=True) if reqs else None)


# -- GuideLLM ------------------------------------------------------------------------------------

def _gl(metrics: dict[str, Any], name: str, stat: str, scale: float = 1.0) -> float:
    s = ((metrics.get(name) or {}).get("successful")) or {}
    v = s.get(stat) if stat in ("mean", "median", "total_sum") else (s.get("percentiles") or {}).get(stat)
    return _num(v) * scale if v is not None else np.nan


def _guidellm(report: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for run, b in enumerate(report.get("benchmarks") or []):
        m, strategy = b.get("metrics") or {}, (b.get("config") or {}).get("strategy") or {}
        duration = _num(b.get("duration"))
        totals = m.get("request_totals") or {}
        row: dict[str, Any] = {
            "run": run, "strategy": strategy.get("type_"),
            "concurrency": _num(strategy.get("streams", strategy.get("max_concurrency"))),
            "request_rate": _num(strategy.get("rate")), "duration_s": duration,
            "completed": _num(totals.get("successful")),
            "failed": _num(totals.get("errored")), "incomplete": _num(totals.get("incomplete")),
            "total_input_tokens": _gl(m, "prompt_token_count", "total_sum"),
            "total_output_tokens": _gl(m, "output_token_count", "total_sum"),
            "concurrency_achieved": _gl(m, "request_concurrency", "mean"),
            "tokens_per_chunk": _gl(m, "output_tokens_per_iteration", "mean"),
        }
        row["output_throughput"] = row["total_output_tokens"] / duration if duration else np.nan
        row["request_throughput"] = row["completed"] / duration if duration else np.nan
        for ours, theirs, scale in (("ttft", "time_to_first_token_ms", 1.0), ("tpot", "inter_token_latency_ms", 1.0),
                                    ("e2e", "request_latency", 1000.0)):
            for stat in STATS:
                row[f"{ours}_{stat}_ms"] = _gl(m, theirs, stat, scale)
        rows.append(row)
    return pd.DataFrame(rows)


# -- AIPerf --------------------------------------------------------------------------------------

_UNIT = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1000.0, "sec": 1000.0}
_AIP = {"ttft": "time_to_first_token", "tpot": "inter_token_latency", "itl": "inter_chunk_latency", "e2e": "request_latency"}


def _aiperf_aggregate(d: dict[str, Any]) -> pd.DataFrame:
    def val(name: str, stat: str = "avg") -> float:
        entry = d.get(name)
        return _num(entry.get(stat)) if isinstance(entry, dict) and entry.get(stat) is not None else np.nan

    phases = [p for p in ((d.get("input_config") or {}).get("phases") or []) if p.get("kind") == "profiling"]
    phase = phases[0] if phases else {}
    row: dict[str, Any] = {
        "run": 0, "concurrency": _num(phase.get("concurrency")), "request_rate": _num(phase.get("rate")),
        "completed": val("completed_request_count") if "completed_request_count" in d else val("request_count"),
        "failed": val("error_request_count") if "error_request_count" in d else float(
            sum(e.get("count", 0) for e in d.get("error_summary") or [])),
        "duration_s": val("benchmark_duration"), "total_input_tokens": val("total_isl"),
        "total_output_tokens": val("total_output_tokens"), "request_throughput": val("request_throughput"),
        "output_throughput": val("output_token_throughput"), "goodput_rps": val("goodput"),
    }
    for ours, theirs in _AIP.items():
        unit = _UNIT.get(str((d.get(theirs) or {}).get("unit", "ms")), 1.0)
        for stat in STATS:
            row[f"{ours}_{stat}_ms"] = val(theirs, "avg" if stat == "mean" else stat) * unit
    return pd.DataFrame([row])


def _aiperf_records(objs: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for o in objs:
        meta, m = o.get("metadata") or {}, o.get("metrics") or {}
        if meta.get("benchmark_phase", "profiling") != "profiling":
            continue

        def ms(name: str, m: dict[str, Any] = m) -> Any:
            e = m.get(name) or {}
            v, k = e.get("value"), _UNIT.get(str(e.get("unit", "ms")), 1.0)
            if v is None:
                return np.nan
            return [x * k / 1000 for x in v] if isinstance(v, list) else v * k / 1000

        itl = ms("inter_chunk_latency")
        itl = itl if isinstance(itl, list) else []
        err = o.get("error")
        rows.append({"run": 0, "ttft_s": ms("time_to_first_token"), "e2e_s": ms("request_latency"), "itl_s": itl,
                     "n_chunks": len(itl) + 1, "input_tokens": (m.get("input_sequence_length") or {}).get("value"),
                     "output_tokens": (m.get("output_sequence_length") or {}).get("value"),
                     "start_unix": meta["request_start_ns"] / 1e9 if meta.get("request_start_ns") else np.nan,
                     "error": (err.get("message") or err.get("type")) if isinstance(err, dict) else None})
    df = pd.DataFrame(rows)
    if not df.empty:
        df["ok"] = df["error"].isna()
    return df


def to_records(requests: pd.DataFrame) -> list[dict[str, Any]]:
    """Per-request rows of another tool as our records (chunk times rebuilt from TTFT + gaps)."""
    out = []
    for i, r in enumerate(requests.to_dict("records")):
        ttft = None if pd.isna(r["ttft_s"]) else float(r["ttft_s"])
        chunks = [float(x) for x in np.cumsum([ttft, *r["itl_s"]])] if ttft is not None else []
        start = r.get("start_unix", np.nan)
        out.append({"kind": "request", "id": i, "phase": "measure", "start_unix": 0.0 if pd.isna(start) else float(start),
                    "sched_delay_s": 0.0, "ttft_s": ttft, "e2e_s": float(r["e2e_s"]), "chunk_s": chunks, "chunk_tokens": [],
                    "input_tokens": r["input_tokens"], "output_tokens": r["output_tokens"], "http_status": None,
                    "error": r["error"]})
    return out


def recompute(requests: pd.DataFrame) -> dict[str, Any]:
    """Our canonical metrics from another tool's per-request data (throughputs only with start times)."""
    summary = summarize(to_records(requests))
    if "start_unix" not in requests or requests["start_unix"].isna().any():
        for k in ("duration_s", "request_throughput", "output_throughput", "concurrency_achieved"):
            summary[k] = np.nan
    return {k: v for k, v in summary.items() if k in CANONICAL}


# -- detection -----------------------------------------------------------------------------------

def detect(objs: list[dict[str, Any]]) -> str:
    first = objs[0] if objs and isinstance(objs[0], dict) else {}
    if "benchmarks" in first and "metadata" in first:
        return "guidellm"
    if isinstance(first.get("time_to_first_token"), dict) or "aiperf_version" in first:
        return "aiperf"
    if "metadata" in first and "metrics" in first:
        return "aiperf-records"
    if "endpoint_type" in first or "model_id" in first or "e2el" in " ".join(first):
        return "vllm"
    if "dataset_name" in first or "total_input" in first or "accept_length" in first:
        return "sglang"
    return "unknown"


def load_results(path: str | Path, format: str | None = None) -> Ingested:
    """Read one result file (or an AIPerf artifact directory) into canonical form."""
    p = Path(path)
    if p.is_dir():
        p = p / "profile_export_aiperf.json"
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ParseError(f"cannot read {p}: {exc}", source=str(p)) from exc
    objs = _json_lines(raw.decode("utf-8", "replace"), str(p))
    fmt = format or detect(objs)
    notes: list[str] = []
    requests = None
    if fmt in ("sglang", "vllm"):
        table, requests = _sglang_or_vllm(objs, fmt)
    elif fmt == "guidellm":
        table = _guidellm(objs[0])
        notes.append("GuideLLM inter_token_latency_ms -> TPOT; its time_per_output_token_ms includes TTFT and is not "
                     "used; it has no per-chunk ITL; output tok/s = output tokens / benchmark duration")
    elif fmt == "aiperf":
        table = _aiperf_aggregate(objs[0])
        records = p.parent / "profile_export.jsonl"
        if records.exists():
            requests = _aiperf_records(_json_lines(records.read_text(), str(records)))
        notes.append("AIPerf inter_token_latency -> TPOT, inter_chunk_latency -> ITL")
    elif fmt == "aiperf-records":
        requests = _aiperf_records(objs)
        table = pd.DataFrame([{"run": 0, **recompute(requests)}])
        notes.append("per-request records only: aggregates recomputed with our definitions")
    else:
        keys = ", ".join(sorted(objs[0])[:12]) if objs and isinstance(objs[0], dict) else "no JSON object"
        raise ParseError(f"{p.name}: not a result file of SGLang, vLLM, GuideLLM or AIPerf (keys: {keys})", source=str(p))
    for col in CANONICAL:
        if col not in table:
            table[col] = np.nan
    table.insert(0, "source", fmt)
    missing = [c for c in CANONICAL if table[c].isna().all()]
    if table["completed"].fillna(0).eq(0).all():
        notes.append("no completed requests")
    return Ingested(fmt, p, raw, table, requests, missing, notes)
