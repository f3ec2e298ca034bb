"""Exact k-nearest-neighbour imputation by a fixed order, with donee counts and L1(D).

The scheme of Clifton et al. (2022, §4): an incomplete record x (some attribute of the imputed
set A missing) takes as donors the first ``min(k, |D_c|)`` complete records in the order

    (d2(cell x, cell y), cell y lexicographically, (label y - label x) mod circle),

where the cell is the tuple of codes of the known attributes (see :mod:`dpknn.schema`) and the
last term is the paper's "lowest donor with a label higher than the record", made cyclic.

L1(D) is the largest number of records whose donor set one addition or one deletion of a
record can change (counting an added or removed incomplete record itself). It drives the
smooth sensitivity of every release on imputed data (Theorem 4.6). It is computed exactly
(``docs/imputation.md``) as

    L1(D) = max(1, max over complete y of |donees(y)|, max over cells c and label gaps L of captured(c, L)),

where a new complete record t = (c, L) captures x when t precedes x's k-th donor in x's order.
Records are grouped into equivalence classes (equal cells); per class, the k-th donor's cell
and squared distance are shared, so captures split into a *strict ball* per class (cells that
precede the k-th donor's cell whatever the label) and *cyclic label arcs* at the k-th donor's
cell (the added label falls between x and its k-th donor). The maximum over cells of the
summed ball weights is found by enumerating the cells of the balls whose cheap upper bound
(the summed size of the balls that can meet them) beats the best value found so far; this
stays exact. When certifying would take more than ``max_work`` membership tests, the fit
stops with :class:`~dpknn.exceptions.WorkLimitError` naming the attribute to bin.

References
----------
.. [1] Clifton, Hanson, Kifer, Shamis, et al. (2022). "Differentially private k-nearest
   neighbor missing data imputation". §4 (imputation scheme, L1(D), Theorem 4.6), §6.2.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from ._core import _depth, _donors, _grouping, _nearest
from .exceptions import DomainError, WorkLimitError
from .schema import Categorical, Continuous, Ordinal, Schema
from .validation import check_positive_int

__all__ = ["KNNImputer", "L1Case"]

logger = logging.getLogger(__name__)

_AGGREGATES = ("auto", "mean", "median")
# Cells a lattice search for the nearest donors may visit per class before a KD-tree takes over.
_LATTICE_BUDGET = 50_000
_MAX_KEY = 2**62


@dataclass(frozen=True)
class L1Case:
    """One kind of neighbouring change and the number of records whose donors it changes.

    Attributes
    ----------
    kind : {"delete_complete", "delete_incomplete", "add_incomplete", "add_complete"}
    value : int
        |c(D, D')| for the worst change of this kind.
    row, label : int or None
        Row position and label of the deleted record (deletions).
    cell : dict or None
        Known attributes of the added record's cell (additions of a complete record); ordinal
        values are the lower edge of their bin.
    gap : tuple of two int, or None
        For an added complete record whose effect depends on its label: the labels just below
        and just above the gap its label takes (cyclically). None when any label does.
    """

    kind: str
    value: int
    row: int | None = None
    label: int | None = None
    cell: dict | None = None
    gap: tuple | None = None


def _embed(cells, schema):
    """Float coordinates whose squared Euclidean distance is the schema's d2 (one-hot categoricals)."""
    cells = np.asarray(cells, dtype=np.int64)
    cols = []
    for j, a in enumerate(schema.known):
        w = math.sqrt(a.weight)
        if isinstance(a, Categorical):
            onehot = np.zeros((cells.shape[0], a.n_codes))
            onehot[np.arange(cells.shape[0]), cells[:, j]] = w
            cols.append(onehot)
        else:
            cols.append(cells[:, j : j + 1] * w)
    return np.hstack(cols) if cols else np.zeros((cells.shape[0], 0))


def _pair_d2(a, b, weights, is_cat):
    """Exact integer d2 between the rows of a and b (broadcast over leading axes)."""
    diff = a.astype(np.int64) - b.astype(np.int64)
    per = np.where(is_cat, 2 * (diff != 0), diff * diff) * weights
    return per.sum(axis=-1)


class KNNImputer:
    """Exact k-NN imputation by the fixed order, with donee counts and L1(D).

    Parameters
    ----------
    schema : Schema
        Public domains of the known (matching) and imputed attributes, and the label column.
    k : int, default 1
        Number of donors per incomplete record. When the data hold fewer than k complete
        records, every incomplete record takes all of them as donors (in its order); then any
        added or deleted complete record changes every donor set, so L1(D) is the number of
        incomplete records. This is not refused, because a refusal would itself depend on the
        data.
    aggregate : {"auto", "mean", "median"}, default "auto"
        How k > 1 donor values are combined for numeric attributes: the mean, or the median
        (for an Ordinal attribute the lower median, so that the value stays an integer of its
        domain). "auto" uses the mean for Continuous and the median for Ordinal attributes.
        Categorical attributes always take the majority, ties broken by the donor order.
    max_work : int, default 200_000_000
        Largest number of cells (and ball pairs) visited to certify L1(D) exactly. Past it, ``fit``
        raises :class:`~dpknn.exceptions.WorkLimitError` naming the attribute to bin; it never
        returns a bound in place of L1(D).
    progress : bool, default False
        Show tqdm progress bars.

    Attributes
    ----------
    incomplete_index_ : ndarray of int64
        Row positions of the incomplete records, ascending.
    donors_ : ndarray of int64, shape (n_incomplete, k)
        Row positions of the donors of each incomplete record, first donor first.
    donee_counts_ : ndarray of int64, shape (n,)
        For each row, how many incomplete records use it as a donor.
    l1_ : int
        Exact L1(D).
    l1_cases_ : dict of str to L1Case
        The worst change of each kind; ``l1_`` is the largest of their values.
    n_classes_ : int
        Number of equivalence classes (distinct cells) in the data.
    n_donorless_classes_ : int
        Number of classes with incomplete records and no complete record.

    Notes
    -----
    Distances are exact integers; nearest classes come from a KD-tree over class
    representatives and are then ranked by the exact order, so floating point never breaks a
    tie. Time is O(n log n) in the number of records plus the work on classes.

    References
    ----------
    .. [1] Clifton et al. (2022), §4 and §6.2.
    """

    def __init__(self, schema, *, k=1, aggregate="auto", max_work=200_000_000, progress=False):
        self.schema = schema
        self.k = k
        self.aggregate = aggregate
        self.max_work = max_work
        self.progress = progress

    # ------------------------------------------------------------------------------------------
    def _validate_params(self):
        if not isinstance(self.schema, Schema):
            raise TypeError(f"schema must be a dpknn.Schema, got {type(self.schema).__name__}.")
        k = check_positive_int(self.k, "k")
        if self.aggregate not in _AGGREGATES:
            raise ValueError(f"aggregate must be one of {_AGGREGATES}, got {self.aggregate!r}.")
        check_positive_int(self.max_work, "max_work")
        if not isinstance(self.progress, (bool, np.bool_)):
            raise TypeError(f"progress must be a bool, got {self.progress!r}.")
        n_codes = self.schema.n_codes
        if math.prod(int(v) for v in n_codes) > _MAX_KEY:
            worst = self.schema.known[int(np.argmax(n_codes))].name
            raise DomainError(
                f"the public domain of the known attributes has {math.prod(int(v) for v in n_codes)} "
                f"cells, more than cells can be packed into int64 keys; bin attribute {worst!r} "
                "(bin_width) or drop an attribute."
            )
        return k

    def fit(self, df):
        """Find the donors of every incomplete record of ``df`` and the exact L1(D).

        Parameters
        ----------
        df : pandas.DataFrame
            Data with the columns of the schema. It is not modified.

        Returns
        -------
        self
        """
        k = self._validate_params()
        schema = self.schema
        t0 = time.perf_counter()
        enc = schema.encode(df)
        n = enc.n_records
        incomplete = enc.incomplete
        n_complete = int(n - incomplete.sum())
        if n_complete == 0:
            raise ValueError(
                "no complete records: the data have no record with every imputed attribute "
                f"{list(schema.imputed_names)} observed, so there is no donor." if n else
                "no complete records: the data are empty."
            )
        # Fewer than k complete records: the donors are all of them (docs/imputation.md: the first
        # min(k, |D_c|) in the order), so the kernels run with k = |D_c|.
        short = k > n_complete
        if short:
            logger.info("KNNImputer.fit: %d complete records < k=%d; every incomplete record takes all of them",
                        n_complete, k)
            k = n_complete
        labels = enc.labels
        n_codes = schema.n_codes
        weights = schema.weights
        is_cat = schema.is_categorical

        keys = _grouping.pack_cells(enc.cells, n_codes)
        class_id, class_keys = pd.factorize(keys, sort=True)
        class_id = np.ascontiguousarray(class_id, dtype=np.int64)
        class_keys = np.ascontiguousarray(class_keys, dtype=np.int64)
        n_classes = class_keys.size
        if n > 1 and np.all(labels[1:] > labels[:-1]):
            order = np.arange(n, dtype=np.int64)
        else:
            order = np.argsort(labels, kind="stable").astype(np.int64)
        donor_ptr, donor_rows, inc_ptr, inc_rows = _grouping.group_rows(class_id, incomplete, order,
                                                                        n_classes)
        n_donors = np.diff(donor_ptr)
        n_inc = np.diff(inc_ptr)
        class_cells = _grouping.unpack_keys(class_keys, n_codes)
        t_group = time.perf_counter()

        inc_classes = np.flatnonzero(n_inc > 0).astype(np.int64)
        deficient = inc_classes[n_donors[inc_classes] < k]
        own = n_donors[inc_classes] >= k
        # Donor-class lists: the own class when it holds k donors, else the nearest classes.
        ordered, radius, boundary = self._ordered_donor_classes(
            deficient, class_cells, class_keys, n_donors, k, weights, is_cat)
        lengths = np.ones(inc_classes.size, dtype=np.int64)
        lengths[~own] = [len(o) for o in ordered]
        list_ptr = np.zeros(inc_classes.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=list_ptr[1:])
        list_cls = np.empty(list_ptr[-1], dtype=np.int64)
        starts = list_ptr[:-1]
        list_cls[starts[own]] = inc_classes[own]
        if deficient.size:
            list_cls[np.concatenate([np.arange(s, s + len(o)) for s, o in zip(starts[~own], ordered)])] = (
                np.concatenate(ordered))
        t_near = time.perf_counter()

        incomplete_index = np.flatnonzero(incomplete).astype(np.int64)
        out_pos = np.full(n, -1, dtype=np.int64)
        out_pos[incomplete_index] = np.arange(incomplete_index.size)
        donors = np.full((incomplete_index.size, k), -1, dtype=np.int64)
        donee = np.zeros(n, dtype=np.int64)
        kth_row = np.full(n, -1, dtype=np.int64)
        kth_class = np.full(n, -1, dtype=np.int64)
        donor_labels = labels[donor_rows]
        _donors.assign_donors(k, inc_classes, list_ptr, list_cls, donor_ptr, donor_rows, donor_labels,
                              inc_ptr, inc_rows, labels, out_pos, donors, donee, kth_row, kth_class)
        t_assign = time.perf_counter()

        self.incomplete_index_ = incomplete_index
        self.donors_ = donors
        self.donee_counts_ = donee
        self.n_classes_ = int(n_classes)
        self.n_donorless_classes_ = int(np.count_nonzero(n_donors[inc_classes] == 0))
        self.n_features_in_ = len(schema.known)
        self._fingerprint = _fingerprint(enc, df, schema)

        balls = {
            "cls": deficient,
            "center": class_cells[deficient],
            "r": radius,
            "ck": class_keys[boundary] if deficient.size else np.zeros(0, dtype=np.int64),
            "m": n_inc[deficient],
        }
        self.l1_cases_ = self._l1_cases(enc, order, kth_row, kth_class, class_cells, class_keys, balls)
        if short and incomplete_index.size:
            # Any added complete record joins every donor set.
            self.l1_cases_["add_complete"] = L1Case("add_complete", int(incomplete_index.size))
        self.l1_ = max(case.value for case in self.l1_cases_.values())
        t_l1 = time.perf_counter()
        logger.info("KNNImputer.fit: n=%d, %d classes, %d deficient; encode+group %.2fs, nearest %.2fs, "
                    "assign %.2fs, L1 %.2fs; L1=%d", n, n_classes, deficient.size, t_group - t0,
                    t_near - t_group, t_assign - t_near, t_l1 - t_assign, self.l1_)
        return self

    # ------------------------------------------------------------------------------------------
    def _ordered_donor_classes(self, deficient, class_cells, class_keys, n_donors, k, weights, is_cat):
        """For each deficient class, the donor classes in (d2, key) order up to the k-th donor.

        Returns (list of int64 arrays, squared radius r_C, class of the k-th donor) per class.
        First an exact search on the lattice of cells (closed balls of doubling radius, looked
        up among the donor classes); classes whose ball would pass ``_LATTICE_BUDGET`` cells
        (isolated ones in large domains) are finished with a KD-tree.
        """
        m = deficient.size
        if m == 0:
            return [], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        schema = self.schema
        donor_cls = np.flatnonzero(n_donors > 0).astype(np.int64)
        n_codes = schema.n_codes
        diameter = int(np.sum(np.where(is_cat, 2 * weights, weights * (n_codes - 1) ** 2)))
        ptr, flat, radius, boundary, done = _nearest.nearest_donor_classes(
            np.ascontiguousarray(class_cells[deficient]), k, np.ascontiguousarray(class_keys[donor_cls]),
            np.ascontiguousarray(n_donors[donor_cls]), donor_cls, weights, is_cat, n_codes,
            diameter, _LATTICE_BUDGET)
        ordered = np.split(flat, ptr[1:-1])
        rest = np.flatnonzero(~done)
        if rest.size:
            logger.info("nearest donors: %d of %d classes past the lattice budget; using a KD-tree",
                        rest.size, m)
            o2, r2, b2 = self._kdtree_donor_classes(deficient[rest], class_cells, donor_cls, n_donors, k,
                                                    weights, is_cat)
            for j, i in enumerate(rest):
                ordered[i] = o2[j]
            radius[rest] = r2
            boundary[rest] = b2
        return ordered, radius, boundary

    def _kdtree_donor_classes(self, deficient, class_cells, donor_cls, n_donors, k, weights, is_cat):
        """KD-tree version of :meth:`_ordered_donor_classes`, for classes far from any donor.

        The tree returns the kq nearest classes by float distance; ranking them by the exact
        integer order is complete once some returned class lies strictly beyond r_C (integer
        distances differ by at least 1, far more than float error), else kq doubles.
        """
        m = deficient.size
        tree = cKDTree(_embed(class_cells[donor_cls], self.schema))
        queries = _embed(class_cells[deficient], self.schema)
        n_dc = donor_cls.size
        ordered = [None] * m
        radius = np.zeros(m, dtype=np.int64)
        boundary = np.zeros(m, dtype=np.int64)
        pending = np.arange(m)
        kq = min(n_dc, k + 2)
        while pending.size:
            _, idx = tree.query(queries[pending], k=kq, workers=-1)
            idx = np.asarray(idx).reshape(pending.size, kq)
            cls = donor_cls[idx]
            d2 = _pair_d2(class_cells[deficient[pending]][:, None, :], class_cells[cls], weights, is_cat)
            srt = np.lexsort((cls, d2), axis=-1)
            cls = np.take_along_axis(cls, srt, axis=1)
            d2 = np.take_along_axis(d2, srt, axis=1)
            cum = np.cumsum(n_donors[cls], axis=1)
            enough = cum[:, -1] >= k
            t = np.argmax(cum >= k, axis=1)
            r = d2[np.arange(pending.size), t]
            done = enough & ((kq == n_dc) | (d2[:, -1] > r))
            for i in np.flatnonzero(done):
                row = pending[i]
                ordered[row] = cls[i, : t[i] + 1]
                radius[row] = r[i]
                boundary[row] = cls[i, t[i]]
            pending = pending[~done]
            kq = min(n_dc, 2 * kq)
        return ordered, radius, boundary

    # ------------------------------------------------------------------------------------------
    def _l1_cases(self, enc, order, kth_row, kth_class, class_cells, class_keys, balls):
        schema = self.schema
        n = enc.n_records
        labels = enc.labels
        n_codes = schema.n_codes
        inc_rows = self.incomplete_index_
        cases = {}

        has_inc = inc_rows.size > 0
        cases["add_incomplete"] = L1Case("add_incomplete", 1)
        if has_inc:
            row = int(inc_rows[0])
            cases["delete_incomplete"] = L1Case("delete_incomplete", 1, row=row, label=int(labels[row]))
            row = int(np.argmax(self.donee_counts_))
            cases["delete_complete"] = L1Case("delete_complete", int(self.donee_counts_[row]), row=row,
                                              label=int(labels[row]))
        if not has_inc:
            cases["add_complete"] = L1Case("add_complete", 0)
            return cases

        def decode(cell):
            return {k: (v.item() if hasattr(v, "item") else v)
                    for k, v in schema.decode(np.asarray(cell)[None, :]).iloc[0].items()}

        # Label arcs at the k-th donor's cell, grouped by that cell's class.
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        bcls = kth_class[inc_rows]
        grp_order = np.argsort(bcls, kind="stable")
        bcls_sorted = bcls[grp_order]
        bounds, first = np.unique(bcls_sorted, return_index=True)
        group_ptr = np.append(first, bcls_sorted.size).astype(np.int64)
        a = rank[inc_rows][grp_order]
        b = rank[kth_row[inc_rows]][grp_order]
        stab, stab_gap = _donors.max_stabbing(group_ptr, np.ascontiguousarray(a), np.ascontiguousarray(b))

        # Ball depth at each boundary cell: from the depth of every cell when all balls can be
        # enumerated within max_work (the usual case), else by KD-tree queries.
        full = self._all_ball_depths(balls)
        if full is not None:
            cell_keys, cell_depth = full
            at = pd.Index(cell_keys).get_indexer(class_keys[bounds])
            depth_at = np.zeros(bounds.size, dtype=np.int64)
            depth_at[at >= 0] = cell_depth[at[at >= 0]]
        else:
            depth_at = self._boundary_depths(balls, class_cells[bounds], class_keys[bounds])
        total = depth_at + stab
        j = int(np.argmax(total))
        n_lab = labels.size
        sorted_labels = labels[order]
        g = int(stab_gap[j])
        gap = (int(sorted_labels[g]), int(sorted_labels[(g + 1) % n_lab])) if stab[j] > 0 else None
        best = L1Case("add_complete", int(total[j]), cell=decode(class_cells[bounds[j]]), gap=gap)

        # Interior cells: the deepest cell of all, or (when not every ball could be enumerated)
        # of the balls whose upper bound can beat the best so far.
        floor_value = max(best.value, cases["delete_complete"].value, 1)
        if full is not None:
            i = int(np.argmax(full[1])) if full[1].size else -1
            interior = (int(full[1][i]), int(full[0][i])) if i >= 0 and full[1][i] > floor_value else None
        else:
            interior = self._max_ball_depth(balls, floor_value)
        if interior is not None and interior[0] > best.value:
            value, key = interior
            cell = _grouping.unpack_keys(np.array([key], dtype=np.int64), n_codes)[0]
            best = L1Case("add_complete", int(value), cell=decode(cell), gap=None)
        cases["add_complete"] = best
        return cases

    def _all_ball_depths(self, balls):
        """(cell keys, depth) over every cell of every strict ball, or None past max_work."""
        schema = self.schema
        self.l1_work_ = 0
        if balls["cls"].size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        keys, counts, exceeded_at = _depth.enumerate_balls(
            np.ascontiguousarray(balls["center"]), np.ascontiguousarray(balls["r"]),
            np.ascontiguousarray(balls["ck"]), schema.weights, schema.is_categorical, schema.n_codes,
            self.max_work)
        if exceeded_at >= 0:
            logger.info("L1: the balls hold more than max_work=%d cells; pruning by upper bounds",
                        self.max_work)
            return None
        self.l1_work_ = int(keys.size)
        codes, uniq = pd.factorize(keys)
        depth = np.bincount(codes, weights=np.repeat(balls["m"], counts), minlength=uniq.size)
        return np.asarray(uniq, dtype=np.int64), depth.astype(np.int64)

    def _boundary_depths(self, balls, cells, keys):
        """Exact ball depth at the given cells, by KD-tree queries (used when balls are large)."""
        schema = self.schema
        weights, is_cat = schema.weights, schema.is_categorical
        depth = np.zeros(keys.size, dtype=np.int64)
        if balls["cls"].size == 0 or keys.size == 0:
            return depth
        btree = cKDTree(_embed(cells, schema))
        centers = _embed(balls["center"], schema)
        rad = np.sqrt(balls["r"].astype(np.float64)) * (1 + 1e-9) + 1e-9
        lengths = btree.query_ball_point(centers, rad, return_length=True)
        self._check_work(int(np.sum(lengths)), balls, int(np.argmax(lengths)))
        hits = btree.query_ball_point(centers, rad)
        ball_of = np.repeat(np.arange(centers.shape[0]), lengths)
        cand = np.concatenate([np.asarray(h, dtype=np.int64) for h in hits])
        if cand.size:
            d2 = _pair_d2(balls["center"][ball_of], cells[cand], weights, is_cat)
            r = balls["r"][ball_of]
            inside = (d2 < r) | ((d2 == r) & (keys[cand] < balls["ck"][ball_of]))
            np.add.at(depth, cand[inside], balls["m"][ball_of[inside]])
        return depth

    def _max_ball_depth(self, balls, floor_value):
        """Exact maximum of the ball depth over all cells, or None if it cannot beat floor_value.

        Balls whose upper bound (their weight plus that of every ball that can meet them) is at
        most ``floor_value`` are skipped: a cell they hold has depth at most that bound, so
        leaving them out only lowers depths that cannot beat the floor, and every cell whose
        depth does beat it has all its balls counted.
        """
        schema = self.schema
        m = balls["cls"].size
        work = 0
        if m == 0:
            return None
        weights, is_cat, n_codes = schema.weights, schema.is_categorical, schema.n_codes
        centers, r, w = balls["center"], balls["r"], balls["m"]
        sq = np.sqrt(r.astype(np.float64))
        emb = _embed(centers, schema)
        tree = cKDTree(emb)
        # A pair of balls that meet is found from the larger one, within twice its radius.
        reach = 2 * sq * (1 + 1e-9) + 1e-9
        lengths = tree.query_ball_point(emb, reach, return_length=True)
        work += int(np.sum(lengths))
        self._check_work(work, balls, int(np.argmax(lengths)))
        hits = tree.query_ball_point(emb, reach)
        i_of = np.repeat(np.arange(m), lengths)
        j_of = np.concatenate([np.asarray(h, dtype=np.int64) for h in hits])
        smaller = (r[j_of] < r[i_of]) | ((r[j_of] == r[i_of]) & (j_of < i_of))
        i_of, j_of = i_of[smaller], j_of[smaller]
        d2 = _pair_d2(centers[i_of], centers[j_of], weights, is_cat)
        # Two strict balls can share a cell only if their closed Euclidean balls meet.
        meet = d2 <= (sq[i_of] + sq[j_of]) ** 2 * (1 + 1e-9) + 1e-9
        i_of, j_of = i_of[meet], j_of[meet]
        ub = w.astype(np.int64).copy()
        np.add.at(ub, i_of, w[j_of])
        np.add.at(ub, j_of, w[i_of])
        keep = np.flatnonzero(ub > floor_value)
        if keep.size == 0:
            return None
        keys, counts, exceeded_at = _depth.enumerate_balls(
            np.ascontiguousarray(centers[keep]), np.ascontiguousarray(r[keep]),
            np.ascontiguousarray(balls["ck"][keep]), weights, is_cat, n_codes,
            max(0, self.max_work - work))
        if exceeded_at >= 0:
            self._check_work(self.max_work + 1, balls, int(keep[exceeded_at]))
        work += keys.size
        self.l1_work_ = work
        codes, uniq = pd.factorize(keys)
        depth = np.bincount(codes, weights=np.repeat(w[keep], counts)).astype(np.int64)
        best = int(np.argmax(depth))
        logger.debug("L1 ball depth: %d of %d balls enumerated, %d cells", keep.size, m, keys.size)
        if depth[best] > floor_value:
            return int(depth[best]), int(uniq[best])
        return None

    def _check_work(self, work, balls, i):
        if work <= self.max_work:
            return
        schema = self.schema
        r = int(balls["r"][i])
        spans = []
        for a in schema.known:
            if isinstance(a, Categorical):
                spans.append(a.n_codes if 2 * a.weight <= r else 1)
            else:
                spans.append(min(a.n_codes, 2 * math.isqrt(r // a.weight) + 1))
        worst = schema.known[int(np.argmax(spans))]
        cell = schema.decode(balls["center"][i][None, :]).iloc[0].to_dict()
        raise WorkLimitError(
            f"certifying L1(D) exactly needs more than max_work={self.max_work} cell visits: the "
            f"incomplete records at {cell} have no k-th donor closer than squared distance {r}, and "
            f"attribute {worst.name!r} spans {max(spans)} codes within that distance. Bin "
            f"{worst.name!r} (a larger bin_width) or raise max_work."
        )

    # ------------------------------------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "l1_"):
            raise ValueError("this KNNImputer is not fitted yet; call fit(df) first.")

    def check_fitted_on(self, df):
        """Raise ValueError unless ``df`` is the data this imputer was fitted on.

        Compares a SHA-256 fingerprint of the known cells, the labels, the missing pattern and
        the observed values of A: donors and L1(D) belong to exactly that data set, and using
        them for other data would calibrate releases to the wrong L1.
        """
        self._check_fitted()
        if _fingerprint(self.schema.encode(df), df, self.schema) != self._fingerprint:
            raise ValueError(
                "these data are not the data the imputer was fitted on (the known attributes, labels, "
                "missing values or observed imputed values differ); its donors and L1(D) belong to the "
                "fitted data. Fit again: fit_transform(df)."
            )

    def transform(self, df):
        """Return a copy of the fitted data with the missing values of A filled from the donors.

        ``df`` must be the data passed to :meth:`fit`, checked by fingerprint (see
        :meth:`check_fitted_on`). Row order, index and labels are kept; observed values are
        never changed; ``df`` is not modified.
        """
        self.check_fitted_on(df)
        return self._impute(df)

    def _impute(self, df):
        """Fill A from the donors; ``df`` must be the fitted data (checked by the callers)."""
        out = df.copy()
        rows = self.incomplete_index_
        if rows.size == 0:
            return out
        for a in self.schema.imputed:
            col = df[a.name]
            missing = col.isna().to_numpy()[rows]
            if not missing.any():
                continue
            targets = rows[missing]
            donor_rows = self.donors_[missing]
            values = col.to_numpy()[donor_rows]
            filled = self._aggregate(a, values)
            out_col = out[a.name]
            if not isinstance(out_col.dtype, pd.CategoricalDtype) and out_col.dtype.kind in "iub":
                out_col = out_col.astype(np.float64)
            out_col = out_col.copy()
            out_col.iloc[targets] = filled
            out[a.name] = out_col
        return out

    def _aggregate(self, attr, values):
        """Combine the donors' values (rows: records, columns: donors in order)."""
        if values.shape[1] == 1:
            return values[:, 0]
        if isinstance(attr, Categorical):
            return _majority(values)
        method = self.aggregate
        if method == "auto":
            method = "mean" if isinstance(attr, Continuous) else "median"
        numeric = values.astype(np.float64)
        if method == "mean":
            return numeric.mean(axis=1)
        if isinstance(attr, Ordinal):
            # The lower median keeps the value an integer of the public domain.
            return np.sort(numeric, axis=1)[:, (numeric.shape[1] - 1) // 2]
        return np.median(numeric, axis=1)

    def fit_transform(self, df):
        """Fit on ``df`` and return it with A imputed (encoding ``df`` once)."""
        return self.fit(df)._impute(df)


def _fingerprint(enc, df, schema):
    """SHA-256 of the cells, labels, missing pattern and observed values of A of the data."""
    h = hashlib.sha256()
    for arr in (enc.cells, enc.labels, enc.incomplete):
        a = np.ascontiguousarray(arr)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    for a in schema.imputed:
        col = df[a.name]
        h.update(a.name.encode())
        h.update(pd.util.hash_pandas_object(col, index=False).to_numpy().tobytes())
    return h.hexdigest()


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
