"""The sweep's pure parts: the grid, culprit skipping, the Pareto front, the best under SLOs, t intervals."""

from __future__ import annotations

import math
import statistics

import pytest

from workbench.configsweep import (
    Slo,
    best_under_slo,
    expand_grid,
    holds_culprit,
    mean_ci,
    pareto_front,
    t95,
)
from workbench.errors import ConfigError


def test_grid_sets_every_flag_in_every_configuration() -> None:
    configs = expand_grid({"--cuda-graph-max-bs": ["64", 128], "--enable-nccl-nvls": [False, True]})
    assert configs == [
        (("--cuda-graph-max-bs", "64"), ("--enable-nccl-nvls", None)),
        (("--cuda-graph-max-bs", "64"), ("--enable-nccl-nvls", True)),
        (("--cuda-graph-max-bs", "128"), ("--enable-nccl-nvls", None)),
        (("--cuda-graph-max-bs", "128"), ("--enable-nccl-nvls", True)),
    ]


@pytest.mark.parametrize("grid", [{}, {"--x": []}, {"--x": "64"}, {"ep-size": ["8"]}, {"--a b": ["1"]},
                                  {"--x": ["1", "1"]}, {"--x": [{"a": 1}]}, {f"--f{i}": ["1", "2"] for i in range(7)}])
def test_bad_grids_are_refused(grid) -> None:
    with pytest.raises(ConfigError):
        expand_grid(grid)


def test_culprits_match_whole_sets_only() -> None:
    cfg = (("--ep-size", "8"), ("--enable-nccl-nvls", True), ("--tp", "8"))
    assert holds_culprit(cfg, [[("--ep-size", "8"), ("--enable-nccl-nvls", True)]]) is not None
    assert holds_culprit(cfg, [[("--ep-size", "4")]]) is None
    assert holds_culprit((("--ep-size", "1"),), [[("--ep-size", "8")]]) is None


def test_pareto_front_keeps_the_undominated() -> None:
    pts = [{"tok_s_per_user": 100, "tok_s_per_gpu": 50}, {"tok_s_per_user": 50, "tok_s_per_gpu": 200},
           {"tok_s_per_user": 60, "tok_s_per_gpu": 40}, {"tok_s_per_user": 100, "tok_s_per_gpu": 60},
           {"tok_s_per_user": None, "tok_s_per_gpu": 999}]
    assert pareto_front(pts) == [1, 3]


def test_best_under_slo() -> None:
    pts = [{"output_tok_s": 900, "ttft_p99_ms": 3000, "tpot_p99_ms": 20},
           {"output_tok_s": 700, "ttft_p99_ms": 1500, "tpot_p99_ms": 30},
           {"output_tok_s": 800, "ttft_p99_ms": 1800, "tpot_p99_ms": 60}]
    assert best_under_slo(pts, Slo(2000, 50)) == 1
    assert best_under_slo(pts, Slo()) == 0
    assert best_under_slo(pts, Slo(100, None)) is None
    assert Slo(2000, 50).met(pts[2]) == (False, "tpot_p99_ms 60.0 > 50")


def test_t_interval_against_reference_values() -> None:
    # t(0.975, 2) = 4.302653 (scipy.stats.t.ppf); for [10, 12, 14]: mean 12, sd 2, half = 4.3027 * 2 / sqrt(3)
    m, lo, hi = mean_ci([10, 12, 14])
    assert m == 12 and math.isclose(hi - m, 4.302653 * 2 / math.sqrt(3), rel_tol=1e-4)
    assert math.isclose(t95(10), 2.262157, rel_tol=1e-3) and math.isclose(t95(100), 1.984217, rel_tol=1e-4)
    assert math.isnan(mean_ci([5.0])[1])
    xs = [1.0, 2.0, 4.0, 8.0]
    m, lo, hi = mean_ci(xs)
    assert math.isclose(hi - lo, 2 * 3.182446 * statistics.stdev(xs) / 2, rel_tol=1e-3)  # 3-decimal table
