"""Built-in data: synthetic census extracts and missingness generators."""

from dpknn.datasets.census import CENSUS_CODEBOOK, add_missingness, census_schema, make_census
from dpknn.datasets.missingness import make_missing

__all__ = ["CENSUS_CODEBOOK", "add_missingness", "census_schema", "make_census", "make_missing"]
