"""Smooth-sensitivity releases: generalized Cauchy noise (Clifton et al. 2022, Theorem 3.6) and the
default PolyPlace noise (Theorem P of ``docs/privacy.md``), calibrated exactly.

A smooth release adds noise scaled to a β-smooth upper bound S(D) of the local sensitivity; the
calibration (α for the Cauchy, (a, c) for PolyPlace) is a function of public ε and β only, and S(D)
stays in :class:`~dpknn.mechanisms._base.CuratorDiagnostics`. Neighbouring relation: add or remove
one record.
"""

from __future__ import annotations

import functools
import math
import numbers
import typing
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpknn.mechanisms._base import (
    CuratorDiagnostics,
    Mechanism,
    PublicGrid,
    Release,
    from_grid,
    in_units,
)
from dpknn.mechanisms._noise import (
    gamma_fraction,
    generalized_cauchy_moment,
    generalized_cauchy_quantile,
    generalized_cauchy_survival,
    polyplace_fraction,
    polyplace_half_width,
    polyplace_std,
    polyplace_survival,
    rounded_generalized_cauchy,
    rounded_polyplace,
)
from dpknn.utils._validation import EPSILON, POSITIVE, Interval, Options

__all__ = [
    "LN2",
    "CauchyCalibration",
    "PolyPlaceCalibration",
    "SmoothCauchy",
    "SmoothPolyPlace",
    "cauchy_admissible",
    "certify_polyplace",
    "choose_gamma",
    "choose_polyplace",
    "polyplace_epsilon",
    "polyplace_spread",
]

#: The smoothness β of every bound built from L1 (Theorems 5.1, 5.4, 5.6 of the imputation paper need
#: β ≥ ln 2); the smooth mechanisms are calibrated to it, and dpknn.releases._sensitivity builds on it.
LN2 = math.log(2.0)

# α is shrunk by this factor so that float rounding in S(D) and α can only add noise.
_SAFETY = 1.0 - 1e-12
# S(D) is computed in floating point: it may sit a few units in the last place below its exact value,
# and the ratio of two neighbours' floats may exceed e^β by as much. The PolyPlace width is raised by
# 2^-40 (the Cauchy's α is lowered by _SAFETY) to cover the first, and every smoothness condition is
# checked at β(1 + 10^-12) to cover the second (and the float ln 2, 1e-17 below the true one).
_S_INFLATION = 1 + Fraction(1, 2**40)
_BETA_MARGIN = 1e-12
# The spread of the noise, sd(X_γ)·2(γ-1)^(1-1/γ)/ε, is smallest at γ = 4.25 for every ε >= 5 and
# beyond γ = 16 only grows (sd(X_γ) tends to 1/√3, the other factor grows like γ): searching
# candidates up to this bound finds the same γ as searching them all, in time independent of ε.
_GAMMA_SEARCH_MAX = Fraction(64)
# The exact sampler raises rationals to the power γ: beyond this γ one draw takes seconds and more.
_MAX_GAMMA = Fraction(4096)


# --- smooth sensitivity with generalized Cauchy noise ------------------------------------------
@dataclass(frozen=True)
class CauchyCalibration:
    """Constants of a smooth-sensitivity release with generalized Cauchy noise (all public).

    The release is ``q(D) + S(D)/alpha · X`` with X generalized Cauchy(γ) (Theorem 3.6).

    Attributes
    ----------
    epsilon : float
        Budget of the release, finite and above 2β.
    gamma : float
        The exponent γ of the noise, a multiple of 1/4 above 1 that is admissible at ``epsilon``.
    alpha : float
        The sliding constant α = ε / (2 (γ-1)^(1-1/γ)) (:func:`cauchy_admissible`): the noise is scaled
        by S(D)/α.
    beta : float
        The smoothness β of the sensitivity bound (ln 2 for the bounds 1 + L1).
    rule : {"optimal", "paper", "fixed"}
        How γ was chosen (:func:`choose_gamma`): the smallest spread, the paper's 1 + ε/(2β) rounded down,
        or the γ that was given.
    """

    epsilon: float
    gamma: float
    alpha: float
    beta: float
    rule: str

    def spread(self):
        """Standard deviation of X/alpha if finite, else the half-width of its central 90%."""
        return _spread(self.gamma, self.alpha)


def cauchy_admissible(epsilon, gamma, *, beta=LN2):
    """Largest sliding constant α of generalized Cauchy(γ) noise for an ε-DP smooth release.

    Theorem 3.6 (Nissim et al. 2007, Lemma 2.6) needs, for noise density f and a β-smooth
    bound, log f(x) - log f(x + Δ) <= ε/2 for |Δ| <= α, and dilation by e^λ, |λ| <= β, to cost
    at most ε/2. For f ∝ 1/(1+|x|^γ) the exact costs are α (γ-1)^(1-1/γ) and β max(γ-1, 1)
    (corrected Theorem 3.8; ``docs/privacy.md``). Returns α = ε / (2 (γ-1)^(1-1/γ)).

    Parameters
    ----------
    epsilon : float
        Budget of the release, finite and positive.
    gamma : float
        The exponent γ of the generalized Cauchy noise, above 1.
    beta : float, default ln 2
        The smoothness β of the sensitivity bound.

    Raises
    ------
    ValueError
        When β max(γ-1, 1) > ε/2: this γ cannot be used at this ε (and no γ can when
        ε < 2β = 2 ln 2).
    """
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a finite positive number, got {epsilon!r}.")
    if not gamma > 1:
        raise ValueError(f"gamma must be > 1, got {gamma!r}.")
    if beta * (1 + _BETA_MARGIN) * max(gamma - 1.0, 1.0) > epsilon / 2.0:
        raise ValueError(
            f"generalized Cauchy noise with gamma={float(gamma):g} is not admissible at epsilon={epsilon:g} "
            f"with smoothness beta={beta:g}: need beta*max(gamma-1, 1) <= epsilon/2 (beta with a relative "
            "margin of 1e-12 for floating-point rounding)"
            + (f"; no gamma works for epsilon <= 2*beta = {2 * beta:.6f}." if epsilon <= 2 * beta else ".")
        )
    return epsilon / (2.0 * (gamma - 1.0) ** (1.0 - 1.0 / gamma))


def _spread(gamma, alpha):
    second = generalized_cauchy_moment(gamma, 2)
    if math.isfinite(second):
        return math.sqrt(second) / alpha
    return float(generalized_cauchy_quantile(0.95, gamma)) / alpha


def choose_gamma(epsilon, gamma="optimal", *, beta=LN2):
    """Choose γ (a multiple of 1/4, for the exact sampler) for a smooth-sensitivity release.

    Parameters
    ----------
    epsilon : float
        Budget of the release; must be >= 2 β (= 2 ln 2 for the L1-based bounds).
    gamma : "optimal", "paper" or float
        ``"paper"``: the paper's γ = 1 + ε/(2β) (Corollary 3.9 with β = ln 2), rounded down to
        a multiple of 1/4. ``"optimal"``: the admissible multiple of 1/4 that minimises the
        spread of the noise X/α: its standard deviation when some admissible γ > 3 has finite
        variance, otherwise the half-width of its central 90% interval (found at any ε, up to
        ε = 1e308). A number: that γ, which must be a multiple of 1/4 and admissible. The exact
        sampler draws γ <= 4096 only, so ``"paper"`` needs ε <= 2 ln 2 · 4095 ≈ 5677.
    beta : float, default ln 2
        The smoothness β of the sensitivity bound the noise is scaled by.

    Returns
    -------
    CauchyCalibration
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, (numbers.Real, np.floating)):
        raise TypeError(f"epsilon must be a real number, got {epsilon!r}.")
    return _choose_gamma(float(epsilon), gamma, beta)


@functools.lru_cache(maxsize=256)
def _choose_gamma(epsilon, gamma, beta):
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite positive number, got {epsilon!r}.")
    if epsilon <= 2 * beta * (1 + _BETA_MARGIN):
        raise ValueError(
            f"a smooth-sensitivity release with Cauchy noise needs epsilon > 2 ln 2 = {2 * beta:.6f} (the bound "
            f"1 + L1 is only ln 2-smooth), got epsilon={epsilon:g}. Spend more budget on this release, use the "
            "default PolyPlace noise (any epsilon > ln 2) or method='ignore_missing'."
        )
    g_max = 1.0 + epsilon / (2.0 * beta * (1 + _BETA_MARGIN))
    top = Fraction(math.floor(4 * Fraction(g_max)), 4)   # exact: 4 * g_max overflows for huge ε
    if gamma == "paper":
        g, rule = top, "paper"
    elif gamma == "optimal":
        rule = "optimal"
        last = min(top, _GAMMA_SEARCH_MAX)
        candidates = [Fraction(i, 4) for i in range(5, 4 * int(last) + 4) if Fraction(i, 4) <= last]
        finite = [c for c in candidates if c > 3]
        pool = finite or candidates
        g = min(pool, key=lambda c: _spread(float(c), cauchy_admissible(epsilon, float(c), beta=beta)))
    else:
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float, np.floating, Fraction)):
            raise TypeError(f"gamma must be 'optimal', 'paper' or a number > 1, got {gamma!r}.")
        g, rule = gamma_fraction(gamma), "fixed"
    if g > _MAX_GAMMA:
        hint = (f"gamma='paper' sets gamma = 1 + epsilon/(2 ln 2), so it needs epsilon <= "
                f"{2 * beta * float(_MAX_GAMMA - 1):.6g}" if rule == "paper" else "choose a smaller gamma")
        raise ValueError(f"gamma={float(g):g} at epsilon={epsilon:g} is beyond what the exact noise sampler can draw "
                         f"(gamma <= {int(_MAX_GAMMA)}); {hint}, or use gamma='optimal', which works at any epsilon.")
    alpha = cauchy_admissible(epsilon, float(g), beta=beta)
    return CauchyCalibration(epsilon=float(epsilon), gamma=float(g), alpha=alpha, beta=beta, rule=rule)


class SmoothCauchy(Mechanism):
    """Smooth-sensitivity release with generalized Cauchy noise on a public grid.

    Releases ``round(q/g + σ/g · X) · g`` with q the *exact* query value (an int or a Fraction: the
    centre is not rounded, so nothing is charged for rounding), X ~ generalized Cauchy(γ) sampled
    exactly, and σ = S(D)/α. ``q + σX`` is ε-DP under add/remove one record by Theorem 3.6
    (Nissim, Raskhodnikova, Smith 2007, Lemma 2.6) with the exact admissibility constants
    α (γ-1)^(1-1/γ) <= ε/2 and β max(γ-1, 1) <= ε/2 (``docs/privacy.md``); the rounding to the
    public grid g is post-processing. ε > 2 ln 2 is required. The paper's mechanism, kept for
    reproduction (``noise="cauchy"``); :class:`SmoothPolyPlace` is the default.

    Parameters
    ----------
    epsilon : float
        At least 2 ln 2.
    smooth_bound : float
        S(D), a ln 2-smooth upper bound on the local sensitivity. Data-dependent: it is kept in
        the release's curator diagnostics, never in its public parameters.
    grid : float
        A power of two computed from public parameters only (see :func:`public_grid`); 1 for
        counts.
    gamma : "optimal", "paper" or float
        See :func:`choose_gamma`.
    """

    name = "smooth_cauchy"
    delta = 0.0

    parameter_constraints: typing.ClassVar[dict] = {"epsilon": EPSILON, "smooth_bound": POSITIVE, "grid": PublicGrid(),
                             "gamma": (Options("optimal", "paper"), Interval("real", 1, None, closed="neither"))}

    def __init__(self, *, epsilon, smooth_bound, grid, gamma="optimal"):
        p = self.checked_params(epsilon=epsilon, smooth_bound=smooth_bound, grid=grid, gamma=gamma)
        self.epsilon, self.smooth_bound, self.grid = p["epsilon"], p["smooth_bound"], p["grid"]
        self.calibration = choose_gamma(self.epsilon, gamma)
        self.scale = self.smooth_bound / (self.calibration.alpha * _SAFETY)
        if not math.isfinite(self.scale):
            raise ValueError(f"the noise scale overflows (smooth_bound={smooth_bound!r}); use narrower bounds.")
        self._width = Fraction(self.scale) / Fraction(self.grid)

    def variance(self):
        return self.scale**2 * generalized_cauchy_moment(self.calibration.gamma, 2)

    def noise(self, size=None, *, rng=None):
        z = rounded_generalized_cauchy(self.calibration.gamma, self._width, size, rng=rng)
        return in_units(z, self.grid, size)

    @classmethod
    def noise_survival(cls, release, x):
        """σ·X with X generalized Cauchy(γ); σ (data-dependent) from the curator diagnostics."""
        scale = float(release.diagnostics.values["noise_scale"])
        return generalized_cauchy_survival(x / scale, release.params["gamma"])

    def public_params(self):
        c = self.calibration
        return {"grid": self.grid, "gamma": c.gamma, "gamma_rule": c.rule, "alpha": c.alpha, "beta": c.beta}

    def release(self, value, *, rng=None):
        m = rounded_generalized_cauchy(self.calibration.gamma, self._width, center=_exact_center(value, self.grid),
                                       rng=rng)
        out = m if self.grid == 1 else from_grid(m, self.grid)
        return Release(value=out, epsilon=self.epsilon, delta=0.0, mechanism=self.name,
                       params=self.public_params(),
                       diagnostics=CuratorDiagnostics({"smooth_bound": self.smooth_bound,
                                                       "noise_scale": self.scale}))


# --- smooth sensitivity with PolyPlace noise ------------------------------------------------------
# Candidates a (multiples of 1/16) searched by the calibration. The spread is smallest at a below 8
# for every ε (large ε favours small a, as c falls like e^(−ε/a)), while each exact draw raises
# rationals to powers of 16(a − 1): the search stops at 32.
_A_STEP = 16
_POLYPLACE_A_MAX = Fraction(32)
# c is rounded up to a multiple of 2^-20 (a short dyadic, published exactly) and then certified.
_POLYPLACE_C_BITS = 20
# Digits of the Decimal arithmetic that certifies ε(a, c): far below any float's resolution.
_CERTIFY_DIGITS = 60


def polyplace_epsilon(a, c, *, beta=LN2):
    """ε(a, c) of a smooth release with PolyPlace noise of exponent a and scale c·S(D) (float).

    For a β-smooth bound S with |q(D) − q(D')| <= min(S(D), S(D')) (``docs/privacy.md``, Theorem P):

        ε(a, c) = max(a ln(1 + 1/c), (1 − a)β + a ln(e^β + 1/c), (a − 1)β).

    The first two terms bound neighbours whose S grows (at λ = 0 and λ = β), the third those whose S
    shrinks by e^(−β). Add/remove one record.
    """
    a, c, beta = float(a), float(c), float(beta)
    return max(a * math.log1p(1.0 / c), (1.0 - a) * beta + a * math.log(math.exp(beta) + 1.0 / c),
               (a - 1.0) * beta)


def certify_polyplace(a, c, epsilon, *, beta=LN2):
    """True when ε(a, c) <= ε, decided in 60-digit Decimal arithmetic with a margin of 1e-40.

    ``beta`` equal to the float :data:`LN2` is taken as the true ln 2 (its float is 1e-17 below it,
    which would understate the smoothness); any other β is taken as the rational its float stores. β
    is then raised by the relative margin 10^-12, which covers the floating-point rounding of S(D)
    between neighbours (see :class:`SmoothPolyPlace`). Decimal's ``ln`` and ``exp`` are correctly
    rounded, so each term is within 1e-58 of its value.
    """
    import decimal

    ctx = decimal.Context(prec=_CERTIFY_DIGITS)
    D = decimal.Decimal
    a, c = Fraction(a), Fraction(c)
    da = ctx.divide(D(a.numerator), D(a.denominator))
    inv_c = ctx.divide(D(c.denominator), D(c.numerator))
    b = ctx.ln(D(2)) if beta == LN2 else ctx.divide(D(Fraction(beta).numerator), D(Fraction(beta).denominator))
    b = ctx.multiply(b, ctx.add(D(1), D(_BETA_MARGIN)))
    eb = ctx.exp(b)
    terms = (ctx.multiply(da, ctx.ln(ctx.add(D(1), inv_c))),
             ctx.add(ctx.multiply(ctx.subtract(D(1), da), b), ctx.multiply(da, ctx.ln(ctx.add(eb, inv_c)))),
             ctx.multiply(ctx.subtract(da, D(1)), b))
    margin = D("1e-40")
    return all(ctx.add(t, margin) <= D(epsilon) for t in terms)


def polyplace_spread(a, c):
    """The spread of PolyPlace noise of exponent a in units of S(D): c times its standard deviation when
    a > 3 (finite variance), else c times the half-width of its central 90%."""
    a = float(a)
    return float(c) * (polyplace_std(a) if a > 3 else polyplace_half_width(a, 0.9))


@dataclass(frozen=True)
class PolyPlaceCalibration:
    """Constants of a smooth-sensitivity release with PolyPlace noise (all public).

    The release is ``q(D) + c·S(D)·X`` with X of density (a − 1)/2 · (1 + |x|)^(−a) (Theorem P of
    ``docs/privacy.md``). ``a`` is a multiple of 1/16 and ``c`` a multiple of 2^-20, both exact.

    Attributes
    ----------
    epsilon : float
        Budget of the release, finite and above β.
    a : fractions.Fraction
        The exponent of the noise density, a multiple of 1/16 of at least 5/4 with (a − 1)β <= ε.
    c : fractions.Fraction
        The scale of the noise in units of S(D): the smallest multiple of 2^-20 whose ε(a, c) is
        certified at most ``epsilon``.
    beta : float
        The smoothness β of the sensitivity bound (ln 2 for the bounds 1 + L1).
    rule : {"optimal", "fixed"}
        How ``a`` was chosen (:func:`choose_polyplace`): the smallest spread, or the ``a`` that was given.
    """

    epsilon: float
    a: Fraction
    c: Fraction
    beta: float
    rule: str

    def spread(self):
        """Standard deviation of c·X if finite, else the half-width of its central 90%, in units of S(D)."""
        return polyplace_spread(self.a, self.c)

    def half_width(self, level=0.9):
        """Half-width of the central ``level`` interval of c·X, in units of S(D)."""
        return float(self.c) * polyplace_half_width(self.a, level)


def _polyplace_c(a, epsilon, beta):
    """The smallest c on the 2^-20 grid with ε(a, c) <= ε (certified), or None when a is not admissible.

    From the closed form: a ln(1 + 1/c) <= ε needs c >= 1/(e^(ε/a) − 1), and (1 − a)β + a ln(e^β + 1/c)
    <= ε needs c >= 1/(e^((ε + (a−1)β)/a) − e^β), which is positive exactly when ε > β.
    """
    if not certify_polyplace(a, Fraction(10**9), epsilon, beta=beta):   # (a − 1)β <= ε fails
        return None
    af = float(a)
    try:
        c1 = 1.0 / math.expm1(epsilon / af)
    except OverflowError:
        c1 = 0.0
    try:
        c2 = 1.0 / (math.exp((epsilon + (af - 1.0) * beta) / af) - math.exp(beta))
    except OverflowError:
        c2 = 0.0
    step = Fraction(1, 2**_POLYPLACE_C_BITS)
    c = max(step, math.ceil(Fraction(max(c1, c2)) * (1 + Fraction(1, 10**9)) / step) * step)
    bump = step
    while not certify_polyplace(a, c, epsilon, beta=beta):
        c += bump   # stays on the grid of multiples of 2^-20
        bump *= 2
    return c


def choose_polyplace(epsilon, a="optimal", *, beta=LN2):
    """Choose the PolyPlace exponent a (a multiple of 1/16) and scale factor c for an ε-DP smooth release.

    Parameters
    ----------
    epsilon : float
        Budget of the release; must exceed β (= ln 2 for the L1-based bounds). No noise scaled by S(D)
        can do with less: the density at the centre alone moves by S(D')/S(D), up to e^β.
    a : "optimal" or float
        ``"optimal"``: the admissible multiple of 1/16 in [5/4, 32] that, with its smallest certified c,
        minimises the standard deviation of the noise when some admissible a > 3 exists, otherwise the
        half-width of its central 90% interval (as :func:`choose_gamma` picks γ). A number: that a,
        which must be a multiple of 1/16 and admissible ((a − 1)β <= ε).
    beta : float, default ln 2
        The smoothness β of the sensitivity bound the noise is scaled by.

    Returns
    -------
    PolyPlaceCalibration
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, (numbers.Real, np.floating)):
        raise TypeError(f"epsilon must be a real number, got {epsilon!r}.")
    return _choose_polyplace(float(epsilon), a if isinstance(a, str) else polyplace_fraction(a), beta)


@functools.lru_cache(maxsize=256)
def _choose_polyplace(epsilon, a, beta):
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite positive number, got {epsilon!r}.")
    if not epsilon > beta:
        raise ValueError(
            f"a smooth-sensitivity release needs epsilon > ln 2 = {beta:.6f}, got epsilon={epsilon:g}: the bound "
            "1 + L1 is only ln 2-smooth, and for any noise scaled by it the density at the centre alone moves by "
            "up to a factor 2 between neighbours. Spend more budget on this release or use method='ignore_missing'.")
    if isinstance(a, str):
        if a != "optimal":
            raise ValueError(f"a must be 'optimal' or a multiple of 1/16 >= 5/4, got {a!r}.")
        top = min(_POLYPLACE_A_MAX, 1 + Fraction(epsilon) / Fraction(beta))
        candidates = (Fraction(i, _A_STEP) for i in range(_A_STEP * 5 // 4, math.floor(_A_STEP * top) + 1))
        found = [(x, c) for x in candidates if (c := _polyplace_c(x, epsilon, beta)) is not None]
        if not found:
            raise ValueError(f"epsilon={epsilon!r} is too close to ln 2 = {beta:.6f}: no PolyPlace noise on the "
                             f"grid of a (multiples of 1/{_A_STEP}) is certified there. Spend a little more budget "
                             "on this release (epsilon >= 0.7 is always enough).")
        finite = [(x, c) for x, c in found if x > 3]
        a_best, c_best = min(finite or found, key=lambda xc: polyplace_spread(*xc))
        return PolyPlaceCalibration(epsilon=epsilon, a=a_best, c=c_best, beta=beta, rule="optimal")
    c = _polyplace_c(a, epsilon, beta)
    if c is None:
        raise ValueError(f"PolyPlace noise with a={float(a):g} is not admissible at epsilon={epsilon:g}: it needs "
                         f"(a - 1) ln 2 <= epsilon, i.e. a <= {1 + epsilon / beta:.4g}.")
    return PolyPlaceCalibration(epsilon=epsilon, a=a, c=c, beta=beta, rule="fixed")


class SmoothPolyPlace(Mechanism):
    """Smooth-sensitivity release with PolyPlace noise on a public grid (the default smooth mechanism).

    Releases ``round(q/g + c·S(D)/g · X) · g`` with X of density (a − 1)/2 · (1 + |x|)^(−a), sampled
    exactly (:func:`dpknn.mechanisms._noise.rounded_polyplace`), q the *exact* query value (an int or a Fraction:
    no rounding of the centre, so nothing is added to S) and g a public power of two. For a β-smooth
    upper bound S(D) on the local sensitivity (β = ln 2 for the bounds 1 + L1 of Theorems 5.1, 5.4 and
    5.6), ``q + c·S·X`` is ε-DP under add/remove one record when ε(a, c) <= ε (Theorem P of
    ``docs/privacy.md``; :func:`polyplace_epsilon`, certified by :func:`certify_polyplace`); rounding
    to the grid is post-processing. Any ε > ln 2 works. S(D) arrives as a float a few units in the last
    place from its exact value: the width is c·S(D)·(1 + 2^-40) and ε(a, c) is certified at
    β(1 + 10^-12), which covers that rounding (:func:`certify_polyplace`).

    Parameters
    ----------
    epsilon : float
        More than ln 2.
    smooth_bound : float
        S(D). Data-dependent: kept in the release's curator diagnostics, never in its public parameters.
    grid : float
        A power of two computed from public parameters only (see :func:`public_grid`); 1 for counts.
    a : "optimal" or float
        See :func:`choose_polyplace`.
    """

    name = "smooth_polyplace"
    delta = 0.0

    parameter_constraints: typing.ClassVar[dict] = {"epsilon": EPSILON, "smooth_bound": POSITIVE, "grid": PublicGrid(),
                             "a": (Options("optimal"), Interval("real", 1.25, None, closed="left"))}

    def __init__(self, *, epsilon, smooth_bound, grid, a="optimal"):
        p = self.checked_params(epsilon=epsilon, smooth_bound=smooth_bound, grid=grid, a=a)
        self.epsilon, self.smooth_bound, self.grid = p["epsilon"], p["smooth_bound"], p["grid"]
        self.calibration = choose_polyplace(self.epsilon, a)
        width = self.calibration.c * Fraction(self.smooth_bound) * _S_INFLATION
        self.scale = float(width)
        if not math.isfinite(self.scale):
            raise ValueError(f"the noise scale overflows (smooth_bound={smooth_bound!r}); use narrower bounds.")
        self._width = width / Fraction(self.grid)

    def __repr__(self):
        c = self.calibration
        return (f"SmoothPolyPlace(epsilon={self.epsilon:g}, a={float(c.a):g}, c={float(c.c):.6g}, "
                f"grid={self.grid:g})")

    def variance(self):
        return self.scale**2 * polyplace_std(self.calibration.a) ** 2

    def half_width(self, level=0.9):
        """Half-width of the central ``level`` interval of the noise, in value units (curator-only)."""
        return self.scale * polyplace_half_width(self.calibration.a, level)

    def noise(self, size=None, *, rng=None):
        z = rounded_polyplace(self.calibration.a, self._width, size, rng=rng)
        return in_units(z, self.grid, size)

    @classmethod
    def noise_survival(cls, release, x):
        """c·S(D)·X with X PolyPlace(a); the scale c·S(D) (data-dependent) from the curator diagnostics."""
        scale = float(release.diagnostics.values["noise_scale"])
        return polyplace_survival(x / scale, release.params["a"])

    def public_params(self):
        c = self.calibration
        return {"grid": self.grid, "a": float(c.a), "c": float(c.c), "beta": c.beta, "noise_rule": c.rule}

    def release(self, value, *, rng=None):
        """Release the exact value ``value`` (int, Fraction, or a float taken as the rational it stores)."""
        m = rounded_polyplace(self.calibration.a, self._width, center=_exact_center(value, self.grid), rng=rng)
        out = m if self.grid == 1 else from_grid(m, self.grid)
        return Release(value=out, epsilon=self.epsilon, delta=0.0, mechanism=self.name,
                       params=self.public_params(),
                       diagnostics=CuratorDiagnostics({"smooth_bound": self.smooth_bound,
                                                       "noise_scale": self.scale}))


def _exact_center(value, grid):
    """``value / grid`` as an exact Fraction: the query value itself, not rounded to the grid."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise TypeError(f"value must be a real number, got {type(value).__name__} {value!r}.")
    if isinstance(value, (float, np.floating)) and not math.isfinite(value):
        raise ValueError(f"value must be finite, got {value!r}.")
    return Fraction(value) / Fraction(grid)
