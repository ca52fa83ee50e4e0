"""Other tools' result files, produced by the real tools, into the canonical table."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from workbench.bench.ingest import CANONICAL, load_results, recompute
from workbench.errors import ParseError

ING = Path(__file__).parents[2] / "fixtures" / "bench" / "ingest"


@pytest.mark.parametrize(
    ("name", "fmt", "runs", "concurrency"),
    [
        ("sglang-0.5.23_details.jsonl", "sglang", 1, [4]),
        ("sglang-0.5.23_two_runs.jsonl", "sglang", 2, [2, 4]),
        ("sglang-refactored_total_input_nested_details.jsonl", "sglang", 1, [4]),
        ("sglang-old_minimal.jsonl", "sglang", 1, [4]),
        ("vllm-0.32.0_detailed.json", "vllm", 1, [4]),
        ("vllm-0.32.0_appended.json", "vllm", 2, [2, 4]),
        ("guidellm-0.8.1_concurrent.json", "guidellm", 1, [4]),
        ("aiperf-0.13.0", "aiperf", 1, [4]),
    ],
)
def test_every_format_lands_in_the_canonical_table(name: str, fmt: str, runs: int, concurrency: list[int]) -> None:
    r = load_results(ING / name)
    assert r.format == fmt and len(r.table) == runs and set(CANONICAL) <= set(r.table.columns)
    assert list(r.table["concurrency"]) == concurrency
    assert (r.table["completed"] == 8).all() and (r.table["total_output_tokens"] == 128).all()
    # the fixed server's schedule: TTFT 30 ms + overhead, one chunk every 10 ms
    assert r.table["ttft_p50_ms"].between(30, 60).all()
    assert r.table["tpot_p50_ms"].between(9, 11.5).all()
    assert r.raw == (ING / name / "profile_export_aiperf.json" if fmt == "aiperf" else ING / name).read_bytes()


def test_poisson_rate_and_infinite_rate_are_kept() -> None:
    t = load_results(ING / "vllm-0.32.0_appended.json").table
    assert t["request_rate"].iloc[0] == 20.0 and math.isinf(t["request_rate"].iloc[1])
    assert load_results(ING / "sglang-0.5.23_two_runs.jsonl").table["request_rate"].tolist()[0] == 20.0


def test_missing_fields_are_named() -> None:
    old = load_results(ING / "sglang-old_minimal.jsonl")
    assert {"ttft_p90_ms", "e2e_p99_ms", "failed", "tokens_per_chunk"} <= set(old.missing)
    assert "ttft_p99_ms" not in old.missing and old.requests is None
    assert "lacks" in old.describe() and "ttft_p90_ms" in old.describe()
    gl = load_results(ING / "guidellm-0.8.1_concurrent.json")
    assert {"itl_p50_ms", "itl_mean_ms"} <= set(gl.missing)  # GuideLLM has no per-chunk ITL
    assert "time_per_output_token_ms includes TTFT" in gl.notes[0]


def test_naming_traps_are_resolved() -> None:
    gl = load_results(ING / "guidellm-0.8.1_concurrent.json").table.iloc[0]
    # GuideLLM's time_per_output_token_ms (11.6 ms here) includes TTFT; our TPOT is its inter_token_latency
    assert gl["tpot_mean_ms"] == pytest.approx(9.8919, abs=1e-3)
    assert gl["e2e_p50_ms"] == pytest.approx(186.12, abs=0.01)  # request_latency is in seconds there
    aip = load_results(ING / "aiperf-0.13.0").table.iloc[0]
    assert aip["tpot_p50_ms"] == pytest.approx(9.98995, abs=1e-4)  # inter_token_latency
    assert aip["itl_p50_ms"] == pytest.approx(9.84519, abs=1e-4)  # inter_chunk_latency
    assert aip["goodput_rps"] == pytest.approx(aip["request_throughput"])


@pytest.mark.parametrize("name", ["vllm-0.32.0_detailed.json", "aiperf-0.13.0", "sglang-0.5.23_details.jsonl"])
def test_our_definitions_reproduce_the_tools_figures_from_their_requests(name: str) -> None:
    r = load_results(ING / name)
    assert r.requests is not None and len(r.requests) == 8
    ours, theirs = recompute(r.requests), r.table.iloc[0]
    for col in ("ttft_p50_ms", "tpot_p50_ms", "tpot_mean_ms", "itl_p50_ms", "itl_p99_ms"):
        assert ours[col] == pytest.approx(theirs[col], abs=0.01), col
    # SGLang keeps no per-request latency: E2E is rebuilt as TTFT + the chunk gaps
    assert ours["e2e_p50_ms"] == pytest.approx(theirs["e2e_p50_ms"], abs=0.05)


def test_aiperf_records_alone_are_summarized_with_our_definitions() -> None:
    r = load_results(ING / "aiperf-0.13.0" / "profile_export.jsonl")
    assert r.format == "aiperf-records" and len(r.requests) == 8  # the warmup record is dropped
    assert r.table["completed"].iloc[0] == 8 and r.table["output_throughput"].iloc[0] > 0


def test_unknown_and_broken_files_raise_parse_errors(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"hello": 1}')
    with pytest.raises(ParseError, match=r"not a result file.*hello"):
        load_results(tmp_path / "x.json")
    (tmp_path / "y.jsonl").write_text('{"dataset_name": "random"}\n{broken\n')
    with pytest.raises(ParseError) as err:
        load_results(tmp_path / "y.jsonl")
    assert err.value.line == 2
    with pytest.raises(ParseError, match="cannot read"):
        load_results(tmp_path / "absent.json")


def test_write_keeps_the_raw_file_next_to_the_canonical_table(tmp_path: Path) -> None:
    r = load_results(ING / "vllm-0.32.0_detailed.json")
    paths = r.write(tmp_path)
    assert paths["raw"].read_bytes() == (ING / "vllm-0.32.0_detailed.json").read_bytes()
    back = pd.read_parquet(paths["table"])
    assert back["ttft_p50_ms"].iloc[0] == r.table["ttft_p50_ms"].iloc[0]
    assert len(pd.read_parquet(paths["requests"])) == 8
