"""Exact k-nearest-neighbour imputation, in memory and on Dask, with coarser bins.

The imputation flags are :mod:`dpknn.schema.flags` (re-exported here); the curator's report moved to
:mod:`dpknn.releases.report`, and the Dask internals of :mod:`dpknn.impute.distributed` are no longer
listed here (issue 49): their old names here still load, with a DeprecationWarning.
"""

from dpknn.utils.lazy import lazy_exports

__all__ = [
    "ATTRS_KEY",
    "FLAG_PREFIX",
    "BinningSuggestion",
    "BinningTrial",
    "DistributedImputation",
    "ImputedDataError",
    "KNNImputer",
    "L1Case",
    "UniverseFit",
    "check_not_imputed",
    "check_path_not_imputed",
    "drop_flags",
    "flag_column",
    "flag_columns",
    "impute_parquet",
    "parquet_partitions",
    "path_flag_columns",
    "suggest_bin_widths",
]

# Each public name loads its module on first use (dpknn.utils.lazy): importing the package stays cheap.
__getattr__, __dir__ = lazy_exports(__name__, {
    "BinningSuggestion": "dpknn.impute.binning",
    "BinningTrial": "dpknn.impute.binning",
    "suggest_bin_widths": "dpknn.impute.binning",
    "DistributedImputation": "dpknn.impute.distributed",
    "impute_parquet": "dpknn.impute.distributed",
    "parquet_partitions": "dpknn.impute.distributed",
    "ATTRS_KEY": "dpknn.schema.flags",
    "FLAG_PREFIX": "dpknn.schema.flags",
    "ImputedDataError": "dpknn.schema.flags",
    "check_not_imputed": "dpknn.schema.flags",
    "check_path_not_imputed": "dpknn.schema.flags",
    "drop_flags": "dpknn.schema.flags",
    "flag_column": "dpknn.schema.flags",
    "flag_columns": "dpknn.schema.flags",
    "path_flag_columns": "dpknn.schema.flags",
    "KNNImputer": "dpknn.impute.knn",
    "L1Case": "dpknn.impute.knn",
    "UniverseFit": "dpknn.impute.knn",
}, moved={
    "ParquetStatistics": "dpknn.releases.parquet",
    "DONORLESS_SHARE": "dpknn.releases.report",
    "REPORT_FILES": "dpknn.releases.report",
    "AttributeDistribution": "dpknn.releases.report",
    "CuratorReport": "dpknn.releases.report",
    "PlannedRelease": "dpknn.releases.report",
    "UniverseSummary": "dpknn.releases.report",
    "curator_report": "dpknn.releases.report",
    "DonorPlacement": "dpknn.impute.distributed",
    "PartitionDonors": "dpknn.impute.distributed",
    "compact": "dpknn.impute.distributed",
    "place_donors": "dpknn.impute.distributed",
    "dask_client": "dpknn.utils.cluster",
})
