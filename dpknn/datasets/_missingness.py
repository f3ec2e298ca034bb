"""Missingness generators: MCAR with a public rate, and MAR / MNAR logistic models.

- ``"mcar"``: every cell of the chosen columns is missing independently with probability
  ``rate``, a public number fixed before the data are seen. This is the row-independent,
  fixed-parameter missingness that the MCAR amplification theorems assume
  (:mod:`dpknn.accounting`, ``docs/amplification.md``).
- ``"mar"``: logistic in the other (complete) columns, in the style of Muzellec et al.
  (2020): random weights on the standardised predictors and an intercept solved so that the
  expected rate is ``rate``.
- ``"mnar"``: self-masked logistic: a cell's chance of being missing depends on its own value,
  with slope ±2 per standard deviation (the sign drawn per column) and a solved intercept.

The MAR and MNAR models standardise columns and solve their intercepts **on the table itself**,
so their parameters depend on the data: they are for utility experiments, and no amplification
may be claimed from them.

References
----------
.. [1] Muzellec, Josse, Boyer, Cuturi (2020). "Missing data imputation using optimal
   transport", ICML, §4 (MAR and MNAR logistic masks).
.. [2] Mohapatra, Zong, Kerschbaum, He (2024). "Differentially private data generation with
   missing data", Theorem 5.2 (amplification needs row-independent MCAR with fixed parameters).
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from dpknn.utils._validation import check_rng

__all__ = ["make_missing"]

_MECHANISMS = ("mcar", "mar", "mnar")


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def calibrate_intercept(eta, target, rng):
    """Intercept b with mean(sigmoid(b + eta)) == target, solved on a subsample by bisection."""
    sample = eta if eta.size <= 200_000 else eta[rng.integers(0, eta.size, 200_000)]
    lo, hi = -20.0, 20.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if sigmoid(mid + sample).mean() < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _standardised(df, name):
    s = df[name]
    if not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        raise ValueError(f"column {name!r} must be numeric for the logistic models, got dtype {s.dtype}.")
    v = s.to_numpy(dtype=np.float64, na_value=np.nan)
    sd = np.nanstd(v)
    return (v - np.nanmean(v)) / (sd if sd > 0 else 1.0)


def _predictor(df, name):
    """Standardised columns of one MAR predictor: itself if numeric, else one indicator per
    category but the first."""
    s = df[name]
    if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
        return [_standardised(df, name)]
    if s.isna().any():
        return [np.full(len(s), np.nan)]
    dummies = pd.get_dummies(s, drop_first=True, dtype=np.float64)
    return [_standardised(dummies, c) for c in dummies.columns]


def make_missing(df, *, mechanism="mcar", rate, columns=None, rng=None):
    """A copy of ``df`` with values of ``columns`` deleted by a missingness model.

    Parameters
    ----------
    df : pandas.DataFrame
        Not modified. Values already missing stay missing.
    mechanism : {"mcar", "mar", "mnar"}
        See the module docstring. MAR uses the columns not in ``columns`` as predictors (they
        must be complete; a categorical one enters as indicators); MNAR needs numeric
        ``columns``.
    rate : float in [0, 1)
        MCAR: the probability that each cell is deleted (public). MAR, MNAR: the expected share
        of deleted cells per column (the intercept is solved on the table).
    columns : list of str or None
        Columns to delete values from; None: every column (MCAR and MNAR only).
    rng : numpy.random.Generator, int or None
        None: the operating system's CSPRNG.

    Returns
    -------
    pandas.DataFrame
        Same rows, order, index and columns; integer columns that receive gaps become ``Int64``.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}.")
    if mechanism not in _MECHANISMS:
        raise ValueError(f"mechanism must be one of {_MECHANISMS}, got {mechanism!r}.")
    if (isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0.0 <= float(rate) < 1.0):
        raise ValueError(f"rate must be a number in [0, 1), got {rate!r}.")
    rate = float(rate)
    if columns is None:
        if mechanism == "mar":
            raise ValueError("mechanism 'mar' needs columns=: the other columns are its predictors.")
        columns = list(df.columns)
    elif isinstance(columns, str) or not all(c in df.columns for c in columns):
        raise ValueError(f"columns must be a list of columns of df, got {columns!r} (columns: {list(df.columns)}).")
    columns = list(dict.fromkeys(columns))
    rng = check_rng(rng)
    n = len(df)
    if mechanism == "mcar":
        masks = {c: rng.random(n) < rate for c in columns}
    elif mechanism == "mar":
        predictors = [c for c in df.columns if c not in columns]
        if not predictors:
            raise ValueError("mechanism 'mar' needs at least one column outside columns= as a predictor.")
        X = np.column_stack([z for c in predictors for z in _predictor(df, c)])
        if np.isnan(X).any():
            raise ValueError(f"the MAR predictors {predictors} must be complete.")
        masks = {}
        for c in columns:
            eta = X @ rng.standard_normal(X.shape[1]) / np.sqrt(X.shape[1])
            b = calibrate_intercept(eta, rate, rng) if rate > 0 else -np.inf
            masks[c] = rng.random(n) < sigmoid(b + eta)
    else:
        masks = {}
        for c in columns:
            z = _standardised(df, c)
            eta = np.nan_to_num(z * rng.choice([-2.0, 2.0]))  # its own value moves its chance
            b = calibrate_intercept(eta, rate, rng) if rate > 0 else -np.inf
            masks[c] = rng.random(n) < sigmoid(b + eta)
    out = df.copy()
    for c, m in masks.items():
        col = out[c]
        if pd.api.types.is_integer_dtype(col.dtype) and not isinstance(col.dtype, pd.api.extensions.ExtensionDtype):
            col = col.astype("Int64")
        out[c] = col.mask(m)
    return out
