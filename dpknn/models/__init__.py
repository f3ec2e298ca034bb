"""Differentially private models fitted on released statistics."""

from dpknn.utils._lazy import lazy_exports

__all__ = ["DPKMeans"]

# Each public name loads its module on first use (dpknn.utils._lazy): importing the package stays cheap.
__getattr__, __dir__ = lazy_exports(__name__, {
    "DPKMeans": "dpknn.models._kmeans",
})
