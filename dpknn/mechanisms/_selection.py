"""Private selection of a high-scoring candidate, sampled exactly: permute-and-flip and the
exponential mechanism.

PrivBayes chooses each attribute's parents by a private selection over candidate (attribute,
parents) pairs scored by mutual information. The textbook tool is the exponential mechanism;
dpknn's synthesisers use **permute-and-flip** (McKenna & Sheldon 2020) instead, for two reasons:

- it is ε-DP under the same condition (every score moves by at most Δ between neighbours) and
  its expected score is never worse than the exponential mechanism's (their Theorem 2);
- it needs only Bernoulli(exp(-γ)) trials and a uniform random permutation, both of which
  :mod:`dpknn.mechanisms._noise` samples exactly, so no floating-point normalisation of exp(·) weights can
  break the guarantee (Ilvento 2020 shows how a float exponential mechanism can).

Permute-and-flip visits the candidates in a uniformly random order; candidate r is accepted with
probability exp(-ε (s* - s_r) / (2Δ)), s* the largest score, and the first accepted one is
returned (the best one is always accepted, so the loop ends within one pass).

:class:`ExponentialMechanism` is the course's Algorithm 1, P(r) ∝ exp(ε s_r / (2Δ)), sampled
exactly by the same trials *with replacement*: draw a candidate uniformly, accept it with
probability exp(-ε (s* - s_r) / (2Δ)), else draw again. A round accepts candidate r with
probability exp(ε (s_r - s*) / (2Δ)) / R, so the accepted one has exactly the exponential
mechanism's distribution; the expected number of rounds is R / Σ_r exp(ε (s_r - s*) / (2Δ)) ≤ R.

References
----------
.. [1] McKenna, Sheldon (2020). "Permute-and-flip: a new mechanism for differentially private
   selection", NeurIPS, Algorithm 1 and Theorems 1-2.
.. [2] McSherry, Talwar (2007). "Mechanism design via differential privacy", FOCS, Theorem 6.
.. [3] Dwork, Roth (2014). "The algorithmic foundations of differential privacy", Theorem 3.10.
.. [4] Ilvento (2020). "Implementing the exponential mechanism with base-2 differential
   privacy", CCS.
.. [5] Canonne, Kamath, Steinke (2020). "The discrete Gaussian for differential privacy",
   Algorithm 1 (Bernoulli(exp(-γ))).
.. [6] Jiang (2025). Short course on data privacy (the exponential mechanism, Algorithm 1).
"""

from __future__ import annotations

import abc
import typing
from fractions import Fraction

import numpy as np

from dpknn.mechanisms._base import Mechanism, Release
from dpknn.mechanisms._noise import bernoulli_exp_exact
from dpknn.mechanisms._randomness import as_source
from dpknn.utils._validation import EPSILON, POSITIVE

__all__ = ["ExponentialMechanism", "PermuteAndFlip", "ScoreSelection"]


class ScoreSelection(Mechanism):
    """Validation, acceptance probabilities and the release of a chosen index, shared by the two
    selection mechanisms (their docstrings state the theorems).

    Parameters
    ----------
    epsilon : float
        Budget of one selection, > 0.
    sensitivity : float
        Δ > 0, a public bound on how much any score moves between neighbouring data sets.
    """

    delta = 0.0

    parameter_constraints: typing.ClassVar[dict] = {"epsilon": EPSILON, "sensitivity": POSITIVE}

    def __init__(self, *, epsilon, sensitivity):
        p = self.checked_params(epsilon=epsilon, sensitivity=sensitivity)
        self.epsilon, self.sensitivity = p["epsilon"], p["sensitivity"]
        self._rate = Fraction(self.epsilon) / (2 * Fraction(self.sensitivity))

    def acceptance(self, scores):
        """The acceptance probabilities exp(-ε (s* - s_r) / (2Δ)) of ``scores`` (floats, for checks)."""
        s = self._scores(scores)
        return np.exp(-float(self._rate) * (s.max() - s))

    def select(self, scores, *, rng=None):
        """The index of the selected candidate.

        Parameters
        ----------
        scores : array-like of float
            One score per candidate (higher is better).
        rng : numpy.random.Generator, int or None
            None: the operating system's CSPRNG.
        """
        s = self._scores(scores)
        src = as_source(rng)
        best = Fraction(float(s.max()))
        return self._pick(s, src, best)

    def public_params(self):
        return {"sensitivity": self.sensitivity}

    @abc.abstractmethod
    def _pick(self, s, src, best):
        """The chosen index of the scores ``s`` (best score ``best``, a Fraction) from ``src``."""

    def release(self, value, *, rng=None):
        """The chosen index of the scores ``value`` as a :class:`~dpknn.mechanisms.Release`
        (the scores are data and stay with the curator)."""
        return Release(value=int(self.select(value, rng=rng)), epsilon=self.epsilon, delta=0.0, mechanism=self.name,
                       params=self.public_params())

    @staticmethod
    def _scores(scores):
        s = np.asarray(scores, dtype=np.float64)
        if s.ndim != 1 or s.size == 0:
            raise ValueError(f"scores must be a non-empty 1-d array, got shape {s.shape}.")
        if not np.isfinite(s).all():
            raise ValueError("scores must be finite.")
        return s


class PermuteAndFlip(ScoreSelection):
    """ε-DP choice of the index of a high score (permute-and-flip, exact sampler).

    ε-DP under add/remove one record when each score changes by at most ``sensitivity`` between
    neighbouring data sets (McKenna & Sheldon 2020, Theorem 1). The sensitivity must bound the
    scores *as computed*: a caller computing scores in floating point adds a margin for their
    rounding. The scores themselves are data and stay with the curator; the released value is
    the chosen index only.

    Parameters
    ----------
    epsilon : float
    sensitivity : float
        Δ, a public bound on how much any score moves between neighbours.
    """

    name = "permute_and_flip"

    def _pick(self, s, src, best):
        order = list(range(s.size))
        for i in range(s.size):
            # Fisher-Yates, one step at a time: the visit order is a uniform permutation.
            j = i + src.randbelow(s.size - i)
            order[i], order[j] = order[j], order[i]
            r = order[i]
            if bernoulli_exp_exact(self._rate * (best - Fraction(float(s[r]))), src):
                return r
        raise AssertionError("unreachable: the best candidate is accepted with probability 1")  # pragma: no cover


class ExponentialMechanism(ScoreSelection):
    """ε-DP choice of an index with P(r) ∝ exp(ε s_r / (2Δ)) (the exponential mechanism, exact sampler).

    ε-DP under add/remove one record when each score changes by at most ``sensitivity`` between
    neighbouring data sets (McSherry & Talwar 2007, Theorem 6; Dwork & Roth 2014, Theorem 3.10):
    each weight moves by a factor e^{ε/2} at most, and so does their sum. As for
    :class:`PermuteAndFlip`, ``sensitivity`` must bound the scores as computed, the scores stay
    with the curator, and the released value is the index. Sampled by rejection with exact
    Bernoulli(exp(-γ)) trials (module docstring).

    Parameters
    ----------
    epsilon : float
    sensitivity : float
        Δ, a public bound on how much any score moves between neighbours.
    """

    name = "exponential"

    def probabilities(self, scores):
        """P(r) = exp(ε s_r/(2Δ)) / Σ exp(ε s_r'/(2Δ)) as floats (for checks)."""
        w = self.acceptance(scores)
        return w / w.sum()

    def _pick(self, s, src, best):
        while True:
            r = src.randbelow(s.size)
            if bernoulli_exp_exact(self._rate * (best - Fraction(float(s[r]))), src):
                return r
