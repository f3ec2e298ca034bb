"""Combining rules: hand-worked cases of each formula and coverage of their intervals in simulation."""

import numpy as np
import pytest
from scipy import stats

from dpknn.metrics._combining import (
    CombinedEstimate,
    combine_fully_synthetic,
    combine_imputations,
    combine_partially_synthetic,
)

Q, U = [10.0, 12.0, 14.0], [4.0, 4.0, 4.0]   # q̄ = 12, ū = 4, b = 4, m = 3


def _check(res, t, df):
    assert isinstance(res, CombinedEstimate)
    assert res.estimate == pytest.approx(12.0)
    assert (res.within, res.between, res.m) == (pytest.approx(4.0), pytest.approx(4.0), 3)
    assert res.variance == pytest.approx(t)
    assert res.df == pytest.approx(df)
    half = stats.t.ppf(0.975, df) * np.sqrt(t)
    assert (res.lower, res.upper) == (pytest.approx(12 - half), pytest.approx(12 + half))


def test_rubin_worked_case():
    # T = 4 + (4/3)·4 = 28/3; r = (16/3)/4 = 4/3; ν = 2 (1 + 3/4)² = 6.125
    _check(combine_imputations(Q, U), 28 / 3, 6.125)


def test_reiter_partially_synthetic_worked_case():
    # T = 4 + 4/3 = 16/3; r = b/(m ū) = 1/3; ν = 2 (1 + 3)² = 32
    _check(combine_partially_synthetic(Q, U), 16 / 3, 32.0)


def test_raghunathan_fully_synthetic_worked_case():
    # T = (4/3)·4 − 4 = 4/3; r = 4/3; ν = 2 (1 − 3/4)² = 0.125
    res = combine_fully_synthetic(Q, U)
    _check(res, 4 / 3, 0.125)
    assert not res.adjusted


def test_fully_synthetic_negative_variance_is_adjusted():
    q, u = [10.0, 10.1, 10.2], [4.0, 4.0, 4.0]      # (4/3)·0.01 − 4 < 0
    res = combine_fully_synthetic(q, u)
    assert res.adjusted and res.variance == pytest.approx(4.0) and np.isinf(res.df)
    assert res.upper - res.estimate == pytest.approx(stats.norm.ppf(0.975) * 2.0)
    half = combine_fully_synthetic(q, u, n_synthetic=500, n_original=1000)
    assert half.variance == pytest.approx(2.0)
    with pytest.raises(ValueError, match="both"):
        combine_fully_synthetic(q, u, n_synthetic=500)


def test_barnard_rubin_small_sample_df():
    dfcom = 20.0
    res = combine_imputations(Q, U, dfcom=dfcom)
    lam = (4 / 3) * 4 / (28 / 3)
    obs = (dfcom + 1) / (dfcom + 3) * dfcom * (1 - lam)
    assert res.df == pytest.approx(1 / (1 / 6.125 + 1 / obs))
    assert combine_imputations(Q, U, dfcom=1e12).df == pytest.approx(6.125, rel=1e-6)


def test_no_between_copy_spread_gives_the_normal():
    res = combine_imputations([3.0, 3.0, 3.0], [1.0, 1.0, 1.0])
    assert np.isinf(res.df) and res.variance == pytest.approx(1.0)
    assert res.upper == pytest.approx(3 + stats.norm.ppf(0.975))


def test_several_parameters_combine_one_at_a_time():
    rng = np.random.default_rng(0)
    q, u = rng.normal(size=(6, 3)), rng.uniform(0.5, 2, size=(6, 3))
    for rule in (combine_imputations, combine_partially_synthetic, combine_fully_synthetic):
        both = rule(q, u, level=0.9)
        for j in range(3):
            one = rule(q[:, j], u[:, j], level=0.9)
            for field in ("estimate", "variance", "df", "lower", "upper"):
                assert getattr(both, field)[j] == pytest.approx(getattr(one, field))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least m = 2"):
        combine_imputations([1.0], [1.0])
    with pytest.raises(ValueError, match="shape"):
        combine_imputations([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match=">= 0"):
        combine_imputations([1.0, 2.0], [1.0, -1.0])
    with pytest.raises(ValueError, match="level"):
        combine_imputations([1.0, 2.0], [1.0, 1.0], level=1.5)


# --- coverage in simulation: the rules are right only if their intervals cover ------------------
def _posterior(y, rng, reps):
    """Draws of (μ, σ) from the normal model's posterior under the flat prior, one per row of y."""
    n = y.shape[1]
    s2 = y.var(axis=1, ddof=1)
    sigma2 = (n - 1) * s2[:, None] / rng.chisquare(n - 1, size=(len(y), reps))
    mu = y.mean(axis=1)[:, None] + rng.normal(size=sigma2.shape) * np.sqrt(sigma2 / n)
    return mu, np.sqrt(sigma2)


def _coverage(rule, q, u, truth):
    hits = [(r.lower <= truth <= r.upper) for r in (rule(q[i], u[i]) for i in range(len(q)))]
    return float(np.mean(hits))


N_REPS, N, M, MU = 1500, 60, 10, 3.0


def test_rubin_intervals_cover_for_proper_imputation():
    rng = np.random.default_rng(1)
    y = rng.normal(MU, 1.0, size=(N_REPS, N))
    n_obs = 40   # the first 40 observed, the rest imputed (MCAR)
    mu, sd = _posterior(y[:, :n_obs], rng, M)
    imputed = mu[:, :, None] + sd[:, :, None] * rng.normal(size=(N_REPS, M, N - n_obs))
    full = np.concatenate([np.broadcast_to(y[:, None, :n_obs], (N_REPS, M, n_obs)), imputed], axis=2)
    q, u = full.mean(axis=2), full.var(axis=2, ddof=1) / N
    cover = _coverage(combine_imputations, q, u, MU)
    assert abs(cover - 0.95) < 4 * np.sqrt(0.95 * 0.05 / N_REPS)
    # Negative control: ignoring the between-imputation variance under-covers.
    naive = np.mean(np.abs(q.mean(axis=1) - MU) <= 1.96 * np.sqrt(u.mean(axis=1)))
    assert naive < 0.95 - 4 * np.sqrt(0.95 * 0.05 / N_REPS)


def _synthetic(seed):
    # Every value replaced by a posterior-predictive draw: b ≈ 2ū, where T_p and T_f agree in expectation.
    rng = np.random.default_rng(seed)
    y = rng.normal(MU, 1.0, size=(N_REPS, N))
    mu, sd = _posterior(y, rng, 20)
    syn = mu[:, :, None] + sd[:, :, None] * rng.normal(size=(N_REPS, 20, N))
    return syn.mean(axis=2), syn.var(axis=2, ddof=1) / N


def test_partially_synthetic_intervals_cover():
    q, u = _synthetic(2)
    cover = _coverage(combine_partially_synthetic, q, u, MU)
    assert abs(cover - 0.95) < 4 * np.sqrt(0.95 * 0.05 / N_REPS)
    # Negative control: Rubin's imputation variance, ū + (1 + 1/m) b, over-covers partially synthetic data.
    assert _coverage(combine_imputations, q, u, MU) > 0.95 + 4 * np.sqrt(0.95 * 0.05 / N_REPS)


def test_fully_synthetic_intervals_cover_conservatively():
    # T_f is close to the true variance here, but ν_f = (m − 1)(1 − 1/r)² is about 5 at r ≈ 2: the t
    # quantile is wide and the intervals over-cover (measured 0.996 at m = 20, n = 60).
    q, u = _synthetic(3)
    cover = _coverage(combine_fully_synthetic, q, u, MU)
    assert 0.95 - 4 * np.sqrt(0.95 * 0.05 / N_REPS) < cover < 1.0
    t = np.array([combine_fully_synthetic(q[i], u[i]).variance for i in range(len(q))])
    true_var = np.var(q.mean(axis=1) - MU)
    assert np.mean(t) == pytest.approx(true_var, rel=0.2)
