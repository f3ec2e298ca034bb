"""Rényi DP of the sampled Gaussian mechanism, its composition and conversion to (ε, δ).

The sampled Gaussian mechanism (SGM) adds N(0, σ²) noise (sensitivity 1) to a sum over a Poisson
sample of the records, each included with probability q. Its Rényi divergence of order α under
add/remove one record is R(α) = ln A_α / (α - 1) with (Mironov, Talwar, Zhang 2019):

- integer α: A_α = Σ_{k=0}^{α} C(α, k) (1-q)^{α-k} q^k exp((k² - k) / (2σ²)), summed exactly in the
  log domain;
- fractional α: the two convergent series of their §3.3, split at z0 = σ² ln(1/q - 1) + 1/2,
  with generalised binomial coefficients whose signs alternate past α, summed with signs in the
  log domain.

T steps compose to T·R(α) (Mironov 2017, Proposition 1). A ρ-zCDP mechanism run beside them (say
discrete Gaussian tables, :class:`~dpknn.mechanisms.DiscreteGaussian`) has Rényi divergence at most
ρα at every order α > 1 (that is the definition of ρ-zCDP; Bun and Steinke 2016, Definition 1.1),
so the two compose, adaptively, to T·R(α) + ρα (``rho`` of :func:`rdp_epsilon` and
:func:`sgm_sigma`). Conversion to (ε, δ):

- ``"improved"`` (default, as dp-accounting does; Balle et al. 2020, Theorem 21):
  ε = min_α T·R(α) + ln((α-1)/α) - (ln δ + ln α)/(α - 1) over orders α > 1.01, and ε = 0 at an
  order where δ >= sqrt(1 - exp(-T·R(α))) (R(α) bounds the KL divergence, and
  Bretagnolle-Huber bounds the total variation by it);
- ``"paper"``: the classical ε = min_α T·R(α) + ln(1/δ)/(α - 1) (Mironov 2017, Proposition 3),
  the paper's Eq. (1).

Orders must be > 1; orders within 1e-6 of 1 are refused (the conversion's terms blow up there).

References
----------
.. [1] Mironov (2017). "Rényi differential privacy".
.. [2] Mironov, Talwar, Zhang (2019). "Rényi differential privacy of the sampled Gaussian
   mechanism", §3.3.
.. [3] Balle, Barthe, Gaboardi, Hsu, Sato (2020). "Hypothesis testing interpretations and Rényi
   differential privacy", Theorem 21.
.. [4] Bun, Steinke (2016). "Concentrated differential privacy: simplifications, extensions, and
   lower bounds", TCC, Definition 1.1.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np
from scipy import special

from dpknn.utils._validation import EPSILON, NON_NEGATIVE, POSITIVE_DELTA

__all__ = ["DEFAULT_ORDERS", "RdpResult", "convert", "rdp_epsilon", "rdp_rho", "sgm_rdp", "sgm_sigma", "zcdp_curve"]

#: Orders searched by default: 1.1, 1.2, ..., 10.9, 11, ..., 63, 128, 256, 512, 1024 (156 orders).
DEFAULT_ORDERS = tuple([1 + x / 10 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512, 1024])

_CONVERSIONS = ("improved", "paper")


def _check_prob(q):
    if isinstance(q, bool) or not isinstance(q, numbers.Real) or not 0 <= q <= 1:
        raise ValueError(f"q must be a sampling probability in [0, 1], got {q!r}.")
    return float(q)


def _check_sigma(sigma):
    if isinstance(sigma, bool) or not isinstance(sigma, numbers.Real) or not (sigma > 0 and math.isfinite(sigma)):
        raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}.")
    return float(sigma)


def _check_orders(orders):
    orders = np.atleast_1d(np.asarray(DEFAULT_ORDERS if orders is None else orders, dtype=np.float64))
    if orders.size == 0 or not np.all(np.isfinite(orders)) or np.any(orders <= 1 + 1e-6):
        raise ValueError(f"orders must be finite numbers > 1 (not within 1e-6 of 1), got {orders.tolist()[:10]}.")
    return orders


def _signed_logsumexp(log_terms, signs):
    """ln Σ_k sign_k exp(log_terms_k) along the last axis, for sums known to be positive."""
    pos = special.logsumexp(np.where(signs > 0, log_terms, -np.inf), axis=-1)
    neg = special.logsumexp(np.where(signs < 0, log_terms, -np.inf), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return pos + np.log1p(-np.exp(np.minimum(neg - pos, 0.0)))


def _log_a_int(q, sigma, alphas):
    """ln A_α for integer orders (rows), summing k = 0..α exactly in the log domain."""
    alphas = np.asarray(alphas, dtype=np.float64)[:, None]
    k = np.arange(int(alphas.max()) + 1, dtype=np.float64)[None, :]
    inside = k <= alphas
    with np.errstate(divide="ignore", invalid="ignore"):
        log_binom = special.gammaln(alphas + 1) - special.gammaln(k + 1) - special.gammaln(alphas - k + 1)
        terms = log_binom + (alphas - k) * np.log1p(-q) + k * np.log(q) + (k * k - k) / (2 * sigma**2)
    return special.logsumexp(np.where(inside, terms, -np.inf), axis=1)


def _log_half_erfc(x):
    """ln(erfc(x)/2) = ln Φ(-x√2), stable for large |x|."""
    return special.log_ndtr(-x * math.sqrt(2.0))


def _log_a_frac(q, sigma, alphas):
    """ln A_α for fractional orders (rows): the two series of Mironov, Talwar, Zhang (2019, §3.3),
    split at z0, with generalised binomials whose signs alternate past α."""
    alphas = np.asarray(alphas, dtype=np.float64)[:, None]
    z0 = sigma**2 * math.log(1 / q - 1) + 0.5
    kmax = math.ceil(max(float(alphas.max()), z0) + 40 * sigma + 40)
    k = np.arange(kmax + 1, dtype=np.float64)[None, :]
    j = alphas - k
    log_binom = special.gammaln(alphas + 1) - special.gammaln(k + 1) - special.gammaln(j + 1)
    sign = special.gammasgn(j + 1)
    lq, l1q, root2s = math.log(q), math.log1p(-q), math.sqrt(2) * sigma
    s0 = log_binom + k * lq + j * l1q + (k * k - k) / (2 * sigma**2) + _log_half_erfc((k - z0) / root2s)
    s1 = log_binom + j * lq + k * l1q + (j * j - j) / (2 * sigma**2) + _log_half_erfc((z0 - j) / root2s)
    return np.logaddexp(_signed_logsumexp(s0, sign), _signed_logsumexp(s1, sign))


def sgm_rdp(*, q, sigma, orders=None):
    """Per-step RDP R(α) of the sampled Gaussian mechanism at each order (ndarray).

    Parameters
    ----------
    q : float
        Poisson sampling probability in [0, 1].
    sigma : float
        Noise multiplier (σ of the Gaussian over the L2 sensitivity).
    orders : sequence of float or None
        Orders α > 1; None: :data:`DEFAULT_ORDERS`.
    """
    q, sigma, orders = _check_prob(q), _check_sigma(sigma), _check_orders(orders)
    if q == 0:
        return np.zeros(orders.size)
    if q == 1:
        return orders / (2 * sigma**2)
    out = np.empty(orders.size)
    integer = orders == np.round(orders)
    if integer.any():
        out[integer] = _log_a_int(q, sigma, orders[integer])
    if (~integer).any():
        out[~integer] = _log_a_frac(q, sigma, orders[~integer])
    return out / (orders - 1)


class RdpResult(NamedTuple):
    """ε at the given δ and the order α that attains it.

    Attributes
    ----------
    epsilon : float
        The smallest converted ε over the orders of the grid, at least 0 (inf when no order gives a
        finite bound).
    order : float
        The RDP order α at which that ε is attained.
    """

    epsilon: float
    order: float


def convert(rdp, orders, delta, conversion):
    """(ε, δ) of an RDP curve ``rdp`` at ``orders`` for the target ``delta``, by the named ``conversion`` rule
    (``"improved"``: Canonne, Kamath, Steinke 2020, Prop. 12; the best order is taken)."""
    if conversion == "improved":
        with np.errstate(divide="ignore", invalid="ignore"):
            eps = rdp + np.log1p(-1 / orders) - (math.log(delta) + np.log(orders)) / (orders - 1)
        # The bound is unstable as α -> 1; orders below 1.01 are left to the KL bound below.
        eps = np.where(orders > 1.01, eps, np.inf)
        # R(α) >= KL, and TV <= sqrt(1 - exp(-KL)) (Bretagnolle-Huber): (0, δ)-DP when δ covers it.
        eps = np.where(delta**2 + np.expm1(-rdp) > 0, 0.0, eps)
    else:
        eps = rdp + math.log(1 / delta) / (orders - 1)
    eps = np.where(np.isnan(eps), np.inf, eps)
    i = int(np.argmin(eps))
    return RdpResult(max(float(eps[i]), 0.0), float(orders[i]))


def rdp_epsilon(*, q, sigma, steps, delta, rho=0.0, orders=None, conversion="improved"):
    """(ε, order) of ``steps`` compositions of the sampled Gaussian mechanism at ``delta``, with a
    ``rho``-zCDP part composed beside them (module docstring).

    Add/remove-one neighbours, Poisson sampling with probability q, noise multiplier σ.

    Parameters
    ----------
    q, sigma : float
    steps : int
        Number of compositions T >= 0.
    delta : float in (0, 1)
    rho : float >= 0, default 0
        ρ of the zCDP mechanisms run on the same data (RDP ρα at every order α).
    orders : sequence or None
        None: :data:`DEFAULT_ORDERS` (156 orders, as dp-accounting).
    conversion : {"improved", "paper"}

    Returns
    -------
    RdpResult
        ``(epsilon, order)``; ``.epsilon`` and ``.order`` name them.

    References
    ----------
    .. [1] Mironov, Talwar, Zhang (2019); Balle et al. (2020), Theorem 21.
    """
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 0:
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}.")
    delta = POSITIVE_DELTA.check(delta, "delta")
    if conversion not in _CONVERSIONS:
        raise ValueError(f"conversion must be one of {_CONVERSIONS}, got {conversion!r}.")
    rho = NON_NEGATIVE.check(rho, "rho")
    orders = _check_orders(orders)
    rdp = steps * sgm_rdp(q=q, sigma=sigma, orders=orders) + zcdp_curve(rho, orders)
    return convert(rdp, orders, float(delta), conversion)


def zcdp_curve(rho, orders):
    """ρα at each order, rounded up: the RDP curve of a ρ-zCDP mechanism (module docstring)."""
    return np.nextafter(rho * np.asarray(orders, dtype=np.float64), np.inf) if rho else np.zeros(len(orders))


def rdp_rho(epsilon, delta, *, orders=None, conversion="improved"):
    """The largest ρ (to 1e-12 relative) whose RDP curve ρα converts, at these orders, to at most
    ``epsilon`` at ``delta``: the zCDP part that leaves exactly ``epsilon`` on this accountant's
    grid (:func:`~dpknn.accounting.zcdp_rho` is the same with the exact conversion, which the
    grid can only approach from above).

    Parameters
    ----------
    epsilon : float
        The target ε, greater than 0.
    delta : float
        The target δ, in (0, 1).
    orders : sequence or None
        The RDP orders of the grid; None: :data:`DEFAULT_ORDERS`.
    conversion : {"improved", "paper"}
        The RDP-to-(ε, δ) conversion rule (:func:`convert`).
    """
    epsilon = EPSILON.check(epsilon, "epsilon")
    delta = float(POSITIVE_DELTA.check(delta, "delta"))
    grid = _check_orders(orders)

    def fits(rho):
        return convert(zcdp_curve(rho, grid), grid, delta, conversion).epsilon <= epsilon

    lo, hi = 0.0, max(epsilon, 1.0)
    while fits(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def sgm_sigma(*, q, steps, epsilon, delta, rho=0.0, orders=None, conversion="improved", rtol=1e-6):
    """Smallest noise multiplier σ (to ``rtol``) with ``rdp_epsilon(q, σ, steps, δ, rho) <= epsilon``.

    Bisection: ε decreases as σ grows. The σ returned always meets the target. Refused when the
    ``rho``-zCDP part alone converts to more than ``epsilon`` (no σ leaves room for the steps).

    Parameters
    ----------
    q : float
        The Poisson sampling probability of each step.
    steps : int
        Number of compositions T >= 0.
    epsilon : float
        The target ε, greater than 0.
    delta : float in (0, 1)
        The target δ.
    rho : float >= 0, default 0
        ρ of the zCDP mechanisms run on the same data, composed beside the steps.
    orders : sequence or None
        None: :data:`DEFAULT_ORDERS`.
    conversion : {"improved", "paper"}
        The RDP-to-(ε, δ) conversion rule (:func:`convert`).
    rtol : float, default 1e-6
        Relative tolerance of the bisection on σ.

    Raises
    ------
    ValueError
        ``rho`` alone converts to at least ``epsilon``, or no σ below 1e8 reaches ``epsilon``.
    """
    epsilon = EPSILON.check(epsilon, "epsilon")
    rho = NON_NEGATIVE.check(rho, "rho")
    if rho > 0:
        grid = _check_orders(orders)
        alone = convert(zcdp_curve(rho, grid), grid, float(POSITIVE_DELTA.check(delta, "delta")), conversion).epsilon
        if alone >= epsilon:
            raise ValueError(f"rho={rho!r} alone converts to epsilon={alone:.6g} >= {epsilon!r} at delta={delta!r}; "
                             "give the sampled Gaussian steps a share of the budget (a smaller rho).")

    def eps(s):
        return rdp_epsilon(q=q, sigma=s, steps=steps, delta=delta, rho=rho, orders=orders,
                           conversion=conversion).epsilon

    hi = 1.0
    while eps(hi) > epsilon:
        hi *= 2
        if hi > 1e8:
            raise ValueError(f"no sigma below 1e8 reaches epsilon={epsilon!r} (q={q!r}, steps={steps!r}).")
    lo = hi / 2
    while eps(lo) <= epsilon and lo > 1e-6:
        hi, lo = lo, lo / 2
    while hi - lo > rtol * hi:
        mid = (lo + hi) / 2
        if eps(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
    return hi
