"""Student-t quantiles and the charts' intervals against reference values computed by
``scipy.stats.t.ppf`` / ``scipy.stats.t.interval`` (scipy 1.x, not a dependency) and closed forms."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from workbench.plots import _mean_ci
from workbench.tinterval import mean_interval, t_cdf, t_quantile

# scipy.stats.t.ppf(0.975, df)
SCIPY_T975 = {1: 12.706204736174694, 2: 4.302652729749462, 3: 3.1824463052837078, 4: 2.7764451051977934,
              5: 2.5705818356363146, 9: 2.262157162798205, 29: 2.045229642132703, 100: 1.9839715185235518}


@pytest.mark.parametrize(("df", "expected"), sorted(SCIPY_T975.items()))
def test_quantiles_match_scipy(df: int, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, rel=1e-9)
    assert t_quantile(0.025, df) == pytest.approx(-expected, rel=1e-9)


@pytest.mark.parametrize("p", [0.6, 0.9, 0.95, 0.975, 0.995])
def test_quantiles_match_the_closed_forms(p: float) -> None:
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)  # Cauchy
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)
    alpha = 4 * p * (1 - p)
    q = math.cos(math.acos(math.sqrt(alpha)) / 3) / math.sqrt(alpha)
    assert t_quantile(p, 4) == pytest.approx(2 * math.sqrt(q - 1), rel=1e-9)


def test_cdf_is_symmetric_and_tends_to_the_normal() -> None:
    assert t_cdf(0.0, 3) == pytest.approx(0.5)
    assert t_cdf(1.5, 7) + t_cdf(-1.5, 7) == pytest.approx(1.0)
    assert t_quantile(0.975, 1e6) == pytest.approx(1.959964, abs=1e-5)
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)


def test_interval_of_three_repeats_matches_scipy() -> None:
    values = [1210.0, 1188.5, 1251.0]
    s = pd.Series(values)
    lo, hi = mean_interval(s.mean(), s.std(), 3)
    # scipy.stats.t.interval(0.95, 2, loc=mean, scale=sem)
    assert (lo, hi) == (pytest.approx(1137.6212929406774, rel=1e-12), pytest.approx(1295.3787070593226, rel=1e-12))
    assert all(math.isnan(b) for b in mean_interval(5.0, math.nan, 1))


def test_chart_bands_are_t_intervals() -> None:
    df = pd.DataFrame({"concurrency": [4, 4, 4, 8], "variant": ["a"] * 4, "tput": [1210.0, 1188.5, 1251.0, 9.0]})
    out = _mean_ci(df, ["concurrency", "variant"], "tput").set_index("concurrency")
    assert out.loc[4, "lo"] == pytest.approx(1137.6212929406774) and out.loc[4, "hi"] == pytest.approx(1295.3787070593226)
    half_normal = 1.96 * out.loc[4, "std"] / math.sqrt(3)
    assert (out.loc[4, "hi"] - out.loc[4, "tput"]) / half_normal == pytest.approx(4.3027 / 1.96, rel=1e-4)
    assert math.isnan(out.loc[8, "lo"]) and math.isnan(out.loc[8, "hi"])
