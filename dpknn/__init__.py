"""dpknn: differentially private release of survey and census data with missing values.

Exact k-nearest-neighbour imputation with smooth-sensitivity releases, data processing with
privacy amplification, and Randomization Within Neighbourhoods (disclosure control, not DP).
What a release publishes and what stays with the curator: ``docs/privacy.md``. See the README
for the set-up commands and a quickstart.
"""

import logging

from . import _core  # noqa: F401  (fails early with build instructions when not compiled)
from .accounting import BudgetAccountant
from .exceptions import (
    BudgetExceededError,
    DetachedAccountantError,
    DomainError,
    ImputedDataError,
    PrivacyLeakWarning,
    WorkLimitError,
)
from .imputation import KNNImputer, L1Case
from .kmeans import DPKMeans
from .mechanisms import CuratorDiagnostics, Gaussian, Geometric, Laplace, Release, SmoothCauchy
from .queries import PrivateImputation, estimate_size
from .randomized_response import RandomizedResponse
from .randomness import RandomSource
from .report import CuratorReport, curator_report
from .rwn import RWN
from .schema import Categorical, Continuous, EncodedData, Ordinal, Schema
from .selection import ExponentialMechanism, PermuteAndFlip
from .validation import check_rng

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
