import math
import warnings

import numpy as np
import pytest
from scipy import integrate

from dpknn.accounting import rdp_epsilon, sgm_sigma
from dpknn.accounting._rdp import DEFAULT_ORDERS, sgm_rdp


@pytest.mark.parametrize(("q", "sigma", "steps", "delta", "expected"), [
    (0.01, 1.1, 1000, 1e-5, 1.7117702),
    (0.004, 1.0, 10000, 1e-5, 2.389698),
    (1.0, 5.0, 1, 1e-5, 0.794522),
    (0.1, 2.0, 100, 1e-6, 2.914174),
])
def test_anchors_from_dp_accounting(q, sigma, steps, delta, expected):
    assert rdp_epsilon(q=q, sigma=sigma, steps=steps, delta=delta).epsilon == pytest.approx(expected, abs=2e-6)


def test_paper_conversion_and_per_step_values():
    res = rdp_epsilon(q=0.01, sigma=1.1, steps=1000, delta=1e-5)
    assert res.order == 9.6
    paper = rdp_epsilon(q=0.01, sigma=1.1, steps=1000, delta=1e-5, conversion="paper")
    assert paper.epsilon == pytest.approx(2.0820846, abs=2e-6) and paper.order == 9.8
    got = sgm_rdp(q=0.01, sigma=1.1, orders=[2, 8, 16, 32])
    np.testing.assert_allclose(got, [1.28510e-4, 5.84070e-4, 1.699827, 8.469416], rtol=1e-5)


def quadrature_log_a(q, sigma, alpha):
    """ln E_{z~N(0,σ²)}[((1-q) + q exp((2z-1)/(2σ²)))^α] on a fine grid, in the log domain."""
    z = np.linspace(-60 * sigma - 50, 60 * sigma + 50 + alpha, 2_000_001)
    log_density = -z * z / (2 * sigma**2) - math.log(sigma * math.sqrt(2 * math.pi))
    log_ratio = np.logaddexp(math.log1p(-q), math.log(q) + (2 * z - 1) / (2 * sigma**2))
    g = log_density + alpha * log_ratio
    m = g.max()
    return m + math.log(integrate.trapezoid(np.exp(g - m), z))


@pytest.mark.parametrize(("q", "sigma", "alpha"), [
    (0.5, 0.6, 1.1), (0.5, 0.6, 1.5), (0.1, 1.0, 1.3), (0.01, 1.1, 9.6), (0.001, 0.6, 2.5),
    (0.5, 8.0, 1.5), (0.1, 0.6, 5.5), (0.2, 1.3, 3.0),
])
def test_fractional_and_integer_orders_match_numerical_integration(q, sigma, alpha):
    # Includes orders where dp-accounting's series gives up (q=0.5, σ=0.6, α=1.1).
    got = sgm_rdp(q=q, sigma=sigma, orders=[alpha])[0] * (alpha - 1)
    assert got == pytest.approx(quadrature_log_a(q, sigma, alpha), rel=1e-6)


def test_matches_dp_accounting_over_a_grid():
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as rpa

    compared = 0
    for q in (0.001, 0.01, 0.05, 0.3):
        for sigma in (0.8, 1.1, 2.0, 5.0):
            for steps in (1, 100, 10_000):
                acc = rpa.RdpAccountant(list(DEFAULT_ORDERS))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    acc.compose(dp_accounting.SelfComposedDpEvent(
                        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps))
                theirs = np.asarray(acc._rdp)
                ours = steps * sgm_rdp(q=q, sigma=sigma)
                orders = np.asarray(DEFAULT_ORDERS)
                ok = np.isfinite(theirs)   # orders where their series converged
                integer = ok & (orders == np.round(orders))
                np.testing.assert_allclose(ours[integer], theirs[integer], rtol=1e-6, atol=1e-12)
                # At fractional orders their series stops on an approximate criterion and overestimates
                # by up to 1e-4 relative (more near order 1); ours matches numerical integration there (test
                # above) and is never larger.
                frac = ok & ~integer
                assert np.all(ours[frac] <= theirs[frac] * (1 + 1e-9) + 1e-15)
                for delta in (1e-5, 1e-8):
                    mine = rdp_epsilon(q=q, sigma=sigma, steps=steps, delta=delta)
                    other = acc.get_epsilon(delta)
                    if float(mine.order).is_integer():
                        assert mine.epsilon == pytest.approx(other, rel=1e-6, abs=1e-9)
                        compared += 1
                    else:
                        assert mine.epsilon <= other + 1e-9
    assert compared >= 20


def test_edge_cases_and_sigma_search():
    orders = np.array([1.5, 2.0, 10.0])
    np.testing.assert_allclose(sgm_rdp(q=1.0, sigma=2.0, orders=orders), orders / 8)
    assert np.all(sgm_rdp(q=0.0, sigma=2.0, orders=orders) == 0)
    assert rdp_epsilon(q=0.3, sigma=1.0, steps=0, delta=1e-5).epsilon == 0
    sigma = sgm_sigma(q=0.01, steps=1000, epsilon=1.0, delta=1e-5)
    assert rdp_epsilon(q=0.01, sigma=sigma, steps=1000, delta=1e-5).epsilon <= 1.0
    assert rdp_epsilon(q=0.01, sigma=sigma * (1 - 1e-4), steps=1000, delta=1e-5).epsilon > 1.0
    assert sgm_sigma(q=0.01, steps=1000, epsilon=1.7117702, delta=1e-5) == pytest.approx(1.1, rel=1e-5)


def test_validation():
    with pytest.raises(ValueError, match="orders"):
        sgm_rdp(q=0.1, sigma=1.0, orders=[1.0000001, 2])
    with pytest.raises(ValueError, match="q must be"):
        sgm_rdp(q=1.5, sigma=1.0)
    with pytest.raises(ValueError, match="sigma"):
        sgm_rdp(q=0.1, sigma=0.0)
    with pytest.raises(ValueError, match="delta"):
        rdp_epsilon(q=0.1, sigma=1.0, steps=1, delta=0.0)
    with pytest.raises(ValueError, match="conversion"):
        rdp_epsilon(q=0.1, sigma=1.0, steps=1, delta=1e-5, conversion="plain")
    with pytest.raises(ValueError, match="steps"):
        rdp_epsilon(q=0.1, sigma=1.0, steps=-1, delta=1e-5)


def test_a_zcdp_part_composes_as_rho_times_the_order():
    """ρ-zCDP is RDP ρα at every order: alone it converts to no less than the exact zCDP conversion
    (which optimises over every α, not a grid) and to within 1 % of it; beside SGM steps the curves add."""
    from dpknn.accounting import zcdp_epsilon
    from dpknn.accounting._rdp import convert, zcdp_curve

    orders = np.asarray(DEFAULT_ORDERS)
    for rho, delta in [(0.01, 1e-5), (0.5, 1e-6), (4.0, 1e-9)]:
        alone = rdp_epsilon(q=0.1, sigma=1.0, steps=0, delta=delta, rho=rho).epsilon
        exact = zcdp_epsilon(rho, delta)
        assert exact <= alone <= 1.01 * exact
    both = rdp_epsilon(q=0.01, sigma=1.1, steps=1000, delta=1e-5, rho=0.05)
    curve = 1000 * sgm_rdp(q=0.01, sigma=1.1) + zcdp_curve(0.05, orders)
    assert both == convert(curve, orders, 1e-5, "improved")
    assert np.all(zcdp_curve(0.05, orders) >= 0.05 * orders)   # rounded up, never down
    assert both.epsilon > rdp_epsilon(q=0.01, sigma=1.1, steps=1000, delta=1e-5).epsilon
    # σ for what the zCDP part leaves: the smallest that fits, and larger than without it.
    sigma = sgm_sigma(q=0.01, steps=1000, epsilon=1.0, delta=1e-5, rho=0.02)
    assert rdp_epsilon(q=0.01, sigma=sigma, steps=1000, delta=1e-5, rho=0.02).epsilon <= 1.0
    assert rdp_epsilon(q=0.01, sigma=sigma * (1 - 1e-4), steps=1000, delta=1e-5, rho=0.02).epsilon > 1.0
    assert sigma > sgm_sigma(q=0.01, steps=1000, epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="alone converts"):
        sgm_sigma(q=0.01, steps=1000, epsilon=1.0, delta=1e-5, rho=0.05)
    with pytest.raises(ValueError, match="rho"):
        rdp_epsilon(q=0.01, sigma=1.1, steps=1, delta=1e-5, rho=-0.1)


def test_rdp_rho_is_the_largest_zcdp_part_the_grid_converts_within_epsilon():
    from dpknn.accounting import zcdp_rho
    from dpknn.accounting._rdp import convert, rdp_rho, zcdp_curve

    orders = np.asarray(DEFAULT_ORDERS)
    for eps, delta in [(0.05, 1e-5), (1.0, 1e-5), (4.0, 1e-9), (1000.0, 1e-6)]:
        rho = rdp_rho(eps, delta)
        assert convert(zcdp_curve(rho, orders), orders, delta, "improved").epsilon <= eps
        assert convert(zcdp_curve(rho * (1 + 1e-9), orders), orders, delta, "improved").epsilon > eps
        # The grid converts no better than the exact conversion: at most zcdp_rho, and close to it.
        assert 0.9 * zcdp_rho(eps, delta) < rho <= zcdp_rho(eps, delta)
