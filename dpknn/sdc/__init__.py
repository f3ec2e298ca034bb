"""Statistical disclosure control that is not differential privacy: Randomization Within Neighbourhoods."""

from dpknn.utils._lazy import lazy_exports

__all__ = [
    "RWN",
    "perturb_parquet",
]

# Each public name loads its module on first use (dpknn.utils._lazy): importing the package stays cheap.
# Names that left the public list still load, with a DeprecationWarning.
__getattr__, __dir__ = lazy_exports(__name__, {
    "RWN": "dpknn.sdc._rwn",
    "perturb_parquet": "dpknn.sdc._rwn",
}, internal={
    "Neighbourhoods": "dpknn.sdc._neighbourhoods",
    "pairs_from_indices": "dpknn.sdc._neighbourhoods",
    "UNCHANGED_SHARE": "dpknn.sdc._rwn",
    "warn_unchanged": "dpknn.sdc._rwn",
})
