import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, stats

from dpknn.mechanisms import _noise as noise
from dpknn.mechanisms._randomness import RandomSource, as_source


def chi_square_pvalue(draws, pmf, support):
    """Goodness of fit of integer draws to an exact pmf; the tails beyond ``support`` are pooled."""
    lo, hi = support
    values = np.arange(lo, hi + 1)
    probs = np.asarray(pmf(values), dtype=float)
    probs = np.concatenate([[max(1.0 - probs.sum(), 0.0) / 2], probs, [max(1.0 - probs.sum(), 0.0) / 2]])
    counts = np.concatenate([[(draws < lo).sum()], [(draws == v).sum() for v in values], [(draws > hi).sum()]])
    expected = probs * draws.size
    keep = expected >= 5
    obs, exp = counts[keep], expected[keep]
    obs = np.append(obs, counts[~keep].sum())
    exp = np.append(exp, expected[~keep].sum())
    if exp[-1] < 5:
        obs, exp = obs[:-1], exp[:-1]
    exp = exp * obs.sum() / exp.sum()
    return stats.chisquare(obs, exp).pvalue


N = 20_000


@pytest.mark.parametrize("scale", [0.7, 3.5, Fraction(7, 3)])
def test_discrete_laplace_matches_exact_pmf_and_test_has_power(scale):
    z = noise.discrete_laplace(scale, N, rng=np.random.default_rng(1))
    assert z.dtype == np.int64
    support = (-int(8 * float(scale)) - 2, int(8 * float(scale)) + 2)
    assert chi_square_pvalue(z, lambda v: noise.discrete_laplace_pmf(v, scale), support) > 1e-3
    assert chi_square_pvalue(z, lambda v: noise.discrete_laplace_pmf(v, float(scale) * 1.3), support) < 1e-6


@pytest.mark.parametrize("sigma2", [0.8, Fraction(9, 2), 30.0])
def test_discrete_gaussian_matches_exact_pmf_and_test_has_power(sigma2):
    z = noise.discrete_gaussian(sigma2, N, rng=np.random.default_rng(2))
    s = math.sqrt(float(sigma2))
    support = (-int(5 * s) - 2, int(5 * s) + 2)
    assert chi_square_pvalue(z, lambda v: noise.discrete_gaussian_pmf(v, sigma2), support) > 1e-3
    assert chi_square_pvalue(z, lambda v: noise.discrete_gaussian_pmf(v, float(sigma2) * 1.5), support) < 1e-6


def test_discrete_gaussian_norm_and_tail():
    for sigma2 in (0.3, 2.0, 1e4):
        z = np.arange(-int(60 * math.sqrt(sigma2)) - 60, int(60 * math.sqrt(sigma2)) + 61)
        pmf = noise.discrete_gaussian_pmf(z, sigma2)
        assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
        for x in (-3.5, -1, 0, 0.2, 4):
            assert noise.discrete_gaussian_tail(x, sigma2) == pytest.approx(pmf[z > x].sum(), abs=1e-12)


# 4-7 s a case: one runs in the README's command, the others in CI's slow step (pytest -m slow).
def _slow_but(keep, values):
    return [v if v == keep else pytest.param(v, marks=pytest.mark.slow) for v in values]


@pytest.mark.parametrize("gamma", _slow_but(2.0, [1.25, 2.0, 2.75, 4.0]))
@pytest.mark.parametrize("width", _slow_but(3.0, [0.6, 3.0]))
def test_rounded_cauchy_matches_exact_pmf(gamma, width):
    center = Fraction(1, 3)
    z = noise.rounded_generalized_cauchy(gamma, width, N, center=center, rng=np.random.default_rng(3))
    pmf = lambda v: noise.rounded_generalized_cauchy_pmf(v, gamma, width, float(center))  # noqa: E731
    wrong = lambda v: noise.rounded_generalized_cauchy_pmf(v, gamma, width * 1.3, float(center))  # noqa: E731
    support = (-int(12 * width) - 3, int(12 * width) + 3)
    assert chi_square_pvalue(z, pmf, support) > 1e-3
    assert chi_square_pvalue(z, wrong, support) < 1e-6


@pytest.mark.parametrize("gamma", _slow_but(10.0, [1.5, 4.0, 10.0]))
def test_rounded_cauchy_at_fine_grid_ks_against_continuous_cdf(gamma):
    width = 2**20
    z = noise.rounded_generalized_cauchy(gamma, width, N, rng=np.random.default_rng(4)) / width
    assert stats.kstest(z, lambda t: noise.generalized_cauchy_cdf(t, gamma)).pvalue > 1e-3
    # Power: the same law 20% wider is rejected.
    assert stats.kstest(z, lambda t: noise.generalized_cauchy_cdf(t / 1.2, gamma)).pvalue < 1e-6


@pytest.mark.parametrize("gamma", [Fraction(1, 3), 0.8, 2.5])
def test_bernoulli_exp_frequency(gamma):
    src = as_source(5)
    n = 20_000
    hits = sum(noise.bernoulli_exp(gamma, rng=src) for _ in range(n))
    p = math.exp(-float(gamma))
    assert abs(hits / n - p) < 4 * math.sqrt(p * (1 - p) / n)


def test_default_source_is_the_os_csprng_and_seeds_reproduce():
    assert as_source(None).secure and not as_source(3).secure
    draws = {noise.discrete_laplace(1e6) for _ in range(5)}
    assert len(draws) > 1
    assert noise.rounded_generalized_cauchy(4, 10.0, 5, rng=7).tolist() == \
        noise.rounded_generalized_cauchy(4, 10.0, 5, rng=7).tolist()
    src = RandomSource(np.random.default_rng(2))
    assert all(0 <= src.randbelow(7) < 7 for _ in range(100))
    assert src.randbits(130) < 2**130
    with pytest.raises(TypeError, match="RandomState"):
        as_source(np.random.RandomState(0))


def test_randbelow_is_uniform():
    src = RandomSource(np.random.default_rng(9))
    x = np.array([src.randbelow(6) for _ in range(12_000)])
    assert stats.chisquare(np.bincount(x, minlength=6)).pvalue > 1e-3


def test_sampler_validation():
    with pytest.raises(ValueError, match="multiple of 1/4"):
        noise.rounded_generalized_cauchy(1.3, 1.0, rng=0)
    with pytest.raises(ValueError, match="> 1"):
        noise.rounded_generalized_cauchy(1.0, 1.0, rng=0)
    with pytest.raises(ValueError, match="scale"):
        noise.discrete_laplace(0.0, rng=0)
    with pytest.raises(ValueError, match="scale"):
        noise.discrete_laplace(float("nan"), rng=0)
    with pytest.raises(ValueError, match="width"):
        noise.rounded_generalized_cauchy(2, -1.0, rng=0)


@pytest.mark.parametrize("gamma", [1.5, 3.0, 7.5])
def test_cdf_is_the_integral_of_the_density(gamma):
    z = 2 * math.pi / (gamma * math.sin(math.pi / gamma))
    assert integrate.quad(lambda t: 2 / (1 + t**gamma), 0, np.inf)[0] == pytest.approx(z, rel=1e-7)
    for x in (-3.0, -0.4, 0.0, 0.7, 5.0):
        direct = integrate.quad(lambda t: 1 / (1 + abs(t) ** gamma), -np.inf, x)[0] / z
        assert noise.generalized_cauchy_cdf(x, gamma) == pytest.approx(direct, abs=1e-8)
        assert noise.generalized_cauchy_quantile(noise.generalized_cauchy_cdf(x, gamma), gamma) == \
            pytest.approx(x, abs=1e-7)


def test_moments():
    for gamma in (3.5, 5.0, 9.0):
        num = integrate.quad(lambda t, g=gamma: t * t / (1 + t**g), 0, np.inf)[0]
        den = integrate.quad(lambda t, g=gamma: 1 / (1 + t**g), 0, np.inf)[0]
        assert noise.generalized_cauchy_moment(gamma, 2) == pytest.approx(num / den, rel=1e-7)
    assert noise.generalized_cauchy_moment(3.0, 2) == math.inf
