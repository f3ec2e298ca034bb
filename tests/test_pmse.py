"""pMSE: against its formula with an independent logistic fit, its bounds, and its null."""

import numpy as np
import pandas as pd
import pytest

from dpknn.metrics import pmse
from dpknn.metrics._pmse import propensity_features


def _table(rng, n, shift=0.0):
    return pd.DataFrame({"x": rng.normal(shift, 1, n), "y": rng.exponential(1, n),
                         "g": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])})


def test_pmse_is_the_formula_on_statsmodels_propensities():
    import statsmodels.api as sm

    rng = np.random.default_rng(0)
    real, rel = _table(rng, 600), _table(rng, 300, shift=0.3)
    res = pmse(real, rel)
    x, names = propensity_features(real, rel)
    t = np.r_[np.zeros(600), np.ones(300)]
    p = sm.Logit(t, sm.add_constant(x)).fit(disp=0).predict()
    c = 300 / 900
    assert res.c == pytest.approx(c)
    assert res.pmse == pytest.approx(np.mean((p - c) ** 2), rel=1e-4)
    assert res.k == 1 + len(names) == 5
    assert res.null_mean == pytest.approx(4 * (1 - c) ** 2 * c / 900)
    assert res.standardized == pytest.approx((res.pmse - res.null_mean) / (np.sqrt(8) * (1 - c) ** 2 * c / 900))
    assert res.ratio == pytest.approx(res.pmse / res.null_mean)


def test_bounds_zero_for_identical_and_c1mc_for_separated_tables():
    rng = np.random.default_rng(1)
    real = _table(rng, 200)
    assert pmse(real, real.copy()).pmse == pytest.approx(0.0, abs=1e-10)
    far = pd.DataFrame({"x": np.r_[np.zeros(100), np.ones(50)]})
    res = pmse(far.iloc[:100], far.iloc[100:], model="cart", rng=0)
    assert res.pmse == pytest.approx(res.c * (1 - res.c))


def test_collinear_features_do_not_count_in_k():
    rng = np.random.default_rng(2)
    real, rel = _table(rng, 300), _table(rng, 300)
    for df in (real, rel):
        df["x2"] = 2 * df["x"]
    assert pmse(real, rel).k == 5


def test_independent_samples_ratio_is_about_one_over_one_minus_c():
    # The module docstring's reading guide: E[pMSE] = (k − 1) c (1 − c)/N for independent samples.
    rng = np.random.default_rng(3)
    ratios = [pmse(_table(rng, 1200), _table(rng, 600)).ratio for _ in range(40)]
    # ratio·(1 − c) ≈ χ²_{k−1}/(k − 1): mean 1, SD √(2/4) per draw
    assert np.mean(ratios) * (1 - 1 / 3) == pytest.approx(1.0, abs=4 * np.sqrt(0.5 / 40))


def test_permutation_null_agrees_with_the_analytic_one():
    rng = np.random.default_rng(4)
    real, rel = _table(rng, 1500), _table(rng, 1500)
    analytic = pmse(real, rel)
    perm = pmse(real, rel, null="permutation", n_permutations=30, rng=1)
    assert perm.pmse == analytic.pmse
    assert perm.null_mean == pytest.approx(analytic.null_mean, rel=0.35)
    assert np.isnan(perm.standardized)


def test_cart_finds_a_shift_the_null_does_not():
    rng = np.random.default_rng(5)
    real = _table(rng, 1500)
    same = pmse(real, _table(rng, 1500), model="cart", n_permutations=10, rng=0)
    shifted = pmse(real, _table(rng, 1500, shift=1.0), model="cart", n_permutations=10, rng=0)
    assert same.null == "permutation" and same.ratio < 3
    assert shifted.ratio > 10 * same.ratio


def test_missing_values_and_categories_are_features():
    rng = np.random.default_rng(6)
    real, rel = _table(rng, 300), _table(rng, 300)
    real.loc[:99, "x"] = np.nan    # the real table has gaps the released one lacks
    before = real.copy()
    x, names = propensity_features(real, rel)
    assert "x_missing" in names and "g[b]" in names and x.shape == (600, len(names))
    assert pmse(real, rel).ratio > 20   # the classifier sees the missingness pattern
    pd.testing.assert_frame_equal(real, before)


def test_seeded_results_repeat_and_errors_name_the_parameter():
    rng = np.random.default_rng(7)
    real, rel = _table(rng, 400), _table(rng, 400)
    assert pmse(real, rel, model="cart", rng=3) == pmse(real, rel, model="cart", rng=3)
    with pytest.raises(ValueError, match="model"):
        pmse(real, rel, model="forest")
    with pytest.raises(ValueError, match="null='analytic'"):
        pmse(real, rel, model="cart", null="analytic")
    with pytest.raises(ValueError, match="both tables must hold"):
        pmse(real, rel[["x"]])
