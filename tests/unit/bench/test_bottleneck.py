"""Roofline labels, checked on the seeds' Kimi K2.6 / 8x B300 numbers and on clear-cut cases."""

from __future__ import annotations

import pandas as pd
import pytest

from workbench.bottleneck import (
    GPUS,
    KIMI_K26,
    ModelSpec,
    analyze,
    analyze_results,
    distinct_experts,
)

B300 = GPUS["B300"]
# The seeds: 133 tok/s autoregressive at c=1, 285 tok/s DDTree at c=1, 3795 tok/s DDTree at c=64,
# 100 % utilization at 360 W of 1100 W. Assumed: acceptance 3 tokens/step, a 16-token draft tree.
SEEDS = {
    "AR c=1": dict(tok_s=133.0, batch=1),
    "DDTree c=1": dict(tok_s=285.0, batch=1, accept_len=3.0, tokens_per_step=16),
    "DDTree c=64": dict(tok_s=3795.0, batch=64, accept_len=3.0, tokens_per_step=16 * 64),
}


def test_kimi_k26_description_matches_its_published_size() -> None:
    assert KIMI_K26.active_params == pytest.approx(32e9, rel=0.03)
    assert KIMI_K26.total_params == pytest.approx(1.03e12, rel=0.03)


def test_expected_distinct_experts() -> None:
    assert distinct_experts(384, 8, 1) == pytest.approx(8)
    assert distinct_experts(384, 8, 10_000) == pytest.approx(384)
    assert distinct_experts(0, 0, 5) == 0


@pytest.mark.parametrize("point", SEEDS)
def test_seed_points_are_memory_bound_and_far_from_the_bandwidth_roof(point: str) -> None:
    v = analyze(**SEEDS[point], model=KIMI_K26, gpu=B300, n_gpus=8, context_tokens=2000,
                util_pct=100.0, power_w=360.0)
    assert v.label == "memory-bound"
    assert v.intensity < v.ridge / 2  # far on the bandwidth side of the ridge
    assert 0.03 < v.bw_fraction < 0.5 and v.headroom > 2  # ... and well below the bandwidth roof
    assert v.compute_fraction < 0.1
    text = " | ".join(v.evidence)
    assert "below the bandwidth roofline" in text
    assert "33% of 1100 W at 100% util: consistent with memory-bound" in text


def test_speculation_moves_more_bytes_per_output_token() -> None:
    ar = analyze(**SEEDS["AR c=1"], model=KIMI_K26, gpu=B300, n_gpus=8)
    dd = analyze(**SEEDS["DDTree c=1"], model=KIMI_K26, gpu=B300, n_gpus=8)
    assert ar.bytes_per_step == pytest.approx(32.8e9, rel=0.02)
    assert ar.summary == "memory-bound at 133 tok/s: 6.8% of peak HBM bandwidth, 14.7x below the roofline (1960 tok/s)"
    assert dd.bytes_per_step / 3 > ar.bytes_per_step  # the tree touches more experts than it accepts tokens
    assert dd.bw_fraction > ar.bw_fraction


def test_other_labels_need_their_evidence() -> None:
    kw = dict(model=KIMI_K26, gpu=B300, n_gpus=8)
    assert analyze(133, 1, util_pct=35.0, **kw).label == "launch-bound"
    assert analyze(133, 1, util_pct=100.0, comm_fraction=0.7, **kw).label == "communication-bound"
    # a dense 8B bf16 model pushing 8192 tokens through one step (prefill-like) on one H200
    dense = ModelSpec("dense-8b", dense_params=8e9, dense_bytes_per_param=2.0)
    v = analyze(20_000, 1, dense, GPUS["H200"], 1, tokens_per_step=8192)
    assert v.label == "compute-bound" and v.intensity > v.ridge


def test_analyze_results_labels_every_sweep_row() -> None:
    results = pd.DataFrame({"concurrency": [1, 64], "output_throughput": [285.0, 3795.0], "variant": "ddtree",
                            "tokens_per_chunk": [3.0, 3.0], "input_len": 1000, "output_len": 1000,
                            "gpu_util_pct": [100.0, 100.0], "gpu_power_w": [360.0, 360.0]})
    out = analyze_results(results, KIMI_K26, B300, 8, tree_tokens=16)
    assert list(out["roof_label"]) == ["memory-bound", "memory-bound"]
    assert (out["roof_bw_fraction"] < 0.5).all() and out["roof_evidence"].str.contains("consistent with memory-bound").all()


def test_gpu_table_has_the_known_gpus_with_sources() -> None:
    assert {"A100", "H100", "H200", "B200", "B300", "L40S", "RTX PRO 6000", "MI300X"} <= set(GPUS)
    assert all(g.source and g.interconnect and g.hbm_bytes_per_s >= 0.8e12 and g.power_limit_w >= 350
               for g in GPUS.values())
    assert GPUS["B300"].power_limit_w == 1100 and GPUS["H200"].hbm_bytes_per_s == 4.8e12
