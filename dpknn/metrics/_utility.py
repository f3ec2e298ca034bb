"""Utility of perturbed data: correlations, regression, principal components, prediction.

Each function compares an original table with its perturbed version and returns DataFrames;
:mod:`dpknn.utils._plotting` draws them (``correlation_figure``).

References
----------
.. [1] Perry et al. (2022). "RWN: a novel neighborhood-based method for statistical disclosure
   control", §8.1 and §8.3-8.4 (correlations, OLS coefficients and standard errors, PCA,
   random-forest prediction).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["correlation_change", "ols_comparison", "pca_variance", "random_forest_misclassification"]


def _numeric(df, columns):
    columns = list(df.select_dtypes("number").columns) if columns is None else list(columns)
    return df[columns].to_numpy(dtype=np.float64), columns


def correlation_change(original, perturbed, *, columns=None):
    """Correlation matrices before and after perturbation, and their difference.

    Returns a dict of three DataFrames: ``before``, ``after`` and ``difference`` (after -
    before). :func:`dpknn.utils._plotting.correlation_figure` draws them.

    Parameters
    ----------
    original, perturbed : pandas.DataFrame
        The data before and after perturbation.
    columns : sequence of str or None
        The columns to correlate; None: every numeric column of ``original``.
    """
    a, columns = _numeric(original, columns)
    b, _ = _numeric(perturbed, columns)
    before = pd.DataFrame(np.corrcoef(a, rowvar=False), index=columns, columns=columns)
    after = pd.DataFrame(np.corrcoef(b, rowvar=False), index=columns, columns=columns)
    return {"before": before, "after": after, "difference": after - before}


def _ols(y, X):
    X1 = np.column_stack([np.ones(len(X)), X])
    coef, *_ = np.linalg.lstsq(X1, y, rcond=None)
    resid = y - X1 @ coef
    dof = max(len(y) - X1.shape[1], 1)
    sigma2 = resid @ resid / dof
    cov = sigma2 * np.linalg.pinv(X1.T @ X1)
    return coef, np.sqrt(np.diag(cov))


def ols_comparison(original, perturbed, *, y, X):
    """OLS coefficients and standard errors of ``y`` on ``X`` before and after perturbation.

    Parameters
    ----------
    original, perturbed : pandas.DataFrame
        The data before and after perturbation.
    y : str
        The response column.
    X : sequence of str
        The predictor columns (an intercept is added).
    """
    rows = []
    for name, df in (("before", original), ("after", perturbed)):
        coef, se = _ols(df[y].to_numpy(dtype=float), df[list(X)].to_numpy(dtype=float))
        rows.append(pd.DataFrame({f"coef_{name}": coef, f"se_{name}": se}, index=["intercept", *X]))
    return pd.concat(rows, axis=1)


def pca_variance(original, perturbed, *, columns=None, standardize=True):
    """Proportion and cumulative proportion of variance of each principal component.

    Parameters
    ----------
    original, perturbed : pandas.DataFrame
        The data before and after perturbation.
    columns : sequence of str or None
        The columns of the PCA; None: every numeric column of each table.
    standardize : bool, default True
        Centre and scale each table by its own column means and standard deviations first (a PCA of
        the correlation matrix); False: of the covariance matrix.
    """
    out = {}
    for name, df in (("before", original), ("after", perturbed)):
        a, _ = _numeric(df, columns)
        if standardize:
            sd = a.std(axis=0)
            a = (a - a.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        eig = np.sort(np.linalg.eigvalsh(np.cov(a, rowvar=False)))[::-1]
        share = eig / eig.sum()
        out[f"proportion_{name}"] = share
        out[f"cumulative_{name}"] = np.cumsum(share)
    return pd.DataFrame(out, index=[f"PC{i + 1}" for i in range(len(share))])


def random_forest_misclassification(perturbed_train, original_test, *, target, features, n_estimators=100,
                                    rng=None):
    """Misclassification rate of a random forest trained on perturbed data, tested on held-out
    original records (Perry et al. 2022, §8.4). Returns a float.

    Parameters
    ----------
    perturbed_train : pandas.DataFrame
        The perturbed training data.
    original_test : pandas.DataFrame
        The held-out original records.
    target : str
        The class column.
    features : sequence of str
        The predictor columns (one-hot coded with ``pandas.get_dummies``).
    n_estimators : int, default 100
        Number of trees.
    rng : numpy.random.Generator, int or None
        Seeds the forest (see :func:`dpknn.check_rng`).
    """
    from sklearn.ensemble import RandomForestClassifier

    from dpknn.utils._validation import check_rng

    seed = int(check_rng(rng).integers(2**31))
    model = RandomForestClassifier(n_estimators=n_estimators, random_state=seed, n_jobs=-1)
    model.fit(pd.get_dummies(perturbed_train[list(features)]), perturbed_train[target])
    test = pd.get_dummies(original_test[list(features)]).reindex(columns=model.feature_names_in_, fill_value=0)
    return float((model.predict(test) != original_test[target].to_numpy()).mean())
