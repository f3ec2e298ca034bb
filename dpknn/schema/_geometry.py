"""The distance between records: one definition of d2, of its float embedding and of a weight.

**What a weight means.** A weight multiplies an attribute's contribution to the *squared*
distance. On the integer lattice of cells (``docs/imputation.md``)

    d2(a, b) = sum_ordinal w_j (a_j - b_j)^2 + sum_categorical 2 w_j [a_j != b_j],

Euclidean distance on ordinal codes plus one-hot encoded categoricals, each attribute's part
times its weight. Doubling a weight doubles that attribute's share of d2 (it does not
quadruple it). RWN (:mod:`dpknn.sdc._rwn`) uses the same meaning on its standardised numeric
columns and one-hot categoricals; its weights may be any positive real numbers.

**Embedding.** For a KD-tree, coordinates are floats whose squared Euclidean distance is d2:
ordinal codes (or standardised values) times sqrt(w), one-hot columns times sqrt(w). Floating
point only proposes candidates; every decision on the lattice is then taken on the exact
integer d2 of :func:`squared_distance`.

The lattice kernels (``dpknn/_core/_lattice.pxd`` and ``_depth.pyx``) compute the same d2
incrementally in integers; ``tests/test_geometry.py`` checks them against this module.

References
----------
.. [1] Clifton, Hanson, Kifer, Shamis, and others (2022). "Differentially private k-nearest
   neighbor missing data imputation". §6.2 (distance on mixed attributes).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["diameter", "embed", "one_hot", "query_until_certified", "scaled_column", "squared_distance"]


def squared_distance(a, b, weights, is_categorical):
    """Exact integer d2 between cells ``a`` and ``b`` (broadcast over leading axes).

    Parameters
    ----------
    a, b : array_like of int, shape (..., p)
        Cells (codes of the known attributes).
    weights : array_like of int, shape (p,)
        Positive integer weights.
    is_categorical : array_like of bool, shape (p,)

    Returns
    -------
    ndarray of int64, shape (...)
    """
    diff = np.asarray(a, dtype=np.int64) - np.asarray(b, dtype=np.int64)
    per = np.where(np.asarray(is_categorical, dtype=bool), 2 * (diff != 0), diff * diff)
    return (per * np.asarray(weights, dtype=np.int64)).sum(axis=-1)


def scaled_column(values, weight, out=None):
    """A numeric coordinate times sqrt(weight), as a float column of shape (n, 1) (or into ``out``).

    Parameters
    ----------
    values : array_like of float, shape (n,)
        The coordinate (ordinal codes or standardised values).
    weight : float
        The attribute's weight.
    out : ndarray of float, shape (n, 1), or None
        Where to write; None: a new array.
    """
    values = np.asarray(values, dtype=np.float64)
    if out is None:
        out = np.empty((values.size, 1))
    np.multiply(values, math.sqrt(float(weight)), out=out[:, 0])
    return out


def one_hot(codes, n_categories, weight, out=None):
    """One-hot columns times sqrt(weight): two different categories are at squared distance 2w.

    ``out``, when given, is a zeroed float array of shape (n, n_categories) to fill.

    Parameters
    ----------
    codes : array_like of int, shape (n,)
        Category codes in [0, n_categories).
    n_categories : int
        The number of categories (columns).
    weight : float
        The attribute's weight.
    out : ndarray of float, shape (n, n_categories), or None
        A zeroed array to fill; None: a new array.
    """
    codes = np.asarray(codes, dtype=np.int64)
    if out is None:
        out = np.zeros((codes.size, int(n_categories)))
    out[np.arange(codes.size), codes] = math.sqrt(float(weight))
    return out


def embed(cells, weights, is_categorical, n_codes):
    """Float coordinates of cells whose squared Euclidean distance is :func:`squared_distance`.

    Parameters
    ----------
    cells : array_like of int, shape (m, p)
        Cells (codes of the known attributes).
    weights : array_like, shape (p,)
        Positive weights.
    is_categorical : array_like of bool, shape (p,)
    n_codes : array_like of int, shape (p,)
        Number of codes of each attribute (the one-hot width of a categorical one).
    """
    cells = np.asarray(cells)
    m = cells.shape[0]
    widths = [int(n) if cat else 1 for n, cat in zip(n_codes, is_categorical)]
    # Filled in place: building blocks and stacking them would hold the coordinates twice, which
    # at 10^7 records is the peak memory of the whole fit.
    out = np.zeros((m, sum(widths)))
    at = 0
    for j, (w, cat) in enumerate(zip(weights, is_categorical)):
        block = out[:, at:at + widths[j]]
        if cat:
            one_hot(cells[:, j], widths[j], w, out=block)
        else:
            scaled_column(cells[:, j], w, out=block)
        at += widths[j]
    return out


def diameter(weights, is_categorical, n_codes):
    """The largest d2 between two cells of the domain.

    Parameters
    ----------
    weights : array_like of int, shape (p,)
        Positive integer weights.
    is_categorical : array_like of bool, shape (p,)
    n_codes : array_like of int, shape (p,)
        Number of codes of each attribute.
    """
    weights = np.asarray(weights, dtype=np.int64)
    n_codes = np.asarray(n_codes, dtype=np.int64)
    cat = np.asarray(is_categorical, dtype=bool)
    return int(np.sum(np.where(cat, 2 * weights * (n_codes > 1), weights * (n_codes - 1) ** 2)))


def query_until_certified(tree, points, k0, resolve):
    """Query a KD-tree for growing numbers of neighbours until every point is resolved.

    The tree proposes the ``kq`` nearest points by float distance; ``resolve(rows, dist, idx,
    exhausted)`` decides, for the query points ``rows``, which answers are certified (for
    instance because some returned point lies beyond the k-th distance by more than floating
    error) and stores them; it returns a boolean mask of the rows it is done with. ``kq`` starts
    at ``k0`` and doubles; ``exhausted`` is True once ``kq`` covers the whole tree, and then
    ``resolve`` must finish every row.

    Parameters
    ----------
    tree : scipy.spatial.cKDTree
    points : ndarray of float, shape (m, dims)
    k0 : int
    resolve : callable
    """
    size = tree.n
    pending = np.arange(points.shape[0])
    kq = max(1, min(size, int(k0)))
    while pending.size:
        dist, idx = tree.query(points[pending], k=kq, workers=-1 if pending.size > 256 else 1)
        dist = np.asarray(dist, dtype=np.float64).reshape(pending.size, kq)
        idx = np.asarray(idx).reshape(pending.size, kq)
        exhausted = kq >= size
        done = np.asarray(resolve(pending, dist, idx, exhausted), dtype=bool)
        if exhausted and not done.all():
            raise RuntimeError("query_until_certified: resolve left rows unresolved with the whole tree")
        pending = pending[~done]
        kq = min(size, 2 * kq)
