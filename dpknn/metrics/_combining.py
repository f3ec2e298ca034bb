"""Combining rules for inference from m imputed or synthetic copies of a data set.

An analyst fits the same model to each of m released copies and gets per-copy estimates
q⁽ˡ⁾ and their variance estimates u⁽ˡ⁾. With

    q̄ = Σ q⁽ˡ⁾ / m,   ū = Σ u⁽ˡ⁾ / m,   b = Σ (q⁽ˡ⁾ − q̄)² / (m − 1),

the point estimate is always q̄; the variance and degrees of freedom depend on how the copies
were made:

=====================================  ============================  ===================================
rule                                   variance T                    degrees of freedom ν
=====================================  ============================  ===================================
multiple imputation (Rubin 1987)       ū + (1 + 1/m) b               (m − 1)(1 + 1/r)², r = (1 + 1/m) b/ū
partially synthetic (Reiter 2003)      ū + b/m                       (m − 1)(1 + 1/r)², r = b/(m ū)
fully synthetic (Raghunathan et al.)   (1 + 1/m) b − ū               (m − 1)(1 − 1/r)², r = (1 + 1/m) b/ū
=====================================  ============================  ===================================

The interval is q̄ ± t_{ν, 1−α/2} √T (the normal quantile when ν is infinite, i.e. b = 0).

**The fully synthetic variance can be negative** (when b is small against ū, typically for
small m). Following Reiter (2002), a negative T is replaced by the non-negative
T* = (n_syn / n) ū, with n_syn the size of each synthetic copy and n that of the original
(both public; their ratio defaults to 1); no degrees of freedom are derived for T*, so the
normal quantile is used and ``adjusted`` is True in the result.

These rules ignore any DP noise beyond what the copies' spread shows: for copies made by a DP
synthesiser from one noisy model the between-copy variance b misses the noise of the model
itself, so the intervals can be too narrow (Raisa et al. 2023 give rules that account for it).

Each function takes ``estimates`` and ``variances`` of shape (m,) for one parameter, or
(m, p) for p parameters combined one at a time; scalar fields of the result are then arrays.

References
----------
.. [1] Rubin (1987). "Multiple Imputation for Nonresponse in Surveys", Wiley, §3.1.
.. [2] Barnard, Rubin (1999). "Small-sample degrees of freedom with multiple imputation",
   Biometrika 86(4).
.. [3] Reiter (2003). "Inference for partially synthetic, public use microdata sets", Survey
   Methodology 29(2).
.. [4] Raghunathan, Reiter, Rubin (2003). "Multiple imputation for statistical disclosure
   limitation", Journal of Official Statistics 19(1).
.. [5] Reiter (2002). "Satisfying disclosure restrictions with synthetic data sets", Journal of
   Official Statistics 18(4) (the non-negative variance).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from dpknn.utils._validation import check_positive_int, check_positive_real, check_unit_interval

__all__ = ["CombinedEstimate", "combine_fully_synthetic", "combine_imputations", "combine_partially_synthetic"]


@dataclass(frozen=True)
class CombinedEstimate:
    """The combined inference from m copies (floats for one parameter, arrays for several).

    Attributes
    ----------
    estimate : float or ndarray
        q̄, the mean of the per-copy estimates.
    variance : float or ndarray
        T, the estimated variance of q̄ under the rule.
    df : float or ndarray
        Degrees of freedom of the reference t distribution (inf: normal).
    lower, upper : float or ndarray
        The ``level`` interval q̄ ± t_{df} √T.
    between : float or ndarray
        b, the between-copy variance.
    within : float or ndarray
        ū, the mean within-copy variance.
    m : int
        Number of copies.
    rule : str
        "imputation", "partially_synthetic" or "fully_synthetic".
    level : float
        Coverage of the interval.
    adjusted : bool or ndarray
        True where the fully synthetic variance was negative and T* replaced it.
    """

    estimate: float | np.ndarray
    variance: float | np.ndarray
    df: float | np.ndarray
    lower: float | np.ndarray
    upper: float | np.ndarray
    between: float | np.ndarray
    within: float | np.ndarray
    m: int
    rule: str
    level: float
    adjusted: bool | np.ndarray = False

    @property
    def standard_error(self):
        """√T."""
        return np.sqrt(self.variance)


def _copies(estimates, variances):
    q = np.asarray(estimates, dtype=np.float64)
    u = np.asarray(variances, dtype=np.float64)
    if q.ndim not in (1, 2):
        raise ValueError(f"estimates must have shape (m,) or (m, p), got shape {q.shape}.")
    if u.shape != q.shape:
        raise ValueError(f"variances must have the shape of estimates {q.shape}, got {u.shape}.")
    if q.shape[0] < 2:
        raise ValueError(f"combining needs at least m = 2 copies, got {q.shape[0]}.")
    if not (np.isfinite(q).all() and np.isfinite(u).all()):
        raise ValueError("estimates and variances must be finite.")
    if (u < 0).any():
        raise ValueError(f"variances must be >= 0, got {u.min()!r}.")
    return q, u, q.shape[0]


def _ratio(num, den):
    """num / den with x/0 = inf (and 0/0 = 0: no between-copy spread, no within variance)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.where(num > 0, np.inf, 0.0))


def _df(m, inv_r, sign):
    """(m − 1)(1 ± 1/r)²; infinite when b = 0 (1/r infinite)."""
    with np.errstate(invalid="ignore", over="ignore"):
        df = (m - 1) * (1.0 + sign * inv_r) ** 2
    return np.where(np.isfinite(inv_r), df, np.inf)


def _result(qbar, t, df, b, ubar, m, rule, level, adjusted=False):
    scalar = np.ndim(qbar) == 0
    z = np.where(np.isfinite(df), stats.t.ppf(0.5 + level / 2, np.where(np.isfinite(df), df, 1.0)),
                 stats.norm.ppf(0.5 + level / 2))
    half = z * np.sqrt(t)

    def out(x, kind=float):
        return kind(x) if scalar else np.asarray(x, dtype=kind)

    return CombinedEstimate(estimate=out(qbar), variance=out(t), df=out(df), lower=out(qbar - half),
                            upper=out(qbar + half), between=out(b), within=out(ubar), m=int(m), rule=rule,
                            level=level, adjusted=out(adjusted, bool))


def _moments(estimates, variances, level):
    level = check_unit_interval(level, "level")
    q, u, m = _copies(estimates, variances)
    return q.mean(axis=0), u.mean(axis=0), q.var(axis=0, ddof=1), m, level


def combine_imputations(estimates, variances, *, level=0.95, dfcom=None):
    """Rubin's (1987) rules for m multiply imputed data sets.

    T = ū + (1 + 1/m) b and ν = (m − 1)(1 + 1/r)² with r = (1 + 1/m) b / ū. With ``dfcom``,
    the complete-data degrees of freedom, ν is replaced by Barnard & Rubin's (1999)
    small-sample ν̃ = 1 / (1/ν + 1/ν_obs), ν_obs = (dfcom + 1)/(dfcom + 3) · dfcom · (1 − λ),
    λ = (1 + 1/m) b / T.

    Parameters
    ----------
    estimates, variances : array-like of shape (m,) or (m, p)
        Per-copy estimates and their estimated variances (squared standard errors).
    level : float, default 0.95
    dfcom : float or None
        Degrees of freedom of the analysis on complete data (e.g. n − p for a regression).

    Returns
    -------
    CombinedEstimate
    """
    qbar, ubar, b, m, level = _moments(estimates, variances, level)
    t = ubar + (1 + 1 / m) * b
    df = _df(m, _ratio(ubar, (1 + 1 / m) * b), +1.0)
    if dfcom is not None:
        dfcom = check_positive_real(dfcom, "dfcom")
        lam = _ratio((1 + 1 / m) * b, t)
        obs = (dfcom + 1) / (dfcom + 3) * dfcom * (1 - lam)
        with np.errstate(divide="ignore"):
            df = np.where(obs > 0, 1.0 / (1.0 / df + 1.0 / np.where(obs > 0, obs, 1.0)), 0.0)
    return _result(qbar, t, df, b, ubar, m, "imputation", level)


def combine_partially_synthetic(estimates, variances, *, level=0.95):
    """Reiter's (2003) rules for m partially synthetic data sets.

    T_p = ū + b/m and ν_p = (m − 1)(1 + 1/r)² with r = b / (m ū). Valid when the synthetic
    values are drawn from the posterior predictive distribution given the original data, with
    the unsynthesised values kept.

    Parameters
    ----------
    estimates, variances : array-like of shape (m,) or (m, p)
    level : float, default 0.95

    Returns
    -------
    CombinedEstimate
    """
    qbar, ubar, b, m, level = _moments(estimates, variances, level)
    t = ubar + b / m
    df = _df(m, _ratio(m * ubar, b), +1.0)
    return _result(qbar, t, df, b, ubar, m, "partially_synthetic", level)


def combine_fully_synthetic(estimates, variances, *, level=0.95, n_synthetic=None, n_original=None):
    """Raghunathan, Reiter & Rubin's (2003) rules for m fully synthetic data sets.

    T_f = (1 + 1/m) b − ū and ν_f = (m − 1)(1 − 1/r)² with r = (1 + 1/m) b / ū. Where
    T_f ≤ 0 it is replaced by Reiter's (2002) T* = (n_synthetic / n_original) ū (ū when the
    sizes are not given), with the normal quantile, and ``adjusted`` is True.

    Parameters
    ----------
    estimates, variances : array-like of shape (m,) or (m, p)
    level : float, default 0.95
    n_synthetic, n_original : int or None
        Rows of each synthetic copy and of the original data (public numbers), for T*.

    Returns
    -------
    CombinedEstimate
    """
    qbar, ubar, b, m, level = _moments(estimates, variances, level)
    if (n_synthetic is None) != (n_original is None):
        raise ValueError("give both n_synthetic and n_original, or neither.")
    share = 1.0 if n_synthetic is None else (check_positive_int(n_synthetic, "n_synthetic")
                                             / check_positive_int(n_original, "n_original"))
    t = (1 + 1 / m) * b - ubar
    adjusted = t <= 0
    df = np.where(adjusted, np.inf, _df(m, _ratio(ubar, (1 + 1 / m) * b), -1.0))
    t = np.where(adjusted, share * ubar, t)
    return _result(qbar, t, df, b, ubar, m, "fully_synthetic", level, adjusted)
