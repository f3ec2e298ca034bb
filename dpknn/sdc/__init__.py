"""Statistical disclosure control that is not differential privacy: Randomization Within Neighbourhoods."""

from dpknn.sdc.rwn import RWN, UNCHANGED_SHARE, pairs_from_indices, perturb_parquet, warn_unchanged

__all__ = ["RWN", "UNCHANGED_SHARE", "pairs_from_indices", "perturb_parquet", "warn_unchanged"]
