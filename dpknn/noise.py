"""Noise samplers, each a function of a :class:`numpy.random.Generator`, with exact CDFs.

All noise in dpknn is drawn here, in Python, from the generator the caller passes (``rng``:
Generator, int seed or None). Seeded generators are for reproducibility, not security.

Floating-point caveat: samplers that return doubles (Laplace, Gaussian, generalized Cauchy)
leak information through the low-order bits of their output (Mironov, 2012), because not every
double is reachable from every true value. For integer-valued queries prefer the two-sided
geometric sampler, whose output is an exact integer.

References
----------
.. [1] Nissim, Raskhodnikova, Smith (2007). "Smooth sensitivity and sampling in private data
   analysis", Lemma 2.7 (generalized Cauchy).
.. [2] Ghosh, Roughgarden, Sundararajan (2012). "Universally utility-maximizing privacy
   mechanisms" (two-sided geometric).
.. [3] Mironov (2012). "On significance of the least significant bits for differential privacy".
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .validation import check_positive_real, check_rng

__all__ = [
    "gaussian",
    "generalized_cauchy",
    "generalized_cauchy_cdf",
    "generalized_cauchy_moment",
    "generalized_cauchy_quantile",
    "laplace",
    "two_sided_geometric",
    "two_sided_geometric_cdf",
]


def _check_gamma(gamma):
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float, np.floating, np.integer)):
        raise TypeError(f"gamma must be a real number > 1, got {gamma!r}.")
    gamma = float(gamma)
    if not (gamma > 1.0 and math.isfinite(gamma)):
        raise ValueError(f"gamma must be a finite real number > 1, got {gamma!r}.")
    return gamma


def generalized_cauchy(gamma, size=None, *, rng):
    """Draw from the generalized Cauchy distribution, density proportional to 1/(1+|z|^γ).

    Exact construction: with V ~ Beta(1/γ, 1 - 1/γ), ``(V / (1 - V))^(1/γ)`` has density
    proportional to 1/(1+z^γ) on z > 0; a fair sign makes it symmetric. The normaliser is
    2π / (γ sin(π/γ)). V/(1-V) is drawn as G1/G2 with independent G1 ~ Gamma(1/γ) and
    G2 ~ Gamma(1 - 1/γ) (the same law), which avoids rounding V to 1 when γ is small.

    Parameters
    ----------
    gamma : float
        Tail parameter γ > 1. The variance is finite only for γ > 3.
    size : int or tuple, optional
    rng : numpy.random.Generator, int or None

    References
    ----------
    .. [1] Nissim, Raskhodnikova, Smith (2007), Definition in Lemma 2.7.
    """
    gamma = _check_gamma(gamma)
    rng = check_rng(rng)
    g1 = np.atleast_1d(rng.standard_gamma(1.0 / gamma, size=size))
    g2 = np.atleast_1d(rng.standard_gamma(1.0 - 1.0 / gamma, size=size))
    while True:
        # Gamma variates with a small shape can underflow to 0; redraw those (probability ~0).
        zero = g2 == 0.0
        if not zero.any():
            break
        g2[zero] = rng.standard_gamma(1.0 - 1.0 / gamma, size=int(zero.sum()))
    magnitude = np.power(g1 / g2, 1.0 / gamma)
    if size is None:
        magnitude = magnitude[0]
    sign = np.where(rng.random(size=size) < 0.5, -1.0, 1.0)
    out = sign * magnitude
    return float(out) if size is None else out


def generalized_cauchy_cdf(x, gamma):
    """Exact CDF of the generalized Cauchy distribution (regularised incomplete beta)."""
    gamma = _check_gamma(gamma)
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.where(np.isinf(ax), 1.0, ax**gamma / (1.0 + ax**gamma))
    half = 0.5 * special.betainc(1.0 / gamma, 1.0 - 1.0 / gamma, p)
    return 0.5 + np.sign(x) * half


def generalized_cauchy_quantile(q, gamma):
    """Quantile function of the generalized Cauchy distribution."""
    gamma = _check_gamma(gamma)
    q = np.asarray(q, dtype=np.float64)
    v = special.betaincinv(1.0 / gamma, 1.0 - 1.0 / gamma, np.abs(2.0 * q - 1.0))
    with np.errstate(divide="ignore"):
        mag = np.power(v / (1.0 - v), 1.0 / gamma)
    return np.sign(q - 0.5) * mag


def generalized_cauchy_moment(gamma, order=2):
    """E|X|^order of the generalized Cauchy distribution (inf when order >= γ - 1).

    From the Mellin transform ∫_0^∞ z^(s-1)/(1+z^γ) dz = π / (γ sin(π s/γ)):
    E|X|^r = sin(π/γ) / sin(π (r+1)/γ) for r + 1 < γ.
    """
    gamma = _check_gamma(gamma)
    if order + 1 >= gamma:
        return math.inf
    return math.sin(math.pi / gamma) / math.sin(math.pi * (order + 1) / gamma)


def laplace(scale, size=None, *, rng):
    """Draw from Laplace(0, scale). Returns doubles: see the module note on low-order bits."""
    scale = check_positive_real(scale, "scale")
    return check_rng(rng).laplace(0.0, scale, size=size)


def gaussian(sigma, size=None, *, rng):
    """Draw from Normal(0, sigma²)."""
    sigma = check_positive_real(sigma, "sigma")
    return check_rng(rng).normal(0.0, sigma, size=size)


def two_sided_geometric(alpha, size=None, *, rng):
    """Draw integers Z with P(Z = z) = (1 - α)/(1 + α) · α^|z|, 0 < α < 1.

    The difference of two i.i.d. geometric variables (failures before the first success,
    success probability 1 - α) has exactly this law. With α = exp(-ε/Δ) it is the discrete
    Laplace (geometric) mechanism for an integer query of sensitivity Δ.
    """
    if not (isinstance(alpha, (float, int, np.floating)) and 0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    rng = check_rng(rng)
    p = 1.0 - float(alpha)
    # numpy's geometric counts trials (>= 1); subtracting 1 counts failures.
    a = rng.geometric(p, size=size) - 1
    b = rng.geometric(p, size=size) - 1
    out = a - b
    return int(out) if size is None else out.astype(np.int64)


def two_sided_geometric_cdf(z, alpha):
    """Exact CDF of :func:`two_sided_geometric` at integer points."""
    z = np.floor(np.asarray(z, dtype=np.float64))
    neg = alpha ** (-z) / (1.0 + alpha)            # P(Z <= z) for z < 0
    pos = 1.0 - alpha ** (z + 1.0) / (1.0 + alpha)  # P(Z <= z) for z >= 0
    return np.where(z < 0, neg, pos)
