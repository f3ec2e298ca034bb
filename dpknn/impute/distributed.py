"""Exact k-NN imputation of a partitioned Parquet data set on Dask, out of core.

Everything the imputation scheme computes is per equivalence class (records with equal cells),
so the table never has to sit in one process. :func:`impute_parquet` runs in three passes:

1. **Stage** (one task per input partition): encode the partition against the schema, write
   its records' class keys, rows within the partition, incomplete flags, observed values of A
   (each in its narrowest exact dtype, :func:`compact`) and labels (if the data have a label
   column) to a staging file sorted by class key, and return the partition's class counts. The
   client merges them into the class table (one row per class, however many records).
2. **Donors** (one task per bucket of consecutive classes, sized to hold about one partition
   of records): the client finds the donor classes of every class without k donors of its own
   (the same code as :class:`~dpknn.impute.KNNImputer`); each bucket task reads its key
   range from every staging file (memory-mapped, by binary search) and walks the donors of
   each incomplete record by the fixed order, with the Cython kernel shared with the
   in-memory fit. It counts donees, finds the label arcs of the L1 search and sends every
   donor (its donee's row and slot, its values of A, and its label only for a donors folder)
   to the partition of its donee.
3. **Fill** (one task per input partition): fill the missing values of A from the donors,
   exactly as the in-memory imputer does, and write the partition (:func:`impute_parquet`), or
   keep only the counts and exact sums a release needs (:class:`~dpknn.releases.parquet.ParquetStatistics`,
   one such pass per statistic; nothing imputed is written).

With universes (``docs/imputation.md``, "Universes"), pass 1 still reads each partition once, checks
every record against the whole schema and stages each universe's records apart (each keeping its
row in the partition, and its label or whole-data row), encoded by the universe's restricted schema;
pass 2 and the L1 search run once per universe on its files; pass 3 fills each universe's records
from its donors and leaves each attribute missing outside its universe. L1(D) is the sum over the
universes, each as in memory.

The client holds only class-level state; it runs the exact L1 search
(:meth:`KNNImputer._deepest_addition`) after pass 2 (:func:`place_donors` runs passes 1 and 2
and the search, and removes the staged records, keeping the donors' inboxes). The result is the in-memory
one: the same donors in the same order, the same L1(D) and worst cases, every row written
once with its index. ``docs/distributed.md`` describes the scheme, its memory and its speed.

References
----------
.. [1] Clifton, Hanson, Kifer, Shamis, et al. (2022). "Differentially private k-nearest
   neighbor missing data imputation". §4 (imputation scheme and L1(D)).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import operator
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpknn._core import _donors, _grouping
from dpknn.exceptions import DomainError, WorkLimitError
from dpknn.impute.knn import DEFAULT_MAX_WORK, MAX_KEY, KNNImputer, L1Case
from dpknn.impute.scheme import (
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
from dpknn.schema.attributes import (
    Categorical,
    Schema,
    blank_outside_universes,
    log_outside_universes,
    observed_outside_universes,
)
from dpknn.schema.flags import check_path_not_imputed, flag_column
from dpknn.utils.cluster import completed_results, dask_client, parquet_partitions
from dpknn.utils.io import IMPUTED_MARKER, check_not_inside, remove_tree
from dpknn.utils.validation import check_positive_int, validate_params

__all__ = ["DistributedImputation", "DonorPlacement", "FolderUniverse", "GroupDonors", "PartitionDonors", "compact",
           "folder_imputer", "impute_parquet", "parquet_partitions", "place_donors"]

logger = logging.getLogger(__name__)

_INBOX = "donors-{:05d}"
_STAGED = "staged-{:05d}"
_LABELS = "labels-{:05d}.npy"
# Labels sampled per partition to cut the label range for the duplicate check.
_LABEL_SAMPLE = 64


@dataclass(frozen=True)
class FolderUniverse:
    """CONFIDENTIAL: the imputation of the attributes that share one universe, in a folder (as
    :class:`~dpknn.impute.knn.UniverseFit` in memory, less the per-record arrays a folder does not hold).

    Attributes
    ----------
    attributes : tuple of str
    universe : Universe or None
        None: every record.
    l1 : int
        Exact L1(D) of the imputation restricted to the universe.
    l1_cases : dict of str to L1Case
        Its worst change of each kind (rows are positions in the whole data set).
    n_records : int
        Records inside the universe.
    n_incomplete : int
        Of them, those missing one of ``attributes``.
    """

    attributes: tuple
    universe: object
    l1: int
    l1_cases: dict
    n_records: int
    n_incomplete: int


@dataclass(frozen=True)
class DistributedImputation:
    """CONFIDENTIAL: what :func:`impute_parquet` found (the attributes of a fitted
    :class:`~dpknn.impute.KNNImputer` that make sense at this scale).

    Every number here depends on the data: it is for the curator and never published.

    Attributes
    ----------
    schema : Schema
    k : int
    aggregate : str
    output_dir : str or None
        The folder of imputed partitions (confidential microdata); None where the imputed values
        were used without being written (:class:`~dpknn.releases.parquet.ParquetStatistics`).
    l1_ : int
        Exact L1(D), equal to the in-memory ``KNNImputer.l1_`` (with universes, their sum).
    l1_cases_ : dict of str to L1Case
        The worst change of each kind (of the universe with the largest L1); ``row`` is the
        record's position in the whole data set (partitions in order), as the in-memory imputer
        numbers rows.
    n_records_ : int
        As the in-memory imputer's, and so are the next four (summed over the universes).
    n_incomplete_ : int
    n_classes_ : int
    n_donorless_classes_ : int
    n_donorless_records_ : int
    max_donee_count_ : int
        Most donees of one complete record (with universes, within one universe).
    l1_work_ : int
        Ball-box tests the L1 search spent.
    n_partitions_, n_buckets_ : int
        Input partitions and donor buckets (summed over the universes).
    seconds_ : dict
        Wall time of each pass.
    groups_ : tuple of FolderUniverse
        One per universe (one in all without universes), in the order of
        :meth:`~dpknn.schema.Schema.universe_groups`.
    n_outside_universe_ : dict of str to int
        Observed values of an imputed attribute outside its universe, by attribute (read as not
        applicable; the in-memory ``n_outside_universe_``).
    """

    schema: Schema
    k: int
    aggregate: str
    output_dir: str | None
    l1_: int
    l1_cases_: dict
    n_records_: int
    n_incomplete_: int
    n_classes_: int
    n_donorless_classes_: int
    n_donorless_records_: int
    max_donee_count_: int
    l1_work_: int
    n_partitions_: int
    n_buckets_: int
    seconds_: dict = field(default_factory=dict)
    groups_: tuple = ()
    n_outside_universe_: dict = field(default_factory=dict)

    def l1_for(self, columns):
        """CONFIDENTIAL: the L1(D) that bounds the records whose values of ``columns`` one addition or
        deletion can change: the sum of L1 over the universes of the imputed attributes among
        ``columns`` (0 when there is none), as :meth:`KNNImputer.l1_for`."""
        wanted = set(columns)
        return int(sum(g.l1 for g in self.groups_ if wanted & set(g.attributes)))

    def curator_dict(self):
        """CONFIDENTIAL: the curator diagnostics as plain data (JSON-ready)."""
        out = {"confidential": True, "l1": self.l1_, "n_records": self.n_records_,
               "n_incomplete": self.n_incomplete_, "n_classes": self.n_classes_,
               "n_donorless_classes": self.n_donorless_classes_,
               "n_donorless_records": self.n_donorless_records_, "max_donee_count": self.max_donee_count_,
               "l1_work": self.l1_work_, "l1_cases": {kind: dict(vars(c)) for kind, c in self.l1_cases_.items()},
               "partitions": self.n_partitions_, "buckets": self.n_buckets_, "seconds": self.seconds_,
               "observed_outside_universe": dict(self.n_outside_universe_)}
        if self.schema.has_universes:
            out["universes"] = [{"attributes": list(g.attributes),
                                 "universe": None if g.universe is None else g.universe.to_public(),
                                 "l1": g.l1, "n_records": g.n_records, "n_incomplete": g.n_incomplete}
                                for g in self.groups_]
        return out


# ----------------------------------------------------------------------------------------------
def _write_columns(folder, columns):
    """Numeric columns as one .npy file each in ``folder``, so that readers can map them."""
    folder = Path(folder)
    folder.mkdir(exist_ok=True)  # a task Dask runs again after losing a worker writes the same files
    for name, col in columns.items():
        np.save(folder / f"{name}.npy", np.ascontiguousarray(col))


# The header of a 1-d array written by numpy.save (format 1.0, 2.0 or 3.0).
_NPY_HEADER = re.compile(rb"'descr':\s*'([^']+)',\s*'fortran_order':\s*False,\s*'shape':\s*\((\d+),?\)")


@dataclass(frozen=True)
class NpyColumn:
    """A one-dimensional ``.npy`` file: its path, dtype, length and the byte offset of its data.

    The passes read 10^6 pieces of 10^3 staging files at 10^9 rows; ``numpy.load`` spends about
    77 µs per file parsing the header with ``ast`` (and needs a lock, ``_NPY_LOCK``), while this
    reads it with one small read and a regular expression, and slices are read with ``pread``.
    """

    path: str
    dtype: np.dtype
    size: int
    offset: int

    @classmethod
    def open(cls, path):
        with open(path, "rb") as f:
            head = f.read(512)
        match = _NPY_HEADER.search(head) if head[:6] == b"\x93NUMPY" else None
        if match is None:   # another layout: let numpy read it
            arr = map_npy(path)
            return cls(str(path), arr.dtype, int(arr.size), int(arr.offset))
        start = 10 if head[6] == 1 else 12
        length = int.from_bytes(head[8:start], "little")
        return cls(str(path), np.dtype(match.group(1).decode()), int(match.group(2)), start + length)

    def rows(self, lo, hi):
        """Values [lo, hi), read (not mapped)."""
        lo, hi = int(lo), int(hi)
        if hi <= lo:
            return np.zeros(0, dtype=self.dtype)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            data = os.pread(fd, (hi - lo) * self.dtype.itemsize, self.offset + lo * self.dtype.itemsize)
        finally:
            os.close(fd)
        return np.frombuffer(data, dtype=self.dtype).copy()

    def mapped(self):
        """The whole column memory-mapped: a binary search or a gather reads only what it touches."""
        return np.memmap(self.path, dtype=self.dtype, mode="r", offset=self.offset, shape=(self.size,))


def _columns(folder, names):
    """The :class:`NpyColumn` of each of ``names`` in a folder written by :func:`_write_columns`."""
    return {name: NpyColumn.open(Path(folder) / f"{name}.npy") for name in names}


# np.load parses each .npy header with ast.literal_eval, which is not thread-safe before CPython 3.11.8
# (the AST constructor's recursion counter, CPython gh-106905: "SystemError: AST constructor recursion
# depth mismatch"); Dask workers with several threads, or in-process clients, load concurrently.
_NPY_LOCK = threading.Lock()


def map_npy(path):
    """``numpy.load(path, mmap_mode="r")``, one header at a time (see ``_NPY_LOCK``)."""
    with _NPY_LOCK:
        return np.load(path, mmap_mode="r")




def _concat(parts, names):
    return {name: np.concatenate([p[name] for p in parts]) for name in names}


def _index_dtype(n):
    """The narrowest signed integer dtype that holds 0 .. n - 1."""
    return compact(np.array([0, max(int(n) - 1, 0)])).dtype


def compact(values):
    """``values`` in the narrowest dtype that holds every one of them exactly: float32 for floats
    that survive the round trip (NaN included), the narrowest integer type for codes. Readers
    widen them again (float64, int64) before any arithmetic, so nothing computed changes."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            narrow = values.astype(np.float32)
            exact = (narrow == values) | np.isnan(values)
        return narrow if exact.all() else values
    if values.dtype.kind in "iu":
        if values.size == 0:
            return values.astype(np.int8)
        low, high = int(values.min()), int(values.max())
        narrow = next((t for t in (np.int8, np.int16, np.int32, np.int64)
                       if np.iinfo(t).min <= low and high <= np.iinfo(t).max), None)
        return values if narrow is None else values.astype(narrow)
    return values


def _staged_rows(cols, rows, offset):
    """Rows of one staging file (a (lo, hi) range, or positions), with their global row numbers
    ``gid`` and their labels (the row numbers when the data have no label column)."""
    if isinstance(rows, tuple):
        out = {name: col.rows(*rows) for name, col in cols.items()}
    else:
        out = {name: np.asarray(col.mapped()[rows]) for name, col in cols.items()}
    out["gid"] = offset + out.pop("row").astype(np.int64)
    if "label" not in out:
        out["label"] = out["gid"]
    return out


# ----------------------------------------------------------------------------------------------
# Pass 1: stage every partition.
def _observed_values(attr, df):
    """The values of imputed attribute ``attr`` as numbers: category codes (-1 missing) for a
    categorical attribute, float64 (NaN missing) otherwise."""
    values, missing = attr.read_column(df)
    if isinstance(attr, Categorical):
        return np.where(missing, -1, values).astype(np.int64)
    out = np.asarray(values, dtype=np.float64).copy()
    out[missing] = np.nan
    return out


@dataclass(frozen=True)
class StageGroup:
    """One universe's imputation (``docs/imputation.md``, "Universes"), as every pass handles it.

    ``attributes`` are the imputed attributes that share ``universe`` (None: every record);
    ``schema`` is the schema of their imputation (:meth:`Schema.restricted`: the known attributes cut
    to the universe's cells, these attributes without universe), or the whole schema when it has no
    universes; ``folder`` is the subfolder of the staging folder its files go to.
    """

    attributes: tuple
    universe: object
    schema: Schema
    folder: str


def _stage_groups(schema):
    """The :class:`StageGroup` of each universe of ``schema``'s imputed attributes, in the order of
    :meth:`Schema.universe_groups` (one group, the schema itself, without universes)."""
    if not schema.has_universes:
        return (StageGroup(schema.imputed_names, None, schema, "g0"),)
    return tuple(StageGroup(names, universe, schema.restricted(universe, names, label=schema.label), f"g{i}")
                 for i, (universe, names) in enumerate(schema.universe_groups()))


@dataclass(frozen=True)
class StagedPartition:
    """What pass 1 learns of one partition for one universe besides its class counts: its records
    there, its first incomplete record (global row, label) and its label range (None when empty)."""

    number: int
    rows: int
    first_incomplete: tuple | None
    label_range: tuple | None = None


@dataclass(frozen=True)
class StagedFile:
    """CONFIDENTIAL: what pass 1 returns of one partition: its records, those with a value to impute
    (inside its universe), the observed values outside their universe by attribute, its label range
    and sample for the duplicate check (None when empty), and per universe its
    (:class:`ClassCounts`, :class:`StagedPartition`)."""

    number: int
    rows: int
    n_incomplete: int
    outside: dict
    label_range: tuple | None
    label_sample: np.ndarray | None
    groups: tuple


@dataclass(frozen=True)
class ClassCounts:
    """The class table of pass 1: sorted class keys with their donors and incomplete records."""

    keys: np.ndarray
    n_donors: np.ndarray
    n_inc: np.ndarray

    @classmethod
    def empty(cls):
        return cls(*(np.zeros(0, np.int64),) * 3)

    def merged(self, other):
        """The table with another partition's counts added."""
        keys, inverse = np.unique(np.concatenate([self.keys, other.keys]), return_inverse=True)
        n_donors = np.bincount(inverse, np.concatenate([self.n_donors, other.n_donors]), minlength=keys.size)
        n_inc = np.bincount(inverse, np.concatenate([self.n_inc, other.n_inc]), minlength=keys.size)
        return ClassCounts(keys, n_donors.astype(np.int64), n_inc.astype(np.int64))


def _stage(path, number, offset, schema, groups, staging):
    """Encode one partition, check it against the whole schema, and write each universe's records
    sorted by class key to that universe's folder; return its :class:`StagedFile`."""
    cols = [*schema.known_names, *schema.imputed_names, *([] if schema.label is None else [schema.label])]
    df = pd.read_parquet(path, columns=cols)
    try:
        # Every record is checked (domains, labels, missing known values), as the in-memory fit
        # checks the whole table before it imputes a universe's records.
        enc = schema.encode(df)
    except DomainError as err:
        raise DomainError(f"partition {str(path)!r}: {err}") from None
    n = len(df)
    labels = offset + np.arange(n, dtype=np.int64) if schema.label is None else enc.labels
    staged = []
    for g in groups:
        if g.schema is schema:   # no universes: the encoding above is the group's
            rows, genc = np.arange(n, dtype=np.int64), enc
        else:
            rows = np.arange(n, dtype=np.int64) if g.universe is None else np.flatnonzero(g.universe.mask(df))
            try:
                genc = g.schema.encode(df.iloc[rows])
            except DomainError as err:
                raise DomainError(f"partition {str(path)!r}: {err}") from None
            rows = rows.astype(np.int64)
        staged.append(_stage_group(df, rows, genc, offset, labels, g, Path(staging) / g.folder, number, schema))
    sample = label_range = None
    if n and schema.label is None:
        label_range = (offset, offset + n - 1)
    elif n:
        sorted_labels = np.sort(labels)
        label_range = (int(sorted_labels[0]), int(sorted_labels[-1]))
        np.save(Path(staging) / _LABELS.format(number), sorted_labels)
        sample = sorted_labels[np.linspace(0, n - 1, min(n, _LABEL_SAMPLE)).astype(np.int64)]
    return StagedFile(number, n, int(enc.incomplete.sum()), observed_outside_universes(df, schema.imputed),
                      label_range, sample, tuple(staged))


def _stage_group(df, rows, enc, offset, labels, group, folder, number, schema):
    """Write the records ``rows`` of one partition (encoded by the group's schema as ``enc``) sorted
    by class key; return their class counts and :class:`StagedPartition`. Rows stay positions in
    the whole partition, so a donor reaches its donee whatever the universe."""
    n = rows.size
    gid = offset + rows
    glabels = labels[rows]
    keys = _grouping.pack_cells(np.ascontiguousarray(enc.cells), group.schema.n_codes)
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    inc = enc.incomplete[order]
    src = rows[order]   # each staged record's row in the partition
    # Rows within the partition and values in the narrowest exact dtype: staging is the run's I/O.
    staged = {"key": sk, "row": src.astype(_index_dtype(len(df))), "inc": inc.view(np.int8)}
    if schema.label is not None:
        staged["label"] = glabels[order]
    for j, name in enumerate(group.attributes):
        staged[f"v{j}"] = compact(_observed_values(schema.attribute(name), df)[src])
    _write_columns(folder / _STAGED.format(number), staged)
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]]) if n else np.zeros(0, dtype=np.int64)
    size = np.diff(np.r_[starts, n])
    n_inc = np.add.reduceat(inc.astype(np.int64), starts) if n else np.zeros(0, dtype=np.int64)
    counts = ClassCounts(sk[starts], (size - n_inc).astype(np.int64), n_inc)
    first = np.flatnonzero(enc.incomplete)
    first_incomplete = None if first.size == 0 else (int(gid[first[0]]), int(glabels[first[0]]))
    if not n:
        return counts, StagedPartition(number, 0, first_incomplete)
    if group.universe is not None:
        # A universe's labels are not every record's: _label_after reads them from here.
        sorted_labels = np.sort(glabels)
        np.save(folder / _LABELS.format(number), sorted_labels)
        return counts, StagedPartition(number, n, first_incomplete, (int(sorted_labels[0]), int(sorted_labels[-1])))
    return counts, StagedPartition(number, n, first_incomplete, (int(glabels.min()), int(glabels.max())))


def _duplicate_labels(staging, numbers, low, high):
    """Labels in [low, high) held by more than one record, from the sorted label files."""
    pieces = []
    for number in numbers:
        labels = map_npy(Path(staging) / _LABELS.format(number))
        a, b = np.searchsorted(labels, [low, high])
        pieces.append(np.asarray(labels[a:b]))
    merged = np.sort(np.concatenate(pieces)) if pieces else np.zeros(0, dtype=np.int64)
    return merged[1:][merged[1:] == merged[:-1]][:5].tolist()


def _check_unique_labels(client, schema, stats, staging, progress):
    """Refuse labels that repeat across partitions (each partition was checked when encoded).

    Disjoint label ranges, the usual layout, need nothing more; otherwise the label range is
    cut at sampled quantiles and each piece is checked from the partitions' sorted labels.
    """
    ranges = sorted(s.label_range for s in stats if s.rows)
    if all(a[1] < b[0] for a, b in itertools.pairwise(ranges)):
        return
    numbers = [s.number for s in stats if s.rows]
    sample = np.unique(np.concatenate([s.label_sample for s in stats if s.rows]))
    cuts = np.unique(sample[np.linspace(0, sample.size - 1, min(sample.size, len(numbers) + 1)).astype(np.int64)])
    edges = [ranges[0][0], *cuts[1:].tolist(), max(r[1] for r in ranges) + 1]
    futures = [client.submit(_duplicate_labels, str(staging), numbers, lo, hi, pure=False)
               for lo, hi in itertools.pairwise(edges)]
    dup = [d for found in completed_results(futures, progress, "label check") for d in found]
    if dup:
        raise DomainError(f"label column {schema.label!r} has duplicate labels across partitions: {sorted(dup)[:5]}.")


# ----------------------------------------------------------------------------------------------
# Pass 2: donors, one bucket of consecutive classes at a time.
@dataclass(frozen=True)
class DonorPlan:
    """One row per (deficient class, donor class) pair, in the scheme's order: the classes
    (indices into the class table, or keys once :meth:`for_bucket` has chosen a bucket's rows),
    how many donors the donor class gives (all of its own but the last, which gives the rest of
    k), the slot of the first of them, and whether it is the k-th donor's class."""

    owner: np.ndarray
    donor: np.ndarray
    take: np.ndarray
    slot: np.ndarray
    last: np.ndarray

    def for_bucket(self, mine, keys):
        """The rows in ``mine``, with their classes given as keys."""
        return DonorPlan(keys[self.owner[mine]], keys[self.donor[mine]], self.take[mine], self.slot[mine],
                         self.last[mine])


def _donor_plan(imp, keys, n_donors, n_inc, k):
    """The :class:`DonorPlan` of every class with incomplete records and fewer than k donors
    of its own; also the balls of the L1 search and the class cells."""
    schema = imp.schema
    class_cells = _grouping.unpack_keys(keys, schema.n_codes)
    _, deficient = deficient_classes(n_donors, n_inc, k)
    lengths, flat, radius, boundary = ordered_donor_classes(
        schema, deficient, class_cells, keys, n_donors, k, schema.weights, schema.is_categorical)
    owner = np.repeat(deficient, lengths)
    given = n_donors[flat]
    before = np.cumsum(given) - given
    first = np.cumsum(lengths) - lengths
    slot = before - np.repeat(before[first] if flat.size else before, lengths)
    take = np.minimum(given, k - slot)
    last = np.zeros(flat.size, dtype=bool)
    last[np.cumsum(lengths) - 1] = True
    plan = DonorPlan(owner, flat, take, slot, last)
    return plan, l1_balls(deficient, class_cells, radius, boundary, n_inc), class_cells


def _needed_runs(key, needed, max_gap=1 << 16):
    """Row ranges of a sorted key column that cover the classes ``needed`` (sorted keys), runs
    closer than ``max_gap`` rows merged: a few reads per file, and no read of a large class that
    the bucket does not use."""
    s, e = np.searchsorted(key, needed, "left"), np.searchsorted(key, needed, "right")
    hit = e > s
    s, e = s[hit], e[hit]
    if not s.size:
        return []
    cut = np.flatnonzero(s[1:] - e[:-1] >= max_gap) + 1
    return list(zip(s[np.r_[0, cut]].tolist(), e[np.r_[cut - 1, s.size - 1]].tolist()))


@dataclass(frozen=True)
class BucketTask:
    """What one bucket task of pass 2 needs besides its classes: where the staged records lie,
    k, the smallest label, the partitions' first global rows, and what to carry."""

    staging: str
    n_staged: int
    k: int
    min_label: int
    offsets: np.ndarray
    n_values: int
    keep_labels: bool
    labelled: bool


@dataclass(frozen=True)
class SolvedBucket:
    """What a bucket task returns to the client: donors sent per partition, the worst deletion
    (donee count, global row, label; None without donors), and per class with a label arc its
    key, largest stabbing count and the lower label of the deepest gap."""

    number: int
    per_partition: np.ndarray
    delete: tuple | None
    arc_keys: np.ndarray
    stab: np.ndarray
    gap_label: np.ndarray


def _read_bucket(task, needed_keys, foreign):
    """The staged records of the bucket's needed classes (``own``) and the incomplete records
    of the foreign deficient classes (``far``), as column dicts."""
    names = ["key", "label", "gid", "inc", *[f"v{j}" for j in range(task.n_values)]]
    stored = ["key", "row", "inc", *(["label"] if task.labelled else []),
              *[f"v{j}" for j in range(task.n_values)]]
    own_parts, far_parts = [], []
    for p in range(task.n_staged):
        cols = _columns(Path(task.staging) / _STAGED.format(p), stored)
        key = cols["key"].mapped()
        for run in _needed_runs(key, needed_keys):
            own_parts.append(_staged_rows(cols, run, int(task.offsets[p])))
        if foreign.size:
            s = np.searchsorted(key, foreign, "left")
            idx = csr_positions(s, np.searchsorted(key, foreign, "right") - s)
            idx = idx[cols["inc"].mapped()[idx] != 0]
            far_parts.append(_staged_rows(cols, idx, int(task.offsets[p])))
        del key
    empty = {n: np.zeros(0, dtype=np.int8 if n == "inc" else np.int64) for n in names}
    own = _concat(own_parts, names) if own_parts else empty
    keep = np.isin(own["key"], needed_keys)   # rows of unneeded classes between needed ones
    own = {n: c[keep] for n, c in own.items()}
    far = _concat(far_parts, names) if far_parts else {n: own[n][:0] for n in names}
    own["inc"] = own["inc"].view(bool)
    return own, far


@dataclass(frozen=True)
class DonorQueries:
    """One row per (incomplete record, donor class): the record's label and global row, the
    class, how many donors it gives, the first slot, and whether it is the k-th donor's class."""

    label: np.ndarray
    gid: np.ndarray
    cls: np.ndarray
    take: np.ndarray
    slot: np.ndarray
    last: np.ndarray


def _bucket_queries(own, far, cls, class_keys, class_donors, plan, k):
    """The :class:`DonorQueries` of a bucket: its own incomplete records with k donors in their
    class, then every incomplete record of a deficient class once per donor class in the bucket."""
    inc_rows = np.flatnonzero(own["inc"])
    sufficient = inc_rows[class_donors[cls[inc_rows]] >= k]
    parts = [(own["label"][sufficient], own["gid"][sufficient], cls[sufficient],
              np.full(sufficient.size, k, dtype=np.int64), np.zeros(sufficient.size, dtype=np.int64),
              np.ones(sufficient.size, dtype=bool))]
    if plan.owner.size:
        porder = np.argsort(plan.owner, kind="stable")
        owners = plan.owner[porder]
        for table, rows in ((own, inc_rows), (far, np.arange(far["key"].size))):
            rk = table["key"][rows]
            s, e = np.searchsorted(owners, rk, "left"), np.searchsorted(owners, rk, "right")
            hit = e > s
            rows, s, reps = rows[hit], s[hit], (e - s)[hit]
            entry = porder[csr_positions(s, reps)]
            parts.append((np.repeat(table["label"][rows], reps), np.repeat(table["gid"][rows], reps),
                          np.searchsorted(class_keys, plan.donor[entry]), plan.take[entry], plan.slot[entry],
                          plan.last[entry]))
    return DonorQueries(*(np.concatenate(column) for column in zip(*parts)))


def _worst_deletion(pos, donor_rows, own):
    """Deleting a complete record changes as many donor sets as it has donees: the largest
    count, with the smallest global row among the tied, and its label."""
    donee = np.bincount(pos, minlength=donor_rows.size)
    best = int(donee.max()) if donee.size else 0
    tied = donor_rows[donee == best] if best else np.zeros(0, dtype=np.int64)
    if not tied.size:
        return None
    at = int(np.argmin(own["gid"][tied]))
    return best, int(own["gid"][tied[at]]), int(own["label"][tied[at]])


def _label_arcs(q, pos, out_ptr, donor_labels, min_label):
    """Label arcs at the k-th donor's class, from each record to its k-th donor: per class, its
    index, the largest stabbing count and the lower label of the deepest gap. Ranks among these
    labels and the smallest label of the data give the same covers as ranks among all labels."""
    last = np.flatnonzero(q.last)
    kth = donor_labels[pos[out_ptr[last + 1] - 1]]
    arc_cls = q.cls[last]
    grid = np.unique(np.concatenate([[min_label], q.label[last], kth]))
    grp = np.argsort(arc_cls, kind="stable")
    bounds, first = np.unique(arc_cls[grp], return_index=True)
    stab, gap = _donors.max_stabbing(np.append(first, grp.size).astype(np.int64),
                                     np.searchsorted(grid, q.label[last][grp]).astype(np.int64),
                                     np.searchsorted(grid, kth[grp]).astype(np.int64))
    return bounds, stab, grid[gap]


def _send_donors(number, task, q, pos, out_ptr, rows, own):
    """Write every donor to its donee's partition's inbox, in slot order, the donee by its row
    there; return how many went to each partition."""
    offsets, k = task.offsets, task.k
    q_of = np.repeat(np.arange(q.label.size), q.take)
    x_gid = q.gid[q_of]
    dest = np.searchsorted(offsets, x_gid, side="right") - 1
    slot = q.slot[q_of] + np.arange(pos.size) - out_ptr[q_of]
    srt = np.lexsort((slot, x_gid, dest))
    row = x_gid - offsets[dest]
    inbox = {"row": row[srt].astype(_index_dtype(np.diff(offsets).max(initial=1))),
             "slot": slot[srt].astype(_index_dtype(k))}
    if task.keep_labels:
        inbox["label"] = own["label"][rows[srt]]
    for j in range(task.n_values):
        inbox[f"v{j}"] = own[f"v{j}"][rows[srt]]
    _write_columns(Path(task.staging) / _INBOX.format(number), inbox)
    return np.bincount(dest, minlength=offsets.size - 1)


def _solve_bucket(number, task, class_keys, class_donors, class_incomplete, plan, foreign):
    """Donors of every (incomplete record, donor class in ``class_keys``) pair; see the module doc.

    ``plan`` (a :class:`DonorPlan` with keys) holds the pairs whose donor class lies in this
    bucket; ``foreign`` the owner keys outside it, whose incomplete records are read from the
    staging files too. Only the bucket's classes that have incomplete records or give donors to
    a deficient class are read: the largest census classes (children, a few per cent of the
    records each) have neither, and reading them made the task's memory grow with the data set.
    The donors' labels go to the inbox only if ``task.keep_labels`` (the confidential donors
    folder needs them; the filling does not).
    """
    needed = (class_incomplete > 0) | np.isin(class_keys, plan.donor)
    own, far = _read_bucket(task, class_keys[needed], foreign)
    n_cls = class_keys.size
    cls = np.searchsorted(class_keys, own["key"])
    counted = np.bincount(cls[~own["inc"]], minlength=n_cls)
    if not np.array_equal(counted[needed], class_donors[needed]):
        raise RuntimeError("staging files disagree with the class table; a partition changed during the run.")
    order = np.argsort(own["label"], kind="stable").astype(np.int64)
    donor_ptr, donor_rows, _, _ = _grouping.group_rows(cls.astype(np.int64), own["inc"], order, n_cls)
    donor_labels = np.ascontiguousarray(own["label"][donor_rows])

    q = _bucket_queries(own, far, cls, class_keys, class_donors, plan, task.k)
    out_ptr = np.zeros(q.label.size + 1, dtype=np.int64)
    np.cumsum(q.take, out=out_ptr[1:])
    pos = np.empty(int(out_ptr[-1]), dtype=np.int64)
    if q.label.size:
        _donors.cyclic_take(donor_ptr, donor_labels, q.cls.astype(np.int64), q.label.astype(np.int64),
                            q.take.astype(np.int64), out_ptr, pos)
    rows = donor_rows[pos]
    bounds, stab, gap_label = _label_arcs(q, pos, out_ptr, donor_labels, task.min_label)
    per_partition = _send_donors(number, task, q, pos, out_ptr, rows, own)
    return SolvedBucket(number, per_partition, _worst_deletion(pos, donor_rows, own), class_keys[bounds], stab,
                        gap_label)


# ----------------------------------------------------------------------------------------------
# Pass 3: fill every partition from its donors, then write it (impute_parquet) or take its
# statistics (ParquetStatistics).
@dataclass(frozen=True)
class GroupDonors:
    """Where one partition's donors for one universe's attributes lie in that universe's inbox files.

    ``slices`` holds (bucket, start, stop) triples of the inbox files in ``folder``; the rows there
    are the donors of the partition's records inside ``universe`` (None: every record) that miss
    one of ``attributes``, in row and slot order, ``k`` of them each.
    """

    folder: str
    slices: tuple
    k: int
    attributes: tuple
    universe: object


@dataclass(frozen=True)
class PartitionDonors:
    """Where one partition's donors lie in the inbox files of pass 2 (one :class:`GroupDonors` per
    universe, :func:`_stage_groups`), and how to use them."""

    groups: tuple
    aggregate: str
    labels: bool

    def fill(self, path, schema, columns=None):
        """CONFIDENTIAL: partition ``path`` (``columns`` of it, the imputed attributes and the columns their
        universes read) with its missing values filled from these donors exactly as
        :meth:`KNNImputer.transform` fills them, and each imputed attribute missing outside its universe."""
        return _filled(path, schema, self, columns)[0]


def _donors_of(group, labels):
    """The inbox rows of one partition for one universe, sorted by donee row and slot, values widened again."""
    names = ["row", "slot", *(["label"] if labels else []), *[f"v{j}" for j in range(len(group.attributes))]]
    parts = [{name: col.rows(a, e) for name, col in _columns(Path(group.folder) / _INBOX.format(b), names).items()}
             for b, a, e in group.slices]
    got = _concat(parts, names) if parts else {n: np.zeros(0, dtype=np.int64) for n in names}
    srt = np.lexsort((got["slot"], got["row"]))
    return {n: c[srt] for n, c in got.items()}


def _filled(path, schema, donors, columns=None):
    """One partition (``columns`` of it, the imputed attributes and the columns of their universes)
    with A filled exactly as :meth:`KNNImputer.transform` fills it; also, per universe, the donors
    and the imputed records' rows."""
    if columns is not None:
        wanted = {*columns, *schema.imputed_names, *schema.universe_names}
        columns = [c for c in pq_columns(path) if c in wanted]
    df = pd.read_parquet(path, columns=columns)
    imp = KNNImputer(schema, k=max(g.k for g in donors.groups), aggregate=donors.aggregate)
    out = blank_outside_universes(df, schema.imputed)
    filled, used = {}, []
    for group in donors.groups:
        got = _donors_of(group, donors.labels)
        k = group.k
        missing_any = np.zeros(len(df), dtype=bool)
        for name in group.attributes:
            missing_any |= schema.attribute(name).read_column(df)[1]
        if group.universe is not None:
            missing_any &= group.universe.mask(df)
        x_rows = np.flatnonzero(missing_any)
        n_x = x_rows.size
        if got["row"].size != n_x * k or not (np.array_equal(got["row"][::k], x_rows)
                                              and np.array_equal(got["slot"], np.tile(np.arange(k), n_x))):
            raise RuntimeError(f"partition {str(path)!r}: the donors found do not match its incomplete records "
                               "(did the input change during the run?).")
        for j, name in enumerate(group.attributes):
            attr = schema.attribute(name)
            missing = df[name].isna().to_numpy()[x_rows]
            values = got[f"v{j}"].reshape(n_x, k)
            if isinstance(attr, Categorical):
                values = np.asarray(attr.categories, dtype=object)[values.astype(np.int64)]
            else:
                values = values.astype(np.float64)
            put_values(out, attr, x_rows[missing], values[missing], imp.aggregate)
            filled[name] = x_rows[missing]
        used.append((group, got, x_rows))
    return out, filled, used


def pq_columns(path):
    """The column names of a Parquet file, from its schema only."""
    import pyarrow.parquet as pq

    return pq.read_schema(path).names


def _write_partition(path, rel, offset, schema, donors, out_dir, donors_dir):
    """Fill A in one partition from its donors and write it; return its numbers of rows and of
    imputed records."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out, filled, used = _filled(path, schema, donors)
    # The same flag columns as KNNImputer.transform, in every partition (dpknn.schema.flags).
    for name in schema.imputed_names:
        flag = np.zeros(len(out), dtype=bool)
        flag[filled[name]] = True
        out[flag_column(name)] = flag
    table = pa.Table.from_pandas(out)
    meta = dict(table.schema.metadata or {})
    meta[IMPUTED_MARKER.encode()] = b"1"
    if not Path(out_dir).is_dir():
        # The run failed or was interrupted and removed its partial folder; recreating it here
        # would leave imputed microdata behind.
        raise RuntimeError(f"partition {str(path)!r}: the output folder is gone; the run was stopped.")
    target = Path(out_dir) / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.replace_schema_metadata(meta), target)
    if donors_dir is not None:
        target = Path(donors_dir) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(_donor_table(out, offset, schema, used), target)
    imputed = np.zeros(len(out), dtype=bool)
    for _, _, x_rows in used:
        imputed[x_rows] = True
    return {"rows": len(out), "imputed": int(imputed.sum())}


def _donor_table(out, offset, schema, used):
    """The donors file of one partition: each incomplete record's label and its donors' labels in
    order; with universes, one row per record and universe, named by the universe's attributes
    (``attributes``), and a universe with fewer than k donors leaves the last columns empty."""
    import pyarrow as pa

    labels = offset + np.arange(len(out), dtype=np.int64) if schema.label is None else schema.labels(out)
    k = max(g.k for g, _, _ in used)
    columns = {"label": np.concatenate([labels[x_rows] for _, _, x_rows in used])}
    if schema.has_universes:
        columns["attributes"] = pa.array([",".join(g.attributes) for g, _, x_rows in used for _ in range(x_rows.size)],
                                         type=pa.string())
    for s in range(k):
        parts, present = [], []
        for g, got, x_rows in used:
            there = s < g.k
            parts.append(got["label"][s::g.k] if there else np.zeros(x_rows.size, dtype=np.int64))
            present.append(np.full(x_rows.size, there))
        present = np.concatenate(present)
        values = np.concatenate(parts).astype(np.int64)
        columns[f"donor_{s + 1}"] = values if present.all() else pa.array(values, mask=~present)
    return pa.table(columns)


# ----------------------------------------------------------------------------------------------
def impute_parquet(input_dir, output_dir, schema, *, k=1, aggregate="auto", max_work=DEFAULT_MAX_WORK,
                   client=None, buckets=None, donors_dir=None, staging_dir=None, progress=False):
    """Impute a folder of Parquet partitions exactly as :class:`~dpknn.impute.KNNImputer`
    would impute their concatenation, on Dask, with memory per worker bounded by a partition.

    The partitions, in the natural order of their paths (:func:`parquet_partitions`), form the
    data set; without a label column, labels are row positions in it. The output folder gets
    one file per input file, same relative path, same rows in the same order with the same
    index and all columns, A filled from the donors, then the imputation flag columns of
    :meth:`KNNImputer.transform` (:mod:`dpknn.schema.flags`); it is written under a temporary name and
    moved into place when complete. Each file also carries the ``dpknn:imputed`` marker.

    Parameters
    ----------
    input_dir, output_dir : str or Path
        ``output_dir`` must not exist.
    schema : Schema
        As for :class:`KNNImputer`, universes included (each universe's attributes are imputed on
        its records, one pass 2 and L1 search per universe after one staging pass; outside its
        universe an attribute is written missing). The known attributes' domain (within each
        universe) must pack into int64 keys (product of the numbers of codes at most 2^62).
    k, aggregate, max_work
        As for :class:`KNNImputer`.
    client : dask.distributed.Client or None
        None: a LocalCluster with one single-threaded worker per core, closed afterwards. Its
        workers must see ``input_dir``, ``output_dir`` and the staging folder (a shared file
        system on a cluster).
    buckets : int or None
        Number of donor buckets (tasks of pass 2); None: as many as partitions.
    donors_dir : str or Path or None
        If given (must not exist), a folder with one Parquet file per partition listing each
        incomplete record's label and its donors' labels in order (confidential).
    staging_dir : str or Path or None
        Where the intermediate files go (during passes 1 and 2 the class key, row, incomplete
        flag and values of A of every record, 17 bytes for the census, plus 8 for a label
        column; then the donors' inboxes, 9 bytes per donor for the census);
        None: a temporary folder beside ``output_dir``. Removed at the end.
    progress : bool, default False
        Progress bars for each pass.

    Returns
    -------
    DistributedImputation
        CONFIDENTIAL: L1(D) and the curator diagnostics.

    Raises
    ------
    DomainError
        A value outside its public domain (naming the partition), or duplicate labels.
    ImputedDataError
        A partition holds imputation flag columns: the folder was imputed already.
    ValueError
        ``output_dir``, ``donors_dir`` or ``staging_dir`` lies inside ``input_dir``.
    WorkLimitError
        As :meth:`KNNImputer.fit`.

    References
    ----------
    .. [1] Clifton et al. (2022), §4.
    """
    imp, files = folder_imputer(input_dir, schema, k=k, aggregate=aggregate, max_work=max_work)
    if buckets is not None:
        buckets = check_positive_int(buckets, "buckets")
    output_dir = Path(output_dir)
    for name, target in (("output_dir", output_dir), ("donors_dir", donors_dir)):
        if target is not None and Path(target).exists():
            raise FileExistsError(f"{name} {str(target)!r} exists; choose a new folder.")
    for name, target in (("output_dir", output_dir), ("donors_dir", donors_dir), ("staging_dir", staging_dir)):
        if target is not None:
            check_not_inside(target, input_dir, name)
    root = Path(input_dir)
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.staging-", dir=staging_dir or output_dir.parent))
    partial = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.partial-", dir=output_dir.parent))
    if donors_dir is not None:
        Path(donors_dir).parent.mkdir(parents=True, exist_ok=True)
    donors_partial = None if donors_dir is None else Path(
        tempfile.mkdtemp(prefix=f".{Path(donors_dir).name}.partial-", dir=Path(donors_dir).parent))
    try:
        with dask_client(client) as dc:
            placed = place_donors(dc, imp, files, staging, buckets=buckets, labels=donors_dir is not None,
                                  progress=progress)
            t0 = time.perf_counter()
            futures = [dc.submit(_write_partition, str(f), f.relative_to(root), placed.offsets[i], schema,
                                 placed.donors[i], str(partial),
                                 None if donors_partial is None else str(donors_partial), pure=False)
                       for i, f in enumerate(files)]
            try:
                written = list(completed_results(futures, progress, "write partitions"))
            except BaseException:
                # A caller's cluster outlives this call: stop the writes that have not started.
                dc.cancel(futures)
                raise
            seconds = {**placed.fit.seconds_, "write": time.perf_counter() - t0}
        if sum(w["rows"] for w in written) != placed.fit.n_records_:
            raise RuntimeError("rows written differ from rows read; the input changed during the run.")
        os.replace(partial, output_dir)
        if donors_partial is not None:
            os.replace(donors_partial, donors_dir)
    finally:
        for tmp in (staging, partial, donors_partial):
            if tmp is not None and tmp.exists():
                remove_tree(tmp)
    fit = dataclasses.replace(placed.fit, output_dir=str(output_dir), seconds_=seconds)
    logger.info("impute_parquet: %d rows in %d partitions, %d classes, L1=%d; %s", fit.n_records_, len(files),
                fit.n_classes_, fit.l1_, {s: round(v, 2) for s, v in seconds.items()})
    return fit


def folder_imputer(input_dir, schema, *, k=1, aggregate="auto", max_work=DEFAULT_MAX_WORK):
    """The :class:`KNNImputer` of the parameters and the input folder's partitions, checked before any
    cluster starts (each universe's keys within int64, not an imputed folder), or a clear error.

    Returns
    -------
    (KNNImputer, list of Path)
    """
    imp = KNNImputer(schema, k=k, aggregate=aggregate, max_work=max_work)
    validate_params(imp)
    for group in _stage_groups(schema):
        if math.prod(int(v) for v in group.schema.n_codes) > MAX_KEY:
            where = "" if group.universe is None else f" (in the universe {group.universe.to_public()})"
            raise ValueError(f"the known attributes' domain{where} has more than 2^62 cells, which impute_parquet "
                             "cannot key; bin an ordinal attribute (bin_width) or impute in memory.")
    files = parquet_partitions(input_dir)
    check_path_not_imputed(input_dir, f"input_dir {str(input_dir)!r}")
    return imp, files


@dataclass(frozen=True)
class DonorPlacement:
    """CONFIDENTIAL: the result of passes 1 and 2 (:func:`place_donors`).

    ``fit`` holds L1(D) and the diagnostics (``output_dir`` None: nothing is written yet);
    ``donors[i]`` says where the donors of partition ``i`` lie in the staging folder, whose
    inbox files outlive this record's use only as long as the caller keeps the folder.
    """

    fit: DistributedImputation
    offsets: tuple
    donors: tuple


def place_donors(client, imp, files, staging, *, buckets=None, labels=False, progress=False):
    """Passes 1 and 2 of :func:`impute_parquet` and the L1 search: every incomplete record's
    donors, in order, in inbox files of ``staging`` grouped by the donee's partition.

    ``imp`` is a :class:`KNNImputer` holding the schema and parameters; ``files`` the
    partitions in order. With universes, pass 1 stages each universe's records apart (one read
    of the input) and pass 2 and the search run once per universe, as the in-memory fit does. The
    staged records are removed once the donors are placed, so the
    folder then holds only the donors' values (and labels if ``labels``). The caller owns
    ``staging``: it holds confidential microdata, also when this raises, and must be removed
    by the caller (:func:`impute_parquet` and :class:`~dpknn.releases.parquet.ParquetStatistics` do).
    """
    import pyarrow.parquet as pq

    schema = imp.schema
    k = int(validate_params(imp)["k"])
    groups = _stage_groups(schema)
    rows = np.array([pq.ParquetFile(f).metadata.num_rows for f in files], dtype=np.int64)
    offsets = np.r_[0, np.cumsum(rows)].astype(np.int64)
    seconds = {}
    t0 = time.perf_counter()
    for g in groups:
        (Path(staging) / g.folder).mkdir(exist_ok=True)
    futures = [client.submit(_stage, str(f), i, int(offsets[i]), schema, groups, str(staging), pure=False)
               for i, f in enumerate(files)]
    tables, stats = [ClassCounts.empty()] * len(groups), []
    for staged in completed_results(futures, progress, "stage partitions"):
        tables = [t.merged(counts) for t, (counts, _) in zip(tables, staged.groups)]
        stats.append(staged)
    del futures
    stats.sort(key=operator.attrgetter("number"))
    if schema.label is not None:
        _check_unique_labels(client, schema, stats, staging, progress)
    outside = {}
    for part in stats:
        for name, count in part.outside.items():
            outside[name] = outside.get(name, 0) + count
    log_outside_universes(outside, schema.imputed, logger)
    seconds["stage"] = time.perf_counter() - t0
    placed = [_place_group(client, imp, g, table, [part.groups[i][1] for part in stats], offsets, staging, buckets,
                           progress, seconds, labels)
              for i, (g, table) in enumerate(zip(groups, tables))]
    for part in stats:
        # The staged records are a copy of the microdata; only the donors' inboxes are needed now.
        (Path(staging) / _LABELS.format(part.number)).unlink(missing_ok=True)
        for g in groups:
            remove_tree(Path(staging) / g.folder / _STAGED.format(part.number))
            (Path(staging) / g.folder / _LABELS.format(part.number)).unlink(missing_ok=True)
    searches = [search for _, search in placed]
    universes = tuple(universe for universe, _ in placed)
    worst = max(universes, key=operator.attrgetter("l1"))
    fit = DistributedImputation(
        schema=schema, k=k, aggregate=imp.aggregate, output_dir=None,
        l1_=int(sum(u.l1 for u in universes)), l1_cases_=worst.l1_cases, n_records_=int(offsets[-1]),
        n_incomplete_=int(sum(part.n_incomplete for part in stats)),
        n_classes_=sum(s.n_classes for s in searches),
        n_donorless_classes_=sum(s.n_donorless_classes for s in searches),
        n_donorless_records_=sum(s.n_donorless_records for s in searches),
        max_donee_count_=max(s.max_donee for s in searches), l1_work_=sum(s.l1_work for s in searches),
        n_partitions_=len(files), n_buckets_=sum(s.n_buckets for s in searches), seconds_=seconds,
        groups_=universes, n_outside_universe_=outside)
    donors = tuple(PartitionDonors(groups=tuple(GroupDonors(folder=str(Path(staging) / g.folder),
                                                            slices=tuple(search.slices[i]), k=search.k_eff,
                                                            attributes=g.attributes, universe=g.universe)
                                                for g, search in zip(groups, searches)),
                                   aggregate=imp.aggregate, labels=labels)
                   for i in range(len(files)))
    return DonorPlacement(fit=fit, offsets=tuple(int(o) for o in offsets[:-1]), donors=donors)


def _place_group(client, imp, group, table, stats, offsets, staging, buckets, progress, seconds, labels):
    """Pass 2 and the L1 search of one universe's records (of the whole data without universes):
    its :class:`FolderUniverse` and :class:`DonorSearch`, with its error named as in memory."""
    schema = imp.schema
    folder = Path(staging) / group.folder
    n_rows = sum(s.rows for s in stats)
    if group.schema is not schema:
        imp = KNNImputer(group.schema, k=imp.k, aggregate=imp.aggregate, max_work=imp.max_work)
    if group.universe is not None and n_rows == 0:
        # No record: only an added incomplete record changes a donor set (its own), as in memory.
        cases = {"add_incomplete": L1Case("add_incomplete", 1), "add_complete": L1Case("add_complete", 0)}
        search = DonorSearch(cases=cases, k_eff=imp.k, slices=[[] for _ in range(offsets.size - 1)], gap_lower=None,
                             min_label=0, n_classes=0, n_incomplete=0, n_donorless_classes=0, n_donorless_records=0,
                             max_donee=0, l1_work=0, n_buckets=0)
        return FolderUniverse(group.attributes, group.universe, 1, cases, 0, 0), search
    where = "every record" if group.universe is None else f"universe {group.universe.to_public()}"
    times = {}
    try:
        search = _solve(client, imp, table, stats, offsets, folder, buckets, progress, times, labels, n_rows)
    except WorkLimitError as err:
        if not schema.has_universes:
            raise
        raise WorkLimitError(f"attributes {list(group.attributes)} ({where}): {err}", splits=err.splits) from None
    except ValueError as err:
        if not schema.has_universes:
            raise
        raise ValueError(f"attributes {list(group.attributes)} ({where}): {err}") from None
    for step, t in times.items():
        seconds[step] = seconds.get(step, 0.0) + t
    cases = search.cases
    if search.gap_lower is not None:
        gap = int(search.gap_lower)
        # The labels of every record (or their row positions), or of the universe's records alone.
        source = folder if group.universe is not None else None if schema.label is None else Path(staging)
        cases["add_complete"] = L1Case("add_complete", cases["add_complete"].value, cell=cases["add_complete"].cell,
                                       gap=(gap, _label_after(source, stats, gap, search.min_label)))
    l1 = int(max(c.value for c in cases.values()))
    return FolderUniverse(group.attributes, group.universe, l1, cases, n_rows, search.n_incomplete), search


def _label_after(folder, stats, gap, min_label):
    """The smallest label above ``gap`` (the smallest label if none is): from the sorted label
    files in ``folder``, or, with ``folder`` None, of labels that are the rows 0 .. n - 1."""
    if folder is None:
        n = sum(s.rows for s in stats)
        return gap + 1 if gap + 1 < n else min_label
    above = []
    for part in stats:
        if part.rows:
            labels = map_npy(Path(folder) / _LABELS.format(part.number))
            i = int(np.searchsorted(labels, gap, "right"))
            if i < labels.size:
                above.append(int(labels[i]))
    return min(above) if above else min_label


def _bucket_ranges(sizes, n_buckets):
    """Consecutive runs of classes holding about equal numbers of records: (first, stop) pairs."""
    total = int(sizes.sum())
    before = np.cumsum(sizes) - sizes
    bucket = np.minimum(before * n_buckets // max(total, 1), n_buckets - 1)
    starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
    return list(zip(starts.tolist(), np.r_[starts[1:], sizes.size].tolist()))


@dataclass
class DonorSearch:
    """CONFIDENTIAL: what pass 2 and the L1 search give :func:`place_donors`: the L1 cases,
    the effective k, per partition the (bucket, start, stop) slices of its donors, the lower
    label of the deepest addition's gap (None without one), and the fit's diagnostics."""

    cases: dict
    k_eff: int
    slices: list
    gap_lower: int | None
    min_label: int
    n_classes: int
    n_incomplete: int
    n_donorless_classes: int
    n_donorless_records: int
    max_donee: int
    l1_work: int
    n_buckets: int


def _solve(client, imp, table, stats, offsets, staging, buckets, progress, seconds, labels, n_rows):
    """Pass 2 and the L1 search of ``n_rows`` records: the class table in, a :class:`DonorSearch` out."""
    t0 = time.perf_counter()
    schema, k = imp.schema, imp.k
    n_complete = int(table.n_donors.sum())
    n_incomplete = int(table.n_inc.sum())
    if n_complete == 0:
        raise no_complete_records(schema, n_rows)
    short = k > n_complete
    k_eff = n_complete if short else k
    plan, balls, class_cells = _donor_plan(imp, table.keys, table.n_donors, table.n_inc, k_eff)
    seconds["plan"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    min_label = min((s.label_range[0] for s in stats if s.rows), default=0)
    task = BucketTask(staging=str(staging), n_staged=len(stats), k=k_eff, min_label=min_label, offsets=offsets,
                      n_values=len(schema.imputed), keep_labels=labels, labelled=schema.label is not None)
    ranges = _bucket_ranges(table.n_donors + table.n_inc, buckets or len(stats))
    solved = _solve_buckets(client, task, table, plan, ranges, progress)
    seconds["donors"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    cases, max_donee, gap_lower, l1_work = _l1_search(imp, table, stats, solved, balls, class_cells,
                                                      n_incomplete if short else None)
    seconds["l1"] = time.perf_counter() - t0

    # Where each partition's donors lie in each bucket's file: (bucket, start, stop).
    counts = np.array([r.per_partition for r in solved]).reshape(len(solved), offsets.size - 1)
    starts = np.cumsum(counts, axis=1) - counts
    slices = [[(b, int(starts[b, p]), int(starts[b, p] + counts[b, p])) for b in range(len(solved))
               if counts[b, p]] for p in range(offsets.size - 1)]
    n_donorless_classes, n_donorless_records = donorless(table.n_donors, table.n_inc)
    return DonorSearch(cases=cases, k_eff=k_eff, slices=slices, gap_lower=gap_lower, min_label=min_label,
                       n_classes=int(table.keys.size), n_incomplete=n_incomplete,
                       n_donorless_classes=n_donorless_classes, n_donorless_records=n_donorless_records,
                       max_donee=int(max_donee), l1_work=int(l1_work), n_buckets=len(ranges))


def _solve_buckets(client, task, table, plan, ranges, progress):
    """One task per bucket of consecutive classes; its :class:`SolvedBucket` results in order."""
    where = np.zeros(table.keys.size, dtype=np.int64)
    for b, (lo, hi) in enumerate(ranges):
        where[lo:hi] = b
    donor_bucket = where[plan.donor]
    owner_bucket = where[plan.owner]
    futures = []
    for b, (lo, hi) in enumerate(ranges):
        mine = donor_bucket == b
        foreign = np.unique(table.keys[plan.owner[mine & (owner_bucket != b)]])
        futures.append(client.submit(_solve_bucket, b, task, table.keys[lo:hi], table.n_donors[lo:hi],
                                     table.n_inc[lo:hi], plan.for_bucket(mine, table.keys), foreign, pure=False))
    return sorted(completed_results(futures, progress, "donors"), key=operator.attrgetter("number"))


def _l1_search(imp, table, stats, solved, balls, class_cells, short_incomplete):
    """The L1 cases from the buckets' deletions and label arcs and the exact search over the
    balls; ``short_incomplete`` is the number of incomplete records when there are fewer than k
    complete ones (every added complete record then joins every donor set), else None.
    Returns the cases, the largest donee count, the deepest gap's lower label and the work."""
    schema = imp.schema
    cases = {"add_incomplete": L1Case("add_incomplete", 1)}
    first = [s.first_incomplete for s in stats if s.first_incomplete is not None]
    if not first:
        cases["add_complete"] = L1Case("add_complete", 0)
        return cases, 0, None, 0
    gid, label = min(first)
    cases["delete_incomplete"] = L1Case("delete_incomplete", 1, row=gid, label=label)
    deletes = [r.delete for r in solved if r.delete is not None]
    max_donee = max(d[0] for d in deletes)
    _, gid, label = min((d for d in deletes if d[0] == max_donee), key=lambda d: d[1])
    cases["delete_complete"] = L1Case("delete_complete", max_donee, row=gid, label=label)
    arc_keys = np.concatenate([r.arc_keys for r in solved])
    stab = np.concatenate([r.stab for r in solved])
    gap_labels = np.concatenate([r.gap_label for r in solved])
    has_arc = np.flatnonzero(stab > 0)
    arc_cells = class_cells[np.searchsorted(table.keys, arc_keys[has_arc])]
    value, cell, point, l1_work = deepest_addition(schema, balls, arc_cells, stab[has_arc], max_donee,
                                                   imp.max_work)
    gap_lower = int(gap_labels[has_arc[point]]) if point >= 0 else None
    cases["add_complete"] = L1Case("add_complete", int(value), cell=decode_cell(schema, cell))
    if short_incomplete is not None:
        cases["add_complete"] = L1Case("add_complete", short_incomplete)
        gap_lower = None
    return cases, max_donee, gap_lower, l1_work
