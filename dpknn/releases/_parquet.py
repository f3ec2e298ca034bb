"""CONFIDENTIAL: the counts and exact sums of a folder of Parquet partitions, on Dask (the out-of-core
:class:`~dpknn.releases._statistics.Statistics` of a release).

The imputation layer finds the donors (:func:`dpknn.impute._distributed.place_donors`) or writes the imputed
partitions (:func:`~dpknn.impute._distributed.impute_parquet`); this module asks each partition for its count or
sum, filling its missing values from its donors in the task, and adds the totals. It sits with the releases,
above the imputation it reads (issue 49: the imputation no longer imports the releases).
"""

import contextlib
import functools
import operator
import tempfile
from pathlib import Path

import pandas as pd

from dpknn.exceptions import DEFAULT_MAX_WORK
from dpknn.impute._distributed import folder_imputer, impute_parquet, place_donors
from dpknn.releases._statistics import Statistics, summand
from dpknn.releases._summation import exact_moments
from dpknn.schema._attributes import blank_outside_universes
from dpknn.schema._conditions import conditions_mask
from dpknn.utils._cluster import dask_client
from dpknn.utils._io import remove_tree

__all__ = ["ParquetStatistics"]


def _partition_statistic(path, donors, schema, where, universe, observed_only, column, bounds):
    """CONFIDENTIAL: the count, or the exact moments of ``column``, of one partition for
    :class:`ParquetStatistics`; ``donors`` (a :class:`PartitionDonors`) fills the
    imputed attributes first, None reads ``path`` as it is (with ``observed_only``: the records
    whose values of the query's attributes are observed, as :class:`~dpknn.releases.InMemoryStatistics`)."""
    names = {*where, *universe}
    if column is not None:
        names.add(column)
    if donors is None:
        # Outside its universe an attribute is not applicable in the original data too, as in memory.
        df = pd.read_parquet(path, columns=sorted(names | set(schema.universe_names)))
        df = blank_outside_universes(df, schema.imputed)
    else:
        df = donors.fill(path, schema, columns=names)
    mask = conditions_mask(df, len(df), where, universe)
    if column is None:
        return int(mask.sum())
    values = df[column].to_numpy()
    if observed_only:
        mask &= df[column].notna().to_numpy()
    return exact_moments(summand(values[mask], bounds))


class ParquetStatistics(Statistics):
    """CONFIDENTIAL: the counts and exact sums of a folder of Parquet partitions, on Dask.

    The :class:`~dpknn.releases.Statistics` of :class:`~dpknn.releases.PrivateImputation` and
    :func:`dpknn.releases.release` for data too large for memory: the donors are found by passes 1
    and 2 of :func:`impute_parquet` (:func:`place_donors`), and every count and sum is computed by
    one task per partition that fills the partition's missing values from its donors and keeps only
    the total; only those totals reach the client, and no imputed partition is written unless
    ``imputed_dir`` asks for it. Sums are exact (:func:`dpknn.releases.exact_moments` per partition,
    added as fractions), so every release equals the in-memory one for the same seed. Each count or
    sum asked is one pass over the folder: wrap it in :class:`~dpknn.releases.CachedStatistics` (as
    ``dpknn release`` does) so that a statistic asked twice (the count of a mean that was also
    released as a count) is computed once.

    Use it as a context manager (or call :meth:`close`; a ``PrivateImputation.from_statistics`` of
    it closes it too): the donors' values are confidential microdata and are removed on exit (the
    imputed partitions too, unless ``imputed_dir`` was given), and a LocalCluster started here is
    closed.

    Parameters
    ----------
    input_dir : str or Path
        The original data (never an output of ``dpknn impute``).
    schema : Schema
    k, max_work
        As for :class:`~dpknn.impute.KNNImputer`.
    client : dask.distributed.Client or None
        None: a LocalCluster with one single-threaded worker per core.
    imputed_dir : str or Path or None
        If given (must not exist), the imputed partitions are written there by
        :func:`impute_parquet`, kept, and read by the releases; None: nothing imputed is
        written but the donors' values (in a temporary folder beside ``input_dir``: the staged
        records while the donors are found, then about 9·k bytes per imputed census record;
        removed by :meth:`close`).
    progress : bool, default False

    Attributes
    ----------
    fit : DistributedImputation
        CONFIDENTIAL: L1(D) and the curator diagnostics.
    input_files : list of str
    imputed_files : list of str or None
        The imputed partitions if ``imputed_dir`` was given.

    Examples
    --------
    ``with ParquetStatistics(folder, schema, k=1) as stats:`` then
    ``PrivateImputation.from_statistics(CachedStatistics(stats), accountant=BudgetAccountant(1.0))``
    and its ``count(epsilon=1.0)``, ``mean(...)``.
    """

    def __init__(self, input_dir, schema, *, k=1, client=None, imputed_dir=None, max_work=DEFAULT_MAX_WORK,
                 progress=False):
        imp, files = folder_imputer(input_dir, schema, k=k, max_work=max_work)   # before a cluster starts
        self.schema = imp.schema
        self._stack = contextlib.ExitStack()
        try:
            self.imputed_files, self._donors = None, [None] * len(files)
            if imputed_dir is None:
                # Registered before the cluster, so removed after it closes: an interrupted run's
                # workers may still be writing in there until then.
                tmp = Path(tempfile.mkdtemp(prefix=".dpknn-imputed-", dir=Path(input_dir).parent))
                self._stack.callback(remove_tree, tmp)
            self.client = self._stack.enter_context(dask_client(client))
            if imputed_dir is None:
                placed = place_donors(self.client, imp, files, tmp, progress=progress)
                self.fit, self._donors = placed.fit, list(placed.donors)   # as from_placement, owning tmp
            else:
                self.fit = impute_parquet(input_dir, imputed_dir, schema, k=k, max_work=max_work, client=self.client,
                                          progress=progress)
                root = Path(input_dir)
                self.imputed_files = [str(Path(imputed_dir) / f.relative_to(root)) for f in files]
        except BaseException:
            self._stack.close()
            raise
        self.input_files = [str(f) for f in files]

    @classmethod
    def from_placement(cls, placement, input_files, *, client):
        """The statistics of ``input_files`` (the partitions, in order) whose donors ``placement`` placed
        (:func:`~dpknn.impute._distributed.place_donors`), computed on ``client``. Nothing runs here.

        The caller keeps the client and the placement's staging folder (the donors' values: confidential
        microdata), and removes that folder after closing these statistics, which own nothing.

        Parameters
        ----------
        placement : DonorPlacement
        input_files : sequence of str or Path
            The partitions ``placement`` was found on, in the same order.
        client : dask.distributed.Client

        Returns
        -------
        ParquetStatistics
        """
        if len(input_files) != len(placement.donors):
            raise ValueError(f"placement holds the donors of {len(placement.donors)} partitions, got "
                             f"{len(input_files)} input files.")
        self = cls.__new__(cls)
        self.schema, self.fit, self.client = placement.fit.schema, placement.fit, client
        self._stack = contextlib.ExitStack()
        self.imputed_files, self._donors = None, list(placement.donors)
        self.input_files = [str(f) for f in input_files]
        return self

    def close(self):
        """Remove the donors' values (or temporary imputed partitions) and close a cluster started here."""
        self._stack.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _statistic(self, where, universe, observed_only, column=None, bounds=None):
        universe = {} if universe is None else universe.where
        if observed_only:
            files, donors = self.input_files, [None] * len(self.input_files)
        elif self.imputed_files is not None:
            files, donors = self.imputed_files, [None] * len(self.imputed_files)
        else:
            files, donors = self.input_files, self._donors
        futures = self.client.map(_partition_statistic, files, donors, schema=self.schema, where=where,
                                  universe=universe, observed_only=observed_only, column=column, bounds=bounds,
                                  pure=False)
        return functools.reduce(operator.add, self.client.gather(futures))

    def count(self, where, *, observed_only=False, universe=None):
        return self._statistic(where, universe, observed_only)

    def moments(self, column, where, bounds, *, observed_only=False, universe=None):
        return self._statistic(where, universe, observed_only, column, tuple(bounds))
