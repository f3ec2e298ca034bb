"""Pass 2 of the out-of-core imputation (:mod:`dpknn.impute._distributed`): donors, one bucket of consecutive
classes at a time, and the exact L1 search (:func:`solve_donors`).

The client plans the donor classes of every class without k donors of its own (the in-memory imputer's code);
each bucket task reads its classes from every staging file, walks the donors of each incomplete record by the
fixed order with the Cython kernel, counts donees, finds the label arcs of the L1 search and sends every donor
to the partition of its donee.
"""

from __future__ import annotations

import operator
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpknn._core import _donors, _grouping
from dpknn.impute._files import INBOX, STAGED, concat_columns, index_dtype, read_columns, staged_rows, write_columns
from dpknn.impute._knn import L1Case
from dpknn.impute._scheme import (
    csr_positions,
    decode_cell,
    deepest_addition,
    deficient_classes,
    donorless,
    l1_balls,
    no_complete_records,
    ordered_donor_classes,
)
from dpknn.utils._cluster import completed_results

__all__ = ["DonorSearch", "needed_runs", "solve_donors"]


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


def needed_runs(key, needed, max_gap=1 << 16):
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
        cols = read_columns(Path(task.staging) / STAGED.format(p), stored)
        key = cols["key"].mapped()
        for run in needed_runs(key, needed_keys):
            own_parts.append(staged_rows(cols, run, int(task.offsets[p])))
        if foreign.size:
            s = np.searchsorted(key, foreign, "left")
            idx = csr_positions(s, np.searchsorted(key, foreign, "right") - s)
            idx = idx[cols["inc"].mapped()[idx] != 0]
            far_parts.append(staged_rows(cols, idx, int(task.offsets[p])))
        del key
    empty = {n: np.zeros(0, dtype=np.int8 if n == "inc" else np.int64) for n in names}
    own = concat_columns(own_parts, names) if own_parts else empty
    keep = np.isin(own["key"], needed_keys)   # rows of unneeded classes between needed ones
    own = {n: c[keep] for n, c in own.items()}
    far = concat_columns(far_parts, names) if far_parts else {n: own[n][:0] for n in names}
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
    inbox = {"row": row[srt].astype(index_dtype(np.diff(offsets).max(initial=1))),
             "slot": slot[srt].astype(index_dtype(k))}
    if task.keep_labels:
        inbox["label"] = own["label"][rows[srt]]
    for j in range(task.n_values):
        inbox[f"v{j}"] = own[f"v{j}"][rows[srt]]
    write_columns(Path(task.staging) / INBOX.format(number), inbox)
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


def solve_donors(client, imp, table, stats, offsets, staging, buckets, progress, seconds, labels, n_rows):
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
