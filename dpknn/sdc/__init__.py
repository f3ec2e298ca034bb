"""Statistical disclosure control that is not differential privacy: Randomization Within Neighbourhoods."""

from dpknn.utils.lazy import lazy_exports

__all__ = ["RWN", "UNCHANGED_SHARE", "Neighbourhoods", "pairs_from_indices", "perturb_parquet", "warn_unchanged"]

# Each public name loads its module on first use (dpknn.utils.lazy): importing the package stays cheap.
__getattr__, __dir__ = lazy_exports(__name__, {
    "RWN": "dpknn.sdc.rwn",
    "UNCHANGED_SHARE": "dpknn.sdc.rwn",
    "Neighbourhoods": "dpknn.sdc.neighbourhoods",
    "pairs_from_indices": "dpknn.sdc.neighbourhoods",
    "perturb_parquet": "dpknn.sdc.rwn",
    "warn_unchanged": "dpknn.sdc.rwn",
})
