"""Private counts, proportions, means and variances on k-NN-imputed data: queries, query files, sensitivity bounds."""

from dpknn.releases.queries import PrivateImputation, estimate_size
from dpknn.releases.queryfile import ask, read_queries
from dpknn.releases.sensitivity import (
    LN2,
    count_global,
    count_smooth,
    mean_global,
    mean_smooth,
    variance_global,
    variance_smooth,
)
from dpknn.releases.summation import Moments, exact_moments

__all__ = [
    "LN2",
    "Moments",
    "PrivateImputation",
    "ask",
    "count_global",
    "count_smooth",
    "estimate_size",
    "exact_moments",
    "mean_global",
    "mean_smooth",
    "read_queries",
    "variance_global",
    "variance_smooth",
]
