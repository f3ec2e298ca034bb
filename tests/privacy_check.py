"""Empirical privacy checks: compare output histograms of a mechanism on two neighbours."""

import numpy as np


def worst_log_ratio(x1, x2, n_bins=60, min_count=300):
    """Lower confidence bound (4 standard errors) of the largest |log likelihood ratio| over bins.

    Bins have equal probability under the pooled sample; bins with fewer than ``min_count``
    draws from either sample are left out (their ratio cannot be estimated).
    """
    pooled = np.concatenate([x1, x2])
    edges = np.unique(np.quantile(pooled, np.linspace(0, 1, n_bins + 1)))
    edges[0], edges[-1] = -np.inf, np.inf
    c1 = np.histogram(x1, edges)[0].astype(float)
    c2 = np.histogram(x2, edges)[0].astype(float)
    keep = (c1 >= min_count) & (c2 >= min_count)
    ratio = np.abs(np.log(c1[keep] / len(x1)) - np.log(c2[keep] / len(x2)))
    se = np.sqrt(1 / c1[keep] + 1 / c2[keep])
    return float(np.max(ratio - 4 * se)), int(keep.sum())


def discrete_worst_log_ratio(z1, z2, min_count=300):
    values = np.union1d(z1, z2)
    c1 = np.array([(z1 == v).sum() for v in values], dtype=float)
    c2 = np.array([(z2 == v).sum() for v in values], dtype=float)
    keep = (c1 >= min_count) & (c2 >= min_count)
    ratio = np.abs(np.log(c1[keep] / len(z1)) - np.log(c2[keep] / len(z2)))
    se = np.sqrt(1 / c1[keep] + 1 / c2[keep])
    return float(np.max(ratio - 4 * se)), int(keep.sum())


def hockey_stick(x1, x2, epsilon, n_bins=60):
    """Estimated max over bins-unions of P1(B) - e^ε P2(B) (δ of the pair, both directions)."""
    pooled = np.concatenate([x1, x2])
    edges = np.unique(np.quantile(pooled, np.linspace(0, 1, n_bins + 1)))
    edges[0], edges[-1] = -np.inf, np.inf
    p1 = np.histogram(x1, edges)[0] / len(x1)
    p2 = np.histogram(x2, edges)[0] / len(x2)
    return max(np.clip(p1 - np.exp(epsilon) * p2, 0, None).sum(),
               np.clip(p2 - np.exp(epsilon) * p1, 0, None).sum())


def float_generalized_cauchy(gamma, size, rng):
    """Continuous generalized Cauchy draws in floating point (reference for tests only).

    (G1/G2)^(1/γ) with G1 ~ Gamma(1/γ), G2 ~ Gamma(1 - 1/γ) has density ∝ 1/(1 + x^γ) on x > 0.
    """
    g1 = rng.standard_gamma(1.0 / gamma, size=size)
    g2 = rng.standard_gamma(1.0 - 1.0 / gamma, size=size)
    g2[g2 == 0] = np.finfo(float).tiny
    return np.where(rng.random(size) < 0.5, -1.0, 1.0) * (g1 / g2) ** (1.0 / gamma)


def producible_by_float_laplace(y, value, scale):
    """Can ``value + scale * x`` equal the double ``y`` for some double x? (Mironov's attack.)

    The map x -> value + scale*x is monotone, so only doubles x next to (y - value)/scale can
    hit y; a few steps either side of it are tried.
    """
    x = (y - value) / scale
    for _ in range(8):
        x = np.nextafter(x, -np.inf)
    for _ in range(17):
        if value + scale * x == y:
            return True
        x = np.nextafter(x, np.inf)
    return False
