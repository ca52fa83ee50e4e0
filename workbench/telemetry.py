"""GPU and server telemetry around a benchmark, trimmed to the measured window and joined to it.

- GPU: ``GpuSampler(host)`` streams ``nvidia-smi --query-gpu=... -lms N`` over the Host seam;
  ``parse_nvidia_smi`` turns its CSV into one row per (sample, GPU); ``window_summary`` /
  ``join_telemetry`` reduce the samples inside each benchmark window (warmup excluded).
  NVML's ``utilization.gpu`` is the share of time *a kernel was running*, not a bandwidth or
  compute fraction: use it as corroboration only (see ``workbench.bottleneck``).
- Server: ``snapshot_server(url)`` captures ``/metrics`` (parsed with
  ``prometheus_client.parser``) and ``/server_info`` before and after a run; ``counter_deltas``
  and ``spec_acceptance`` give values for that run alone.

Clocks: nvidia-smi stamps samples in the host's local time; they are converted to Unix time with
the host's UTC offset. Records from the host client use the host clock, records from the httpx
client this machine's clock; ``clock_offset`` measures the difference so both can be joined.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import numpy as np
import pandas as pd
from prometheus_client.parser import text_string_to_metric_families

from workbench.errors import ParseError

# query field -> column (units are those of --format=csv,nounits)
GPU_FIELDS: dict[str, str] = {
    "timestamp": "timestamp", "index": "gpu", "power.draw": "power_w", "power.draw.instant": "power_instant_w",
    "power.limit": "power_limit_w", "utilization.gpu": "util_gpu_pct", "utilization.memory": "util_mem_pct",
    "memory.used": "mem_used_mib", "memory.total": "mem_total_mib", "clocks.sm": "clock_sm_mhz",
    "clocks.mem": "clock_mem_mhz", "clocks_event_reasons.active": "clock_event_reasons",
    "temperature.gpu": "temp_gpu_c", "temperature.memory": "temp_mem_c", "pstate": "pstate",
}
_TEXT = {"timestamp", "pstate", "clocks_event_reasons.active"}
_MISSING = {"[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", ""}
_UNITS = {"W", "%", "MiB", "MHz", "C"}


def _value(text: str) -> float | str:
    """A number (units of ``--format=csv`` without ``nounits`` stripped), NaN if unsupported, else the text."""
    if text in _MISSING:
        return np.nan
    head, _, unit = text.partition(" ")
    try:
        return float(head if unit in _UNITS else text)
    except ValueError:
        return text  # name, uuid, pci.bus_id, driver_version ...


def nvidia_smi_command(fields: Sequence[str] = tuple(GPU_FIELDS), interval_ms: int = 500) -> list[str]:
    """The argv that samples ``fields`` of every GPU every ``interval_ms`` until killed."""
    return ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits", "-lms", str(int(interval_ms))]


def parse_utc_offset(text: str) -> float:
    """``date +%z`` output (``+0530``) -> seconds east of UTC."""
    t = text.strip()
    if len(t) != 5 or t[0] not in "+-" or not t[1:].isdigit():
        raise ParseError(f"not a UTC offset from `date +%z`: {text!r}", source="date +%z")
    sign = 1 if t[0] == "+" else -1
    return sign * (int(t[1:3]) * 3600 + int(t[3:5]) * 60)


def parse_nvidia_smi(text: str | Iterable[str], fields: Sequence[str] = tuple(GPU_FIELDS), *,
                     utc_offset_s: float = 0.0, strict: bool = True) -> pd.DataFrame:
    """Parse ``--format=csv,noheader,nounits`` lines (a header line and units are tolerated).

    ``time_unix`` comes from the ``timestamp`` field read in the host's zone (``utc_offset_s``).
    Unsupported values (``[N/A]``) become NaN. A line with the wrong number of fields raises
    ``ParseError``, or is counted in ``df.attrs["skipped"]`` when ``strict`` is false.
    """
    lines = text.splitlines() if isinstance(text, str) else list(text)
    tz = timezone(timedelta(seconds=utc_offset_s))
    rows, skipped = [], 0
    for no, line in enumerate(lines, 1):
        parts = [p.strip() for p in line.split(",")]
        if not line.strip() or parts[0].split(" [")[0] == fields[0]:  # blank, or the csv header line
            continue
        if len(parts) != len(fields):
            if strict:
                raise ParseError(f"expected {len(fields)} fields, got {len(parts)}: {line[:200]!r}",
                                 source="nvidia-smi", line=no)
            skipped += 1
            continue
        row: dict[str, Any] = {}
        for field, value in zip(fields, parts, strict=True):
            col = GPU_FIELDS.get(field, field.replace(".", "_"))
            row[col] = value if field in _TEXT else _value(value)
        if "timestamp" in row:
            try:
                stamp = datetime.strptime(row["timestamp"], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=tz)
            except ValueError as exc:
                if strict:
                    raise ParseError(f"bad timestamp {row['timestamp']!r}", source="nvidia-smi", line=no) from exc
                skipped += 1
                continue
            row["time_unix"] = stamp.timestamp()
        rows.append(row)
    df = pd.DataFrame(rows)
    if "gpu" in df:
        df["gpu"] = df["gpu"].astype(int)
    df.attrs["skipped"] = skipped
    return df


def clock_offset(host: Any) -> tuple[float, float]:
    """(host clock - this machine's clock, uncertainty) in seconds, from one ``date`` round trip."""
    t0 = time.time()
    out = host.run(["date", "+%s.%N"], check=True).stdout.strip()
    t1 = time.time()
    return float(out) - (t0 + t1) / 2, (t1 - t0) / 2


class GpuSampler:
    """Sample every GPU of ``host`` in the background: ``with GpuSampler(host) as s: ...; s.samples``."""

    def __init__(self, host: Any, interval_ms: int = 500, fields: Sequence[str] = tuple(GPU_FIELDS)) -> None:
        self.host, self.interval_ms, self.fields = host, interval_ms, tuple(fields)
        self.lines: list[str] = []
        self.utc_offset_s = 0.0
        self.clock_offset_s = self.clock_uncertainty_s = 0.0
        self._stream: Any = None
        self._thread: threading.Thread | None = None
        self._first = threading.Event()
        self.samples = pd.DataFrame()

    def start(self) -> GpuSampler:
        self.utc_offset_s = parse_utc_offset(self.host.run(["date", "+%z"], check=True).stdout)
        self.clock_offset_s, self.clock_uncertainty_s = clock_offset(self.host)
        self._stream = self.host.stream(nvidia_smi_command(self.fields, self.interval_ms))
        self._thread = threading.Thread(target=self._pump, daemon=True, name=f"gpu-sampler-{self.host.name}")
        self._thread.start()
        return self

    def _pump(self) -> None:
        for line in self._stream:
            self.lines.append(line)
            self._first.set()
        self._first.set()  # ended (nvidia-smi missing or failed): wake any waiter

    def wait_for_sample(self, timeout: float = 30.0) -> bool:
        """Block until the first line arrived (so sampling covers what follows); False if none."""
        return self._first.wait(timeout) and bool(self.lines)

    def stop(self) -> pd.DataFrame:
        """Stop sampling; returns the samples, with ``time_local`` on this machine's clock."""
        if self._stream is not None:
            self._stream.close()
        if self._thread is not None:
            self._thread.join()
        df = parse_nvidia_smi(self.lines, self.fields, utc_offset_s=self.utc_offset_s, strict=False)
        if "time_unix" in df:
            df["time_local"] = df["time_unix"] - self.clock_offset_s
        df.attrs.update(host=self.host.name, clock_offset_s=self.clock_offset_s,
                        clock_uncertainty_s=self.clock_uncertainty_s)
        self.samples = df
        return df

    def __enter__(self) -> GpuSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def trim(samples: pd.DataFrame, start: float, end: float, time_col: str = "time_unix") -> pd.DataFrame:
    """Samples with ``start <= time <= end``."""
    if samples.empty:
        return samples
    return samples[(samples[time_col] >= start) & (samples[time_col] <= end)]


def _period(samples: pd.DataFrame, time_col: str) -> float:
    """The sampling period (median gap between one GPU's samples); 0 when it cannot be told."""
    if samples.empty or "gpu" not in samples:
        return 0.0
    first = samples[samples["gpu"] == samples["gpu"].iloc[0]][time_col].sort_values()
    gaps = first.diff().dropna()
    return float(gaps.median()) if not gaps.empty else 0.0


def window_summary(samples: pd.DataFrame, start: float, end: float, time_col: str = "time_unix") -> dict[str, float]:
    """GPU figures over one window: per-GPU means, the power fraction of the limit, and energy.

    A sample describes the sampling period *before* it (utilization is "a kernel ran during the
    last period"), so samples within one period after ``start`` are left out: they would average
    in the idle moment before the window and pull utilization down on short windows.
    """
    w = trim(samples, start + _period(samples, time_col), end, time_col)
    if w.empty:
        w = trim(samples, start, end, time_col)
    out: dict[str, float] = {"gpu_samples": float(len(w))}
    if w.empty:
        return out
    per_time = w.groupby(time_col)["power_w"].sum().sort_index()
    out.update(
        gpu_count=float(w["gpu"].nunique()),
        gpu_power_w=float(w["power_w"].mean()), gpu_power_w_max=float(w["power_w"].max()),
        gpu_power_frac=float((w["power_w"] / w["power_limit_w"]).mean()),
        gpu_util_pct=float(w["util_gpu_pct"].mean()), gpu_mem_util_pct=float(w["util_mem_pct"].mean()),
        gpu_clock_sm_mhz=float(w["clock_sm_mhz"].mean()),
        # all GPUs' power x the window: mean total power, so missing samples do not bias it
        gpu_energy_j=float(per_time.mean() * (end - start)),
    )
    return out


def join_telemetry(results: pd.DataFrame, samples: pd.DataFrame) -> pd.DataFrame:
    """Add GPU figures for each results row's ``[start_unix, end_unix]``.

    Rows measured by the host client are matched on the host clock (``time_unix``), the others
    on this machine's clock (``time_local``, from ``GpuSampler``).
    """
    rows = []
    for _, row in results.iterrows():
        col = "time_unix" if row.get("client") == "hostclient" or "time_local" not in samples else "time_local"
        s = window_summary(samples, row["start_unix"], row["end_unix"], col)
        if "gpu_energy_j" in s and row.get("total_output_tokens"):
            s["gpu_energy_per_token_j"] = s["gpu_energy_j"] / row["total_output_tokens"]
        rows.append(s)
    return pd.concat([results.reset_index(drop=True), pd.DataFrame(rows)], axis=1)


# -- server side ---------------------------------------------------------------------------

Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]


def parse_metrics(text: str) -> Samples:
    """Prometheus text -> {sample name: {sorted label pairs: value}}."""
    out: Samples = {}
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = float(s.value)
    except ValueError as exc:
        raise ParseError(f"not Prometheus text format: {exc}", source="/metrics") from exc
    return out


def metric(samples: Samples, name: str, **labels: str) -> float | None:
    """Sum of ``name`` over the label sets that match ``labels``; None if absent."""
    values = [v for key, v in samples.get(name, {}).items() if all(dict(key).get(k) == x for k, x in labels.items())]
    return float(sum(values)) if values else None


def counter_deltas(before: Samples, after: Samples) -> dict[str, float]:
    """after - before for every counter-like sample (``*_total``, ``*_count``, ``*_sum``), summed over labels."""
    out = {}
    for name in after:
        if name.endswith(("_total", "_count", "_sum")):
            a, b = metric(after, name), metric(before, name)
            if a is not None:
                out[name] = a - (b or 0.0)
    return out


def spec_acceptance(before: Samples, after: Samples, server_info_after: dict[str, Any] | None = None) -> dict[str, Any]:
    """Speculative acceptance for the window between two snapshots.

    vLLM: length = 1 + d(accepted)/d(drafts), rate = d(accepted)/d(draft tokens) (counter deltas).
    SGLang: length = d(sglang:generation_tokens_total)/d(sglang:spec_verify_calls_total), SGLang's
    own per-request definition (completion tokens / verify calls). Without that counter only the
    server-cumulative ``avg_spec_accept_length`` of ``/server_info`` is left: returned with
    ``windowed=False``.
    """
    d = counter_deltas(before, after)
    drafts = d.get("vllm:spec_decode_num_drafts_total")
    if drafts:
        accepted = d.get("vllm:spec_decode_num_accepted_tokens_total", 0.0)
        draft_tokens = d.get("vllm:spec_decode_num_draft_tokens_total")
        per_pos = {dict(k).get("position"): v - before.get("vllm:spec_decode_num_accepted_tokens_per_pos_total", {}).get(k, 0.0)
                   for k, v in after.get("vllm:spec_decode_num_accepted_tokens_per_pos_total", {}).items()}
        by_pos: dict[int, float] = {}
        for pos, v in per_pos.items():
            if pos is not None:
                by_pos[int(pos)] = by_pos.get(int(pos), 0.0) + v
        return {"engine": "vllm", "windowed": True, "accept_length": 1 + accepted / drafts,
                "accept_rate": accepted / draft_tokens if draft_tokens else None,
                "per_position_rate": [by_pos[k] / drafts for k in sorted(by_pos)],
                "drafts": drafts, "accepted_tokens": accepted, "source": "counter deltas"}
    verify = d.get("sglang:spec_verify_calls_total")
    if verify:
        return {"engine": "sglang", "windowed": True,
                "accept_length": d.get("sglang:generation_tokens_total", 0.0) / verify,
                "verify_calls": verify, "source": "counter deltas"}
    for state in (server_info_after or {}).get("internal_states") or []:
        if state.get("avg_spec_accept_length") is not None:
            return {"engine": "sglang", "windowed": False, "accept_length": float(state["avg_spec_accept_length"]),
                    "source": "/server_info avg_spec_accept_length (cumulative since server start, rank 0)"}
    return {"engine": None, "windowed": False, "accept_length": None, "source": "no speculative counters"}


def snapshot_server(url: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """``/metrics`` (parsed) and ``/server_info`` (or ``/get_server_info``) of a server, now.

    The snapshot only adds the server's view to a measurement: a scrape the network refuses (a connection reset by a
    server busy with the load just sent, a time-out) is tried once more, then left out with ``error`` saying why,
    instead of failing the measurement it belongs to."""
    base = url.rstrip("/")
    snap: dict[str, Any] = {"time_unix": time.time(), "metrics": {}, "metrics_text": None, "server_info": None,
                            "error": None}
    with httpx.Client(timeout=timeout, trust_env=False) as c:
        r = _get_twice(c, base + "/metrics", snap)
        if r is not None and r.status_code == 200:
            snap["metrics_text"] = r.text
            snap["metrics"] = parse_metrics(r.text)
        for path in ("/server_info", "/get_server_info"):
            r = _get_twice(c, base + path, snap)
            if r is not None and r.status_code == 200:
                snap["server_info"] = r.json()
                break
    return snap


def _get_twice(client: httpx.Client, url: str, snap: dict[str, Any]) -> httpx.Response | None:
    """One GET, tried again once on a transport error; None (and the error in ``snap``) when both fail."""
    for attempt in (1, 2):
        try:
            return client.get(url)
        except httpx.TransportError as exc:
            if attempt == 2:
                said = f"/{url.rsplit('/', 1)[-1]}: {type(exc).__name__}: {exc}"
                snap["error"] = f"{snap['error']}; {said}" if snap["error"] else said
    return None


def server_window(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What the server says about the window between two ``snapshot_server`` calls."""
    d = counter_deltas(before["metrics"], after["metrics"])
    seconds = after["time_unix"] - before["time_unix"]
    out: dict[str, Any] = {"server_window_s": seconds}
    errors = [e for e in (before.get("error"), after.get("error")) if e]
    if errors:  # a scrape that failed: the counters of that window are missing, not zero
        out["server_error"] = "; ".join(errors)
        return out
    for engine in ("sglang", "vllm"):
        gen = d.get(f"{engine}:generation_tokens_total")
        if gen is not None:
            out["server_generation_tokens"] = gen
            out["server_prompt_tokens"] = d.get(f"{engine}:prompt_tokens_total")
            n, s = d.get(f"{engine}:time_to_first_token_seconds_count"), d.get(f"{engine}:time_to_first_token_seconds_sum")
            out["server_ttft_mean_ms"] = 1000 * s / n if n and s is not None else None
    spec = spec_acceptance(before["metrics"], after["metrics"], after.get("server_info"))
    out.update({f"spec_{k}": v for k, v in spec.items()})
    return out
