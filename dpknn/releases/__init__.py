"""Private counts, proportions, means and variances on k-NN-imputed data.

Queries are validated records (:mod:`~dpknn.releases.query`) that know their cost and theorem;
:func:`release` makes one on any :class:`Statistics` (in memory, a Parquet folder's, cached);
:class:`PrivateImputation` binds a fitted imputation, an accountant and a noise source to that path.
Query files and the sensitivity bounds (one function per theorem) are here too.
"""

from dpknn.releases.queries import NOISES, PrivateImputation, estimate_size
from dpknn.releases.query import Count, Mean, Proportion, Query, SmoothNoise, Variance
from dpknn.releases.queryfile import ReleaseSet, ask, read_queries, release_queries
from dpknn.releases.release import release
from dpknn.releases.sensitivity import (
    LN2,
    check_bounds,
    count_global,
    count_smooth,
    mean_global,
    mean_smooth,
    variance_global,
    variance_smooth,
)
from dpknn.releases.statistics import CachedStatistics, InMemoryStatistics, Statistics
from dpknn.releases.summation import Moments, exact_moments

__all__ = [
    "LN2",
    "NOISES",
    "CachedStatistics",
    "Count",
    "InMemoryStatistics",
    "Mean",
    "Moments",
    "PrivateImputation",
    "Proportion",
    "Query",
    "ReleaseSet",
    "SmoothNoise",
    "Statistics",
    "Variance",
    "ask",
    "check_bounds",
    "count_global",
    "count_smooth",
    "estimate_size",
    "exact_moments",
    "mean_global",
    "mean_smooth",
    "read_queries",
    "release",
    "release_queries",
    "variance_global",
    "variance_smooth",
]
