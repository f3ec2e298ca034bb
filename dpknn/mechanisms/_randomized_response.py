"""Randomized response: each record reports its bit, flipped with probability 1/(e^ε + 1).

For a data set of n records and a public predicate φ to the bits {0, 1}, record i reports
Yᵢ = φ(xᵢ) with probability e^ε/(e^ε + 1) and 1 − φ(xᵢ) otherwise, independently (Warner 1965;
the course's Algorithm RR_ε; "φ(1 − xᵢ)" there means 1 − φ(xᵢ)). The share π of ones is
estimated without bias by

    π̂ = (ȳ (e^ε + 1) − 1) / (e^ε − 1),

since E[ȳ] = π e^ε/(e^ε + 1) + (1 − π)/(e^ε + 1).

**Guarantee.** Each report is ε-DP with respect to its own record's value (local DP): the
ratio P(Yᵢ = y | xᵢ) / P(Yᵢ = y | xᵢ') is at most e^ε. The vector of reports is therefore
ε-DP under **replacing one record** (the course's proof); it publishes one report per record,
so the number of records n is public, and under add/remove the guarantee is about the value,
not the presence, of a record.

**Exact sampling.** A flip is a Bernoulli(1/(1 + e^ε)) trial decided by comparing a uniform
real, drawn 64 bits at a time, with rigorous rational bounds on 1/(1 + e^ε) (``decimal``'s
correctly rounded ``exp`` widened by one unit in the last place). Almost every record is
decided by its first 64 bits in one vectorised comparison; the others (probability below
2⁻⁶² each) draw more bits until decided. The flip probability is therefore exactly
1/(1 + e^ε) for the rational ε the float stores, not a float approximation of it.

References
----------
.. [1] Warner (1965). "Randomized response: a survey technique for eliminating evasive answer
   bias", JASA 60(309).
.. [2] Dwork, Roth (2014). "The algorithmic foundations of differential privacy", §3.2.
.. [3] Jiang (2025). Short course on data privacy (Algorithm RR_ε and its proof).
"""

from __future__ import annotations

import decimal
import math
import typing
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd
from scipy import stats

from dpknn.mechanisms._base import Mechanism, Release
from dpknn.mechanisms._noise import bernoulli_real
from dpknn.mechanisms._randomness import as_source
from dpknn.utils._validation import Interval, check_unit_interval

__all__ = ["ProportionEstimate", "RandomizedResponse"]


@dataclass(frozen=True)
class ProportionEstimate:
    """The unbiased estimate of a share from randomized responses.

    Attributes
    ----------
    estimate : float
        π̂; unbiased, so it can fall outside [0, 1] (clip it for display only).
    standard_error : float
        √(ȳ(1 − ȳ)/n) · (e^ε + 1)/(e^ε − 1), the plug-in standard error.
    lower, upper : float
        The normal ``level`` interval π̂ ± z·SE.
    n : int
        Number of reports (public).
    level : float
    """

    estimate: float
    standard_error: float
    lower: float
    upper: float
    n: int
    level: float


def _flip_bounds(epsilon):
    """bounds(prec) -> (lo, hi) with lo <= 1/(1 + e^ε) <= hi, hi - lo below 2^-prec."""
    exponent = decimal.Decimal(epsilon)   # exact: a float is a dyadic rational

    def bounds(prec):
        digits = int(prec * 0.30103) + 12
        with decimal.localcontext() as ctx:
            ctx.prec = digits
            ctx.Emax, ctx.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
            e = exponent.exp()   # correctly rounded: within half a unit in the last place
        ulp = Fraction(10) ** (e.adjusted() - digits + 1)
        lo_e, hi_e = Fraction(e) - ulp, Fraction(e) + ulp
        return 1 / (1 + hi_e), 1 / (1 + lo_e)

    return bounds


class RandomizedResponse(Mechanism):
    """ε-DP randomized response on bits, with the unbiased estimator of their share.

    ε-DP under replacing one record (each report is ε-local-DP); see the module docstring for
    the guarantee and the exact sampler.

    Parameters
    ----------
    epsilon : float
        Privacy parameter; each bit is kept with probability e^ε/(e^ε + 1).
    """

    name = "randomized_response"
    delta = 0.0

    # Above 700, e^ε overflows a float.
    parameter_constraints: typing.ClassVar[dict] = {"epsilon": Interval("real", 0, 700, closed="right")}

    def __init__(self, *, epsilon):
        self.epsilon = self.checked_params(epsilon=epsilon)["epsilon"]
        self._bounds = _flip_bounds(self.epsilon)

    @property
    def flip_probability(self):
        """1/(1 + e^ε) as a float (for display and checks; the sampler uses exact bounds)."""
        return 1.0 / (1.0 + math.exp(self.epsilon))

    def randomize(self, bits, *, rng=None):
        """The reports of ``bits`` (one per record, same order; a Series keeps its index).

        Parameters
        ----------
        bits : array-like or pandas.Series of 0/1 or bool
            φ(xᵢ) for each record; no missing values (make missingness a bit of its own, or
            impute first).
        rng : numpy.random.Generator, int or None
            None: the operating system's CSPRNG.

        Returns
        -------
        ndarray of int8, or pandas.Series of int8 with ``bits``' index
        """
        index = bits.index if isinstance(bits, pd.Series) else None
        x = np.asarray(bits)
        if x.ndim != 1:
            raise ValueError(f"bits must be one-dimensional, got shape {x.shape}.")
        if x.dtype == object or not np.isin(x, (0, 1)).all():
            raise ValueError("bits must hold only 0/1 (or False/True) values, with no missing value.")
        x = x.astype(np.int8)
        src = as_source(rng)
        lo, hi = self._bounds(96)
        lo_word, hi_word = math.floor(lo * 2**64), math.ceil(hi * 2**64)   # p <= 1/2: both fit a uint64
        u = src.words(x.size)
        # A uniform real V = (u + r) / 2^64, r in [0, 1): V < p for sure when u < floor(p_lo 2^64),
        # V >= p for sure when u >= ceil(p_hi 2^64); the rare rest draws more bits of the same V.
        flip = u < np.uint64(lo_word)
        for i in np.flatnonzero((u >= np.uint64(lo_word)) & (u < np.uint64(hi_word))):
            flip[i] = bernoulli_real(self._bounds, src, head=(int(u[i]), 64))
        out = x ^ flip.astype(np.int8)
        return pd.Series(out, index=index, name=bits.name) if index is not None else out

    def public_params(self):
        return {"flip_probability": self.flip_probability}

    def variance(self):
        """Variance of a report's flip indicator, p(1 − p) with p = 1/(1 + e^ε)."""
        p = self.flip_probability
        return p * (1 - p)

    def release(self, value, *, rng=None):
        """One record's report of the bit ``value`` as a :class:`~dpknn.mechanisms.Release`."""
        return Release(value=int(self.randomize(np.array([value]), rng=rng)[0]), epsilon=self.epsilon, delta=0.0,
                       mechanism=self.name, params=self.public_params())

    def release_array(self, values, *, rng=None):
        """The reports of a vector of bits (:meth:`randomize`)."""
        return self.randomize(values, rng=rng)

    def estimate(self, reports, *, level=0.95):
        """The unbiased estimate π̂ of the share of ones behind ``reports`` (post-processing).

        Parameters
        ----------
        reports : array-like of 0/1
            Released reports.
        level : float, default 0.95

        Returns
        -------
        ProportionEstimate
        """
        level = check_unit_interval(level, "level")
        y = np.asarray(reports)
        if y.ndim != 1 or y.size == 0:
            raise ValueError(f"reports must be a non-empty 1-d array, got shape {y.shape}.")
        if y.dtype == object or not np.isin(y, (0, 1)).all():
            raise ValueError("reports must hold only 0/1 values.")
        n = y.size
        ybar = float(y.mean())
        e = math.exp(self.epsilon)
        est = (ybar * (e + 1) - 1) / (e - 1)
        se = math.sqrt(ybar * (1 - ybar) / n) * (e + 1) / (e - 1)
        z = float(stats.norm.ppf(0.5 + level / 2))
        return ProportionEstimate(estimate=est, standard_error=se, lower=est - z * se, upper=est + z * se, n=n,
                                  level=level)
