"""Private counts, proportions, means and variances on k-NN-imputed data.

Queries are validated records (:mod:`~dpknn.releases.query`) that know their cost and theorem;
:func:`release` makes one on any :class:`Statistics` (in memory, a Parquet folder's, cached);
:class:`PrivateImputation` binds a fitted imputation, an accountant and a noise source to that path.
Query files, the sensitivity bounds (one function per theorem) and the curator's report
(:mod:`~dpknn.releases.report`, CONFIDENTIAL) are here too.
"""

# `release` names both a submodule and its function: importing the submodule would rebind the package's
# attribute to the module, so the function is bound here, eagerly, after it.
from dpknn.releases.release import release
from dpknn.utils.lazy import lazy_exports

__all__ = [
    "DONORLESS_SHARE",
    "LN2",
    "NOISES",
    "REPORT_FILES",
    "AttributeDistribution",
    "CachedStatistics",
    "Count",
    "CuratorReport",
    "InMemoryStatistics",
    "Mean",
    "Moments",
    "ParquetStatistics",
    "PlannedRelease",
    "PrivateImputation",
    "Proportion",
    "Query",
    "ReleaseSet",
    "SmoothNoise",
    "Statistics",
    "UniverseSummary",
    "Variance",
    "ask",
    "check_bounds",
    "count_global",
    "count_smooth",
    "curator_report",
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

# Each public name loads its module on first use (dpknn.utils.lazy): importing the package stays cheap.
__getattr__, __dir__ = lazy_exports(__name__, {
    "ParquetStatistics": "dpknn.releases.parquet",
    "DONORLESS_SHARE": "dpknn.releases.report",
    "REPORT_FILES": "dpknn.releases.report",
    "AttributeDistribution": "dpknn.releases.report",
    "CuratorReport": "dpknn.releases.report",
    "PlannedRelease": "dpknn.releases.report",
    "UniverseSummary": "dpknn.releases.report",
    "curator_report": "dpknn.releases.report",
    "NOISES": "dpknn.releases.queries",
    "PrivateImputation": "dpknn.releases.queries",
    "estimate_size": "dpknn.releases.queries",
    "Count": "dpknn.releases.query",
    "Mean": "dpknn.releases.query",
    "Proportion": "dpknn.releases.query",
    "Query": "dpknn.releases.query",
    "SmoothNoise": "dpknn.releases.query",
    "Variance": "dpknn.releases.query",
    "ReleaseSet": "dpknn.releases.queryfile",
    "ask": "dpknn.releases.queryfile",
    "read_queries": "dpknn.releases.queryfile",
    "release_queries": "dpknn.releases.queryfile",
    "LN2": "dpknn.releases.sensitivity",
    "check_bounds": "dpknn.releases.sensitivity",
    "count_global": "dpknn.releases.sensitivity",
    "count_smooth": "dpknn.releases.sensitivity",
    "mean_global": "dpknn.releases.sensitivity",
    "mean_smooth": "dpknn.releases.sensitivity",
    "variance_global": "dpknn.releases.sensitivity",
    "variance_smooth": "dpknn.releases.sensitivity",
    "CachedStatistics": "dpknn.releases.statistics",
    "InMemoryStatistics": "dpknn.releases.statistics",
    "Statistics": "dpknn.releases.statistics",
    "Moments": "dpknn.releases.summation",
    "exact_moments": "dpknn.releases.summation",
})
