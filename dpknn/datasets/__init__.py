"""Built-in data: synthetic census extracts and missingness generators."""

from dpknn.utils.lazy import lazy_exports

__all__ = ["CENSUS_CODEBOOK", "add_missingness", "census_schema", "make_census", "make_missing"]

# Each public name loads its module on first use (dpknn.utils.lazy): importing the package stays cheap.
__getattr__, __dir__ = lazy_exports(__name__, {
    "CENSUS_CODEBOOK": "dpknn.datasets.census",
    "add_missingness": "dpknn.datasets.census",
    "census_schema": "dpknn.datasets.census",
    "make_census": "dpknn.datasets.census",
    "make_missing": "dpknn.datasets.missingness",
})
