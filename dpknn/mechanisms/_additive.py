"""Additive noise on a public grid: the Laplace, geometric and Gaussian mechanisms (global sensitivity),
and the discrete Gaussian of zero-concentrated DP for count tables.

Each mechanism rounds the value to a public power-of-two grid and adds integer noise from an exact
sampler (:mod:`dpknn.mechanisms._noise`), charging the rounding in the sensitivity; see
:mod:`dpknn.mechanisms._base` for the grid and for what a :class:`~dpknn.mechanisms._base.Release`
publishes. Neighbouring relation: add or remove one record.
"""

from __future__ import annotations

import functools
import math
import numbers
import typing
from fractions import Fraction

import numpy as np
from scipy import optimize, stats

from dpknn.accounting._zcdp import zcdp_epsilon
from dpknn.mechanisms._base import (
    CuratorDiagnostics,
    Mechanism,
    PublicGrid,
    Release,
    exact_epsilon,
    from_grid,
    grid_steps,
    in_units,
    public_grid,
    to_grid,
)
from dpknn.mechanisms._noise import (
    discrete_gaussian,
    discrete_gaussian_tail,
    discrete_laplace,
    discrete_laplace_survival,
)
from dpknn.utils._validation import EPSILON, POSITIVE, POSITIVE_DELTA, Boolean, Interval

__all__ = ["DiscreteGaussian", "Gaussian", "Geometric", "IntegerNoise", "Laplace"]


class Laplace(Mechanism):
    """Laplace mechanism on a public grid (discrete Laplace noise, exact sampler).

    The value is rounded to the grid g = :func:`public_grid` (Δ/ε) and an integer Z with
    P(Z = z) ∝ exp(-ε|z| / Δ_g) is added, where Δ_g = floor(Δ/g) + 1 charges the rounding:
    neighbours' rounded values differ by at most Δ/g + 1 steps. The release is (m + Z)·g.
    ε-DP under add/remove one record for a query of global sensitivity at most Δ
    (Dwork et al. 2006; discrete form: Ghosh et al. 2012, sampler: Canonne et al. 2020,
    Algorithm 2).

    For a vector of L1 sensitivity Δ in which one record changes at most ``coordinates``
    coordinates (:meth:`release_array`), each coordinate is rounded on its own, so neighbours'
    rounded vectors differ by at most Δ/g + ``coordinates`` steps in L1, an integer:
    Δ_g = floor(Δ/g) + ``coordinates``, and the vector with independent noise of scale Δ_g/ε in
    every coordinate is ε-DP (Dwork et al. 2006, Theorem 1, applied to the L1 distance).

    Parameters
    ----------
    epsilon : float or Fraction
        Taken exactly as given.
    sensitivity : float
        Global (L1) sensitivity Δ (a public number).
    grid : float or None
        A public power of two; None: :func:`public_grid` (Δ/ε).
    coordinates : int, default 1
        The most coordinates of a vector released by :meth:`release_array` that adding or
        removing one record changes (d for the sums of a record's d features in one cluster).
    published_sensitivity : bool, default True
        Publish Δ and the scale in the release's parameters. False where Δ was computed from a
        data-dependent number (an ignore-missing mean's M/s, s the clamped released count): its release
        then puts them in its :class:`CuratorDiagnostics` from the start, so that the published
        parameters depend on the public inputs alone; ``grid`` must then be given (public), as the default
        grid follows Δ.
    """

    name = "laplace"
    delta = 0.0
    parameter_constraints: typing.ClassVar[dict] = {
        "epsilon": EPSILON, "sensitivity": POSITIVE, "grid": (PublicGrid(), None),
        "coordinates": Interval("int", 1, None, closed="left"), "published_sensitivity": Boolean()}

    def __init__(self, *, epsilon, sensitivity, grid=None, coordinates=1, published_sensitivity=True):
        p = self.checked_params(epsilon=epsilon, sensitivity=sensitivity, grid=grid, coordinates=coordinates,
                                published_sensitivity=published_sensitivity)
        self.epsilon, self.sensitivity, self.coordinates = p["epsilon"], p["sensitivity"], p["coordinates"]
        self.published_sensitivity = p["published_sensitivity"]
        if not self.published_sensitivity and grid is None:
            # The default grid is a power of two below Δ/ε: published with the value, it would tell Δ to a factor 2.
            raise ValueError("a Laplace mechanism that keeps its sensitivity for the curator needs a public grid "
                             "(published_sensitivity=False with grid=None would publish Δ through the grid).")
        if not math.isfinite(self.sensitivity / self.epsilon):
            raise ValueError(f"sensitivity / epsilon overflows: sensitivity={sensitivity!r}, epsilon={epsilon!r}.")
        self.grid = public_grid(self.sensitivity / self.epsilon) if grid is None else p["grid"]
        self.steps = math.floor(Fraction(self.sensitivity) / Fraction(self.grid)) + self.coordinates
        self._scale = Fraction(self.steps) / exact_epsilon(epsilon)   # in grid steps

    @property
    def scale(self):
        """Laplace scale in value units, Δ_g·g/ε (public)."""
        return float(self._scale * Fraction(self.grid))

    def variance(self):
        a = math.exp(-1.0 / float(self._scale))
        return 2.0 * a / (1.0 - a) ** 2 * self.grid**2

    def noise(self, size=None, *, rng=None):
        """Noise in value units (exact integer steps times the grid)."""
        z = discrete_laplace(self._scale, size, rng=rng)
        return in_units(z, self.grid, size)

    @classmethod
    def noise_survival(cls, release, x):
        """Exact: discrete Laplace steps of the grid (a mean's count-derived scale is read from the
        release's curator diagnostics)."""
        grid = float(release.params["grid"])
        scale = release.params.get("scale", release.diagnostics.values.get("scale"))
        return discrete_laplace_survival(x / grid, float(scale) / grid)

    def public_params(self):
        out = {"grid": self.grid}
        if self.published_sensitivity:
            out.update(sensitivity=self.sensitivity, scale=self.scale)
        if self.coordinates > 1:
            out["coordinates"] = self.coordinates
        return out

    def release(self, value, *, rng=None):
        """Release ``value`` (Generator, int seed or None = OS CSPRNG for ``rng``)."""
        m = to_grid(value, self.grid) + discrete_laplace(self._scale, rng=rng)
        curator = {} if self.published_sensitivity else {"sensitivity": self.sensitivity, "scale": self.scale}
        return Release(value=from_grid(m, self.grid), epsilon=self.epsilon, delta=0.0, mechanism=self.name,
                       params=self.public_params(), diagnostics=CuratorDiagnostics(curator))

    def release_array(self, values, *, rng=None):
        """Release an array of L1 sensitivity Δ whose neighbours differ in at most ``coordinates``
        coordinates: each rounded to the grid plus its own noise; float64 of the same shape."""
        m = grid_steps(values, self.grid)
        z = np.asarray(discrete_laplace(self._scale, m.shape, rng=rng), dtype=np.int64)
        return (m + z) * self.grid


class IntegerNoise(Mechanism):
    """Base of the mechanisms that add integer noise (:meth:`noise`) to integer queries: the
    value and every coordinate of an array are released exactly, with no grid. A subclass states
    its theorem and sets ``noun`` (its name in errors)."""

    noun = None

    def release(self, value, *, rng=None):
        if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
            raise TypeError(f"the {self.noun} mechanism releases integers, got {value!r}.")
        return Release(value=int(value) + int(self.noise(rng=rng)), epsilon=self.epsilon, delta=self.delta,
                       mechanism=self.name, params=self.public_params())

    def release_array(self, values, *, rng=None):
        """Noisy copy (int64, same shape) of an integer array of the subclass's sensitivity."""
        values = np.asarray(values)
        if values.dtype.kind not in "iu":
            raise TypeError(f"the {self.noun} mechanism releases integers, got an array of {values.dtype}.")
        z = np.asarray(self.noise(values.size, rng=rng), dtype=np.int64)
        return values.astype(np.int64) + z.reshape(values.shape)


class Geometric(IntegerNoise):
    """Geometric (discrete Laplace) mechanism for integer queries: value + Z, P(Z=z) ∝ exp(-ε|z|/Δ).

    ε-DP under add/remove one record for an integer query of sensitivity Δ (Ghosh,
    Roughgarden, Sundararajan 2012); Z is drawn exactly (Canonne et al. 2020, Algorithm 2).
    The release is an integer.

    :meth:`release_array` adds independent noise to every coordinate of an integer vector of L1
    sensitivity Δ (a histogram: Δ = 1 under add/remove one record), which is ε-DP by the same
    theorem applied to the L1 distance.

    Parameters
    ----------
    epsilon : float or Fraction
        Taken exactly as given.
    sensitivity : int, default 1
    """

    name = "geometric"
    noun = "geometric"
    delta = 0.0

    parameter_constraints: typing.ClassVar[dict] = {"epsilon": EPSILON,
                                                    "sensitivity": Interval("int", 1, None, closed="left")}

    def __init__(self, *, epsilon, sensitivity=1):
        p = self.checked_params(epsilon=epsilon, sensitivity=sensitivity)
        self.epsilon, self.sensitivity = p["epsilon"], p["sensitivity"]
        self._scale = Fraction(self.sensitivity) / exact_epsilon(epsilon)

    @property
    def alpha(self):
        """exp(-ε/Δ): the ratio of the probabilities of neighbouring noise values."""
        return math.exp(-self.epsilon / self.sensitivity)

    @property
    def scale(self):
        """The noise scale Δ/ε (public), as the exact rational the sampler uses."""
        return self._scale

    def variance(self):
        a = self.alpha
        return 2.0 * a / (1.0 - a) ** 2

    def noise(self, size=None, *, rng=None):
        return discrete_laplace(self._scale, size, rng=rng)

    @classmethod
    def noise_survival(cls, release, x):
        """Exact: discrete Laplace of scale Δ/ε."""
        return discrete_laplace_survival(x, float(release.params["sensitivity"]) / float(release.epsilon))

    def public_params(self):
        return {"grid": 1, "sensitivity": self.sensitivity}



class Gaussian(Mechanism):
    """Gaussian mechanism on a public grid (discrete Gaussian noise, exact sampler).

    The value is rounded to the grid g = 2^(floor(log2 σ_c) - 10), with σ_c the analytic
    Gaussian σ (Balle and Wang 2018, Theorem 8) for (ε, δ, Δ); the rounding is charged as
    Δ_g = floor(Δ/g) + 1 steps. σ_g (in steps) is the analytic σ for Δ_g, raised until the
    exact (ε, δ) curve of the discrete Gaussian (Canonne, Kamath, Steinke 2020, Theorem 7),
    δ = P[Y > εσ²/Δ_g - Δ_g/2] - e^ε P[Y > εσ²/Δ_g + Δ_g/2], is at most δ. (ε, δ)-DP under
    add/remove one record for a query of L2 sensitivity at most Δ.

    Parameters
    ----------
    epsilon : float
    delta : float in (0, 1)
    sensitivity : float
    """

    name = "gaussian"
    parameter_constraints: typing.ClassVar[dict] = {"epsilon": EPSILON, "delta": POSITIVE_DELTA,
                                                    "sensitivity": POSITIVE}

    def __init__(self, *, epsilon, delta, sensitivity):
        p = self.checked_params(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
        self.epsilon, self.delta, self.sensitivity = p["epsilon"], p["delta"], p["sensitivity"]
        sigma_c = _analytic_sigma(self.epsilon, self.delta, self.sensitivity)
        self.grid = public_grid(sigma_c, bits=10)
        self.steps = math.floor(Fraction(self.sensitivity) / Fraction(self.grid)) + 1
        sigma = _analytic_sigma(self.epsilon, self.delta, float(self.steps))
        while self.discrete_delta(sigma**2) > self.delta:
            sigma *= 1.0005
        # A hair more than the checked σ, so that rounding of σ² cannot push δ above the target.
        self._sigma2 = Fraction(sigma * (1 + 1e-9)) ** 2

    def discrete_delta(self, sigma2):
        """δ(ε) of the discrete Gaussian with variance parameter σ² (steps) for shift Δ_g."""
        d, e = self.steps, self.epsilon
        t = e * sigma2 / d
        return (discrete_gaussian_tail(t - d / 2, sigma2)
                - math.exp(e) * discrete_gaussian_tail(t + d / 2, sigma2))

    @property
    def sigma(self):
        """σ in value units (public)."""
        return math.sqrt(float(self._sigma2)) * self.grid

    def variance(self):
        return self.sigma**2

    def noise(self, size=None, *, rng=None):
        z = discrete_gaussian(self._sigma2, size, rng=rng)
        return in_units(z, self.grid, size)

    def release(self, value, *, rng=None):
        m = to_grid(value, self.grid) + discrete_gaussian(self._sigma2, rng=rng)
        return Release(value=from_grid(m, self.grid), epsilon=self.epsilon, delta=self.delta,
                       mechanism=self.name, params=self.public_params())

    def public_params(self):
        return {"grid": self.grid, "sensitivity": self.sensitivity, "sigma": self.sigma}


class DiscreteGaussian(IntegerNoise):
    """Discrete Gaussian mechanism for integer vectors, accounted in zero-concentrated DP.

    Adds Z ~ N_Z(0, σ²) (P(Z = z) ∝ exp(−z²/(2σ²)), exact sampler) to each coordinate of an
    integer vector of L2 sensitivity Δ. With σ² = Δ²/(2ρ) this is ρ-zCDP under add/remove one
    record (Canonne, Kamath, Steinke 2020, Theorem 4: the Rényi divergence of order α of
    N_Z(0, σ²) and N_Z(Δ, σ²) is at most αΔ²/(2σ²) for an integer shift Δ; ``docs/privacy.md``
    has the proof and ``tests/test_zcdp.py`` the numerical certificate). A count table has
    Δ = 1 (one record changes one cell by one). ρ adds up under composition
    (:mod:`dpknn.accounting._zcdp`); ``epsilon`` is the mechanism's stand-alone guarantee at
    ``delta`` by the exact conversion (:func:`~dpknn.accounting._zcdp.zcdp_epsilon`).

    Parameters
    ----------
    rho : float or Fraction
        zCDP parameter, taken exactly as given.
    sensitivity : int, default 1
        L2 sensitivity Δ of the integer vector.
    delta : float in (0, 1), default 1e-9
        δ of the stated stand-alone (ε, δ) guarantee (composition uses ρ).
    """

    name = "discrete_gaussian"
    noun = "discrete Gaussian"
    parameter_constraints: typing.ClassVar[dict] = {"rho": POSITIVE,
                                                    "sensitivity": Interval("int", 1, None, closed="left"),
                                                    "delta": POSITIVE_DELTA}

    def __init__(self, *, rho, sensitivity=1, delta=1e-9):
        p = self.checked_params(rho=rho, sensitivity=sensitivity, delta=delta)
        self.rho, self.sensitivity, self.delta = p["rho"], p["sensitivity"], p["delta"]
        self.sigma2 = Fraction(self.sensitivity) ** 2 / (2 * Fraction(rho))

    @functools.cached_property
    def epsilon(self):
        """ε of the stand-alone (ε, ``delta``) guarantee (a search over Rényi orders: computed once,
        not at every release)."""
        return zcdp_epsilon(float(self.rho), self.delta)

    @property
    def sigma(self):
        """σ of the noise (public), in counts."""
        return math.sqrt(self.sigma2)

    def variance(self):
        """The variance of N_Z(0, σ²), at most σ² (Canonne et al. 2020, Proposition 19)."""
        return float(self.sigma2)

    def noise(self, size=None, *, rng=None):
        return discrete_gaussian(self.sigma2, size, rng=rng)

    def public_params(self):
        return {"grid": 1, "sensitivity": self.sensitivity, "rho": float(self.rho), "sigma": self.sigma}


def _continuous_gaussian_delta(sigma, epsilon, sensitivity):
    d, e = sensitivity, epsilon
    return (stats.norm.cdf(d / (2 * sigma) - e * sigma / d)
            - math.exp(e) * stats.norm.cdf(-d / (2 * sigma) - e * sigma / d))


def _analytic_sigma(epsilon, delta, sensitivity):
    """Smallest σ with the continuous Gaussian (ε, δ)-DP (Balle and Wang 2018, Theorem 8)."""
    f = lambda s: _continuous_gaussian_delta(s, epsilon, sensitivity) - delta  # noqa: E731
    hi = sensitivity
    while f(hi) > 0:
        hi *= 2
    lo = hi / 2
    while f(lo) <= 0 and lo > 1e-300:
        lo /= 2
    return optimize.brentq(f, lo, hi, xtol=1e-14, rtol=1e-14)
