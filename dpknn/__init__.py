"""dpknn: differentially private release of survey and census data with missing values.

Exact k-nearest-neighbour imputation with smooth-sensitivity releases, data processing with
privacy amplification, Randomization Within Neighbourhoods, and DP synthesis from incomplete
data. See the README for the set-up commands and a quickstart.
"""

import logging

from . import _core  # noqa: F401  (fails early with build instructions when not compiled)
from .exceptions import BudgetExceededError, DomainError, PrivacyLeakWarning, WorkLimitError
from .imputation import KNNImputer, L1Case
from .schema import Categorical, Continuous, EncodedData, Ordinal, Schema
from .validation import check_rng

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0.dev0"

__all__ = [
    "BudgetExceededError",
    "Categorical",
    "Continuous",
    "DomainError",
    "EncodedData",
    "KNNImputer",
    "L1Case",
    "Ordinal",
    "PrivacyLeakWarning",
    "Schema",
    "WorkLimitError",
    "__version__",
    "check_rng",
]
