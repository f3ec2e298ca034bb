import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpknn import noise


@pytest.mark.parametrize("gamma", [1.5, 2.0, 4.0, 10.0])
def test_generalized_cauchy_ks_against_exact_cdf(gamma):
    x = noise.generalized_cauchy(gamma, 100_000, rng=np.random.default_rng(int(gamma * 10)))
    assert stats.kstest(x, lambda t: noise.generalized_cauchy_cdf(t, gamma)).pvalue > 1e-3
    # The test has power: the neighbouring gamma is rejected.
    wrong = gamma * 1.3
    assert stats.kstest(x, lambda t: noise.generalized_cauchy_cdf(t, wrong)).pvalue < 1e-6


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


def test_two_sided_geometric_matches_exact_cdf():
    alpha = math.exp(-0.7)
    z = noise.two_sided_geometric(alpha, 200_000, rng=np.random.default_rng(1))
    assert z.dtype == np.int64
    grid = np.arange(-15, 16)
    emp = np.array([(z <= g).mean() for g in grid])
    assert np.max(np.abs(emp - noise.two_sided_geometric_cdf(grid, alpha))) < 0.005
    assert z.var() == pytest.approx(2 * alpha / (1 - alpha) ** 2, rel=0.03)
    pmf = noise.two_sided_geometric_cdf(grid, alpha) - noise.two_sided_geometric_cdf(grid - 1, alpha)
    np.testing.assert_allclose(pmf, (1 - alpha) / (1 + alpha) * alpha ** np.abs(grid), rtol=1e-10)


def test_laplace_and_gaussian_ks():
    rng = np.random.default_rng(2)
    assert stats.kstest(noise.laplace(2.0, 100_000, rng=rng), stats.laplace(scale=2.0).cdf).pvalue > 1e-3
    assert stats.kstest(noise.gaussian(3.0, 100_000, rng=rng), stats.norm(scale=3.0).cdf).pvalue > 1e-3


def test_reproducible_with_seed_and_validated():
    assert noise.generalized_cauchy(4.0, rng=5) == noise.generalized_cauchy(4.0, rng=5)
    with pytest.raises(ValueError, match="gamma"):
        noise.generalized_cauchy(1.0, rng=0)
    with pytest.raises(ValueError, match="scale"):
        noise.laplace(0.0, rng=0)
    with pytest.raises(ValueError, match="alpha"):
        noise.two_sided_geometric(1.0, rng=0)
