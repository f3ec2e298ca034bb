"""The statistics a release reads: counts and clamped exact sums by condition (CONFIDENTIAL).

A release of :mod:`dpknn.releases._release` reads the data through two numbers only: the count of
the records satisfying a condition, and the exact moments (n, Σ y, Σ y²) of an attribute clamped to
public bounds over those records; with the L1(D) of the universes it reads, that is all its
mechanism needs. :class:`Statistics` is that interface. Its implementations compute the same
numbers on different storage, so a release is the same for the same seed whichever is used:

- :class:`InMemoryStatistics`: a DataFrame and its fitted :class:`~dpknn.impute.KNNImputer`;
- :class:`~dpknn.releases._parquet.ParquetStatistics`: a folder of Parquet partitions on Dask;
- :class:`CachedStatistics`: any of them, each statistic computed once (a count asked again
  for a mean, or the curator's report rehearsing a release many times).

Every number here is data: it stays with the curator. Only a mechanism's release is published.
"""

from __future__ import annotations

import abc
import pickle

import numpy as np
import pandas as pd

from dpknn.releases._summation import exact_moments
from dpknn.schema._attributes import blank_outside_universes
from dpknn.schema._conditions import conditions_mask
from dpknn.schema._flags import check_not_imputed

__all__ = ["CachedStatistics", "InMemoryStatistics", "Statistics", "summand", "universe_of"]


def summand(values, bounds):
    """The terms a mean or variance adds up: ``values`` clamped to ``bounds`` (also used by
    :mod:`dpknn.impute._distributed`, partition by partition)."""
    return np.clip(np.asarray(values, dtype=np.float64), bounds[0], bounds[1])


def _values(column):
    """A column's values as an array: numbers (nullable integers too) as float64 with NaN for a gap, so that a
    condition on a gap is false rather than an error (pandas < 2.2 gives pd.NA in an object array)."""
    if pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(column.dtype):
        return column.to_numpy(dtype=np.float64, na_value=np.nan)
    return column.to_numpy()


def universe_of(schema, column):
    """The universe of ``column`` (None: every record); a mean or variance is over it."""
    return schema.attribute(column).universe if column in schema.imputed_names else None


class Statistics(abc.ABC):
    """CONFIDENTIAL: counts and clamped sums of k-NN-imputed data, by condition.

    Attributes
    ----------
    schema : Schema
        The public domains; ``schema.imputed`` is the imputed attribute set A.
    fit : KNNImputer or DistributedImputation
        The fitted imputation: its ``l1_for`` gives the L1(D) a smooth release pays for.
    """

    schema = None
    fit = None

    def l1_for(self, columns):
        """CONFIDENTIAL: the L1(D) of the universes of the imputed attributes among ``columns``."""
        return self.fit.l1_for(columns)

    @property
    def n_incomplete(self):
        """CONFIDENTIAL: number of records with a value to impute."""
        return int(self.fit.n_incomplete_)

    @abc.abstractmethod
    def count(self, where, *, observed_only=False, universe=None):
        """Number of records satisfying the checked conditions ``where`` and, if given, ``universe`` (a
        :class:`~dpknn.schema.Universe`): of the imputed data, or with ``observed_only`` of the original
        data, where a condition on a missing value never holds (the query's available cases)."""

    @abc.abstractmethod
    def moments(self, column, where, bounds, *, observed_only=False, universe=None):
        """Exact :class:`~dpknn.releases.Moments` of ``column`` clamped to ``bounds`` over the records of
        :meth:`count` (with ``observed_only``, those of them where ``column`` is observed too); exact, so
        that a smooth release is centred on the query's true value."""

    def close(self):
        """Release what the statistics hold (files, a cluster); nothing for data in memory."""
        return None


class InMemoryStatistics(Statistics):
    """Counts and sums of a DataFrame imputed by a fitted :class:`~dpknn.impute.KNNImputer`.

    Outside its universe an attribute is not applicable, in the original data as in the imputed
    (:func:`~dpknn.schema.blank_outside_universes`).

    Parameters
    ----------
    fit : KNNImputer
        Fitted on ``data``.
    data : pandas.DataFrame
        The original data (not modified).
    imputed : pandas.DataFrame or None
        ``fit.transform(data)`` if already computed; None computes it (which refuses data other than
        the data ``fit`` was fitted on).
    """

    def __init__(self, fit, data, imputed=None):
        check_not_imputed(data, "df")
        self.fit = fit
        self.schema = fit.schema
        self.imputed = fit.transform(data) if imputed is None else imputed
        names = list(self.schema.known_names + self.schema.imputed_names)
        self._imputed_cols = {c: _values(self.imputed[c]) for c in names}
        observed = blank_outside_universes(data[names], self.schema.imputed)
        self._observed_cols = {c: _values(observed[c]) for c in names}
        self._observed_present = {c: observed[c].notna().to_numpy() for c in self.schema.imputed_names}

    @property
    def n_incomplete(self):
        return int(self.fit.incomplete_index_.size)

    def mask(self, where, *, observed_only=False, universe=None, column=None):
        """Boolean mask of the records of :meth:`count` (with ``column``, of :meth:`moments`)."""
        cols = self._observed_cols if observed_only else self._imputed_cols
        mask = conditions_mask(cols, len(self.imputed), where, {} if universe is None else universe.where)
        if observed_only and column in self._observed_present:
            mask &= self._observed_present[column]
        return mask

    def values(self, column, where, bounds, *, observed_only=False, universe=None):
        """The values of ``column`` clamped to ``bounds`` over the records of :meth:`moments`."""
        cols = self._observed_cols if observed_only else self._imputed_cols
        return summand(cols[column][self.mask(where, observed_only=observed_only, universe=universe, column=column)],
                       bounds)

    def count(self, where, *, observed_only=False, universe=None):
        return int(self.mask(where, observed_only=observed_only, universe=universe).sum())

    def moments(self, column, where, bounds, *, observed_only=False, universe=None):
        return exact_moments(self.values(column, where, bounds, observed_only=observed_only, universe=universe))


class CachedStatistics(Statistics):
    """``inner``'s statistics, each computed once per distinct question.

    Parameters
    ----------
    inner : Statistics
    """

    def __init__(self, inner):
        if not isinstance(inner, Statistics):
            raise TypeError(f"inner must be a Statistics, got {type(inner).__name__}.")
        self.inner = inner
        self.schema = inner.schema
        self.fit = inner.fit
        self._cache = {}

    @property
    def n_incomplete(self):
        return self.inner.n_incomplete

    @property
    def imputed(self):
        """The imputed DataFrame of in-memory statistics (CONFIDENTIAL microdata)."""
        return self.inner.imputed

    def l1_for(self, columns):
        return self.inner.l1_for(columns)

    def _cached(self, name, *args, **kwargs):
        universe = kwargs.get("universe")
        key = pickle.dumps((name, [sorted(a.items()) if isinstance(a, dict) else a for a in args],
                            kwargs.get("observed_only", False), None if universe is None else universe.to_public()))
        if key not in self._cache:
            self._cache[key] = getattr(self.inner, name)(*args, **kwargs)
        return self._cache[key]

    def count(self, where, *, observed_only=False, universe=None):
        return self._cached("count", where, observed_only=observed_only, universe=universe)

    def moments(self, column, where, bounds, *, observed_only=False, universe=None):
        return self._cached("moments", column, where, tuple(bounds), observed_only=observed_only, universe=universe)

    def values(self, column, where, bounds, *, observed_only=False, universe=None):
        """As :meth:`InMemoryStatistics.values` (in-memory statistics only)."""
        return self._cached("values", column, where, tuple(bounds), observed_only=observed_only, universe=universe)

    def close(self):
        self.inner.close()
