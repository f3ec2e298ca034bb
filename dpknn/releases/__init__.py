"""Private counts, proportions, means and variances on k-NN-imputed data.

Queries (:class:`Count`, :class:`Proportion`, :class:`Mean`, :class:`Variance`) are validated records that
know their cost and theorem; :func:`release` makes one on any :class:`Statistics` (:class:`InMemoryStatistics`,
a Parquet folder's :class:`ParquetStatistics`, :class:`CachedStatistics`); :class:`PrivateImputation` binds a
fitted imputation, an accountant and a noise source to that path. Query files (:func:`read_queries`,
:func:`release_queries`) and the curator's report (:func:`curator_report`, CONFIDENTIAL) are here too; the
sensitivity bounds, one function per theorem, are in ``dpknn/releases/_sensitivity.py``.
"""

import sys

from dpknn.utils._lazy import ProtectedPackage, lazy_exports

__all__ = [
    "CachedStatistics",
    "Count",
    "CuratorReport",
    "InMemoryStatistics",
    "Mean",
    "ParquetStatistics",
    "PrivateImputation",
    "Proportion",
    "Statistics",
    "Variance",
    "curator_report",
    "estimate_size",
    "read_queries",
    "release",
    "release_queries",
]

# Each public name loads its module on first use (dpknn.utils._lazy): importing the package stays cheap.
# Names that left the public list still load, with a DeprecationWarning.
__getattr__, __dir__ = lazy_exports(__name__, {
    "release": "dpknn.releases._release",
    "ParquetStatistics": "dpknn.releases._parquet",
    "CuratorReport": "dpknn.releases._report",
    "curator_report": "dpknn.releases._report",
    "PrivateImputation": "dpknn.releases._queries",
    "estimate_size": "dpknn.releases._queries",
    "Count": "dpknn.releases._query",
    "Mean": "dpknn.releases._query",
    "Proportion": "dpknn.releases._query",
    "Variance": "dpknn.releases._query",
    "read_queries": "dpknn.releases._queryfile",
    "release_queries": "dpknn.releases._queryfile",
    "CachedStatistics": "dpknn.releases._statistics",
    "InMemoryStatistics": "dpknn.releases._statistics",
    "Statistics": "dpknn.releases._statistics",
}, internal={
    "NOISES": "dpknn.releases._queries",
    "Query": "dpknn.releases._query",
    "SmoothNoise": "dpknn.releases._query",
    "ReleaseSet": "dpknn.releases._queryfile",
    "ask": "dpknn.releases._queryfile",
    "AttributeDistribution": "dpknn.releases._report",
    "DONORLESS_SHARE": "dpknn.releases._report",
    "PlannedRelease": "dpknn.releases._report",
    "REPORT_FILES": "dpknn.releases._report",
    "UniverseSummary": "dpknn.releases._report",
    "LN2": "dpknn.releases._sensitivity",
    "check_bounds": "dpknn.releases._sensitivity",
    "count_global": "dpknn.releases._sensitivity",
    "count_smooth": "dpknn.releases._sensitivity",
    "mean_global": "dpknn.releases._sensitivity",
    "mean_smooth": "dpknn.releases._sensitivity",
    "variance_global": "dpknn.releases._sensitivity",
    "variance_smooth": "dpknn.releases._sensitivity",
    "Moments": "dpknn.releases._summation",
    "exact_moments": "dpknn.releases._summation",
})

# `release` is a function here and the old path of its module (dpknn.releases._release): importing that path must not
# rebind the name to the module (dpknn.utils._lazy.ProtectedPackage).
sys.modules[__name__].__class__ = ProtectedPackage
