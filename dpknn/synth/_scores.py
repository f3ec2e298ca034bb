"""The PrivBayes score n·I(X; Π) and its sensitivity under add/remove one record.

PrivBayes picks each attribute's parents by a private selection over candidates scored by
mutual information. With incomplete data (PrivBayesE) each score is computed on the rows
observed on its attributes, so the number of rows n_S of a score is data-dependent and the
normalised score I_S of Zhang et al. (2017, Lemma 4.1: substitution, public n) has no valid
sensitivity. The unnormalised score s = n_S·I_S(X; Π), in nats, does:

    |s(T) - s(T')| <= g(n) = (n+1) ln(n+1) - n ln n      (T' = T plus one row, |T| = n),

and g increases, so g(N) bounds every change when N is a public bound on the rows. The bound is
tight (brute force in ``tests/test_synth_scores.py``). :func:`score_sensitivity` adds a margin for
the floating-point rounding of :func:`mutual_information_score`, so that the sensitivity bounds
the scores *as computed*.

References
----------
.. [1] Zhang, Cormode, Procopiuc, Srivastava, Xiao (2017). "PrivBayes: private data release via
   Bayesian networks", ACM TODS 42(4), §4 (Lemma 4.1 holds for complete data and public n only).
.. [2] Mohapatra, Zong, Kerschbaum, He (2024). "Differentially private data generation with
   missing data", §4 (PrivBayesE).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["check_row_bound", "mutual_information_score", "score_sensitivity"]

# Unit roundoff of float64.
_U = 2.0**-53


def mutual_information_score(table):
    """n·I(X; Π) in nats of a contingency table of counts.

    Parameters
    ----------
    table : array-like of non-negative integers, at least 2-d
        Axis 0 is X; the other axes are the parents Π (flattened into one configuration).

    Returns
    -------
    float
        Σ c(x, π) ln(c(x, π) n / (c(x) c(π))) over the non-empty cells, summed exactly
        (``math.fsum``) from correctly rounded terms; 0 for an empty table.
    """
    t = np.asarray(table)
    if t.ndim < 2:
        raise ValueError(f"table must have at least 2 axes (X and its parents), got shape {t.shape}.")
    if t.size and (t.dtype.kind not in "iu" or t.min() < 0):
        raise ValueError("table must hold non-negative integer counts.")
    t = t.reshape(t.shape[0], -1).astype(np.float64)
    n = t.sum()
    if n == 0:
        return 0.0
    cx = t.sum(axis=1)
    cp = t.sum(axis=0)
    i, j = np.nonzero(t)
    c = t[i, j]
    # Integer products below 2^53 are exact; the quotient and the log add a few units of roundoff.
    return math.fsum(c * np.log((c * n) / (cx[i] * cp[j])))


def check_row_bound(max_rows):
    """``max_rows`` as an int in [1, 2^40], else ``ValueError`` naming it."""
    if isinstance(max_rows, bool) or not isinstance(max_rows, numbers.Integral) or not 1 <= max_rows <= 2**40:
        raise ValueError(f"max_rows must be an integer in [1, 2^40], got {max_rows!r}.")
    return int(max_rows)


def score_sensitivity(max_rows):
    """The add/remove sensitivity of :func:`mutual_information_score` over tables of at most
    ``max_rows`` rows: g(N) = (N+1) ln(N+1) - N ln N plus a margin for rounding.

    Each term c ln(q) of the score is computed with an absolute error of at most
    4u·c·(|ln q| + 1) (u the unit roundoff), and |ln q| <= 2 ln N, so a score is off by at most
    4u·N·(2 ln N + 1); twice that (one per neighbour) is added to g(N).

    Parameters
    ----------
    max_rows : int
        A public bound N on the number of rows any score is computed on (never the data's n,
        which would make the noise scale data-dependent). At most 2^40.
    """
    N = check_row_bound(max_rows)
    g = (N + 1) * math.log1p(N) - N * math.log(N)
    return g + 8 * _U * N * (2 * math.log(N) + 1) + 1e-12
