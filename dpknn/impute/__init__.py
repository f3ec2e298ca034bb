"""Exact k-nearest-neighbour imputation, in memory and on Dask, with coarser bins.

In memory :class:`KNNImputer` (its worst cases :class:`L1Case`, its universes :class:`UniverseFit`); on a
folder of Parquet partitions :func:`impute_parquet` (:class:`DistributedImputation`); coarser bins with
:func:`suggest_bin_widths`; the imputation flags :func:`flag_column` and :func:`drop_flags`. The curator's
report is :func:`dpknn.releases.curator_report`. Names that left this list (issue 49) still load, with a
DeprecationWarning.
"""

from dpknn.utils._lazy import lazy_exports

__all__ = [
    "DistributedImputation",
    "KNNImputer",
    "L1Case",
    "UniverseFit",
    "drop_flags",
    "flag_column",
    "impute_parquet",
    "suggest_bin_widths",
]

# Each public name loads its module on first use (dpknn.utils._lazy): importing the package stays cheap.
# Names that left the public list still load, with a DeprecationWarning.
__getattr__, __dir__ = lazy_exports(__name__, {
    "suggest_bin_widths": "dpknn.impute._binning",
    "DistributedImputation": "dpknn.impute._distributed",
    "impute_parquet": "dpknn.impute._distributed",
    "drop_flags": "dpknn.schema._flags",
    "flag_column": "dpknn.schema._flags",
    "KNNImputer": "dpknn.impute._knn",
    "L1Case": "dpknn.impute._knn",
    "UniverseFit": "dpknn.impute._knn",
}, moved={
    "ImputedDataError": "dpknn.exceptions",
    "ParquetStatistics": "dpknn.releases",
    "CuratorReport": "dpknn.releases",
    "curator_report": "dpknn.releases",
}, internal={
    "BinningSuggestion": "dpknn.impute._binning",
    "BinningTrial": "dpknn.impute._binning",
    "DonorPlacement": "dpknn.impute._distributed",
    "PartitionDonors": "dpknn.impute._distributed",
    "compact": "dpknn.impute._distributed",
    "parquet_partitions": "dpknn.impute._distributed",
    "place_donors": "dpknn.impute._distributed",
    "AttributeDistribution": "dpknn.releases._report",
    "DONORLESS_SHARE": "dpknn.releases._report",
    "PlannedRelease": "dpknn.releases._report",
    "REPORT_FILES": "dpknn.releases._report",
    "UniverseSummary": "dpknn.releases._report",
    "ATTRS_KEY": "dpknn.schema._flags",
    "FLAG_PREFIX": "dpknn.schema._flags",
    "check_not_imputed": "dpknn.schema._flags",
    "check_path_not_imputed": "dpknn.schema._flags",
    "flag_columns": "dpknn.schema._flags",
    "path_flag_columns": "dpknn.schema._flags",
    "dask_client": "dpknn.utils._cluster",
})
