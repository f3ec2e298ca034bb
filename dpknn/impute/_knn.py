"""Exact k-nearest-neighbour imputation by a fixed order, with donee counts and L1(D).

The scheme of Clifton et al. (2022, §4): an incomplete record x (some attribute of the imputed
set A missing) takes as donors the first ``min(k, |D_c|)`` complete records in the order

    (d2(cell x, cell y), cell y lexicographically, (label y - label x) mod circle),

where the cell is the tuple of codes of the known attributes (see :mod:`dpknn.schema._attributes`) and the
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
import time
import typing
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin

from dpknn._core import _donors, _grouping
from dpknn.exceptions import DEFAULT_MAX_WORK, WorkLimitError
from dpknn.impute._scheme import (
    EXACT_SEARCH,
    SearchOptions,
    csr_positions,
    decode_cell,
    deepest_addition,
    deficient_classes,
    donorless,
    l1_balls,
    no_complete_records,
    ordered_donor_classes,
    put_values,
)
from dpknn.schema._attributes import Schema, blank_outside_universes, warn_outside_universes
from dpknn.schema._flags import ATTRS_KEY, check_not_imputed, flag_column
from dpknn.utils._progress import progress_bar
from dpknn.utils._validation import (
    Boolean,
    InstanceOf,
    Interval,
    Options,
    check_is_fitted,
    record_features,
    validate_params,
)

__all__ = ["KNNImputer", "L1Case", "UniverseFit"]

logger = logging.getLogger(__name__)

_AGGREGATES = ("auto", "mean", "median")
# Largest number of cells whose keys pack into one int64 (also the limit of dpknn.impute._distributed).
MAX_KEY = 2**62


@dataclass(frozen=True)
class L1Case:
    """One kind of neighbouring change and the number of records whose donors it changes.

    Attributes
    ----------
    kind : {"delete_complete", "delete_incomplete", "add_incomplete", "add_complete"}
    value : int
        |c(D, D')| for the worst change of this kind. For ``"add_complete"`` it is exact whenever
        it beats the deletions (and so whenever it decides L1(D)); otherwise it is a lower bound of
        what an addition the search witnessed changes, and so of the worst one (the search stops
        counting a cell once it cannot beat the deletions; docs/imputation.md).
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


@dataclass(frozen=True)
class _Classes:
    """Records grouped into equivalence classes (equal cells), numbered in the lexicographic
    order of their cells; per class, its donors and incomplete records in label order (CSR)."""

    cells: np.ndarray
    keys: np.ndarray | None
    order: np.ndarray
    identity: bool
    donor_ptr: np.ndarray
    donor_rows: np.ndarray
    inc_ptr: np.ndarray
    inc_rows: np.ndarray
    n_donors: np.ndarray
    n_inc: np.ndarray

    @property
    def n_classes(self):
        return self.cells.shape[0]


def _group_classes(enc, schema):
    """The :class:`_Classes` of an encoded table."""
    n_codes = schema.n_codes
    # Numbering classes in the lexicographic order of their cells makes comparing class ids
    # compare cells. Cells pack into int64 keys when the domain allows (fast); a wider domain
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
    labels, n = enc.labels, enc.n_records
    identity = bool(n > 1 and np.all(labels[1:] > labels[:-1]))
    order = np.arange(n, dtype=np.int64) if identity else np.argsort(labels, kind="stable").astype(np.int64)
    donor_ptr, donor_rows, inc_ptr, inc_rows = _grouping.group_rows(class_id, enc.incomplete, order,
                                                                    class_cells.shape[0])
    return _Classes(class_cells, class_keys, order, identity, donor_ptr, donor_rows, inc_ptr, inc_rows,
                    np.diff(donor_ptr), np.diff(inc_ptr))


@dataclass(frozen=True)
class _DonorLists:
    """Per class with incomplete records, its donor classes in the scheme's order (CSR), and
    the deficient classes (fewer than k donors) with the radius and boundary of their balls."""

    inc_classes: np.ndarray
    list_ptr: np.ndarray
    list_cls: np.ndarray
    deficient: np.ndarray
    radius: np.ndarray
    boundary: np.ndarray


def _donor_class_lists(schema, classes, k, options):
    """The :class:`_DonorLists`: the own class when it holds k donors, else the nearest classes."""
    n_donors = classes.n_donors
    inc_classes, deficient = deficient_classes(n_donors, classes.n_inc, k)
    own = n_donors[inc_classes] >= k
    near_len, near_flat, radius, boundary = ordered_donor_classes(
        schema, deficient, classes.cells, classes.keys, n_donors, k, schema.weights, schema.is_categorical,
        options=options)
    lengths = np.ones(inc_classes.size, dtype=np.int64)
    lengths[~own] = near_len
    list_ptr = np.zeros(inc_classes.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=list_ptr[1:])
    list_cls = np.empty(list_ptr[-1], dtype=np.int64)
    starts = list_ptr[:-1]
    list_cls[starts[own]] = inc_classes[own]
    list_cls[csr_positions(starts[~own], near_len)] = near_flat
    return _DonorLists(inc_classes, list_ptr, list_cls, deficient, radius, boundary)


@dataclass(frozen=True)
class _Assignment:
    """The donors of every incomplete record (rows, first donor first), each record's donee
    count, and per incomplete record the row and class of its k-th donor (-1 elsewhere)."""

    incomplete_index: np.ndarray
    donors: np.ndarray
    donee: np.ndarray
    kth_row: np.ndarray
    kth_class: np.ndarray


def _assign_donors(enc, classes, lists, k):
    """Walk every incomplete record's donor classes by the fixed order (the Cython kernel)."""
    n, labels = enc.n_records, enc.labels
    incomplete_index = np.flatnonzero(enc.incomplete).astype(np.int64)
    out_pos = np.full(n, -1, dtype=np.int64)
    out_pos[incomplete_index] = np.arange(incomplete_index.size)
    donors = np.full((incomplete_index.size, k), -1, dtype=np.int64)
    donee = np.zeros(n, dtype=np.int64)
    kth_row = np.full(n, -1, dtype=np.int64)
    kth_class = np.full(n, -1, dtype=np.int64)
    _donors.assign_donors(k, lists.inc_classes, lists.list_ptr, lists.list_cls, classes.donor_ptr,
                          classes.donor_rows, labels[classes.donor_rows], classes.inc_ptr, classes.inc_rows, labels,
                          out_pos, donors, donee, kth_row, kth_class)
    return _Assignment(incomplete_index, donors, donee, kth_row, kth_class)


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
    search : SearchOptions or None, default None
        The paths of the exact searches (:class:`~dpknn.impute._scheme.SearchOptions`); None: the default
        ones. Every path gives the same donors and L1(D); the tests force each one.

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
    n_outside_universe_ : dict of str to int
        CONFIDENTIAL: observed values of an imputed attribute outside its universe, by attribute
        (only those with any). They are not applicable (:class:`~dpknn.schema.Universe`): no donor
        gives them, and :meth:`transform` leaves the attribute missing there.
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

    parameter_constraints: typing.ClassVar[dict] = {
        "schema": InstanceOf(Schema, "dpknn.Schema"),
        "k": Interval("int", 1, None, closed="left"),
        "aggregate": Options(*_AGGREGATES),
        "max_work": Interval("int", 1, None, closed="left"),
        "progress": Boolean(),
        "search": (InstanceOf(SearchOptions, "dpknn.impute._scheme.SearchOptions"), None),
    }

    def __init__(self, schema, *, k=1, aggregate="auto", max_work=DEFAULT_MAX_WORK, progress=False, search=None):
        self.schema = schema
        self.k = k
        self.aggregate = aggregate
        self.max_work = max_work
        self.progress = progress
        self.search = search

    # ------------------------------------------------------------------------------------------
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
            ``X`` holds imputation flag columns (:mod:`dpknn.schema._flags`): it was imputed already.
        """
        k = validate_params(self)["k"]
        # Imputed values taken as observed would give the wrong donors and the wrong L1(D).
        check_not_imputed(X, "X")
        if self.schema.has_universes:
            self._fit_universes(X, k)
            self.n_outside_universe_ = warn_outside_universes(X, self.schema.imputed, logger)
            return self
        self.n_outside_universe_ = {}
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
                             progress=self.progress, search=self.search)
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

    def curator_dict(self):
        """CONFIDENTIAL: L1(D), its worst cases and the class statistics, as plain data (JSON-ready).

        For the curator's diagnostics (``dpknn impute --diagnostics``); every number depends on
        the data, so none of it may be published.
        """
        self._check_fitted()
        return {"confidential": True, "l1": int(self.l1_), "n_incomplete": int(self.incomplete_index_.size),
                "n_classes": self.n_classes_, "n_donorless_classes": self.n_donorless_classes_,
                "max_donee_count": int(self.donee_counts_.max()),
                "l1_cases": {kind: dict(vars(c)) for kind, c in self.l1_cases_.items()},
                "observed_outside_universe": dict(self.n_outside_universe_)}

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
        n_complete = int(n - enc.incomplete.sum())
        if n_complete == 0:
            raise no_complete_records(schema, n)
        # Fewer than k complete records: the donors are all of them (docs/imputation.md: the first
        # min(k, |D_c|) in the order), so the kernels run with k = |D_c|.
        short = k > n_complete
        if short:
            logger.info("KNNImputer.fit: %d complete records < k=%d; every incomplete record takes all of them",
                        n_complete, k)
            k = n_complete
        classes = _group_classes(enc, schema)
        t_group = time.perf_counter()
        bar.update()
        bar.set_postfix_str("nearest donors")
        lists = _donor_class_lists(schema, classes, k, self.search or EXACT_SEARCH)
        t_near = time.perf_counter()
        bar.update()
        bar.set_postfix_str("assign donors")
        assigned = _assign_donors(enc, classes, lists, k)
        t_assign = time.perf_counter()
        bar.update()
        bar.set_postfix_str("L1 search")

        self.incomplete_index_ = assigned.incomplete_index
        self.donors_ = assigned.donors
        self.donee_counts_ = assigned.donee
        self.n_classes_ = int(classes.n_classes)
        self.n_donorless_classes_, self.n_donorless_records_ = donorless(classes.n_donors, classes.n_inc)
        record_features(self, df)
        self._fingerprint = _fingerprint(enc, df, schema)

        balls = l1_balls(lists.deficient, classes.cells, lists.radius, lists.boundary, classes.n_inc)
        self.l1_cases_ = self._l1_cases(enc, classes.order, assigned.kth_row, assigned.kth_class, classes.cells,
                                        balls, identity=classes.identity)
        if short and assigned.incomplete_index.size:
            # Any added complete record joins every donor set.
            self.l1_cases_["add_complete"] = L1Case("add_complete", int(assigned.incomplete_index.size))
        self.l1_ = max(case.value for case in self.l1_cases_.values())
        t_l1 = time.perf_counter()
        bar.update()
        bar.close()
        logger.info("KNNImputer.fit: n=%d, %d classes, %d deficient; encode+group %.2fs, nearest %.2fs, "
                    "assign %.2fs, L1 %.2fs; L1=%d", n, classes.n_classes, lists.deficient.size, t_group - t0,
                    t_near - t_group, t_assign - t_near, t_l1 - t_assign, self.l1_)

    # ------------------------------------------------------------------------------------------
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

        value, cell, point, self.l1_work_ = deepest_addition(self.schema, balls, class_cells[bounds[has_arc]],
                                                               stab[has_arc], cases["delete_complete"].value,
                                                               self.max_work, options=self.search or EXACT_SEARCH)
        gap = None
        if point >= 0:
            g = int(stab_gap[has_arc[point]])
            sorted_labels = labels[order]
            gap = (int(sorted_labels[g]), int(sorted_labels[(g + 1) % labels.size]))
        cases["add_complete"] = L1Case("add_complete", int(value), cell=decode_cell(self.schema, cell), gap=gap)
        return cases

    # ------------------------------------------------------------------------------------------
    def _check_fitted(self):
        check_is_fitted(self, "l1_")

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
        never changed, except that an imputed attribute is left missing outside its universe, where
        it is not applicable (:class:`~dpknn.schema.Universe`; how many values that blanks is
        ``n_outside_universe_``); ``X`` is not modified.

        After the columns of ``X`` come the imputation flags (:mod:`dpknn.schema._flags`): one boolean
        column ``dpknn_imputed_<attribute>`` per imputed attribute, in the schema's order, True
        exactly where that attribute's value was filled here. They travel with the rows, so
        every DP entry point refuses the result even when the file is copied or renamed.
        """
        self.check_fitted_on(X)
        return self._impute(X)

    def _impute(self, df):
        """Fill A from the donors; ``df`` must be the fitted data (checked by the callers)."""
        out = blank_outside_universes(df, self.schema.imputed)
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
        put_values(out, a, rows[missing], col.to_numpy()[donors[missing]], self.aggregate)
        flag = np.zeros(len(df), dtype=bool)
        flag[rows[missing]] = True
        return flag

    def fit_transform(self, X, y=None):
        """Fit on ``X`` and return it with A imputed (encoding ``X`` once); ``y`` is ignored."""
        return self.fit(X)._impute(X)


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
