"""Count tables of attribute sets, with missingness as one extra code per attribute.

Each attribute's codes are shifted so that a missing cell (code −1) takes the *last* slot of an
extended domain of size ``size + 1``. One extended table of a set S then holds every count the
synthesisers need without touching the rows again:

- the table on the rows observed on S (PrivBayesE) is the block ``[:size_1, ..., :size_r]``;
- the table with missingness as a value is the whole extended table;
- the table of a subset of S on the rows observed on that subset is a sum over the other axes
  followed by the same block.

The counting itself is :func:`dpknn._core._counts.count_sets`, one pass over the columns of
each set, run on two threads over disjoint sets.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dpknn._core import _counts

__all__ = ["count_tables", "extended_codes", "observed_block"]

MAX_SET = 4  # the kernel's widest set (degree 3)


def extended_codes(codes, sizes):
    """Codes of shape (d, n) with −1 replaced by each attribute's ``size`` (C-contiguous int16).

    Parameters
    ----------
    codes : array_like of int, shape (d, n)
        Codes of d attributes, −1 where missing; not modified.
    sizes : array_like of int, shape (d,)
        Domain size of each attribute (missing not counted).
    """
    sizes = np.asarray(sizes, dtype=np.int16)
    out = np.array(codes, dtype=np.int16, order="C", copy=True)
    miss = out < 0
    if miss.any():
        out[miss] = np.broadcast_to(sizes[:, None], out.shape)[miss]
    return out


def count_tables(ext, sizes, sets, *, n_jobs=2):
    """Extended count tables of the attribute sets ``sets`` (tuples of attribute indices).

    Parameters
    ----------
    ext : ndarray of int16, shape (d, n)
        Extended codes (:func:`extended_codes`).
    sizes : array of int
        Domain size of each attribute (missing not counted).
    sets : list of tuples of int
        At most 4 attributes each.
    n_jobs : int
        Threads (the kernel releases the GIL).

    Returns
    -------
    list of ndarray of uint32
        One table per set, axis j of extent ``sizes[S[j]] + 1``.
    """
    if not sets:
        return []
    if ext.shape[1] >= 2**32:
        raise ValueError("at most 2^32 - 1 rows can be counted.")
    width = max(len(s) for s in sets)
    if width > MAX_SET:
        raise ValueError(f"sets of at most {MAX_SET} attributes are supported, got {width}.")
    ext_sizes = np.asarray(sizes, dtype=np.int64) + 1
    columns = np.zeros((len(sets), width), dtype=np.int64)
    strides = np.zeros((len(sets), width), dtype=np.int64)
    shapes, offsets, total = [], np.zeros(len(sets), dtype=np.int64), 0
    for t, s in enumerate(sets):
        shape = tuple(int(ext_sizes[a]) for a in s)
        columns[t, : len(s)] = s
        strides[t, : len(s)] = [math.prod(shape[j + 1:]) for j in range(len(s))]
        offsets[t] = total
        total += math.prod(shape)
        shapes.append(shape)
    out = np.zeros(total, dtype=np.uint32)
    ext = np.ascontiguousarray(ext, dtype=np.int16)
    # Balance the threads by work (rows x sets), not by cells: every set streams all rows.
    # A thread pool costs more than it saves on small work.
    n_jobs = max(1, min(int(n_jobs), len(sets))) if ext.shape[1] * len(sets) >= 1 << 20 else 1
    cuts = np.linspace(0, len(sets), n_jobs + 1).astype(int)
    if n_jobs == 1:
        _counts.count_sets(ext, columns, strides, offsets, out, 0, len(sets))
    else:
        with ThreadPoolExecutor(n_jobs) as pool:
            list(pool.map(lambda i: _counts.count_sets(ext, columns, strides, offsets, out, cuts[i], cuts[i + 1]),
                          range(n_jobs)))
    return [out[offsets[t]: offsets[t] + math.prod(shapes[t])].reshape(shapes[t]) for t in range(len(sets))]


def observed_block(table, keep=None):
    """Counts on the rows observed on the axes ``keep`` (default all) of an extended table.

    The other axes are summed over (missing included), then each kept axis loses its last
    (missing) slot.

    Parameters
    ----------
    table : ndarray
        An extended count table (:func:`count_tables`).
    keep : sequence of int or None
        The axes to keep, in the order of the result; None: all.
    """
    r = table.ndim
    keep = tuple(range(r)) if keep is None else tuple(keep)
    drop = tuple(a for a in range(r) if a not in keep)
    t = table.sum(axis=drop, dtype=np.int64) if drop else table.astype(np.int64)
    # After summing, the kept axes are in increasing order; put them in the order asked.
    order = np.argsort(np.argsort(keep))
    t = np.transpose(t, order) if r - len(drop) > 1 else t
    return t[tuple(slice(0, n - 1) for n in t.shape)]
