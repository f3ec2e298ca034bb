"""Smooth and global sensitivity bounds, one function per theorem.

Neighbouring relation throughout: add or remove one record (unbounded DP). All smooth bounds
here are ``ln 2``-smooth upper bounds on the local sensitivity of a query answered on the
k-NN-imputed data, built from L1(D) through Theorem 4.6 and Theorem 3.5 of Clifton et al.
(2022); they are smooth only for β ≥ ln 2, which is why a smooth-sensitivity release needs
ε > ln 2 with PolyPlace noise (:func:`dpknn.mechanisms.choose_polyplace`; no noise scaled by S(D) can
do with less) and ε > 2 ln 2 with the paper's generalized Cauchy noise
(:func:`dpknn.mechanisms.cauchy_admissible`). The noise and its calibration
live in :mod:`dpknn.mechanisms._base`; this module holds only the theorems' bounds.

Erratum applied (``docs/privacy.md``):

- Theorem 5.4 assumes 0 ≤ a; for a < 0 the leading term uses max(|a|, |b|) instead of b.

References
----------
.. [1] Clifton, Hanson, Kifer, Shamis, et al. (2022). "Differentially private k-nearest
   neighbor missing data imputation". Theorems 3.5, 3.6, 3.8, 4.6, 5.1, 5.4, 5.6.
.. [2] Nissim, Raskhodnikova, Smith (2007). "Smooth sensitivity and sampling in private data
   analysis". Lemma 2.6, Lemma 2.7.
"""

from __future__ import annotations

import math

import numpy as np

# The smoothness β of every bound built from L1 (Theorems 5.1, 5.4, 5.6 need β ≥ ln 2), defined beside the
# smooth mechanisms calibrated to it: a release builds on a mechanism, not the other way.
from dpknn.mechanisms._smooth import LN2

__all__ = [
    "LN2",
    "check_bounds",
    "count_global",
    "count_smooth",
    "mean_global",
    "mean_smooth",
    "variance_global",
    "variance_smooth",
]



def _check_l1(l1):
    if isinstance(l1, bool) or not isinstance(l1, (int, np.integer)) or l1 < 0:
        raise ValueError(f"l1 must be a non-negative integer, got {l1!r}.")
    return int(l1)


def check_bounds(bounds):
    """Public bounds ``(low, high)`` as floats, finite with low < high and (high - low)² finite; else a clear error.

    Parameters
    ----------
    bounds : (low, high)
        The public bounds of an attribute, a pair of numbers.
    """
    try:
        a, b = (float(v) for v in bounds)
    except (TypeError, ValueError):
        raise TypeError(f"bounds must be a pair (low, high) of numbers, got {bounds!r}.") from None
    if math.isnan(a) or math.isnan(b) or not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"bounds must be finite numbers, got {bounds!r}.")
    if not a < b:
        raise ValueError(f"bounds must satisfy low < high, got low={a}, high={b}.")
    if not math.isfinite((b - a) * (b - a)):
        raise ValueError(f"bounds {bounds!r} are too wide: (high - low)^2 overflows a double; declare "
                         "tighter public bounds.")
    return a, b


def _check_size(s, minimum, what):
    s = float(s)
    if not (s >= minimum and math.isfinite(s)):
        raise ValueError(f"the estimate of the subpopulation size must be >= {minimum} for {what}, got {s}.")
    return s


def _finite(value, what, bounds):
    if not math.isfinite(value):
        raise ValueError(f"the sensitivity of the {what} overflows with bounds {bounds!r}; declare tighter "
                         "public bounds.")
    return value


# --- smooth upper bounds (β = ln 2) ----------------------------------------------------------
def count_smooth(l1):
    """Smooth bound 1 + L1(D) for a count on imputed data (Clifton et al. 2022, Theorem 5.1).

    A ``ln 2``-smooth upper bound on the local sensitivity of any counting query whose
    subpopulation may depend on imputed values. Neighbours: add/remove one record.

    Parameters
    ----------
    l1 : int
        L1(D), a non-negative integer.
    """
    return 1.0 + _check_l1(l1)


def mean_smooth(l1, bounds, s, *, depends_on_imputed):
    """Smooth bound for a mean over a subpopulation (Clifton et al. 2022, Theorem 5.4).

    Parameters
    ----------
    l1 : int
        L1(D).
    bounds : (a, b)
        Public bounds of the attribute (values are clamped to them).
    s : float
        The released (noisy) estimate of the subpopulation size, at least 1.
    depends_on_imputed : bool
        False: Theorem 5.4(a), membership of the subpopulation does not depend on imputed
        attributes: ``(M + L1 (b - a)) / s``. True: Theorem 5.4(b), a donee can also move in or
        out of the subpopulation: ``(M + L1 max(M, b - a)) / s``, which is the paper's
        ``b (1 + L1) / s`` when a ≥ 0.

    Here M = max(|a|, |b|) (erratum: the paper's b assumes a ≥ 0). ``ln 2``-smooth;
    neighbours: add/remove one record.
    """
    l1 = _check_l1(l1)
    a, b = check_bounds(bounds)
    s = _check_size(s, 1.0, "a mean")
    big = max(abs(a), abs(b))
    per_donee = max(big, b - a) if depends_on_imputed else (b - a)
    return _finite((big + l1 * per_donee) / s, "mean", bounds)


def variance_smooth(l1, bounds, s, mean):
    """Smooth bound for a variance about a released mean (Clifton et al. 2022, Theorem 5.6).

    ``m (1 + L1) / (s - 1)`` with ``m = max((a - Ȳ)², (b - Ȳ)²)``; the same whether or not the
    subpopulation depends on imputed attributes. ``mean`` is clamped to [a, b] (the theorem
    assumes a ≤ Ȳ ≤ b; clamping a released value is post-processing). Needs s ≥ 2.
    ``ln 2``-smooth; neighbours: add/remove one record.

    Parameters
    ----------
    l1 : int
        L1(D).
    bounds : (a, b)
        Public bounds of the attribute.
    s : float
        The released (noisy) estimate of the subpopulation size, at least 2.
    mean : float
        The released mean Ȳ (clamped to [a, b]).
    """
    l1 = _check_l1(l1)
    a, b = check_bounds(bounds)
    s = _check_size(s, 2.0, "a variance")
    ybar = min(max(float(mean), a), b)
    m = max((a - ybar) ** 2, (b - ybar) ** 2)
    return _finite(m * (1.0 + l1) / (s - 1.0), "variance", bounds)


# --- global sensitivities (no imputation, or the paper's optimistic comparison) --------------
def count_global(n_affected=0):
    """Global sensitivity of a count: 1 + n_affected.

    With ``n_affected = 0`` this is the add/remove sensitivity of a count on data that
    imputation does not touch. The paper's comparison (§6.3) uses ``1 + number of missing
    records``, which is *not* a valid global sensitivity: it depends on the data, so the
    resulting release is not differentially private.

    Parameters
    ----------
    n_affected : int, default 0
        How many records besides the one added or removed can change the count (0: data that
        imputation does not touch; the paper's comparison uses the number of missing records).
    """
    return 1.0 + float(n_affected)


def mean_global(bounds, s, n_affected=0, *, depends_on_imputed=False):
    """Sensitivity of a mean with size estimate s when at most ``n_affected`` donees move.

    ``n_affected = 0``: the available-case mean (ignore missing data), M / s with
    M = max(|a|, |b|). Otherwise the formulas of Theorem 5.4 with L1 replaced by n_affected.

    Parameters
    ----------
    bounds : (a, b)
        Public bounds of the attribute.
    s : float
        The estimate of the subpopulation size, at least 1.
    n_affected : int, default 0
        The number of donees that can move, in place of L1 (converted with ``int``).
    depends_on_imputed : bool, default False
        Whether membership of the subpopulation depends on imputed attributes (as for :func:`mean_smooth`).
    """
    return mean_smooth(int(n_affected), bounds, s, depends_on_imputed=depends_on_imputed)


def variance_global(bounds, s, mean, n_affected=0):
    """Sensitivity of a variance about a released mean, as in Theorem 5.6 with L1 = n_affected.

    Parameters
    ----------
    bounds : (a, b)
        Public bounds of the attribute.
    s : float
        The estimate of the subpopulation size, at least 2.
    mean : float
        The released mean Ȳ (clamped to [a, b]).
    n_affected : int, default 0
        The number of donees that can move, in place of L1 (converted with ``int``).
    """
    return variance_smooth(int(n_affected), bounds, s, mean)
