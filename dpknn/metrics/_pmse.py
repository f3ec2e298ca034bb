"""Propensity-score mean squared error (pMSE): can a classifier tell released from real rows?

The real and released tables are stacked (N = n + n_syn rows) with a label t = 1 for released
rows, a classifier estimates each row's propensity p̂ᵢ = P(t = 1 | xᵢ), and

    pMSE = Σ (p̂ᵢ − c)² / N,   c = n_syn / N.

It is 0 when every p̂ᵢ = c (the classifier cannot separate the tables) and c(1 − c) when it
separates them perfectly (¼ at c = ½). Its size depends on the
model's flexibility, so it is read against its expected value under the null that the two
tables come from the same distribution (Snoke et al. 2018):

- logistic regression (main effects): E₀[pMSE] = (k − 1)(1 − c)² c / N and
  SD₀ = √(2(k − 1)) (1 − c)² c / N, with k the number of identified coefficients (intercept
  included); the **pMSE ratio** is pMSE / E₀ and the **standardised pMSE** (pMSE − E₀)/SD₀;
- CART (a tree of depth ≤ 5 with leaves of ≥ 20 rows; or any model, with
  ``null="permutation"``): E₀ from refits on randomly permuted labels.
  A permuted fit treats both tables as independent samples, whose expected pMSE is
  1/(1 − c) times the one above (2 at c = ½; synthpop halves it likewise), so the permutation
  mean is multiplied by (1 − c) to estimate the same E₀.

**Reading the ratio.** Two *independent* samples from one distribution have expected pMSE
(k − 1) c (1 − c) / N for the logistic model (the fitted propensities project the centred labels
on k − 1 directions), so their ratio is about 1/(1 − c): 2 at c = ½, 1.5 at c = ⅓. Ratios of a few
units are good; ratios in the tens or hundreds mean the classifier finds real differences.

Features: numeric columns standardised (pooled mean and SD); a missing numeric cell is 0 with a
missing-indicator column; other columns one-hot with missing as its own level, the first level
dropped. The pMSE reads the real data: it is an evaluation for the curator, not a release.

References
----------
.. [1] Woo, Reiter, Oganian, Karr (2009). "Global measures of data utility for microdata
   masked for disclosure limitation", Journal of Privacy and Confidentiality 1(1).
.. [2] Snoke, Raab, Nowok, Dibben, Slavkovic (2018). "General and specific utility measures for
   synthetic data", JRSS A 181(3), §3 (null distribution, pMSE ratio, standardised pMSE).
.. [3] Raab, Nowok, Dibben (2021). "Assessing, visualizing and improving the utility of
   synthetic data" (synthpop's ``utility.gen``: CART with a permutation null).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpknn.metrics._tables import check_tables, is_numeric, shared_columns
from dpknn.utils._validation import check_positive_int, check_rng

__all__ = ["PMSE", "pmse", "propensity_features"]


@dataclass(frozen=True)
class PMSE:
    """Result of :func:`pmse`.

    Attributes
    ----------
    pmse : float
    null_mean : float
        E₀[pMSE], analytic (logistic) or by permutation.
    ratio : float
        pmse / null_mean.
    standardized : float
        (pmse − E₀)/SD₀ for the analytic logistic null; NaN for a permutation null.
    model : str
    null : str
        "analytic" or "permutation".
    k : int or None
        Identified coefficients of the logistic model (intercept included).
    c : float
        n_syn / N.
    n_real, n_released : int
    """

    pmse: float
    null_mean: float
    ratio: float
    standardized: float
    model: str
    null: str
    k: int | None
    c: float
    n_real: int
    n_released: int


def propensity_features(real, released, *, columns=None):
    """The stacked feature matrix (real rows first) and its column names.

    See the module docstring for the coding. Columns default to those of ``real`` (all must be
    in ``released``).

    Parameters
    ----------
    real, released : pandas.DataFrame
        The real and the released table, each with at least one row.
    columns : str, sequence of str or None
        The columns to code, which both tables must hold; None: every column of ``real``.
    """
    check_tables(real=real, released=released)
    cols = shared_columns(real, released, columns)
    both = pd.concat([real[cols], released[cols]], ignore_index=True)
    parts, names = [], []
    for c in cols:
        s = both[c]
        miss = s.isna().to_numpy()
        if is_numeric(s):
            v = s.to_numpy(dtype=np.float64, na_value=np.nan)
            sd = np.nanstd(v) if (~miss).any() else 0.0
            z = (v - np.nanmean(v)) / sd if sd > 0 else np.zeros_like(v)
            parts.append(np.where(miss, 0.0, z))
            names.append(c)
            if miss.any():
                parts.append(miss.astype(np.float64))
                names.append(f"{c}_missing")
        else:
            codes, uniques = pd.factorize(s.astype(object), sort=False, use_na_sentinel=True)
            codes = np.where(codes < 0, len(uniques), codes)
            labels = [*map(str, uniques), "<missing>"]
            for j in np.unique(codes)[1:]:
                parts.append((codes == j).astype(np.float64))
                names.append(f"{c}[{labels[j]}]")
    x = np.column_stack(parts) if parts else np.empty((len(both), 0))
    return x, names


def _propensity(model, x, t, seed):
    if model == "logistic":
        from sklearn.linear_model import LogisticRegression

        fit = LogisticRegression(C=np.inf, max_iter=10_000, tol=1e-10).fit(x, t)
    else:
        from sklearn.tree import DecisionTreeClassifier

        # Depth ≤ 5 and leaves ≥ 20 rows: it splits under the null too (a null pMSE of 0 leaves the
        # ratio undefined, as Gini cost-complexity pruning did at 10^4 rows), yet finds a 0.2 SD
        # shift at 1.5·10^4 rows. synthpop's rpart(cp = 1e-3) has no exact sklearn equivalent.
        fit = DecisionTreeClassifier(max_depth=5, min_samples_leaf=20, random_state=seed).fit(x, t)
    return fit.predict_proba(x)[:, 1]


def pmse(real, released, *, model="logistic", null=None, columns=None, n_permutations=20, rng=None):
    """The pMSE of telling ``released`` rows from ``real`` ones, with its null expectation.

    Parameters
    ----------
    real, released : pandas.DataFrame
    model : {"logistic", "cart"}, default "logistic"
        Logistic regression on main effects (unpenalised), or a classification tree.
    null : {"analytic", "permutation"} or None
        How E₀[pMSE] is found; None: analytic for logistic, permutation for CART (no analytic
        null exists for a tree).
    columns : sequence of str or None
        Columns to compare; None: all of ``real``'s.
    n_permutations : int, default 20
        Refits on permuted labels for a permutation null.
    rng : numpy.random.Generator, int or None
        Seeds the permutations and the tree.

    Returns
    -------
    PMSE
    """
    if model not in ("logistic", "cart"):
        raise ValueError(f"model must be 'logistic' or 'cart', got {model!r}.")
    null = ("analytic" if model == "logistic" else "permutation") if null is None else null
    if null not in ("analytic", "permutation"):
        raise ValueError(f"null must be 'analytic' or 'permutation', got {null!r}.")
    if null == "analytic" and model != "logistic":
        raise ValueError("null='analytic' exists for model='logistic' only; use null='permutation'.")
    n_permutations = check_positive_int(n_permutations, "n_permutations")
    gen = check_rng(rng)
    x, _ = propensity_features(real, released, columns=columns)
    n_real, n_rel = len(real), len(released)
    big_n = n_real + n_rel
    c = n_rel / big_n
    t = np.r_[np.zeros(n_real, dtype=np.int8), np.ones(n_rel, dtype=np.int8)]
    seed = int(gen.integers(2**31))
    value = float(np.mean((_propensity(model, x, t, seed) - c) ** 2))
    k = None
    standardized = math.nan
    if model == "logistic":
        k = int(np.linalg.matrix_rank(np.column_stack([np.ones(big_n), x]))) if x.shape[1] else 1
    if null == "analytic":
        null_mean = (k - 1) * (1 - c) ** 2 * c / big_n
        sd = math.sqrt(2 * (k - 1)) * (1 - c) ** 2 * c / big_n
        standardized = (value - null_mean) / sd if sd > 0 else math.nan
    else:
        sims = [np.mean((_propensity(model, x, gen.permutation(t), seed) - c) ** 2) for _ in range(n_permutations)]
        null_mean = float(np.mean(sims)) * (1 - c)
    ratio = value / null_mean if null_mean > 0 else math.inf if value > 0 else math.nan
    return PMSE(pmse=value, null_mean=float(null_mean), ratio=float(ratio), standardized=float(standardized),
                model=model, null=null, k=k, c=c, n_real=n_real, n_released=n_rel)
