"""dpknn: differentially private release of survey and census data with missing values.

Exact k-nearest-neighbour imputation with smooth-sensitivity releases, data processing with
privacy amplification, and Randomization Within Neighbourhoods (disclosure control, not DP).
What a release publishes and what stays with the curator: ``docs/privacy.md``. See the README
for the set-up commands and a quickstart.
"""

import logging

from dpknn import _core  # noqa: F401  (fails early with build instructions when not compiled)
from dpknn.accounting import BudgetAccountant
from dpknn.exceptions import (
    BudgetExceededError,
    DetachedAccountantError,
    DomainError,
    ImputedDataError,
    PrivacyLeakWarning,
    WorkLimitError,
)
from dpknn.impute.knn import KNNImputer, L1Case
from dpknn.impute.report import CuratorReport, curator_report
from dpknn.mechanisms.additive import Gaussian, Geometric, Laplace
from dpknn.mechanisms.base import CuratorDiagnostics, Release
from dpknn.mechanisms.randomized_response import RandomizedResponse
from dpknn.mechanisms.randomness import RandomSource
from dpknn.mechanisms.selection import ExponentialMechanism, PermuteAndFlip
from dpknn.mechanisms.smooth import SmoothCauchy
from dpknn.models.kmeans import DPKMeans
from dpknn.releases.queries import PrivateImputation, estimate_size
from dpknn.schema.attributes import Categorical, Continuous, EncodedData, Ordinal, Schema
from dpknn.sdc.rwn import RWN
from dpknn.utils.validation import check_rng

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0.dev0"

__all__ = [
    "RWN",
    "BudgetAccountant",
    "BudgetExceededError",
    "Categorical",
    "Continuous",
    "CuratorDiagnostics",
    "CuratorReport",
    "DPKMeans",
    "DetachedAccountantError",
    "DomainError",
    "EncodedData",
    "ExponentialMechanism",
    "Gaussian",
    "Geometric",
    "ImputedDataError",
    "KNNImputer",
    "L1Case",
    "Laplace",
    "Ordinal",
    "PermuteAndFlip",
    "PrivacyLeakWarning",
    "PrivateImputation",
    "RandomSource",
    "RandomizedResponse",
    "Release",
    "Schema",
    "SmoothCauchy",
    "WorkLimitError",
    "__version__",
    "check_rng",
    "curator_report",
    "estimate_size",
]
