"""Analysis-specific utility: do analyses of the released data reach the real data's answers?

- :func:`ci_overlap`: the overlap of two confidence intervals (Karr et al. 2006);
- :func:`standardized_difference`: |β̂_real − β̂_released| / SE(β̂_real);
- :func:`regression_comparison`: one regression (OLS or logistic, by statsmodels) fitted to
  both tables, coefficient by coefficient, with both measures.

These are evaluations for the curator: they read the real data, and publishing them is a
disclosure like any other statistic of the real data.

References
----------
.. [1] Karr, Kohnen, Oganian, Reiter, Sanil (2006). "A framework for evaluating the utility of
   data altered to protect confidentiality", The American Statistician 60(3).
.. [2] Snoke, Raab, Nowok, Dibben, Slavkovic (2018). "General and specific utility measures for
   synthetic data", JRSS A 181(3), §4 (standardised differences, interval overlap).
.. [3] Jiang (2025). Short course on data privacy (interval overlap and standardised
   difference tables).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpknn.metrics._formulas import formula_designs
from dpknn.metrics._tables import check_tables, is_numeric
from dpknn.utils._validation import check_unit_interval

__all__ = ["RegressionComparison", "ci_overlap", "regression_comparison", "standardized_difference"]


def _intervals(x, name):
    a = np.asarray(x, dtype=np.float64)
    if a.shape[-1:] != (2,):
        raise ValueError(f"{name} must be a (lower, upper) pair or an array of shape (p, 2), got shape {a.shape}.")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite, got {x!r}.")
    if (a[..., 1] <= a[..., 0]).any():
        raise ValueError(f"{name} must have lower < upper, got {x!r}.")
    return a


def ci_overlap(real_interval, synthetic_interval):
    """Overlap of the real and released confidence intervals (Karr et al. 2006).

    ½ [(min U − max L)/(U_r − L_r) + (min U − max L)/(U_s − L_s)]: 1 for identical intervals,
    between 0 and 1 for overlapping ones, negative for disjoint ones (the further apart, the
    more negative).

    Parameters
    ----------
    real_interval, synthetic_interval : (lower, upper) or array of shape (p, 2)

    Returns
    -------
    float or ndarray of shape (p,)
    """
    r = _intervals(real_interval, "real_interval")
    s = _intervals(synthetic_interval, "synthetic_interval")
    if r.shape != s.shape:
        raise ValueError(f"real_interval and synthetic_interval must have the same shape, got {r.shape} and {s.shape}.")
    inner = np.minimum(r[..., 1], s[..., 1]) - np.maximum(r[..., 0], s[..., 0])
    out = 0.5 * (inner / (r[..., 1] - r[..., 0]) + inner / (s[..., 1] - s[..., 0]))
    return float(out) if out.ndim == 0 else out


def standardized_difference(real_estimate, released_estimate, real_standard_error):
    """|β̂_real − β̂_released| / SE(β̂_real), elementwise.

    Parameters
    ----------
    real_estimate, released_estimate : float or array_like
        The estimates on the real and on the released data, finite.
    real_standard_error : float or array_like
        The standard error of the real estimate, finite and > 0.

    Returns
    -------
    float or ndarray
    """
    a = np.asarray(real_estimate, dtype=np.float64)
    b = np.asarray(released_estimate, dtype=np.float64)
    se = np.asarray(real_standard_error, dtype=np.float64)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("real_estimate and released_estimate must be finite.")
    if not (np.isfinite(se).all() and (se > 0).all()):
        raise ValueError(f"real_standard_error must be finite and > 0, got {real_standard_error!r}.")
    out = np.abs(a - b) / se
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class RegressionComparison:
    """Result of :func:`regression_comparison`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per coefficient: ``coef``, ``se``, ``lower`` and ``upper`` for ``real`` and
        ``released`` (as ``coef_real`` ...), ``ci_overlap`` and ``standardized_difference``. A
        coefficient a table does not identify (a category it lacks, the reference one included) is NaN
        there, and so are its measures (:attr:`n_uncompared` counts them).
    family : str
        "ols" or "logit".
    formula : str
        ``y ~ x1 + x2 ...`` as fitted (categorical predictors one-hot, first level dropped), or the
        formula given.
    n_real, n_released : int
        Rows used: those observed on every variable of the model (complete cases; for a ``formula``, less those
        where a transform is not finite).
    level : float
    r2_real, r2_released : float
        R² of the OLS fits (NaN for logit).
    """

    table: pd.DataFrame
    family: str
    formula: str
    n_real: int
    n_released: int
    level: float
    r2_real: float = np.nan
    r2_released: float = np.nan

    @property
    def mean_ci_overlap(self):
        """Mean, over the coefficients both tables identify, of the confidence-interval overlap (NaN if none)."""
        return float(self.table["ci_overlap"].mean())

    @property
    def n_uncompared(self):
        """How many coefficients one of the tables does not identify (a category it lacks): left out of the means."""
        return int(self.table["ci_overlap"].isna().sum())


def _levels(real, released, col):
    """Categories of a non-numeric column: the declared ones of a Categorical, else the sorted union."""
    for s in (real[col], released[col]):
        if isinstance(s.dtype, pd.CategoricalDtype):
            return list(s.cat.categories)
    values = pd.concat([real[col], released[col]]).dropna().unique()
    return sorted(values, key=str)


def _design(df, y, X, levels, family):
    cols = [y, *X]
    complete = df[cols].notna().all(axis=1).to_numpy()
    d = df.loc[complete, cols]
    parts, names = [np.ones(len(d))], ["intercept"]
    for x in X:
        if x in levels:
            cat = pd.Categorical(d[x], categories=levels[x])
            for level in levels[x][1:]:
                parts.append((cat == level).astype(np.float64))
                names.append(f"{x}[{level}]")
        else:
            parts.append(d[x].to_numpy(dtype=np.float64))
            names.append(x)
    target = d[y]
    if family == "logit":
        if y in levels:
            yv = (pd.Categorical(target, categories=levels[y]) == levels[y][-1]).astype(np.float64)
        else:
            yv = target.to_numpy(dtype=np.float64)
            if not np.isin(yv, (0.0, 1.0)).all():
                raise ValueError(f"y={y!r} must be binary (0/1 or two categories) for family='logit'.")
    else:
        yv = target.to_numpy(dtype=np.float64)
    return np.column_stack(parts), yv, names


def _identifiable(design):
    """(Columns kept, columns whose coefficients this table identifies) of ``design``. Kept: a maximal independent
    set taken in order, which spans the same columns, so a fit on it is the fit; identified: those no null vector of
    the design moves (every least-squares or likelihood solution gives them the same value). A category the table
    lacks, its reference category included, or columns it makes collinear leave some unidentified."""
    k = design.shape[1]
    sv, vt = np.linalg.svd(design, full_matrices=False)[1:]
    tol = sv.max(initial=0.0) * max(design.shape) * np.finfo(np.float64).eps
    rank = int((sv > tol).sum())
    if rank == k:
        return np.arange(k), np.ones(k, dtype=bool)
    kept = []
    for j in range(k):
        if np.linalg.matrix_rank(design[:, [*kept, j]], tol=tol) > len(kept):
            kept.append(j)
    return np.array(kept, dtype=np.int64), np.abs(vt[rank:]).max(axis=0) <= 1e-8


def _fit(design, yv, family, names):
    import statsmodels.api as sm

    # What this table cannot identify is NaN here (and in its measures), so that the other coefficients are still
    # compared: a minimum-norm solution would give such a coefficient an arbitrary value.
    kept, identified = _identifiable(design)
    if len(yv) <= kept.size:
        raise ValueError(f"{len(yv)} complete rows cannot fit {kept.size} coefficients.")
    model = sm.OLS(yv, design[:, kept]) if family == "ols" else sm.Logit(yv, design[:, kept])
    res = model.fit(disp=0) if family == "logit" else model.fit()
    r2 = float(res.rsquared) if family == "ols" else np.nan
    coef, se = (pd.Series(np.nan, index=names) for _ in range(2))
    coef.iloc[kept], se.iloc[kept] = res.params, res.bse
    coef[~identified], se[~identified] = np.nan, np.nan
    return coef, se, r2


def _auto_family(values):
    """"logit" for a response of 0s and 1s, else "ols"."""
    values = np.unique(values[~pd.isna(values)])
    return "logit" if len(values) and np.isin(values, (0, 1)).all() else "ols"


def regression_comparison(real, released, *, y=None, X=None, formula=None, family="auto", categorical=(), level=0.95):
    """Fit the same regression to the real and the released data and compare coefficients.

    Each coefficient gets its estimate, standard error and ``level`` Wald interval in both
    tables, the interval overlap (:func:`ci_overlap`) and the standardised difference
    (:func:`standardized_difference`). Fits are statsmodels' ``OLS`` and ``Logit`` on the
    complete cases of the model's variables (the row counts used are in the result).

    Parameters
    ----------
    real, released : pandas.DataFrame
    y : str
        Response column.
    X : sequence of str
        Predictor columns; a non-numeric (or pandas categorical) one is one-hot coded on its
        categories (declared categories if categorical, else the sorted union of both tables),
        the first dropped.
    formula : str or None
        In place of ``y`` and ``X``: the model as statsmodels' formulas write it, in Formulaic's grammar
        (``"np.log(wage) ~ educ + exper + I(exper ** 2) + C(region)"``: transforms, interactions, ``C()`` for
        categories coded as numbers; an intercept unless ``- 1``), fitted as written to both tables
        (:func:`~dpknn.metrics._formulas.formula_designs`: the same columns in both; rows where a transform is not
        finite, such as the log of 0, are left out of both fits and their row counts).
    family : {"auto", "ols", "logit"}, default "auto"
        "auto": logit for a non-numeric ``y`` with two categories or a 0/1 column, else OLS.
    categorical : sequence of str
        Columns to treat as categorical even when their codes are numbers (e.g. sex coded 1/2); with a
        ``formula``, write ``C(x)`` in it instead.
    level : float, default 0.95

    Returns
    -------
    RegressionComparison
    """
    from scipy import stats

    level = check_unit_interval(level, "level")
    if family not in ("auto", "ols", "logit"):
        raise ValueError(f"family must be 'auto', 'ols' or 'logit', got {family!r}.")
    check_tables(real=real, released=released)
    if formula is not None:
        if y is not None or X is not None or len(categorical):
            raise ValueError("give a formula, or y and X (and categorical), not both.")
        designs = formula_designs(real, released, formula)
        family = _auto_family(designs["real"][1]) if family == "auto" else family
        if family == "logit" and not np.isin(designs["real"][1], (0.0, 1.0)).all():
            raise ValueError(f"the response of {formula!r} must be 0/1 for family='logit'.")
        text = formula
    else:
        if y is None or X is None:
            raise ValueError("give y and X, or a formula.")
        family, designs = _named_designs(real, released, y, X, family, set(categorical))
        text = f"{y} ~ {' + '.join([X] if isinstance(X, str) else X)}"
    z = stats.norm.ppf(0.5 + level / 2)
    fits, rows, r2 = {}, {}, {}
    for name, (design, yv, names) in designs.items():
        coef, se, r2[name] = _fit(design, yv, family, names)
        fits[name], rows[name] = (coef, se), len(yv)
    table = pd.DataFrame(index=fits["real"][0].index)
    for name, (coef, se) in fits.items():
        table[f"coef_{name}"], table[f"se_{name}"] = coef, se
        table[f"lower_{name}"], table[f"upper_{name}"] = coef - z * se, coef + z * se
    both = table[["coef_real", "coef_released"]].notna().all(axis=1).to_numpy()   # estimable in both tables
    table["ci_overlap"] = table["standardized_difference"] = np.nan
    if both.any():
        t = table[both]
        table.loc[both, "ci_overlap"] = ci_overlap(t[["lower_real", "upper_real"]].to_numpy(),
                                                   t[["lower_released", "upper_released"]].to_numpy())
        table.loc[both, "standardized_difference"] = standardized_difference(t["coef_real"], t["coef_released"],
                                                                             t["se_real"])
    table.index.name = "coefficient"
    return RegressionComparison(table=table, family=family, formula=text, n_real=rows["real"],
                                n_released=rows["released"], level=level, r2_real=r2["real"],
                                r2_released=r2["released"])


def _named_designs(real, released, y, X, family, categorical):
    """(family, {table: (design, response, names)}) of ``y`` on the columns ``X`` (:func:`regression_comparison`)."""
    X = [X] if isinstance(X, str) else list(X)
    if not X:
        raise ValueError("X must name at least one predictor.")
    for df, which in ((real, "real"), (released, "released")):
        absent = [c for c in [y, *X] if c not in df.columns]
        if absent:
            raise ValueError(f"{which} lacks the columns {absent}.")
    if y in X:
        raise ValueError(f"y={y!r} is also a predictor in X.")
    levels = {c: _levels(real, released, c) for c in [y, *X]
              if c in categorical or not (is_numeric(real[c]) and is_numeric(released[c]))}
    if family == "auto":
        family = "logit" if y in levels else _auto_family(real[y].to_numpy())
    if family == "logit" and y in levels and len(levels[y]) != 2:
        raise ValueError(f"y={y!r} has {len(levels[y])} categories; family='logit' needs two.")
    if family == "ols" and y in levels:
        raise ValueError(f"y={y!r} is not numeric; use family='logit' for a two-category response.")
    return family, {name: _design(df, y, X, levels, family) for name, df in (("real", real), ("released", released))}
