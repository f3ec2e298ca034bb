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
   keep only the counts and exact sums a release needs (:class:`~dpknn.releases._parquet.ParquetStatistics`,
   one such pass per statistic; nothing imputed is written).

With universes (``docs/imputation.md``, "Universes"), pass 1 still reads each partition once, checks
every record against the whole schema and stages each universe's records apart (each keeping its
row in the partition, and its label or whole-data row), encoded by the universe's restricted schema;
pass 2 and the L1 search run once per universe on its files; pass 3 fills each universe's records
from its donors and leaves each attribute missing outside its universe. L1(D) is the sum over the
universes, each as in memory.

The passes live in modules of their own, behind this one: ``_stage`` (pass 1), ``_donor_pass`` (pass 2 and the
L1 search), ``_fill`` (pass 3) and ``_files`` (the staging files' columns); this module runs them
(:func:`place_donors`, :func:`impute_parquet`) and holds their results.

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
import logging
import math
import operator
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dpknn.exceptions import WorkLimitError
from dpknn.impute._donor_pass import DonorSearch, solve_donors
from dpknn.impute._files import LABELS, STAGED, compact
from dpknn.impute._fill import GroupDonors, PartitionDonors, write_partition
from dpknn.impute._knn import DEFAULT_MAX_WORK, MAX_KEY, KNNImputer, L1Case
from dpknn.impute._stage import ClassCounts, check_unique_labels, label_after, stage_groups, stage_partition
from dpknn.schema._attributes import Schema, log_outside_universes
from dpknn.schema._flags import check_path_not_imputed
from dpknn.utils._cluster import completed_results, dask_client, parquet_partitions
from dpknn.utils._io import check_not_inside, remove_tree
from dpknn.utils._validation import check_positive_int, validate_params

__all__ = ["DistributedImputation", "DonorPlacement", "FolderUniverse", "GroupDonors", "PartitionDonors", "compact",
           "folder_imputer", "impute_parquet", "parquet_partitions", "place_donors"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FolderUniverse:
    """CONFIDENTIAL: the imputation of the attributes that share one universe, in a folder (as
    :class:`~dpknn.impute._knn.UniverseFit` in memory, less the per-record arrays a folder does not hold).

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
        were used without being written (:class:`~dpknn.releases._parquet.ParquetStatistics`).
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


def impute_parquet(input_dir, output_dir, schema, *, k=1, aggregate="auto", max_work=DEFAULT_MAX_WORK,
                   client=None, buckets=None, donors_dir=None, staging_dir=None, progress=False):
    """Impute a folder of Parquet partitions exactly as :class:`~dpknn.impute.KNNImputer`
    would impute their concatenation, on Dask, with memory per worker bounded by a partition.

    The partitions, in the natural order of their paths (:func:`parquet_partitions`), form the
    data set; without a label column, labels are row positions in it. The output folder gets
    one file per input file, same relative path, same rows in the same order with the same
    index and all columns, A filled from the donors, then the imputation flag columns of
    :meth:`KNNImputer.transform` (:mod:`dpknn.schema._flags`); it is written under a temporary name and
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
    k : int, default 1
        Number of donors per incomplete record, as for :class:`KNNImputer`.
    aggregate : {"auto", "mean", "median"}, default "auto"
        How k > 1 donor values are combined for numeric attributes, as for :class:`KNNImputer`.
    max_work : int, default DEFAULT_MAX_WORK
        Work limit of the exact L1 search, as for :class:`KNNImputer`.
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
            futures = [dc.submit(write_partition, str(f), f.relative_to(root), placed.offsets[i], schema,
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
    for group in stage_groups(schema):
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
    by the caller (:func:`impute_parquet` and :class:`~dpknn.releases._parquet.ParquetStatistics` do).
    """
    import pyarrow.parquet as pq

    schema = imp.schema
    k = int(validate_params(imp)["k"])
    groups = stage_groups(schema)
    rows = np.array([pq.ParquetFile(f).metadata.num_rows for f in files], dtype=np.int64)
    offsets = np.r_[0, np.cumsum(rows)].astype(np.int64)
    seconds = {}
    t0 = time.perf_counter()
    for g in groups:
        (Path(staging) / g.folder).mkdir(exist_ok=True)
    futures = [client.submit(stage_partition, str(f), i, int(offsets[i]), schema, groups, str(staging), pure=False)
               for i, f in enumerate(files)]
    tables, stats = [ClassCounts.empty()] * len(groups), []
    for staged in completed_results(futures, progress, "stage partitions"):
        tables = [t.merged(counts) for t, (counts, _) in zip(tables, staged.groups)]
        stats.append(staged)
    del futures
    stats.sort(key=operator.attrgetter("number"))
    if schema.label is not None:
        check_unique_labels(client, schema, stats, staging, progress)
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
        (Path(staging) / LABELS.format(part.number)).unlink(missing_ok=True)
        for g in groups:
            remove_tree(Path(staging) / g.folder / STAGED.format(part.number))
            (Path(staging) / g.folder / LABELS.format(part.number)).unlink(missing_ok=True)
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
        search = solve_donors(client, imp, table, stats, offsets, folder, buckets, progress, times, labels, n_rows)
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
                                       gap=(gap, label_after(source, stats, gap, search.min_label)))
    l1 = int(max(c.value for c in cases.values()))
    return FolderUniverse(group.attributes, group.universe, l1, cases, n_rows, search.n_incomplete), search
