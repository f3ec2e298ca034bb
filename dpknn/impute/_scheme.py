"""The k-NN imputation scheme as plain functions over arrays, shared by both backends.

:class:`~dpknn.impute.KNNImputer` (records in memory) and :mod:`dpknn.impute._distributed` (classes of
cells counted partition by partition) run the same steps on class-level arrays: the deficient classes
(fewer than k donors in their own cell), their donor classes in the fixed (distance, key) order, the
strict balls of the L1 search and its deepest addition, and the filling of a column from its donors'
values. Nothing here draws randomness or reads a DataFrame beyond the column it fills.
"""

from __future__ import annotations

import logging
import numbers
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from dpknn._core import _depth, _nearest
from dpknn.exceptions import WorkLimitError
from dpknn.schema._attributes import Categorical, Continuous, Ordinal
from dpknn.schema._geometry import diameter, embed, query_until_certified, squared_distance

__all__ = ["EXACT_SEARCH", "Addition", "Balls", "DepthSearch", "SearchOptions", "aggregate_donors", "csr_positions",
           "decode_cell", "deepest_addition", "deficient_classes", "donorless", "integer_ordinal",
           "kdtree_donor_classes", "l1_balls", "most_split_ordinal", "no_complete_records",
           "ordered_donor_classes", "put_values", "raise_work_limit"]

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class SearchOptions:
    """Which paths the exact searches take; every path gives the same donors and L1(D).

    The defaults (:data:`EXACT_SEARCH`) are what every caller uses; the tests pass others to force each
    path and compare it with brute force (they were module globals that three test files set).

    Attributes
    ----------
    lattice_budget : int, default 200
        Cells a lattice search for the nearest donors may visit per class before a KD-tree takes over.
    use_floor : bool, default True
        Search the worst addition only above the floor the deletions give (a cell that cannot beat it does
        not change L1(D)); False searches every cell.
    mode : int, default 0
        The L1 kernel's mode bits (:func:`dpknn._core._depth.max_depth`).
    """

    lattice_budget: int = 200
    use_floor: bool = True
    mode: int = 0


#: The searches every caller runs.
EXACT_SEARCH = SearchOptions()


def most_split_ordinal(schema, splits):
    """The ordinal known attribute of more than one code that the L1 search split most, or None.

    ``splits`` maps attribute names to split counts (``WorkLimitError.splits``); ties go to the
    attribute with more codes. Categorical attributes are never chosen: they have no bin width.
    """
    candidates = [a for a in schema.known if isinstance(a, Ordinal) and a.n_codes > 1]
    if not candidates:
        return None
    return max(candidates, key=lambda a: (splits.get(a.name, 0), a.n_codes))


def no_complete_records(schema, n):
    """The error for data without a donor (``n`` records)."""
    return ValueError(
        "no complete records: the data have no record with every imputed attribute "
        f"{list(schema.imputed_names)} observed, so there is no donor." if n else
        "no complete records: the data are empty.")


def deficient_classes(n_donors, n_inc, k):
    """The classes with incomplete records, and those of them with fewer than k donors of their own."""
    inc_classes = np.flatnonzero(n_inc > 0).astype(np.int64)
    return inc_classes, inc_classes[n_donors[inc_classes] < k]


def donorless(n_donors, n_inc):
    """Classes with incomplete records and no complete record, and their incomplete records."""
    none = (n_inc > 0) & (n_donors == 0)
    return int(none.sum()), int(n_inc[none].sum())


class Balls(NamedTuple):
    """The strict balls of the L1 search, one per deficient class (a class without k donors of its own): the
    class, its cell, r_C (the squared distance to its k-th donor), the k-th donor's cell and the class's number
    of incomplete records."""

    cls: np.ndarray
    center: np.ndarray
    r: np.ndarray
    ck: np.ndarray
    m: np.ndarray


class DepthSearch(NamedTuple):
    """What the deepest-cell kernel (``_depth.max_depth``) found: the deepest cell above the floor (``cell``
    None when none beat it), the deepest cell seen at all, the work spent, the boxes opened, whether
    ``max_work`` was exceeded, and the splits per known attribute."""

    value: int
    cell: object
    point: int
    seen_value: int
    seen_cell: object
    seen_point: int
    work: int
    boxes: int
    exceeded: bool
    splits: np.ndarray


class Addition(NamedTuple):
    """The added complete record that changes the most donor sets (:func:`deepest_addition`): how many, its
    cell, the index of the arc cell whose gap it takes (-1: none), and the ball-box tests spent."""

    value: int
    cell: np.ndarray
    point: int
    work: int


def l1_balls(deficient, class_cells, radius, boundary, n_inc):
    """The :class:`Balls` of the L1 search."""
    return Balls(cls=deficient, center=class_cells[deficient], r=radius, ck=class_cells[boundary],
                 m=n_inc[deficient].astype(np.int64))


def csr_positions(starts, lengths):
    """Flat positions ``starts[i] + 0, ..., starts[i] + lengths[i] - 1`` for every i, in order."""
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(np.asarray(starts, dtype=np.int64) - offsets, lengths) + np.arange(int(lengths.sum()))


def _majority(values):
    """Most frequent value of each row; ties go to the value that comes first in the row."""
    k = values.shape[1]
    counts = np.zeros(values.shape, dtype=np.int64)
    for j in range(k):
        for l in range(k):
            counts[:, j] += values[:, l] == values[:, j]
    # argmax returns the first maximum: the earliest donor in the order among tied values.
    first = np.argmax(counts, axis=1)
    return values[np.arange(values.shape[0]), first]


def ordered_donor_classes(schema, deficient, class_cells, class_keys, n_donors, k, weights, is_cat, *,
                          options=EXACT_SEARCH):
    """For each deficient class, the donor classes in (d2, key) order up to the k-th donor.

    Returns ``(lengths, flat, radius, boundary)``: the list of class i is the next
    ``lengths[i]`` entries of ``flat``; ``radius`` is r_C (squared distance of the k-th
    donor) and ``boundary`` the class holding it. First an exact search on the lattice of
    cells (closed balls of doubling radius, looked up among the donor classes); classes
    whose ball would pass ``options.lattice_budget`` cells, and every class when the domain is too
    wide for int64 keys (``class_keys`` None), are finished with a KD-tree.
    """
    m = deficient.size
    empty = np.zeros(0, dtype=np.int64)
    if m == 0:
        return empty, empty, empty, empty
    donor_cls = np.flatnonzero(n_donors > 0).astype(np.int64)
    n_codes = schema.n_codes
    if class_keys is None:
        ptr, flat = np.zeros(m + 1, dtype=np.int64), empty
        radius, boundary = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)
        done = np.zeros(m, dtype=bool)
    else:
        ptr, flat, radius, boundary, done = _nearest.nearest_donor_classes(
            np.ascontiguousarray(class_cells[deficient]), k, np.ascontiguousarray(class_keys[donor_cls]),
            np.ascontiguousarray(n_donors[donor_cls]), donor_cls, weights, is_cat, n_codes,
            diameter(weights, is_cat, n_codes), options.lattice_budget)
    lengths = np.diff(ptr)
    rest = np.flatnonzero(~done)
    if rest.size == 0:
        return lengths, flat, radius, boundary
    logger.info("nearest donors: %d of %d classes past the lattice budget; using a KD-tree", rest.size, m)
    len2, pieces, r2, b2 = kdtree_donor_classes(schema, deficient[rest], class_cells, donor_cls, n_donors, k,
                                                      weights, is_cat)
    lengths[rest] = len2
    radius[rest] = r2
    boundary[rest] = b2
    starts = np.cumsum(lengths) - lengths
    out = np.empty(int(lengths.sum()), dtype=np.int64)
    out[csr_positions(starts[done], lengths[done])] = flat
    for rows, values in pieces:
        out[csr_positions(starts[rest[rows]], len2[rows])] = values
    return lengths, out, radius, boundary

def kdtree_donor_classes(schema, deficient, class_cells, donor_cls, n_donors, k, weights, is_cat):
    """KD-tree version of :func:`ordered_donor_classes`, for classes far from any donor.

    The tree returns the kq nearest classes by float distance; ranking them by the exact
    integer order is complete once some returned class lies strictly beyond r_C (integer
    distances differ by at least 1, far more than float error), else kq doubles.

    Returns ``(lengths, pieces, radius, boundary)``; ``pieces`` are pairs (rows, values): the
    lists of those rows, concatenated in row order.
    """
    m = deficient.size
    n_codes = schema.n_codes
    # Unbalanced, uncompacted: builds several times faster on millions of classes; queries are
    # as fast.
    tree = cKDTree(embed(class_cells[donor_cls], weights, is_cat, n_codes), balanced_tree=False,
                   compact_nodes=False)
    queries = embed(class_cells[deficient], weights, is_cat, n_codes)
    lengths = np.zeros(m, dtype=np.int64)
    radius = np.zeros(m, dtype=np.int64)
    boundary = np.zeros(m, dtype=np.int64)
    pieces = []

    def resolve(rows, _dist, idx, exhausted):
        cls = donor_cls[idx]
        d2 = squared_distance(class_cells[deficient[rows]][:, None, :], class_cells[cls], weights, is_cat)
        srt = np.lexsort((cls, d2), axis=-1)
        cls = np.take_along_axis(cls, srt, axis=1)
        d2 = np.take_along_axis(d2, srt, axis=1)
        cum = np.cumsum(n_donors[cls], axis=1)
        t = np.argmax(cum >= k, axis=1)
        r = d2[np.arange(rows.size), t]
        done = (cum[:, -1] >= k) & (exhausted | (d2[:, -1] > r))
        lengths[rows[done]] = t[done] + 1
        radius[rows[done]] = r[done]
        boundary[rows[done]] = cls[done, t[done]]
        keep = np.arange(cls.shape[1]) <= t[done][:, None]
        pieces.append((rows[done], cls[done][keep]))
        return done

    query_until_certified(tree, queries, k + 2, resolve)
    return lengths, pieces, radius, boundary

def deepest_addition(schema, balls, arc_cells, arc_stab, delete_value, max_work, *, options=EXACT_SEARCH):
    """The added complete record that changes the most donor sets: an :class:`Addition` ``(value, cell, point, work)``.

    Class-level, so both backends call it. ``arc_cells``/``arc_stab`` are the
    k-th-donor cells with label arcs and their best arc counts, in class order; ``point`` is
    the index of the arc cell whose gap the worst addition takes, or -1; ``work`` the ball-box tests spent.
    """
    # The deepest cell of the domain (strict balls plus label arcs), searched above the floor
    # that the deletions give: a cell that cannot beat it does not change L1(D).
    floor_value = max(delete_value, 1) if options.use_floor else -1
    found = DepthSearch(**_depth.max_depth(
        np.ascontiguousarray(balls.center), np.ascontiguousarray(balls.r),
        np.ascontiguousarray(balls.ck), np.ascontiguousarray(balls.m),
        np.ascontiguousarray(arc_cells), np.ascontiguousarray(arc_stab),
        schema.weights, schema.is_categorical, schema.n_codes, floor_value, max_work, options.mode))
    logger.debug("L1 search: %d balls, %d arc cells, %d boxes, work %d, floor %d", balls.cls.size,
                 len(arc_stab), found.boxes, found.work, floor_value)
    if found.exceeded:
        raise_work_limit(schema, found, balls, max_work)
    if found.cell is not None:
        return Addition(found.value, found.cell, found.point, int(found.work))
    return Addition(found.seen_value, found.seen_cell, found.seen_point, int(found.work))

def decode_cell(schema, cell):
    """The known attributes of ``cell`` as a dict of Python scalars (an L1Case's ``cell``)."""
    return {k: (v.item() if hasattr(v, "item") else v)
            for k, v in schema.decode(np.asarray(cell)[None, :]).iloc[0].items()}

def raise_work_limit(schema, found, balls, max_work):
    """WorkLimitError naming the ordinal attribute the search had to split most often."""
    splits = {a.name: int(c) for a, c in zip(schema.known, np.asarray(found.splits, dtype=np.int64))}
    attr = most_split_ordinal(schema, splits)
    if attr is not None:
        # How much a coarser bin saves cannot be told without searching again: the message
        # names the attribute and the tool that tries bins on these data, not a width.
        advice = (
            f"The search split ordinal {attr.name!r} most often ({splits[attr.name]} times; "
            f"bin_width now {attr.bin_width}); coarser bins of it usually cut the work, but no "
            "width is certified here: dpknn.impute.suggest_bin_widths(schema, df) (or dpknn impute "
            "--suggest-bins) searches again with coarser bins and reports one that fits. "
            "Categorical attributes have no bin width. Or raise max_work (--max-work)."
        )
    else:
        advice = (
            "No ordinal attribute can be binned: drop or merge categories of a categorical attribute "
            "(categories have no bin width), or raise max_work."
        )
    raise WorkLimitError(
        f"certifying L1(D) exactly needs more than max_work={max_work} ball-box tests "
        f"({balls.cls.size} incomplete classes without k donors in their own cell, "
        f"{found.boxes} boxes opened). {advice}",
        splits=splits,
    )

def put_values(out, a, targets, values, aggregate):
    """Set attribute ``a`` of ``out`` at row positions ``targets`` from their donors' ``values``
    (rows: records, columns: donors in order); also used by :mod:`dpknn.impute._distributed`, which
    brings the donors' values from other partitions."""
    if targets.size == 0:
        out[a.name] = integer_ordinal(a, out[a.name], aggregate)
        return
    filled = aggregate_donors(a, values, aggregate)
    out_col = out[a.name]
    if not isinstance(out_col.dtype, pd.CategoricalDtype) and out_col.dtype.kind in "iub":
        out_col = out_col.astype(np.float64)
    if out_col.dtype.kind == "f" and filled.dtype == object:
        # Integer categories stored as float64 with NaN (pandas' integer column with gaps):
        # dpknn.impute._distributed brings the donors' values as the schema's category objects, and an
        # object array does not go into a float column. As numbers they are what the
        # in-memory fit copies from the donors' rows. Other categories (text, booleans) reach a
        # float column only when a partition's column is all missing: it becomes an object column.
        numeric = all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in filled)
        if numeric:
            filled = filled.astype(np.float64)
        else:
            out_col = out_col.astype(object)
    out_col = out_col.copy()
    out_col.iloc[targets] = filled
    out[a.name] = integer_ordinal(a, out_col, aggregate)

def integer_ordinal(attr, col, aggregate):
    """An Ordinal column as nullable integers (a float column would be written "17.0"), unless
    its donors were averaged (``aggregate="mean"``), which leaves the integers."""
    if (isinstance(attr, Ordinal) and aggregate != "mean" and col.dtype.kind == "f"):
        return col.astype("Int64")
    return col

def aggregate_donors(attr, values, aggregate):
    """Combine the donors' values (rows: records, columns: donors in order)."""
    if values.shape[1] == 1:
        return values[:, 0]
    if isinstance(attr, Categorical):
        return _majority(values)
    method = aggregate
    if method == "auto":
        method = "mean" if isinstance(attr, Continuous) else "median"
    numeric = values.astype(np.float64)
    if method == "mean":
        return numeric.mean(axis=1)
    if isinstance(attr, Ordinal):
        # The lower median keeps the value an integer of the public domain.
        return np.sort(numeric, axis=1)[:, (numeric.shape[1] - 1) // 2]
    return np.median(numeric, axis=1)
