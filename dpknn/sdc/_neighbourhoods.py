"""RWN's neighbourhoods, one function per method of Perry et al. (2022), §10-11.

Each function takes a table, the columns that make the distance and the public settings (k, the
radius, weights, scales, and a method's sample size), and returns :class:`Neighbourhoods`: for every
record a way to draw a uniform member of its neighbourhood S_i (the larger of its k nearest other
records, ties at the k-th distance included, and the records within the radius), and the sizes.
:class:`~dpknn.sdc.RWN` perturbs with them; Method 3 (partitions, each by the exact method) is the
estimator's, since it runs the estimator on each partition.

Distances: numeric columns standardised (with ``scales`` or the column's own moments), categorical
columns one-hot encoded, each column's part of the squared distance multiplied by its weight
(:mod:`dpknn.schema._geometry`). A gap is one more value (a category, or a coordinate of its own).

- :func:`exact`: all pairs, on equivalence classes of identical rows with a KD-tree over the classes.
- :func:`sampled_points` (Method 1): neighbours among a sample of m records, shared or fresh per record.
- :func:`sampled_pairs` (Method 2): n·m/2 random pairs (:func:`pairs_from_indices`), a sparse graph.

References
----------
.. [1] Perry, Matloff, et al. (2022). "RWN: a novel neighborhood-based method for statistical
   disclosure control", §5, §10-11.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from dpknn._core import _grouping, _rwn
from dpknn.schema._geometry import one_hot, query_until_certified, scaled_column
from dpknn.utils._progress import progress_bar
from dpknn.utils._validation import check_positive_int

__all__ = ["Neighbourhoods", "exact", "pairs_from_indices", "sampled_pairs", "sampled_points"]

_TIE = 1e-12


@dataclass(frozen=True)
class Neighbourhoods:
    """Every record's neighbourhood, as the perturbation uses it.

    Attributes
    ----------
    pick : callable
        ``pick(u, modify)``: for each record, the row of the member of its neighbourhood that ``u`` (uniforms
        in [0, 1), one per record) selects where ``modify``, else the record's own row (Cython gathers).
    sizes : numpy.ndarray
        The size of each record's neighbourhood.
    n_classes : int or None
        The classes of identical rows the exact method worked on (None for the sampled methods).
    """

    pick: object
    sizes: np.ndarray
    n_classes: int | None = None


def pairs_from_indices(r, n):
    """Map 0-based indices ``r`` in [0, n(n-1)/2) to pairs (i, j) with 0 <= i < j < n.

    Pairs are ordered (0,1), (0,2), (1,2), (0,3), ...: the pair (i, j) has index
    j(j-1)/2 + i. Vectorised (Cython). This is the corrected mapping (docs/rwn.md); the
    version printed in Perry et al. (2022, §11.2) is garbled.

    Parameters
    ----------
    r : array_like of int
        Pair indices in [0, n(n-1)/2) (flattened).
    n : int
        The number of records, at least 2.

    Returns
    -------
    (ndarray of int64, ndarray of int64)
        The i and the j of each pair.
    """
    n = check_positive_int(n, "n", minimum=2)
    r = np.ascontiguousarray(r, dtype=np.int64)
    return _rwn.pairs_from_indices(r.ravel(), n)



# --- design matrix ---------------------------------------------------------------------------
def _is_numeric(s):
    return pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)


def _design(df, columns, weights, scales, rows=None):
    """Float coordinates: standardised numeric columns and one-hot categoricals, each scaled so
    that its part of the squared distance is multiplied by its weight (:mod:`dpknn.schema._geometry`).

    Moments (and category lists) come from all rows; coordinates are returned for ``rows``
    (all rows when None).
    """
    blocks = []
    for c in columns:
        s = df[c]
        w = float(weights.get(c, 1.0))
        if _is_numeric(s):
            x = s.to_numpy(dtype=np.float64, na_value=np.nan)
            gaps = np.isnan(x)
            seen = x[~gaps]
            mean, sd = scales.get(c, (seen.mean(), seen.std())) if seen.size else (0.0, 1.0)
            z = np.where(gaps, 0.0, (x - mean) / (sd if sd > 0 else 1.0))   # a gap sits at the mean...
            sub = z if rows is None else z[rows]
            blocks.append(scaled_column(sub, w))
            if gaps.any():
                # ...and one more coordinate tells a gap from a value, as far apart as two categories (2w).
                g = gaps if rows is None else gaps[rows]
                blocks.append(scaled_column(g * math.sqrt(2.0), w))
        else:
            codes, uniques = pd.factorize(s, use_na_sentinel=False)   # a gap is a category of its own
            if rows is not None:
                codes = codes[rows]
            blocks.append(one_hot(codes, len(uniques), w))
    size = len(df) if rows is None else len(rows)
    return np.hstack(blocks) if blocks else np.zeros((size, 0))


def _classes(df, columns):
    """Class id of every row (identical values in ``columns``) and the number of classes."""
    key = np.zeros(len(df), dtype=np.int64)
    size = 1
    for c in columns:
        codes, uniques = pd.factorize(df[c], use_na_sentinel=False)   # gaps alike are one class
        if size * max(len(uniques), 1) >= 2**62:
            key, _ = pd.factorize(key)
            size = int(key.max()) + 1 if len(key) else 1
        key = key * max(len(uniques), 1) + codes
        size *= max(len(uniques), 1)
    cls, uniq = pd.factorize(key)
    return np.ascontiguousarray(cls, dtype=np.int64), len(uniq)


# --- exact -----------------------------------------------------------------------------------
def exact(df, columns, *, k, radius=None, weights=None, scales=None):
    """Exact neighbourhoods of every record of ``df`` over ``columns`` (all pairs, on classes of identical rows).

    Parameters
    ----------
    df : pandas.DataFrame
    columns : list of str
        The columns of the distance.
    k : int
        Minimum neighbourhood size (ties at the k-th distance included).
    radius : float or None
        Records within this distance are neighbours too; the larger set is used.
    weights, scales : dict or None
        Per-column weights of the distance, and (mean, standard deviation) of numeric columns.

    Returns
    -------
    Neighbourhoods
    """
    weights, scales = weights or {}, scales or {}
    n = len(df)
    cls, n_classes = _classes(df, columns)
    first = np.full(n_classes, -1, dtype=np.int64)
    first[cls[::-1]] = np.arange(n - 1, -1, -1)
    # Standardise with the moments of all rows, then keep one row per class.
    reps = _design(df, columns, weights, scales, rows=first)
    counts = np.bincount(cls, minlength=n_classes)
    mem_ptr, mem_rows, _, _ = _grouping.group_rows(cls, np.zeros(n, dtype=bool), np.arange(n, dtype=np.int64),
                                                   n_classes)
    pos = np.empty(n, dtype=np.int64)
    pos[mem_rows] = np.arange(n) - np.repeat(mem_ptr[:-1], counts)
    sig, numeric, cross2 = _signatures(df, columns, first, weights, scales)
    nb_ptr, nb_cls, nb_cum = _class_neighbourhoods(reps, counts, k, radius, sig, numeric, cross2)
    sizes = nb_cum[np.maximum(nb_ptr[1:] - 1, 0)] * (np.diff(nb_ptr) > 0)
    return Neighbourhoods(
        pick=lambda u, mod: _rwn.gather_classes(cls, pos, nb_ptr, nb_cls, nb_cum, mem_ptr, mem_rows, u, mod),
        sizes=sizes[cls], n_classes=n_classes)


def _class_neighbourhoods(reps, counts, k, radius, sig=None, numeric=None, cross2=np.inf):
    """Per class: the neighbour classes (own class first) and running member counts.

    When ``sig`` (the categorical signature of each class) is given, neighbours are first
    searched among the classes of the same signature, in the ``numeric`` coordinates only:
    two classes with different signatures are at squared distance at least ``cross2``, so
    a neighbourhood found within the signature whose k-th distance and radius stay below
    sqrt(cross2) is exact. The other classes are searched in the full space.
    """
    k = int(k)
    n_classes = counts.size
    own = counts - 1
    lists = [None] * n_classes
    for c in np.flatnonzero(own >= k):
        lists[c] = np.array([c], dtype=np.int64)
    todo = np.flatnonzero(own < k)
    if radius is not None:
        todo = np.arange(n_classes)
    if sig is not None and todo.size and np.isfinite(cross2):
        limit = math.sqrt(cross2) * (1 - 1e-9)
        if radius is None or radius < limit:
            order = todo[np.argsort(sig[todo], kind="stable")]
            groups = np.split(order, np.flatnonzero(np.diff(sig[order])) + 1)
            members_of = pd.Series(np.arange(n_classes)).groupby(sig).indices
            unresolved = []
            for g in groups:
                members = np.asarray(members_of[sig[g[0]]], dtype=np.int64)
                found = _knn_lists(cKDTree(numeric[members]), numeric[g], g, members, counts, own, k, radius,
                                   limit)
                for c, lst in zip(g, found):
                    if lst is None:
                        unresolved.append(c)
                    else:
                        lists[c] = lst
            todo = np.asarray(unresolved, dtype=np.int64)
    if todo.size:
        tree = cKDTree(reps)
        found = _knn_lists(tree, reps[todo], todo, np.arange(n_classes), counts, own, k, radius, np.inf)
        for c, lst in zip(todo, found):
            lists[c] = lst
    lengths = np.array([len(x) for x in lists], dtype=np.int64)
    nb_ptr = np.zeros(n_classes + 1, dtype=np.int64)
    np.cumsum(lengths, out=nb_ptr[1:])
    nb_cls = np.concatenate(lists).astype(np.int64) if n_classes else np.zeros(0, dtype=np.int64)
    member = counts[nb_cls] - (nb_cls == np.repeat(np.arange(n_classes), lengths))
    csum = np.cumsum(member)
    starts = np.concatenate([[0], csum[nb_ptr[1:-1] - 1]]) if n_classes > 1 else np.zeros(n_classes, np.int64)
    nb_cum = csum - np.repeat(starts, lengths)
    return nb_ptr, nb_cls, nb_cum

def _knn_lists(tree, points, ids, tree_ids, counts, own, k, radius, limit):
    """Neighbour-class lists of the classes ``ids`` among the classes in ``tree``.

    Returns a list per class, or None where the result cannot be certified within ``limit``
    (its k-th distance reaches ``limit``, or the tree holds too few records). The caller
    passes a radius below ``limit``, so a certified k-NN set can be compared with the ball.
    """
    size = len(tree_ids)
    out = [None] * len(ids)

    def resolve(pending, dist, idx, exhausted):
        cls = tree_ids[np.minimum(idx, size - 1)]
        is_self = cls == ids[pending][:, None]
        cnt = np.where(is_self | (idx >= size), 0, counts[cls])
        cum = np.cumsum(cnt, axis=1) + own[ids[pending]][:, None]
        enough = cum[:, -1] >= k
        t = np.argmax(cum >= k, axis=1)
        dk = np.where(own[ids[pending]] >= k, 0.0, dist[np.arange(pending.size), t])
        # With fewer than k other records in the whole space, all of them are the neighbours.
        dk = np.where(enough, dk, np.inf)
        complete = (enough | (exhausted & ~np.isfinite(limit))) & \
            (exhausted | (dist[:, -1] > dk * (1 + _TIE) + _TIE))
        for row in np.flatnonzero(complete):
            c = ids[pending[row]]
            if np.isfinite(limit) and dk[row] >= limit:
                continue  # may reach classes outside this tree
            keep = (dist[row] <= dk[row] * (1 + _TIE) + _TIE) & ~is_self[row] & (idx[row] < size)
            out[pending[row]] = np.concatenate([[c] if own[c] > 0 else [], cls[row][keep]]).astype(np.int64)
        # Rows not certified with the whole tree stay None: decided in the full space.
        return complete | exhausted

    query_until_certified(tree, points, k + 2, resolve)
    if radius is not None:
        balls = tree.query_ball_point(points, radius * (1 + _TIE) + _TIE, workers=-1 if len(ids) > 256 else 1)
        for j, ball in enumerate(balls):
            if out[j] is None:
                continue  # not certified here; decided in the full space
            c = ids[j]
            ball = tree_ids[np.asarray(ball, dtype=np.int64)]
            ball = ball[ball != c]
            ball_size = counts[ball].sum() + own[c]
            knn_size = counts[out[j]].sum() - (1 if own[c] > 0 else 0)
            if ball_size > knn_size:
                out[j] = np.concatenate([[c] if own[c] > 0 else [], ball]).astype(np.int64)
    return out

def _signatures(df, columns, first, weights, scales):
    """Categorical signature and numeric coordinates of each class, and the smallest squared
    distance between classes of different signatures (2 w for a one-hot mismatch)."""
    cats = [c for c in columns if not _is_numeric(df[c])]
    nums = [c for c in columns if _is_numeric(df[c])]
    if not cats:
        return None, None, np.inf
    sig, _ = _classes(df.iloc[first], cats)
    numeric = (_design(df, nums, weights, scales, rows=first) if nums
               else np.zeros((len(first), 1)))
    cross2 = min(2.0 * float(weights.get(c, 1.0)) for c in cats)
    return sig, numeric, cross2

# --- the sampled methods ----------------------------------------------------------------------------
def sampled_points(df, columns, *, k, m, radius=None, fresh=False, weights=None, scales=None, rng):
    """Method 1: each record's neighbours among m sampled records (one shared sample, or a fresh one per
    record with ``fresh``); ``rng`` a numpy Generator. Other parameters as :func:`exact`.

    Returns
    -------
    Neighbourhoods
    """
    X = _design(df, columns, weights or {}, scales or {})
    return _gathered(*_sampled_point_lists(X, k, radius, m, fresh, rng))


def sampled_pairs(df, columns, *, k, m, radius=None, weights=None, scales=None, rng, progress=False):
    """Method 2: n·m/2 random pairs of records; the neighbours of i are its sampled partners within the
    radius or its k closest sampled partners; ``rng`` a numpy Generator, ``progress`` a bar over the
    chunks of pairs. Other parameters as :func:`exact`.

    Returns
    -------
    Neighbourhoods
    """
    # Single precision halves the memory of the n·m partner distances.
    X = _design(df, columns, weights or {}, scales or {}).astype(np.float32)
    return _gathered(*_sampled_pair_lists(X, k, radius, m, rng, progress))


def _gathered(ptr, nbr):
    """The :class:`Neighbourhoods` of CSR neighbour lists of records."""
    return Neighbourhoods(pick=lambda u, mod: _rwn.gather_records(ptr, nbr, u, mod), sizes=np.diff(ptr))


# --- Method 1 --------------------------------------------------------------------------------
def _sampled_point_lists(X, k, radius, m, fresh, rng):
    """Neighbours among m sampled records (one shared sample, or a fresh one per record).

    Every distance from a record to its m candidates is computed (O(nm), as in the paper);
    a record is never its own candidate.
    """
    n, dims = X.shape
    m = min(int(m), n - 1)
    radius = -1.0 if radius is None else float(radius)
    sample = None if fresh else np.sort(rng.choice(n, size=m, replace=False))
    chunk = max(1, 4_000_000 // max(m * max(dims, 1), 1))
    ptrs, nbrs = [np.zeros(1, dtype=np.int64)], []
    for start in range(0, n, chunk):
        rows = np.arange(start, min(n, start + chunk))
        if fresh:
            cand = rng.integers(0, n - 1, size=(rows.size, m))
            cand += cand >= rows[:, None]  # uniform over the other records
        else:
            cand = np.broadcast_to(sample, (rows.size, m))
        d = np.sqrt(((X[cand] - X[rows][:, None, :]) ** 2).sum(axis=2))
        d[cand == rows[:, None]] = np.inf
        ptr = np.arange(rows.size + 1, dtype=np.int64) * m
        p2, n2 = _rwn.select_neighbours(ptr, cand.astype(np.int32).ravel(), d.astype(np.float32).ravel(),
                                        int(k), radius)
        nbrs.append(n2)
        ptrs.append(ptrs[-1][-1] + p2[1:])
    return np.concatenate(ptrs), np.concatenate(nbrs)

# --- Method 2 --------------------------------------------------------------------------------
def _sampled_pair_lists(X, k, radius, m, rng, progress):
    n = X.shape[0]
    total = n * (n - 1) // 2
    n_pairs = max(1, round(n * int(m) / 2))
    chunk = 2_000_000
    # Two passes over the same chunk streams: degrees first, then the CSR fill, so that
    # the pairs never have to be held in memory all at once.
    seeds = np.random.SeedSequence(int(rng.integers(2**63))).spawn(math.ceil(n_pairs / chunk))

    def chunks():
        for b, seed in enumerate(seeds):
            size = min(chunk, n_pairs - b * chunk)
            r = np.random.default_rng(seed).integers(0, total, size=size, dtype=np.int64)
            yield _rwn.pairs_from_indices(r, n)

    degree = np.zeros(n, dtype=np.int64)
    for pi, pj in chunks():
        degree += np.bincount(pi, minlength=n) + np.bincount(pj, minlength=n)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(degree, out=ptr[1:])
    del degree
    # Each partner with its distance in one word (the kernel's edges), so that the random
    # writes of the fill touch one cache line each.
    edges = np.empty(ptr[-1], dtype=np.uint64)
    fill = ptr[:-1].copy()
    X = np.ascontiguousarray(X, dtype=np.float32)
    if not np.isfinite(X).all():
        raise ValueError("a weighted, standardised coordinate overflows single precision; use smaller weights "
                         "or public scales (scales=) nearer the data's spread.")
    for pi, pj in progress_bar(chunks(), total=len(seeds), desc="RWN sampled pairs", unit="chunk",
                               progress=progress):
        _rwn.fill_pairs(pi, pj, X, fill, edges)
    radius = -1.0 if radius is None else float(radius)
    return _rwn.select_edges(ptr, edges, int(k), radius)
