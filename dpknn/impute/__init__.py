"""Exact k-nearest-neighbour imputation, in memory and on Dask, with coarser bins, flags and the curator's report."""

from dpknn.impute.binning import BinningSuggestion, BinningTrial, suggest_bin_widths
from dpknn.impute.distributed import (
    DistributedImputation,
    DonorPlacement,
    ParquetStatistics,
    PartitionDonors,
    compact,
    dask_client,
    impute_parquet,
    parquet_partitions,
    place_donors,
)
from dpknn.impute.flags import (
    ATTRS_KEY,
    FLAG_PREFIX,
    ImputedDataError,
    check_not_imputed,
    check_path_not_imputed,
    drop_flags,
    flag_column,
    flag_columns,
    path_flag_columns,
)
from dpknn.impute.knn import KNNImputer, L1Case, UniverseFit
from dpknn.impute.report import (
    DONORLESS_SHARE,
    REPORT_FILES,
    AttributeDistribution,
    CuratorReport,
    PlannedRelease,
    UniverseSummary,
    curator_report,
)

__all__ = [
    "ATTRS_KEY",
    "DONORLESS_SHARE",
    "FLAG_PREFIX",
    "REPORT_FILES",
    "AttributeDistribution",
    "BinningSuggestion",
    "BinningTrial",
    "CuratorReport",
    "DistributedImputation",
    "DonorPlacement",
    "ImputedDataError",
    "KNNImputer",
    "L1Case",
    "ParquetStatistics",
    "PartitionDonors",
    "PlannedRelease",
    "UniverseFit",
    "UniverseSummary",
    "check_not_imputed",
    "check_path_not_imputed",
    "compact",
    "curator_report",
    "dask_client",
    "drop_flags",
    "flag_column",
    "flag_columns",
    "impute_parquet",
    "parquet_partitions",
    "path_flag_columns",
    "place_donors",
    "suggest_bin_widths",
]
