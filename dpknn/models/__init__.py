"""Differentially private models fitted on released statistics."""

from dpknn.utils.lazy import lazy_exports

__all__ = ["DPKMeans"]

# Each public name loads its module on first use (dpknn.utils.lazy): importing the package stays cheap.
__getattr__, __dir__ = lazy_exports(__name__, {
    "DPKMeans": "dpknn.models.kmeans",
})
