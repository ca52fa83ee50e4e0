"""The SLO search (pure): bisection from the ladder's bracket, bounded, never a value twice, the bound in words."""

from __future__ import annotations

import pytest

from workbench.slosearch import bracket, next_probe, search


def oracle(limit: float, calls: list[float]):
    def probe(v: float) -> bool:
        calls.append(v)
        return v <= limit
    return probe


def test_bracket_reads_the_lowest_miss_and_the_highest_pass_below_it() -> None:
    assert bracket({1: True, 16: True, 64: False}) == (16, 64)
    # a noisy pass above a miss does not move the limit up
    assert bracket({1: True, 16: False, 32: True, 64: False}) == (1, 16)
    assert bracket({1: True, 4: True}) == (4, None)
    assert bracket({4: False, 8: False}) == (None, 4)


def test_concurrency_is_bisected_to_a_gap_of_one() -> None:
    calls: list[float] = []
    lim = search({1: True, 16: True, 64: False}, oracle(23, calls), variable="concurrency", max_points=8)
    assert (lim.passing, lim.failing, lim.bound) == (23, 24, "exact")
    assert calls == [40, 28, 22, 25, 23, 24] and list(lim.probes) == calls
    assert all(isinstance(v, int) for v in calls)  # the oracle is asked for whole concurrencies
    assert "held up to c=23 and missed at c=24 (6 search points)" in lim.words("TTFT p99 <= 2000 ms")


def test_the_number_of_points_is_bounded_and_the_bound_says_so() -> None:
    calls: list[float] = []
    lim = search({1: True, 16: True, 64: False}, oracle(23, calls), variable="concurrency", max_points=3)
    assert len(calls) == 3 and (lim.passing, lim.failing, lim.bound) == (22, 28, "within")
    assert "ran out" in lim.words("the SLOs")


def test_rates_stop_at_the_tolerance() -> None:
    calls: list[float] = []
    lim = search({1.0: True, 8.0: False}, oracle(5.3, calls), variable="rate", max_points=16, tolerance=0.05)
    assert lim.bound == "exact" and lim.passing is not None and lim.failing is not None
    assert lim.passing <= 5.3 < lim.failing and lim.failing - lim.passing <= 0.05 * lim.failing
    assert len(calls) < 16


def test_a_ladder_that_all_passes_is_a_lower_bound_and_nothing_is_probed() -> None:
    calls: list[float] = []
    lim = search({1: True, 4: True, 16: True}, oracle(100, calls), variable="concurrency", max_points=4)
    assert calls == [] and (lim.passing, lim.failing, lim.bound) == (16, None, "at_least")
    assert "raise the ladder" in lim.words("the SLOs")


def test_a_failing_lowest_point_is_bisected_down_and_c1_ends_it() -> None:
    calls: list[float] = []
    lim = search({8: False, 16: False}, oracle(2, calls), variable="concurrency", max_points=6)
    assert calls == [4, 2, 3] and (lim.passing, lim.failing, lim.bound) == (2, 3, "exact")
    calls.clear()
    lim = search({1: False, 4: False}, oracle(0, calls), variable="concurrency", max_points=6)
    assert calls == [] and lim.bound == "none" and "even c=1 missed" in lim.words("the SLOs")


def test_no_value_is_measured_twice() -> None:
    assert next_probe({1: True, 2: False}, "concurrency", 0.0) is None
    assert next_probe({10: True, 12: False, 11: True}, "concurrency", 0.0) is None
    assert next_probe({10: True, 13: False}, "concurrency", 0.0) == 11


@pytest.mark.parametrize("kw", [{"max_points": -1}, {"max_points": 2, "tolerance": 1.0}])
def test_bad_bounds_are_refused(kw) -> None:
    with pytest.raises(ValueError):
        search({1: True}, lambda v: True, variable="rate", **kw)
