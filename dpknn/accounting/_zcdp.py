"""Zero-concentrated DP (zCDP): the budget of the marginal synthesiser, and its exact conversion.

A mechanism is ρ-zCDP when the Rényi divergence of order α between its outputs on neighbouring
data sets (add/remove one record) is at most ρα for every α > 1 (Bun and Steinke 2016, Def. 1.1).
Three facts are used, each a function here or in :mod:`dpknn.mechanisms`:

- **Composition** is additive in ρ, also adaptively (Bun and Steinke 2016, Lemma 2.3).
- **The discrete Gaussian** N_Z(0, σ²) added to an integer query of L2 sensitivity Δ is
  Δ²/(2σ²)-zCDP (Canonne, Kamath and Steinke 2020, Theorem 4; the Rényi divergence of two
  discrete Gaussians shifted by an integer equals that of the continuous ones):
  :class:`~dpknn.mechanisms.DiscreteGaussian`.
- **The exponential mechanism** with P(r) ∝ exp(ε s_r / (2Δ)) is ε-bounded-range and hence
  ε²/8-zCDP (Cesar and Rogers 2021, Lemma 3.2 with Bun and Steinke's Prop. 1.4 sharpened):
  :func:`exponential_rho`.

**Conversion to (ε, δ).** ρ-zCDP implies (ε, δ)-DP for every α > 1 with
δ = exp((α − 1)(αρ − ε)) / (α − 1) · (1 − 1/α)^α (Canonne, Kamath and Steinke 2020,
Proposition 12 / Corollary 13). Each α gives a valid δ, so the minimum over a finite set of α is a
valid bound even if it misses the true infimum: :func:`zcdp_delta` minimises over a fine grid
and refines it, :func:`zcdp_rho` inverts it by bisection and returns the lower end (never a ρ
whose δ exceeds the target).

References
----------
.. [1] Bun, Steinke (2016). "Concentrated differential privacy: simplifications, extensions,
   and lower bounds", TCC.
.. [2] Canonne, Kamath, Steinke (2020). "The discrete Gaussian for differential privacy",
   NeurIPS, Theorem 4, Proposition 12, Corollary 13.
.. [3] Cesar, Rogers (2021). "Bounding, concentrating, and truncating: unifying privacy loss
   composition for data analytics", ALT, Lemma 3.2.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy import optimize

from dpknn.utils._validation import EPSILON, NON_NEGATIVE, POSITIVE_DELTA

__all__ = ["exponential_epsilon", "exponential_rho", "zcdp_delta", "zcdp_epsilon", "zcdp_rho"]

# Orders α - 1 on a log grid; the refinement below starts from the best of them.
_ALPHA_MINUS_ONE = np.logspace(-6, 6, 2401)


def _log_delta(alpha, rho, epsilon):
    a = np.asarray(alpha, dtype=np.float64)
    return (a - 1) * (a * rho - epsilon) - np.log(a - 1) + a * np.log1p(-1 / a)


def zcdp_delta(rho, epsilon):
    """δ such that ρ-zCDP implies (ε, δ)-DP (CKS 2020, Corollary 13; minimised over α).

    Parameters
    ----------
    rho : float >= 0
    epsilon : float >= 0

    Returns
    -------
    float in [0, 1]
    """
    rho = NON_NEGATIVE.check(rho, "rho")
    epsilon = NON_NEGATIVE.check(epsilon, "epsilon")
    if rho == 0:
        return 0.0
    # The grid, and the order near the optimum of the leading term (α − 1)(αρ − ε), α = (1 + ε/ρ)/2: for a
    # tiny ρ beside ε that order lies far past the grid, and without it δ could never fall below a small
    # target (zcdp_rho would search forever).
    with np.errstate(over="ignore"):
        star = 0.5 * (1.0 + epsilon / rho)
    extra = np.asarray([a for a in (star * 0.5, star, star * 2.0) if np.isfinite(a) and a > 1 + 1e-6])
    alphas = np.sort(np.r_[1 + _ALPHA_MINUS_ONE, extra])
    with np.errstate(over="ignore", invalid="ignore"):
        logs = _log_delta(alphas, rho, epsilon)
    logs = np.where(np.isnan(logs), np.inf, logs)
    i = int(np.argmin(logs))
    lo, hi = alphas[max(i - 1, 0)], alphas[min(i + 1, alphas.size - 1)]
    best = float(logs[i])
    with np.errstate(over="ignore", invalid="ignore"):
        res = optimize.minimize_scalar(lambda a: float(_log_delta(a, rho, epsilon)), bounds=(lo, hi),
                                       method="bounded")
    if res.success and np.isfinite(res.fun):
        best = min(best, float(res.fun))
    # A valid δ for any α is at most 1 (and exp would overflow for a huge log).
    return float(math.exp(min(best, 0.0)))


def zcdp_rho(epsilon, delta):
    """The largest ρ (to 1e-12 relative) whose :func:`zcdp_delta` at ``epsilon`` is at most ``delta``.

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)

    Returns
    -------
    float
        ρ; a ρ-zCDP mechanism is then (ε, δ)-DP.
    """
    epsilon = EPSILON.check(epsilon, "epsilon")
    delta = POSITIVE_DELTA.check(delta, "delta")
    # δ grows with ρ: the largest ρ that passes is the lower end of the boundary.
    return _boundary(lambda rho: zcdp_delta(rho, epsilon) <= delta, max(epsilon, 1.0))[0]


def _boundary(passes, hi):
    """(lo, hi) within 1e-12·hi of the point where the monotone test ``passes`` flips, with
    passes(0) true for ρ and false for ε: ``hi`` is doubled until it is on the other side.

    Bounded: at most ~1,100 doublings and ~1,100 halvings of a float (past them a bound overflows or
    underflows and the search stops with what it has: (0, hi) when the flip lies below every
    positive float, (lo, inf) when above)."""
    lo, first = 0.0, passes(0.0)
    while passes(hi) == first:
        lo, hi = hi, 2 * hi
        if not math.isfinite(hi):
            return lo, hi
    while hi - lo > 1e-12 * hi:
        mid = lo + (hi - lo) / 2   # (lo + hi) / 2 overflows near the largest float
        if mid in (lo, hi):   # no float left between them
            break
        if passes(mid) == first:
            lo = mid
        else:
            hi = mid
    return lo, hi


def zcdp_epsilon(rho, delta):
    """The smallest ε (to 1e-12 relative, rounded up) such that ρ-zCDP implies (ε, δ)-DP.

    Parameters
    ----------
    rho : float
        ρ of the zCDP guarantee, at least 0 (0 gives ε = 0).
    delta : float
        The target δ, in (0, 1).
    """
    rho = NON_NEGATIVE.check(rho, "rho")
    delta = POSITIVE_DELTA.check(delta, "delta")
    if rho == 0:
        return 0.0
    if zcdp_delta(rho, 0.0) <= delta:
        return 0.0
    # δ falls as ε grows: the smallest ε that passes is the upper end of the boundary.
    return _boundary(lambda eps: zcdp_delta(rho, eps) <= delta, rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1.0)[1]


def exponential_rho(epsilon):
    """ρ = ε²/8 of the exponential mechanism with P(r) ∝ exp(ε s_r / (2Δ)) (ε-bounded range).

    Parameters
    ----------
    epsilon : float
        ε of the exponential mechanism, at least 0.
    """
    epsilon = NON_NEGATIVE.check(epsilon, "epsilon")
    return epsilon * epsilon / 8


def exponential_epsilon(rho, steps):
    """The largest float ε with steps·ε²/8 ≤ ρ, checked in exact fractions: the ε of each of
    ``steps`` exponential mechanisms that share the zCDP budget ``rho`` (a Fraction or float).

    Parameters
    ----------
    rho : Fraction or float
        The zCDP budget the mechanisms share.
    steps : int
        The number of exponential mechanisms, at least 1.
    """
    rho = Fraction(rho)
    eps = math.sqrt(8 * float(rho) / steps)
    while steps * Fraction(eps) ** 2 / 8 > rho:   # exact: the float ε²/8 may round down
        eps = math.nextafter(eps, 0.0)
    return eps
