"""Mechanism objects and the :class:`Release` result.

Every mechanism is calibrated at construction (parameters validated, noise scale fixed) and
draws its noise in :meth:`release` from the ``rng`` passed to it. Neighbouring relation: add or
remove one record. Seeded generators are for reproducibility, not security.

References
----------
.. [1] Dwork, McSherry, Nissim, Smith (2006). "Calibrating noise to sensitivity in private data
   analysis" (Laplace mechanism); Clifton et al. (2022), Theorem 3.2.
.. [2] Ghosh, Roughgarden, Sundararajan (2012). "Universally utility-maximizing privacy
   mechanisms", §2 (geometric mechanism).
.. [3] Balle, Wang (2018). "Improving the Gaussian mechanism for differential privacy: analytical
   calibration and optimal denoising", Theorem 8.
.. [4] Nissim, Raskhodnikova, Smith (2007), Lemma 2.6; Clifton et al. (2022), Theorem 3.6 and
   Theorem 3.8 with the exact constants of DESIGN.md §4.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, stats

from . import noise
from .sensitivity import choose_gamma
from .validation import check_positive_real, check_rng

__all__ = ["Gaussian", "Geometric", "Laplace", "Release", "SmoothCauchy"]


@dataclass(frozen=True)
class Release:
    """A differentially private release (or a labelled non-private baseline).

    Attributes
    ----------
    value : float
        The released value.
    epsilon, delta : float
        Privacy cost of this release (add/remove-one neighbours).
    sensitivity : float
        The (smooth or global) sensitivity the noise was calibrated to; NaN for derived values.
    mechanism : str
        Name of the mechanism.
    l1 : int or None
        L1(D) where the sensitivity was built from it.
    details : dict
        γ, α, β, the noise scale, the released estimates it used, sub-releases, notes.
    """

    value: float
    epsilon: float
    delta: float
    sensitivity: float
    mechanism: str
    l1: int | None = None
    details: dict = field(default_factory=dict)

    def to_dict(self):
        """A JSON-ready dict (sub-releases in ``details`` are converted too)."""
        def conv(v):
            if isinstance(v, Release):
                return v.to_dict()
            if isinstance(v, dict):
                return {k: conv(x) for k, x in v.items()}
            if isinstance(v, (np.integer, np.floating)):
                return v.item()
            return v
        return {"value": conv(self.value), "epsilon": self.epsilon, "delta": self.delta,
                "sensitivity": self.sensitivity, "mechanism": self.mechanism, "l1": self.l1,
                "details": conv(self.details)}


def _check_epsilon(epsilon):
    return check_positive_real(epsilon, "epsilon")


def _check_value(value):
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.ndarray)):
        raise TypeError(f"value must be a real number, got {type(value).__name__} {value!r}.")
    if not np.all(np.isfinite(value)):
        raise ValueError(f"value must be finite, got {value!r}.")
    return value


class _Mechanism:
    name = "mechanism"
    delta = 0.0

    def noise(self, size=None, *, rng):
        raise NotImplementedError

    def release(self, value, *, rng=None, l1=None, details=None):
        """Release ``value`` plus noise drawn from ``rng`` (Generator, int seed or None)."""
        value = _check_value(value)
        rng = check_rng(rng)
        out = value + self.noise(rng=rng)
        info = self.details()
        if details:
            info.update(details)
        return Release(value=out, epsilon=self.epsilon, delta=self.delta, sensitivity=self.sensitivity,
                       mechanism=self.name, l1=l1, details=info)

    def details(self):
        return {}


class Laplace(_Mechanism):
    """Laplace mechanism: value + Laplace(sensitivity / ε).

    ε-DP for a query whose global sensitivity (add/remove one record) is at most
    ``sensitivity`` (Dwork et al. 2006; Clifton et al. 2022, Theorem 3.2). Outputs are doubles:
    see :mod:`dpknn.noise` on low-order bits.

    Parameters
    ----------
    epsilon : float
    sensitivity : float
    """

    name = "laplace"

    def __init__(self, *, epsilon, sensitivity):
        self.epsilon = _check_epsilon(epsilon)
        self.sensitivity = check_positive_real(sensitivity, "sensitivity")
        self.scale = self.sensitivity / self.epsilon

    def noise(self, size=None, *, rng):
        return noise.laplace(self.scale, size, rng=rng)

    def variance(self):
        return 2.0 * self.scale**2

    def details(self):
        return {"scale": self.scale}


class Geometric(_Mechanism):
    """Two-sided geometric mechanism for integer queries: value + Z, P(Z=z) ∝ exp(-ε|z|/Δ).

    ε-DP for an integer-valued query with sensitivity Δ under add/remove one record (Ghosh,
    Roughgarden, Sundararajan 2012). The output is an exact integer, so it leaks nothing
    through floating-point bits.

    Parameters
    ----------
    epsilon : float
    sensitivity : int, default 1
    """

    name = "geometric"

    def __init__(self, *, epsilon, sensitivity=1):
        self.epsilon = _check_epsilon(epsilon)
        if isinstance(sensitivity, bool) or not isinstance(sensitivity, numbers.Integral) or sensitivity < 1:
            raise ValueError(
                f"sensitivity of the geometric mechanism must be an integer >= 1, got {sensitivity!r}.")
        self.sensitivity = int(sensitivity)
        self.alpha = math.exp(-self.epsilon / self.sensitivity)

    def noise(self, size=None, *, rng):
        return noise.two_sided_geometric(self.alpha, size, rng=rng)

    def release(self, value, *, rng=None, l1=None, details=None):
        if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
            raise TypeError(f"the geometric mechanism releases integers, got {value!r}.")
        return super().release(int(value), rng=rng, l1=l1, details=details)

    def variance(self):
        return 2.0 * self.alpha / (1.0 - self.alpha) ** 2

    def details(self):
        return {"alpha": self.alpha}


class Gaussian(_Mechanism):
    """Analytic Gaussian mechanism: value + N(0, σ²) with the smallest σ that is (ε, δ)-DP.

    σ solves Φ(Δ/(2σ) - εσ/Δ) - e^ε Φ(-Δ/(2σ) - εσ/Δ) = δ (Balle and Wang 2018, Theorem 8),
    valid for every ε > 0, with Δ the L2 sensitivity under add/remove one record.

    Parameters
    ----------
    epsilon : float
    delta : float in (0, 1)
    sensitivity : float
    """

    name = "gaussian"

    def __init__(self, *, epsilon, delta, sensitivity):
        self.epsilon = _check_epsilon(epsilon)
        if not (isinstance(delta, numbers.Real) and 0 < delta < 1):
            raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
        self.delta = float(delta)
        self.sensitivity = check_positive_real(sensitivity, "sensitivity")
        self.sigma = self._calibrate()

    def _privacy_loss_delta(self, sigma):
        d, e = self.sensitivity, self.epsilon
        return (stats.norm.cdf(d / (2 * sigma) - e * sigma / d)
                - math.exp(e) * stats.norm.cdf(-d / (2 * sigma) - e * sigma / d))

    def _calibrate(self):
        f = lambda s: self._privacy_loss_delta(s) - self.delta  # noqa: E731
        hi = self.sensitivity
        while f(hi) > 0:
            hi *= 2
        lo = hi / 2
        while f(lo) <= 0 and lo > 1e-300:
            lo /= 2
        return optimize.brentq(f, lo, hi, xtol=1e-14, rtol=1e-14)

    def noise(self, size=None, *, rng):
        return noise.gaussian(self.sigma, size, rng=rng)

    def variance(self):
        return self.sigma**2

    def details(self):
        return {"sigma": self.sigma}


class SmoothCauchy(_Mechanism):
    """Smooth-sensitivity release with generalized Cauchy noise: value + S(D)/α · X.

    ε-DP (add/remove one record) when ``smooth_bound`` is a β-smooth upper bound on the local
    sensitivity of the query at the data (β = ln 2 for the L1-based bounds of
    :mod:`dpknn.sensitivity`) and X ~ generalized Cauchy(γ) is (α, β)-admissible
    (Nissim, Raskhodnikova, Smith 2007, Lemma 2.6 = Clifton et al. 2022, Theorem 3.6). The
    admissibility constants are the exact ones (corrected Theorem 3.8, DESIGN.md §4):
    α (γ-1)^(1-1/γ) ≤ ε/2 and β max(γ-1, 1) ≤ ε/2, so ε ≥ 2 ln 2 is required.

    Parameters
    ----------
    epsilon : float
        At least 2 ln 2.
    smooth_bound : float
        S(D), a ln 2-smooth upper bound on the local sensitivity.
    gamma : "optimal", "paper" or float
        See :func:`dpknn.sensitivity.choose_gamma`.
    """

    name = "smooth_cauchy"

    def __init__(self, *, epsilon, smooth_bound, gamma="optimal"):
        self.epsilon = _check_epsilon(epsilon)
        self.sensitivity = check_positive_real(smooth_bound, "smooth_bound")
        self.calibration = choose_gamma(self.epsilon, gamma)
        self.scale = self.sensitivity / self.calibration.alpha

    def noise(self, size=None, *, rng):
        return self.scale * noise.generalized_cauchy(self.calibration.gamma, size, rng=rng)

    def variance(self):
        return self.scale**2 * noise.generalized_cauchy_moment(self.calibration.gamma, 2)

    def details(self):
        c = self.calibration
        return {"gamma": c.gamma, "gamma_rule": c.rule, "alpha": c.alpha, "beta": c.beta,
                "scale": self.scale}
