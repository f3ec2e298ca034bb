"""Pass 1 of the out-of-core imputation (:mod:`dpknn.impute._distributed`): stage every partition.

Each partition is encoded and checked against the whole schema, then each universe's records are written sorted by


class key (:func:`stage_partition`); the client merges the partitions' class counts and checks that labels do not
repeat across partitions (:func:`check_unique_labels`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpknn._core import _grouping
from dpknn.exceptions import DomainError
from dpknn.impute._files import LABELS, STAGED, compact, index_dtype, map_npy, write_columns
from dpknn.schema._attributes import Categorical, Schema, observed_outside_universes
from dpknn.utils._cluster import completed_results

__all__ = ["ClassCounts", "StageGroup", "StagedFile", "StagedPartition", "check_unique_labels", "label_after",
           "stage_groups", "stage_partition"]


# Labels sampled per partition to cut the label range for the duplicate check.
_LABEL_SAMPLE = 64
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


def stage_groups(schema):
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


def stage_partition(path, number, offset, schema, groups, staging):
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
    labels = None if schema.label is None else enc.labels   # None: the rows' global positions
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
        np.save(Path(staging) / LABELS.format(number), sorted_labels)
        sample = sorted_labels[np.linspace(0, n - 1, min(n, _LABEL_SAMPLE)).astype(np.int64)]
    return StagedFile(number, n, int(enc.incomplete.sum()), observed_outside_universes(df, schema.imputed),
                      label_range, sample, tuple(staged))


def _stage_group(df, rows, enc, offset, labels, group, folder, number, schema):
    """Write the records ``rows`` of one partition (encoded by the group's schema as ``enc``) sorted
    by class key; return their class counts and :class:`StagedPartition`. Rows stay positions in
    the whole partition, so a donor reaches its donee whatever the universe."""
    n = rows.size
    gid = offset + rows
    # Without a label column the labels are the rows' global positions: no second gather.
    glabels = gid if schema.label is None else labels[rows]
    keys = _grouping.pack_cells(np.ascontiguousarray(enc.cells), group.schema.n_codes)
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    inc = enc.incomplete[order]
    src = rows[order]   # each staged record's row in the partition
    # Rows within the partition and values in the narrowest exact dtype: staging is the run's I/O.
    staged = {"key": sk, "row": src.astype(index_dtype(len(df))), "inc": inc.view(np.int8)}
    if schema.label is not None:
        staged["label"] = glabels[order]
    for j, name in enumerate(group.attributes):
        staged[f"v{j}"] = compact(_observed_values(schema.attribute(name), df)[src])
    write_columns(folder / STAGED.format(number), staged)
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]]) if n else np.zeros(0, dtype=np.int64)
    size = np.diff(np.r_[starts, n])
    n_inc = np.add.reduceat(inc.astype(np.int64), starts) if n else np.zeros(0, dtype=np.int64)
    counts = ClassCounts(sk[starts], (size - n_inc).astype(np.int64), n_inc)
    first = np.flatnonzero(enc.incomplete)
    first_incomplete = None if first.size == 0 else (int(gid[first[0]]), int(glabels[first[0]]))
    if not n:
        return counts, StagedPartition(number, 0, first_incomplete)
    if group.universe is not None:
        # A universe's labels are not every record's: label_after reads them from here.
        sorted_labels = np.sort(glabels)
        np.save(folder / LABELS.format(number), sorted_labels)
        return counts, StagedPartition(number, n, first_incomplete, (int(sorted_labels[0]), int(sorted_labels[-1])))
    return counts, StagedPartition(number, n, first_incomplete, (int(glabels.min()), int(glabels.max())))


def _duplicate_labels(staging, numbers, low, high):
    """Labels in [low, high) held by more than one record, from the sorted label files."""
    pieces = []
    for number in numbers:
        labels = map_npy(Path(staging) / LABELS.format(number))
        a, b = np.searchsorted(labels, [low, high])
        pieces.append(np.asarray(labels[a:b]))
    merged = np.sort(np.concatenate(pieces)) if pieces else np.zeros(0, dtype=np.int64)
    return merged[1:][merged[1:] == merged[:-1]][:5].tolist()


def check_unique_labels(client, schema, stats, staging, progress):
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


def label_after(folder, stats, gap, min_label):
    """The smallest label above ``gap`` (the smallest label if none is): from the sorted label
    files in ``folder``, or, with ``folder`` None, of labels that are the rows 0 .. n - 1."""
    if folder is None:
        n = sum(s.rows for s in stats)
        return gap + 1 if gap + 1 < n else min_label
    above = []
    for part in stats:
        if part.rows:
            labels = map_npy(Path(folder) / LABELS.format(part.number))
            i = int(np.searchsorted(labels, gap, "right"))
            if i < labels.size:
                above.append(int(labels[i]))
    return min(above) if above else min_label
