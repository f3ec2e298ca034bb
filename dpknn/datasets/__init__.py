"""Built-in data: synthetic census extracts and missingness generators."""

from dpknn.utils._lazy import lazy_exports

__all__ = [
    "census_schema",
    "make_census",
    "make_missing",
]

# Each public name loads its module on first use (dpknn.utils._lazy): importing the package stays cheap.
# Names that left the public list still load, with a DeprecationWarning.
__getattr__, __dir__ = lazy_exports(__name__, {
    "census_schema": "dpknn.datasets._census",
    "make_census": "dpknn.datasets._census",
    "make_missing": "dpknn.datasets._missingness",
}, internal={
    "CENSUS_CODEBOOK": "dpknn.datasets._census",
    "add_missingness": "dpknn.datasets._census",
})
