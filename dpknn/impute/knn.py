"""Exact k-nearest-neighbour imputation by a fixed order, with donee counts and L1(D).

The scheme of Clifton et al. (2022, §4): an incomplete record x (some attribute of the imputed
set A missing) takes as donors the first ``min(k, |D_c|)`` complete records in the order

    (d2(cell x, cell y), cell y lexicographically, (label y - label x) mod circle),

where the cell is the tuple of codes of the known attributes (see :mod:`dpknn.schema.attributes`) and the
last term is the paper's "lowest donor with a label higher than the record", made cyclic.

L1(D) is the largest number of records whose donor set one addition or one deletion of a
record can change (counting an added or removed incomplete record itself). It drives the
smooth sensitivity of every release on imputed data (Theorem 4.6). It is computed exactly
(``docs/imputation.md``) as

    L1(D) = max(1, max over complete y of |donees(y)|, max over cells c and label gaps L of captured(c, L)),

where a new complete record t = (c, L) captures x when t precedes x's k-th donor in x's order.
Records are grouped into equivalence classes (equal cells);
per class, the k-th donor's cell and squared distance are shared, so captures split into a
*strict ball* per class (cells that precede the k-th donor's cell whatever the label) and
*cyclic label arcs* at the k-th donor's cell (the added label falls between x and its k-th donor).
The deepest cell (summed ball weights plus the best arc count) is found by an exact branch and
bound over boxes of the lattice (``dpknn/_core/_depth.pyx``), whose cost follows the answer rather
than the number of cells in the balls. When certifying would take more than ``max_work`` ball-box
tests, the fit stops with :class:`~dpknn.exceptions.WorkLimitError` naming the ordinal attribute
to bin.

References
----------
.. [1] Clifton, Hanson, Kifer, Shamis, et al. (2022). "Differentially private k-nearest
   neighbor missing data imputation". §4 (imputation scheme, L1(D), Theorem 4.6), §6.2.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import numbers
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree
from sklearn.base import BaseEstimator, TransformerMixin

from dpknn._core import _depth, _donors, _grouping, _nearest
from dpknn.exceptions import WorkLimitError
from dpknn.impute.flags import ATTRS_KEY, check_not_imputed, flag_column
from dpknn.schema.attributes import Categorical, Continuous, Ordinal, Schema
from dpknn.schema.geometry import diameter, embed, query_until_certified, squared_distance
from dpknn.utils.progress import progress_bar
from dpknn.utils.validation import check_fitted, check_positive_int, record_features

__all__ = ["KNNImputer", "L1Case", "UniverseFit"]

logger = logging.getLogger(__name__)

_AGGREGATES = ("auto", "mean", "median")
# Cells a lattice search for the nearest donors may visit per class before a KD-tree takes over.
_LATTICE_BUDGET = 200
# Largest number of cells whose keys pack into one int64 (also the limit of dpknn.impute.distributed).
MAX_KEY = 2**62
# Ball-box tests the L1 search may spend: about 5 s on this project's 2-core reference machine.
DEFAULT_MAX_WORK = 500_000_000
# Tests force every path of the L1 search with these: no floor from the deletions, and the
# kernel's mode bits (see dpknn._core._depth.max_depth).
_L1_USE_FLOOR = True
_L1_SEARCH_MODE = 0


@dataclass(frozen=True)
class L1Case:
    """One kind of neighbouring change and the number of records whose donors it changes.

    Attributes
    ----------
    kind : {"delete_complete", "delete_incomplete", "add_incomplete", "add_complete"}
    value : int
        |c(D, D')| for the worst change of this kind. For ``"add_complete"`` it is exact whenever
        it beats the deletions (and so whenever it decides L1(D)); otherwise it is the value of an
        addition the search witnessed, a lower bound of the worst one (docs/imputation.md).
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


@dataclass(frozen=True)
class UniverseFit:
    """CONFIDENTIAL: the imputation of the attributes that share one universe.

    Attributes
    ----------
    attributes : tuple of str
        The imputed attributes of this universe.
    universe : Universe or None
        None: every record.
    rows : ndarray of int64
        Row positions of the records inside the universe.
    l1 : int
        Exact L1(D) of the imputation restricted to the universe.
    l1_cases : dict of str to L1Case
        Its worst change of each kind (rows are positions in the whole data).
    incomplete_index : ndarray of int64
        Row positions of the records of the universe missing one of ``attributes``.
    donors : ndarray of int64, shape (len(incomplete_index), k)
        Row positions of their donors, first donor first.
    imputer : KNNImputer or None
        The fitted imputer of the universe's records (None without universes or for an empty
        universe).
    """

    attributes: tuple
    universe: object
    rows: np.ndarray
    l1: int
    l1_cases: dict
    incomplete_index: np.ndarray
    donors: np.ndarray
    imputer: object


def _map_case(case, rows):
    """An L1Case of a universe's records with its row turned into a position in the whole data."""
    if case.row is None:
        return case
    return dataclasses.replace(case, row=int(rows[case.row]))


class KNNImputer(TransformerMixin, BaseEstimator):
    """Exact k-NN imputation by the fixed order, with donee counts and L1(D).

    A scikit-learn transformer (``get_params``, ``set_params``, ``clone``); unlike most, its
    ``transform`` only accepts the data it was fitted on, because donors and L1(D) belong to them.

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
    max_work : int, default DEFAULT_MAX_WORK (5 * 10^8)
        Largest number of ball-box tests the exact L1 search may spend (about 10^8 per second on
        one core). Past it, ``fit`` raises :class:`~dpknn.exceptions.WorkLimitError` naming the
        ordinal attribute to bin and an estimated bin width; it never returns a bound in place of
        L1(D).
    progress : bool, default False
        Show a tqdm progress bar over the stages of ``fit`` (encode, nearest donors, assign
        donors, L1 search), one per universe.

    Attributes
    ----------
    incomplete_index_ : ndarray of int64
        Row positions of the incomplete records (missing an imputed attribute inside its
        universe), ascending.
    donors_ : ndarray of int64, shape (n_incomplete, k), or None
        Row positions of the donors of each incomplete record, first donor first. None with
        universes, where each universe has its own donors (``groups_``).
    donee_counts_ : ndarray of int64, shape (n,)
        For each row, how many incomplete records use it as a donor (summed over universes).
    l1_ : int
        Exact L1(D); with universes, the sum of their L1 (an upper bound that holds for any
        release; each release uses :meth:`l1_for`).
    l1_cases_ : dict of str to L1Case
        The worst change of each kind (of the universe with the largest L1); without universes
        ``l1_`` is the largest of their values.
    groups_ : tuple of UniverseFit
        One per universe (one in all without universes): its rows, L1, cases and donors.
    n_classes_ : int
        Number of equivalence classes (distinct cells) in the data (summed over universes).
    n_donorless_classes_ : int
        Number of classes with incomplete records and no complete record.
    n_donorless_records_ : int
        Number of incomplete records in those classes: their donors come from other cells.
    n_features_in_ : int
        Number of columns of the data passed to ``fit``.
    feature_names_in_ : ndarray of str
        Their names (as scikit-learn defines it: set when every column name is a string).

    Notes
    -----
    Distances are exact integers; nearest classes come from a KD-tree over class
    representatives and are then ranked by the exact order, so floating point never breaks a
    tie. Time is O(n log n) in the number of records plus the work on classes.

    References
    ----------
    .. [1] Clifton et al. (2022), §4 and §6.2.
    """

    def __init__(self, schema, *, k=1, aggregate="auto", max_work=DEFAULT_MAX_WORK, progress=False):
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
        return k

    def fit(self, X, y=None):
        """Find the donors of every incomplete record of ``X`` and the exact L1(D).

        With universes (:class:`~dpknn.schema.Universe`), each group of imputed attributes that
        share a universe is imputed on its own, on the records of its universe, with its own
        L1(D) (``groups_``, :meth:`l1_for`).

        Parameters
        ----------
        X : pandas.DataFrame
            Data with the columns of the schema. It is not modified.
        y : None
            Ignored (scikit-learn's signature).

        Returns
        -------
        self

        Raises
        ------
        ImputedDataError
            ``X`` holds imputation flag columns (:mod:`dpknn.impute.flags`): it was imputed already.
        """
        k = self._validate_params()
        # Imputed values taken as observed would give the wrong donors and the wrong L1(D).
        check_not_imputed(X, "X")
        if self.schema.has_universes:
            return self._fit_universes(X, k)
        self._fit_plain(X, k)
        self.groups_ = (UniverseFit(attributes=self.schema.imputed_names, universe=None,
                                    rows=np.arange(len(X), dtype=np.int64), l1=self.l1_,
                                    l1_cases=self.l1_cases_, incomplete_index=self.incomplete_index_,
                                    donors=self.donors_, imputer=None),)
        return self

    def _fit_universes(self, X, k):
        """One restricted imputation per universe (docs/imputation.md, "Universes")."""
        schema = self.schema
        enc = schema.encode(X)  # checks every domain, the labels and the missing known values up front
        n = len(X)
        label = schema.label
        if label is None:
            label = "__dpknn_row__"
            while label in X.columns:
                label += "_"
        groups = []
        for universe, names in schema.universe_groups():
            rows = np.arange(n, dtype=np.int64) if universe is None else np.flatnonzero(universe.mask(X))
            where = "every record" if universe is None else f"universe {universe.to_public()}"
            if rows.size == 0:
                # No record: only an added incomplete record changes a donor set (its own).
                cases = {"add_incomplete": L1Case("add_incomplete", 1), "add_complete": L1Case("add_complete", 0)}
                groups.append(UniverseFit(names, universe, rows, 1, cases, rows, np.zeros((0, k), dtype=np.int64),
                                          None))
                continue
            sub = X.iloc[rows][[*schema.known_names, *names]]
            sub = sub.assign(**{label: (enc.labels[rows] if schema.label is None else X[label].to_numpy()[rows])})
            sub_schema = schema.restricted(universe, names, label=label)
            imp = KNNImputer(sub_schema, k=self.k, aggregate=self.aggregate, max_work=self.max_work,
                             progress=self.progress)
            try:
                imp._fit_plain(sub.reset_index(drop=True), k)
            except WorkLimitError as err:
                raise WorkLimitError(f"attributes {list(names)} ({where}): {err}", splits=err.splits) from None
            except ValueError as err:
                raise ValueError(f"attributes {list(names)} ({where}): {err}") from None
            cases = {kind: _map_case(c, rows) for kind, c in imp.l1_cases_.items()}
            groups.append(UniverseFit(names, universe, rows, int(imp.l1_), cases, rows[imp.incomplete_index_],
                                      rows[imp.donors_], imp))
        self.groups_ = tuple(groups)
        fitted = [g.imputer for g in groups if g.imputer is not None]
        self.l1_ = int(sum(g.l1 for g in groups))
        self.l1_cases_ = max(groups, key=lambda g: g.l1).l1_cases
        self.incomplete_index_ = np.flatnonzero(enc.incomplete).astype(np.int64)
        self.donors_ = None
        donee = np.zeros(n, dtype=np.int64)
        for g in groups:
            if g.imputer is not None:
                donee[g.rows] += g.imputer.donee_counts_
        self.donee_counts_ = donee
        self.n_classes_ = int(sum(i.n_classes_ for i in fitted))
        self.n_donorless_classes_ = int(sum(i.n_donorless_classes_ for i in fitted))
        self.n_donorless_records_ = int(sum(i.n_donorless_records_ for i in fitted))
        self.l1_work_ = int(sum(i.l1_work_ for i in fitted))
        record_features(self, X)
        self._fingerprint = _fingerprint(enc, X, schema)
        logger.info("KNNImputer.fit: %d universes, L1 per universe %s", len(groups), [g.l1 for g in groups])
        return self

    def l1_for(self, columns):
        """CONFIDENTIAL: the L1(D) that bounds the records whose values of ``columns`` one
        addition or deletion can change: the sum of L1 over the universes of the imputed
        attributes among ``columns`` (0 when there is none). Without universes, ``l1_`` for any
        imputed column."""
        self._check_fitted()
        wanted = set(columns)
        return int(sum(g.l1 for g in self.groups_ if wanted & set(g.attributes)))

    def _fit_plain(self, X, k):
        df = X
        schema = self.schema
        t0 = time.perf_counter()
        bar = progress_bar(total=4, desc=f"KNNImputer.fit {', '.join(schema.imputed_names)}"[:60], unit="stage",
                           progress=self.progress)
        bar.set_postfix_str("encode")
        enc = schema.encode(df)
        n = enc.n_records
        incomplete = enc.incomplete
        n_complete = int(n - incomplete.sum())
        if n_complete == 0:
            raise no_complete_records(schema, n)
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

        # Classes are numbered in the lexicographic order of their cells, so comparing class ids
        # compares cells. Cells pack into int64 keys when the domain allows (fast); a wider domain
        # is grouped by sorting the rows of codes, and its nearest donors all come from the KD-tree.
        if math.prod(int(v) for v in n_codes) <= MAX_KEY:
            keys = _grouping.pack_cells(enc.cells, n_codes)
            class_id, class_keys = pd.factorize(keys, sort=True)
            class_keys = np.ascontiguousarray(class_keys, dtype=np.int64)
            class_cells = _grouping.unpack_keys(class_keys, n_codes)
        else:
            class_cells, class_id = np.unique(enc.cells, axis=0, return_inverse=True)
            class_cells = np.ascontiguousarray(class_cells, dtype=np.int64)
            class_keys = None
        class_id = np.ascontiguousarray(class_id, dtype=np.int64).ravel()
        n_classes = class_cells.shape[0]
        identity = bool(n > 1 and np.all(labels[1:] > labels[:-1]))
        if identity:
            order = np.arange(n, dtype=np.int64)
        else:
            order = np.argsort(labels, kind="stable").astype(np.int64)
        donor_ptr, donor_rows, inc_ptr, inc_rows = _grouping.group_rows(class_id, incomplete, order,
                                                                        n_classes)
        n_donors = np.diff(donor_ptr)
        n_inc = np.diff(inc_ptr)
        t_group = time.perf_counter()
        bar.update()
        bar.set_postfix_str("nearest donors")

        inc_classes, deficient = deficient_classes(n_donors, n_inc, k)
        own = n_donors[inc_classes] >= k
        # Donor-class lists: the own class when it holds k donors, else the nearest classes.
        near_len, near_flat, radius, boundary = self._ordered_donor_classes(
            deficient, class_cells, class_keys, n_donors, k, weights, is_cat)
        lengths = np.ones(inc_classes.size, dtype=np.int64)
        lengths[~own] = near_len
        list_ptr = np.zeros(inc_classes.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=list_ptr[1:])
        list_cls = np.empty(list_ptr[-1], dtype=np.int64)
        starts = list_ptr[:-1]
        list_cls[starts[own]] = inc_classes[own]
        list_cls[csr_positions(starts[~own], near_len)] = near_flat
        t_near = time.perf_counter()
        bar.update()
        bar.set_postfix_str("assign donors")

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
        bar.update()
        bar.set_postfix_str("L1 search")

        self.incomplete_index_ = incomplete_index
        self.donors_ = donors
        self.donee_counts_ = donee
        self.n_classes_ = int(n_classes)
        self.n_donorless_classes_, self.n_donorless_records_ = donorless(n_donors, n_inc)
        record_features(self, df)
        self._fingerprint = _fingerprint(enc, df, schema)

        balls = l1_balls(deficient, class_cells, radius, boundary, n_inc)
        self.l1_cases_ = self._l1_cases(enc, order, kth_row, kth_class, class_cells, balls, identity=identity)
        if short and incomplete_index.size:
            # Any added complete record joins every donor set.
            self.l1_cases_["add_complete"] = L1Case("add_complete", int(incomplete_index.size))
        self.l1_ = max(case.value for case in self.l1_cases_.values())
        t_l1 = time.perf_counter()
        bar.update()
        bar.close()
        logger.info("KNNImputer.fit: n=%d, %d classes, %d deficient; encode+group %.2fs, nearest %.2fs, "
                    "assign %.2fs, L1 %.2fs; L1=%d", n, n_classes, deficient.size, t_group - t0,
                    t_near - t_group, t_assign - t_near, t_l1 - t_assign, self.l1_)

    # ------------------------------------------------------------------------------------------
    def _ordered_donor_classes(self, deficient, class_cells, class_keys, n_donors, k, weights, is_cat):
        """For each deficient class, the donor classes in (d2, key) order up to the k-th donor.

        Returns ``(lengths, flat, radius, boundary)``: the list of class i is the next
        ``lengths[i]`` entries of ``flat``; ``radius`` is r_C (squared distance of the k-th
        donor) and ``boundary`` the class holding it. First an exact search on the lattice of
        cells (closed balls of doubling radius, looked up among the donor classes); classes
        whose ball would pass ``_LATTICE_BUDGET`` cells, and every class when the domain is too
        wide for int64 keys (``class_keys`` None), are finished with a KD-tree.
        """
        m = deficient.size
        empty = np.zeros(0, dtype=np.int64)
        if m == 0:
            return empty, empty, empty, empty
        schema = self.schema
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
                diameter(weights, is_cat, n_codes), _LATTICE_BUDGET)
        lengths = np.diff(ptr)
        rest = np.flatnonzero(~done)
        if rest.size == 0:
            return lengths, flat, radius, boundary
        logger.info("nearest donors: %d of %d classes past the lattice budget; using a KD-tree", rest.size, m)
        len2, pieces, r2, b2 = self._kdtree_donor_classes(deficient[rest], class_cells, donor_cls, n_donors, k,
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

    def _kdtree_donor_classes(self, deficient, class_cells, donor_cls, n_donors, k, weights, is_cat):
        """KD-tree version of :meth:`_ordered_donor_classes`, for classes far from any donor.

        The tree returns the kq nearest classes by float distance; ranking them by the exact
        integer order is complete once some returned class lies strictly beyond r_C (integer
        distances differ by at least 1, far more than float error), else kq doubles.

        Returns ``(lengths, pieces, radius, boundary)``; ``pieces`` are pairs (rows, values): the
        lists of those rows, concatenated in row order.
        """
        m = deficient.size
        n_codes = self.schema.n_codes
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

    # ------------------------------------------------------------------------------------------
    def _l1_cases(self, enc, order, kth_row, kth_class, class_cells, balls, identity=False):
        n = enc.n_records
        labels = enc.labels
        inc_rows = self.incomplete_index_
        cases = {}
        self.l1_work_ = 0

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

        # Label arcs at the k-th donor's cell, grouped by that cell's class: the bonus of a new
        # record in that cell whose label falls in the best gap.
        # rank: the inverse of order (order itself when the labels are already increasing).
        if identity:
            rank = order
        else:
            rank = np.empty(n, dtype=np.int64)
            rank[order] = np.arange(n)
        bcls = kth_class[inc_rows]
        if bcls.min() >= 0:
            # Stable counting sort by class (the stable argsort of bcls), in O(n + classes).
            grp_ptr, grp_order, _, _ = _grouping.group_rows(
                bcls, np.zeros(bcls.size, dtype=bool), np.arange(bcls.size, dtype=np.int64), class_cells.shape[0])
            bounds = np.flatnonzero(np.diff(grp_ptr))
            first = grp_ptr[bounds]
        else:
            grp_order = np.argsort(bcls, kind="stable")
            bounds, first = np.unique(bcls[grp_order], return_index=True)
        group_ptr = np.append(first, bcls.size).astype(np.int64)
        a = rank[inc_rows[grp_order]]
        b = rank[kth_row[inc_rows[grp_order]]]
        stab, stab_gap = _donors.max_stabbing(group_ptr, np.ascontiguousarray(a), np.ascontiguousarray(b))
        has_arc = np.flatnonzero(stab > 0)

        value, cell, point = self._deepest_addition(balls, class_cells[bounds[has_arc]], stab[has_arc],
                                                    cases["delete_complete"].value)
        gap = None
        if point >= 0:
            g = int(stab_gap[has_arc[point]])
            sorted_labels = labels[order]
            gap = (int(sorted_labels[g]), int(sorted_labels[(g + 1) % labels.size]))
        cases["add_complete"] = L1Case("add_complete", int(value), cell=self._decode_cell(cell), gap=gap)
        return cases

    def _deepest_addition(self, balls, arc_cells, arc_stab, delete_value):
        """The added complete record that changes the most donor sets: ``(value, cell, point)``.

        Class-level, so :mod:`dpknn.impute.distributed` calls it too. ``arc_cells``/``arc_stab`` are the
        k-th-donor cells with label arcs and their best arc counts, in class order; ``point`` is
        the index of the arc cell whose gap the worst addition takes, or -1. Sets ``l1_work_``.
        """
        schema = self.schema
        # The deepest cell of the domain (strict balls plus label arcs), searched above the floor
        # that the deletions give: a cell that cannot beat it does not change L1(D).
        floor_value = max(delete_value, 1) if _L1_USE_FLOOR else -1
        found = _depth.max_depth(
            np.ascontiguousarray(balls["center"]), np.ascontiguousarray(balls["r"]),
            np.ascontiguousarray(balls["ck"]), np.ascontiguousarray(balls["m"]),
            np.ascontiguousarray(arc_cells), np.ascontiguousarray(arc_stab),
            schema.weights, schema.is_categorical, schema.n_codes, floor_value, self.max_work, _L1_SEARCH_MODE)
        self.l1_work_ = int(found["work"])
        logger.debug("L1 search: %d balls, %d arc cells, %d boxes, work %d, floor %d", balls["cls"].size,
                     len(arc_stab), found["boxes"], found["work"], floor_value)
        if found["exceeded"]:
            self._raise_work_limit(found, balls)
        if found["cell"] is not None:
            return found["value"], found["cell"], found["point"]
        return found["seen_value"], found["seen_cell"], found["seen_point"]

    def _decode_cell(self, cell):
        """The known attributes of ``cell`` as a dict of Python scalars (an L1Case's ``cell``)."""
        return {k: (v.item() if hasattr(v, "item") else v)
                for k, v in self.schema.decode(np.asarray(cell)[None, :]).iloc[0].items()}

    def _raise_work_limit(self, found, balls):
        """WorkLimitError naming the ordinal attribute the search had to split most often."""
        schema = self.schema
        splits = {a.name: int(c) for a, c in zip(schema.known, np.asarray(found["splits"], dtype=np.int64))}
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
            f"certifying L1(D) exactly needs more than max_work={self.max_work} ball-box tests "
            f"({balls['cls'].size} incomplete classes without k donors in their own cell, "
            f"{found['boxes']} boxes opened). {advice}",
            splits=splits,
        )

    # ------------------------------------------------------------------------------------------
    def _check_fitted(self):
        check_fitted(self, "l1_")

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

    def transform(self, X):
        """Return a copy of the fitted data with the missing values of A filled from the donors.

        ``X`` must be the data passed to :meth:`fit`, checked by fingerprint (see
        :meth:`check_fitted_on`). Row order, index and labels are kept; observed values are
        never changed; ``X`` is not modified.

        After the columns of ``X`` come the imputation flags (:mod:`dpknn.impute.flags`): one boolean
        column ``dpknn_imputed_<attribute>`` per imputed attribute, in the schema's order, True
        exactly where that attribute's value was filled here. They travel with the rows, so
        every DP entry point refuses the result even when the file is copied or renamed.
        """
        self.check_fitted_on(X)
        return self._impute(X)

    def _impute(self, df):
        """Fill A from the donors; ``df`` must be the fitted data (checked by the callers)."""
        out = df.copy()
        flags = {}
        for group in self.groups_:
            rows = group.incomplete_index
            for name in group.attributes:
                flags[name] = self._fill(df, out, self.schema.attribute(name), rows, group.donors)
        for name in self.schema.imputed_names:
            out[flag_column(name)] = flags[name]
        # Survives column selection (which drops the flag columns) and copies: see dpknn.impute.ATTRS_KEY.
        out.attrs[ATTRS_KEY] = list(self.schema.imputed_names)
        return out

    def _fill(self, df, out, a, rows, donors):
        """Fill attribute ``a`` of ``out`` at the incomplete ``rows`` from their ``donors``; return
        its flag column (True at the rows filled)."""
        col = df[a.name]
        missing = col.isna().to_numpy()[rows]
        self._put(out, a, rows[missing], col.to_numpy()[donors[missing]])
        flag = np.zeros(len(df), dtype=bool)
        flag[rows[missing]] = True
        return flag

    def _put(self, out, a, targets, values):
        """Set attribute ``a`` of ``out`` at row positions ``targets`` from their donors' ``values``
        (rows: records, columns: donors in order); also used by :mod:`dpknn.impute.distributed`, which
        brings the donors' values from other partitions."""
        if targets.size == 0:
            out[a.name] = self._integer_ordinal(a, out[a.name])
            return
        filled = self._aggregate(a, values)
        out_col = out[a.name]
        if not isinstance(out_col.dtype, pd.CategoricalDtype) and out_col.dtype.kind in "iub":
            out_col = out_col.astype(np.float64)
        if out_col.dtype.kind == "f" and filled.dtype == object:
            # Integer categories stored as float64 with NaN (pandas' integer column with gaps):
            # dpknn.impute.distributed brings the donors' values as the schema's category objects, and an
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
        out[a.name] = self._integer_ordinal(a, out_col)

    def _integer_ordinal(self, attr, col):
        """An Ordinal column as nullable integers (a float column would be written "17.0"), unless
        its donors were averaged (``aggregate="mean"``), which leaves the integers."""
        if (isinstance(attr, Ordinal) and self.aggregate != "mean" and col.dtype.kind == "f"):
            return col.astype("Int64")
        return col

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

    def fit_transform(self, X, y=None):
        """Fit on ``X`` and return it with A imputed (encoding ``X`` once); ``y`` is ignored."""
        return self.fit(X)._impute(X)


def most_split_ordinal(schema, splits):
    """The ordinal known attribute of more than one code that the L1 search split most, or None.

    ``splits`` maps attribute names to split counts (``WorkLimitError.splits``); ties go to the
    attribute with more codes. Categorical attributes are never chosen: they have no bin width.
    """
    candidates = [a for a in schema.known if isinstance(a, Ordinal) and a.n_codes > 1]
    if not candidates:
        return None
    return max(candidates, key=lambda a: (splits.get(a.name, 0), a.n_codes))


# Class-level steps of the fit, shared with dpknn.impute.distributed (which has class counts, not rows).
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


def l1_balls(deficient, class_cells, radius, boundary, n_inc):
    """The strict balls of the L1 search: per deficient class, its cell, r_C, the k-th donor's
    cell and its number of incomplete records."""
    return {"cls": deficient, "center": class_cells[deficient], "r": radius, "ck": class_cells[boundary],
            "m": n_inc[deficient].astype(np.int64)}


def csr_positions(starts, lengths):
    """Flat positions ``starts[i] + 0, ..., starts[i] + lengths[i] - 1`` for every i, in order."""
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(np.asarray(starts, dtype=np.int64) - offsets, lengths) + np.arange(int(lengths.sum()))


def _fingerprint(enc, df, schema):
    """SHA-256 of the cells, labels, missing pattern and observed values of A of the data."""
    h = hashlib.sha256()
    for arr in (enc.cells, enc.labels, enc.incomplete):
        a = np.ascontiguousarray(arr)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.view(np.uint8).ravel())  # the buffer itself: no bytes copy
    for a in schema.imputed:
        col = df[a.name]
        h.update(a.name.encode())
        if isinstance(col.dtype, np.dtype) and col.dtype.kind == "f":
            # A numpy float column (an imputed attribute with missing values, usually): the bits of
            # every value in native byte order, NaN included, straight from its buffer. Other
            # columns keep pandas' per-value hash (integer widths and nullable dtypes alike).
            v = col.to_numpy()
            if not v.dtype.isnative:
                v = v.astype(v.dtype.newbyteorder("="))
            v = np.ascontiguousarray(v)
            h.update(str(("raw", v.dtype.kind, v.dtype.itemsize, v.shape)).encode())
            h.update(v.view(np.uint8).ravel())
        else:
            h.update(str(("pandas", len(col))).encode())
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
