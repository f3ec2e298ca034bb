"""Brute-force RWN neighbourhoods: all pairwise distances, ties at the k-th distance included."""

import numpy as np

from dpknn.sdc._neighbourhoods import _design


def neighbourhoods(df, columns, k, radius=None, weights=None):
    X = _design(df, columns, weights or {}, {})
    d = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    out = []
    for i in range(len(df)):
        others = np.delete(np.arange(len(df)), i)
        di = d[i, others]
        kth = np.sort(di)[min(k, len(di)) - 1]
        knn = set(others[di <= kth * (1 + 1e-12) + 1e-12])
        ball = set(others[di <= radius * (1 + 1e-12) + 1e-12]) if radius is not None else set()
        out.append(ball if len(ball) > len(knn) else knn)
    return out
