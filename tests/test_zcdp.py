"""zCDP: the conversion to (ε, δ), the discrete Gaussian's ρ (numerical certificate), and its mechanism."""

import math

import numpy as np
import pytest
from privacy_check import hockey_stick
from scipy import stats
from scipy.special import logsumexp

from dpknn.accounting import zcdp_delta, zcdp_epsilon, zcdp_rho
from dpknn.accounting._zcdp import exponential_rho
from dpknn.mechanisms import DiscreteGaussian
from dpknn.mechanisms import _noise as noise


def _gaussian_delta(sigma, epsilon):
    """Exact δ(ε) of the continuous Gaussian mechanism with sensitivity 1 (Balle and Wang 2018)."""
    return stats.norm.cdf(1 / (2 * sigma) - epsilon * sigma) - math.exp(epsilon) * stats.norm.cdf(
        -1 / (2 * sigma) - epsilon * sigma)


def _discrete_gaussian(sigma2, lo=-4000, hi=4000):
    z = np.arange(lo, hi + 1, dtype=np.float64)
    p = np.exp(-z * z / (2 * sigma2))
    return z, p / p.sum()


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0, 10.0, 40.0])
@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 3.0])
def test_conversion_bounds_the_exact_gaussian_delta(sigma, epsilon):
    # Certificate: the conversion is an upper bound on the true δ of a 1/(2σ²)-zCDP mechanism,
    # and not a wild one (within a factor 10 where δ is not negligible).
    rho = 1 / (2 * sigma**2)
    exact = _gaussian_delta(sigma, epsilon)
    bound = zcdp_delta(rho, epsilon)
    assert exact <= bound * (1 + 1e-9)
    if exact > 1e-12:
        assert bound <= 10 * exact


@pytest.mark.parametrize("sigma2", [0.3, 1.0, 4.0, 25.0])
@pytest.mark.parametrize("alpha", [1.5, 2.0, 5.0, 20.0])
def test_discrete_gaussian_renyi_divergence_certificate(sigma2, alpha):
    # CKS 2020, Theorem 4: D_α(N_Z(1, σ²) ‖ N_Z(0, σ²)) <= α/(2σ²) for an integer shift (summed
    # exactly here), with near equality once σ >= 1 (so the certificate is not vacuous).
    z = np.arange(-4000, 4001, dtype=np.float64)
    log_p = -z * z / (2 * sigma2)
    log_p -= logsumexp(log_p)
    log_q = -((z - 1) ** 2) / (2 * sigma2)
    log_q -= logsumexp(log_q)
    d = logsumexp(alpha * log_q + (1 - alpha) * log_p) / (alpha - 1)
    assert d <= alpha / (2 * sigma2) + 1e-9
    if sigma2 >= 1:
        assert d >= alpha / (2 * sigma2) * (1 - 1e-6)


@pytest.mark.parametrize("sigma2", [1.0, 9.0])
def test_discrete_gaussian_hockey_stick_is_below_the_converted_delta(sigma2):
    _, p = _discrete_gaussian(sigma2)
    q = np.roll(p, 1)
    for eps in (0.2, 1.0, 2.0):
        exact = max(np.clip(p - math.exp(eps) * q, 0, None).sum(), np.clip(q - math.exp(eps) * p, 0, None).sum())
        assert exact <= zcdp_delta(1 / (2 * sigma2), eps) * (1 + 1e-9)


def test_negative_control_a_rho_too_small_fails_the_certificate():
    # Claiming half the true ρ would give a δ below the mechanism's true δ: the test above can fail.
    sigma, eps = 3.0, 1.0
    assert _gaussian_delta(sigma, eps) > zcdp_delta(1 / (4 * sigma**2), eps)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-6])
def test_rho_and_epsilon_invert_the_conversion(epsilon, delta):
    rho = zcdp_rho(epsilon, delta)
    assert zcdp_delta(rho, epsilon) <= delta
    assert zcdp_delta(rho * (1 + 1e-6), epsilon) > delta
    eps = zcdp_epsilon(rho, delta)
    assert eps >= epsilon * (1 - 1e-9) and eps <= epsilon * (1 + 1e-6)
    assert zcdp_delta(rho, eps) <= delta


def test_rho_of_mst_settings():
    # ε = 1, δ = 1e-9 (MST's and AIM's default): ρ ≈ 0.01497 (the same conversion as private-pgm's cdp_rho).
    assert zcdp_rho(1.0, 1e-9) == pytest.approx(0.014973, rel=1e-4)
    assert exponential_rho(2.0) == 0.5


def test_conversion_edges_and_errors():
    assert zcdp_delta(0, 1.0) == 0.0 and zcdp_epsilon(0, 1e-9) == 0.0
    assert zcdp_delta(100.0, 0.0) == 1.0
    with pytest.raises(ValueError, match="delta"):
        zcdp_rho(1.0, 0.0)
    with pytest.raises(ValueError, match="epsilon"):
        zcdp_rho(-1.0, 1e-9)
    with pytest.raises(ValueError, match="rho"):
        zcdp_delta(-0.1, 1.0)


def test_discrete_gaussian_mechanism_parameters():
    m = DiscreteGaussian(rho=0.02)
    assert m.sigma2 == pytest.approx(25.0) and m.sigma == pytest.approx(5.0)
    assert m.epsilon == pytest.approx(zcdp_epsilon(0.02, 1e-9))
    assert "rho=0.02" in repr(m) and m.public_params()["sigma"] == pytest.approx(5.0)
    out = m.release_array(np.array([[1, 2], [3, 4]]), rng=0)
    assert out.shape == (2, 2) and out.dtype == np.int64
    r = m.release(10, rng=0)
    assert isinstance(r.value, int) and r.delta == 1e-9
    with pytest.raises(TypeError, match="integers"):
        m.release_array(np.array([0.5]))
    with pytest.raises(TypeError, match="integers"):
        m.release(0.5)
    with pytest.raises(ValueError, match="rho"):
        DiscreteGaussian(rho=0)
    with pytest.raises(ValueError, match="sensitivity"):
        DiscreteGaussian(rho=1, sensitivity=0)


def test_discrete_gaussian_noise_follows_its_distribution():
    m = DiscreteGaussian(rho=0.125)   # σ² = 4
    z = np.asarray(m.noise(20_000, rng=1))
    values, counts = np.unique(z, return_counts=True)
    expected = noise.discrete_gaussian_pmf(values, 4) * z.size
    keep = expected >= 20
    chi2 = float((((counts[keep] - expected[keep]) ** 2) / expected[keep]).sum())
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-4


# Issue 47, finding 13: among the suite's slowest statistical checks; runs in CI's slow step (pytest -m slow).
@pytest.mark.slow
def test_empirical_privacy_on_neighbouring_counts_with_negative_control():
    # Worst case: a count that is 0 on one data set and 1 on its neighbour. The estimated
    # δ at the mechanism's ε(δ = 0.01) stays near the bound; a mechanism claiming 9x its ρ
    # (σ three times too small) is caught at that same ε.
    rho, delta = 0.5, 0.01
    eps = zcdp_epsilon(rho, delta)
    m = DiscreteGaussian(rho=rho, delta=delta)
    a = m.release_array(np.zeros(30_000, dtype=np.int64), rng=2)
    b = m.release_array(np.ones(30_000, dtype=np.int64), rng=3)
    assert hockey_stick(a, b, eps) <= delta + 0.01
    leaky = DiscreteGaussian(rho=9 * rho)
    a = leaky.release_array(np.zeros(30_000, dtype=np.int64), rng=2)
    b = leaky.release_array(np.ones(30_000, dtype=np.int64), rng=3)
    assert hockey_stick(a, b, eps) > delta + 0.05


def test_the_conversion_ends_for_extreme_budgets():
    """Issue 47, finding 10: zcdp_rho(1e-8, 1e-9) never returned (the orders stopped at 1 + 10^6, so no ρ > 0
    met δ and the bisection halved forever), and dpknn synth --epsilon 1e-8 hung. Every budget now gets the
    largest ρ whose δ holds, in well under a second."""
    import time

    for eps, delta in [(1e-8, 1e-9), (1e-5, 1e-12), (1e-300, 1e-9), (1e200, 1e-9)]:
        start = time.perf_counter()
        rho = zcdp_rho(eps, delta)
        assert time.perf_counter() - start < 5
        assert rho > 0 and zcdp_delta(rho, eps) <= delta
        # Near the largest valid ρ: 1.01 ρ breaks δ (the leading term is ρ ≈ ε² / (4 ln(1/δ)) for small ε).
        assert zcdp_delta(rho * 1.01, eps) > delta
    assert zcdp_rho(1e-8, 1e-9) == pytest.approx(1e-16 / (4 * math.log(1e9)), rel=0.2)
