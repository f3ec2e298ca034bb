"""Disclosure-risk measures of perturbed data: outliers and inliers.

References
----------
.. [1] Perry et al. (2022). "RWN: a novel neighborhood-based method for statistical disclosure
   control", §8.2-8.3 (Cook's distance, Mahalanobis distance, distance to the closest record,
   Figures 6-8).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

__all__ = ["closest_distances", "max_cooks_distance", "max_mahalanobis"]


def max_cooks_distance(df, *, y, X):
    """Largest Cook's distance of an OLS fit of ``y`` on ``X``, and the row label that has it."""
    Xm = np.column_stack([np.ones(len(df)), df[list(X)].to_numpy(dtype=float)])
    yv = df[y].to_numpy(dtype=float)
    coef, *_ = np.linalg.lstsq(Xm, yv, rcond=None)
    resid = yv - Xm @ coef
    p = Xm.shape[1]
    q, _ = np.linalg.qr(Xm)
    lev = (q**2).sum(axis=1)
    s2 = resid @ resid / max(len(yv) - p, 1)
    cooks = resid**2 / (p * s2) * lev / (1 - lev) ** 2
    i = int(np.argmax(cooks))
    return float(cooks[i]), df.index[i]


def max_mahalanobis(df, *, columns=None):
    """Largest Mahalanobis distance from the mean, and the row label that has it."""
    cols = list(df.select_dtypes("number").columns) if columns is None else list(columns)
    a = df[cols].to_numpy(dtype=float)
    d = a - a.mean(axis=0)
    inv = np.linalg.pinv(np.cov(a, rowvar=False))
    m = np.sqrt(np.einsum("ij,jk,ik->i", d, inv, d))
    i = int(np.argmax(m))
    return float(m[i]), df.index[i]


def closest_distances(original, perturbed, *, columns=None, standardize=True):
    """Each record's Euclidean distance to its closest other record, before and after.

    Small distances mark inliers that are easy to single out. Returns a DataFrame with columns
    ``before`` and ``after``, indexed like the data; :func:`dpknn.plotting.closest_distances_figure`
    draws it as box plots in the style of the paper's Figure 8.
    """
    cols = list(original.select_dtypes("number").columns) if columns is None else list(columns)
    a = original[cols].to_numpy(dtype=float)
    mean, sd = a.mean(axis=0), a.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0) if standardize else np.ones_like(sd)
    out = {}
    for name, df in (("before", original), ("after", perturbed)):
        x = (df[cols].to_numpy(dtype=float) - (mean if standardize else 0)) / sd
        d, _ = cKDTree(x).query(x, k=2, workers=-1)
        out[name] = d[:, 1]
    return pd.DataFrame(out, index=original.index)
