"""The A/B runbook's pure parts: verdicts from synthetic repeat tables, words, parameters, result schema."""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from workbench.errors import ConfigError
from workbench.runbooks import ab as abtest
from workbench.runbooks.ab import ABParams
from workbench.runbooks.abverdict import (
    conclusion,
    overall_verdict,
    speedups,
    split_repeats,
    verdict_of,
)
from workbench.runbooks.measure import ServerShape
from workbench.runbooks.params import validate
from workbench.runs import Run


def repeats(a: list[float], b: list[float], concurrency: int = 4) -> pd.DataFrame:
    """A results table: one row per (arm, repeat) at one concurrency."""
    rows = [{"arm": "A", "concurrency": concurrency, "repeat": i, "output_throughput": v} for i, v in enumerate(a)]
    rows += [{"arm": "B", "concurrency": concurrency, "repeat": i, "output_throughput": v} for i, v in enumerate(b)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("lo, hi, verdict", [
    (1.01, 1.05, "better"),
    (0.90, 0.99, "worse"),
    (0.98, 1.03, "no significant difference"),
    (1.0, 1.02, "no significant difference"),  # an interval touching 1 does not exclude it
    (None, None, "undetermined"),
    (math.nan, math.nan, "undetermined"),
])
def test_verdict_of_an_interval(lo, hi, verdict):
    assert verdict_of(lo, hi) == verdict


@pytest.mark.parametrize("verdicts, overall", [
    (["better", "no significant difference"], "better"),
    (["worse", "worse"], "worse"),
    (["better", "worse"], "mixed"),
    (["no significant difference", "undetermined"], "no significant difference"),
    (["undetermined"], "undetermined"),
])
def test_overall_verdict(verdicts, overall):
    assert overall_verdict(verdicts) == overall


def test_speedups_from_repeats_say_better_worse_or_no_difference():
    rng = np.random.default_rng(1)
    a = list(3795 + rng.normal(0, 5, 4))
    faster = speedups(repeats(a, [x * 1.02 for x in a]))
    (row,) = faster
    assert row["concurrency"] == 4 and row["repeats"] == 4
    assert row["speedup"] == pytest.approx(1.02, abs=1e-3) and row["lo"] > 1 and row["verdict"] == "better"
    slower = speedups(repeats(a, [x * 0.5 for x in a]))
    assert slower[0]["hi"] < 1 and slower[0]["verdict"] == "worse"
    noisy = speedups(repeats([100, 140, 90, 130], [120, 95, 135, 100]))
    assert noisy[0]["lo"] < 1 < noisy[0]["hi"] and noisy[0]["verdict"] == "no significant difference"


def test_one_repeat_gives_no_interval_and_no_verdict():
    (row,) = speedups(repeats([100.0], [200.0]))
    assert row["lo"] is None and row["hi"] is None and row["verdict"] == "undetermined"


def test_speedups_per_concurrency_and_without_arm_b():
    table = pd.concat([repeats([100, 101, 99], [102, 103, 101], 1), repeats([400, 410, 390], [300, 305, 298], 8)])
    rows = speedups(table)
    assert [(r["concurrency"], r["verdict"]) for r in rows] == [(1, "better"), (8, "worse")]
    assert speedups(table[table["arm"] == "A"]) == []


def test_conclusion_states_intervals_confidence_and_overall():
    rows = speedups(repeats([100, 101, 99], [110, 111, 109]))
    words = conclusion("sglang-k26-ddtree.service", [("--enable-nccl-nvls", True)], rows, "better")
    assert words.startswith("B (--enable-nccl-nvls) vs A (sglang-k26-ddtree.service)")
    assert "95% bootstrap intervals over 3+ repeats" in words
    assert re.search(r"c=4: 1\.100x \[1\.\d{3}, 1\.\d{3}\] better", words)
    assert "Overall: better. (With 3 repeats a bootstrap interval understates the spread" in words
    rows = speedups(repeats([100, 101, 99, 100, 100], [110, 111, 109, 110, 110]))
    assert conclusion("b.service", [("--x", True)], rows, "better").endswith("Overall: better.")


def test_conclusion_when_b_does_not_start():
    fail = {"exception_type": "AttributeError", "message": "'NoneType' object has no attribute 'topk_ids'",
            "phase": "cuda_graph_capture"}
    words = conclusion("base.service", [("--ep-size", "8")], [], "B does not start", b_failure=fail)
    assert words == ("B (base.service + --ep-size 8) does not start: AttributeError ('NoneType' object has no "
                     "attribute 'topk_ids') during cuda_graph_capture.")


def test_split_repeats_over_hosts():
    assert split_repeats(3, 1) == [(3, 0)]
    assert split_repeats(5, 2) == [(3, 0), (2, 3)]
    assert sum(k for k, _ in split_repeats(7, 3)) == 7


# What every A/B needs (no defaults tied to one deployment); the seeds' question is the preset.
REQUIRED = {"hosts": ["gpu-b"], "base_unit": "sglang-k26-ddtree.service", "edits": {"--enable-nccl-nvls": True}}


def test_parameters_are_required_and_checked_before_any_host():
    with pytest.raises(ConfigError, match=r"missing required parameter\(s\) hosts, base_unit, edits"):
        validate(ABParams, {})
    p = validate(ABParams, REQUIRED)
    assert p.edits == {"--enable-nccl-nvls": True} and p.hosts == ["gpu-b"] and p.load_from == "host"
    assert p.a_edits == {} and p.model_spec == "auto"
    vllm = validate(ABParams, {"hosts": '["gpu-a"]', "base_unit": "vllm-tiny.service", "edits": '{"--max-num-seqs": "2"}',
                               "concurrency": "[1, 8]", "model_spec": "", "stop_units": '["sglang-k26-ddtree.service"]'})
    assert vllm.edits == {"--max-num-seqs": "2"} and vllm.concurrency == [1, 8] and vllm.model_spec == ""


@pytest.mark.parametrize("ns, message", [
    ({"repeats": 1}, "at least 2 repeats"),
    ({"hosts": ["gpu-a", "gpu-b"], "repeats": 1}, "repeats"),
    ({"hosts": ["gpu-a", "gpu-b", "gpu-c"], "repeats": 2}, "number of hosts"),
    ({"hosts": []}, "hosts"),
    ({"edits": {}}, "edits"),
    ({"edits": {"enable-nccl-nvls": True}}, "edits"),
    ({"concurrency": [0, 4]}, "concurrency"),
    ({"load_from": "laptop"}, "load_from"),
    ({"model_spec": "llama"}, "model_spec"),
    ({"gpu": "T4"}, "gpu"),
    ({"api": "responses"}, "api"),
    ({"a_edits": {"--enable-nccl-nvls": True}}, "same configuration"),
    ({"a_edits": {"nvls": True}}, "a_edits"),
])
def test_bad_parameters_fail_at_once(ns, message):
    with pytest.raises(ConfigError, match=message):
        validate(ABParams, {**REQUIRED, **ns})


# -- the result.json schema ------------------------------------------------------------------

TOP_KEYS = {"status", "hosts", "base_unit", "edits", "a_edits", "variant_unit", "metric", "confidence", "arms", "speedup",
            "verdict", "bottleneck", "conclusion", "server_starts", "wall_seconds", "host_restored", "hosts_report",
            "failure", "started", "finished", "params", "provenance"}


def _sweep_rows(arm: str, scale: float) -> pd.DataFrame:
    rows = []
    for c, tok_s in ((1, 285.0), (64, 3795.0)):
        for rep in range(2):
            rows.append({"arm": arm, "host": "gpu-b", "variant": arm, "concurrency": c, "repeat": rep,
                         "output_throughput": tok_s * scale * (1 + 0.001 * rep), "completed": 8, "failed": 0,
                         "client_bound": False, "input_len": 128, "output_len": 128, "tokens_per_chunk": 3.8,
                         "ttft_p50_ms": 30.0, "gpu_util_pct": 100.0, "gpu_power_w": 360.0,
                         "start_unix": 1e9 + rep, "end_unix": 1e9 + rep + 1})
    return pd.DataFrame(rows)


def test_result_schema_and_roofline_per_arm(tmp_path):
    p = ABParams(data_dir=str(tmp_path), concurrency=[1, 64], repeats=2, model_spec="kimi-k2.6", **REQUIRED)
    hr = abtest._HostRun("gpu-b", 2, 0, restored=True, starts=1, variant="base-wb-0123456789.service",
                         provenance={"host": "gpu-b", "gpu": "NVIDIA B300 SXM6 AC", "gpu_count": 8})
    hr.frames["results"] = [_sweep_rows("A", 1.0), _sweep_rows("B", 1.02)]
    hr.arms = {"A": {"unit": p.base_unit, "started": False, "start": None},
               "B": {"unit": hr.variant, "started": True, "start": {"outcome": "ready", "phase": "serving",
                                                                   "seconds": 4.0}, "failure": None}}
    hr.shapes = {"A": ServerShape(30000, 8, 8), "B": ServerShape(30000, 8, 8)}
    run = Run.create("ab", data_dir=tmp_path)
    result = abtest._result(p, run, [hr], [("--enable-nccl-nvls", True)], 0.0, 1.0)
    assert set(result) == TOP_KEYS
    assert result["status"] == "ok" and result["verdict"] == "better" and result["host_restored"] is True
    assert [r["concurrency"] for r in result["speedup"]] == [1, 64]
    assert set(result["arms"]) == {"A", "B"} and result["arms"]["B"]["points"][0]["repeats"] == 2
    for arm in ("A", "B"):
        b = result["bottleneck"][arm]
        assert b["gpu"] == "B300" and b["n_gpus"] == 8
        assert {r["label"] for r in b["points"]} == {"memory-bound"}
        assert b["verdict"].startswith("HBM-bandwidth bound at decode")
    assert {f.name for f in run.dir.glob("*.parquet")} == {"results.parquet", "speedup.parquet", "roofline.parquet"}


def test_result_of_a_host_that_failed(tmp_path):
    p = ABParams(data_dir=str(tmp_path), **REQUIRED)
    hr = abtest._HostRun("gpu-b", 3, 0, error="host_locked: gpu-b is held by root (test)")
    run = Run.create("ab", data_dir=tmp_path)
    result = abtest._result(p, run, [hr], [("--enable-nccl-nvls", True)], 0.0, 1.0)
    assert result["status"] == "failed" and result["failure"]["kind"] == "host_locked"
    assert result["verdict"] is None and result["conclusion"].startswith("Run failed: gpu-b: host_locked")


def test_each_arms_server_series_is_kept_summarised_and_charted(tmp_path):
    from workbench.servermetrics import sample_row, series_frame
    from workbench.telemetry import parse_metrics

    fix = Path(__file__).parents[2] / "fixtures" / "servermetrics"
    busy, after = (parse_metrics((fix / f"sim_sglang_{n}.prom").read_text()) for n in ("busy", "after_load"))
    p = ABParams(data_dir=str(tmp_path), concurrency=[1, 64], repeats=2, model_spec="", **REQUIRED)
    hr = abtest._HostRun("gpu-b", 2, 0, restored=True, starts=1, variant="base-wb-0123456789.service")
    hr.frames["results"] = [_sweep_rows("A", 1.0), _sweep_rows("B", 1.02)]
    for arm, t0 in (("A", 100.0), ("B", 500.0)):
        abtest._keep(hr, arm, SimpleNamespace(results=_sweep_rows(arm, 1.0).iloc[:0], requests=pd.DataFrame(),
                                              gpu=pd.DataFrame()),
                     [series_frame([sample_row(busy, t0), sample_row(after, t0 + 2)])])
    run = Run.create("ab", data_dir=tmp_path)
    result = abtest._result(p, run, [hr], [("--enable-nccl-nvls", True)], 0.0, 1.0)
    assert result["arms"]["A"]["server_series"]["peak_running"] == 9
    assert result["arms"]["B"]["server_series"]["mean_spec_accept_length"] == pytest.approx(3.825)
    saved = pd.read_parquet(run.dir / "server_metrics.parquet")
    assert sorted(set(saved["arm"])) == ["A", "B"] and set(saved["host"]) == {"gpu-b"}
    specs = [c.to_dict() for c in abtest.charts(result, abtest.tables(run))]
    assert any(s.get("title") == "Server /metrics over the run" for s in specs)
