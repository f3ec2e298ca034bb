"""dpknn: differentially private release of survey and census data with missing values.

Exact k-nearest-neighbour imputation with smooth-sensitivity releases, data processing with
privacy amplification, and Randomization Within Neighbourhoods (disclosure control, not DP).
What a release publishes and what stays with the curator: ``docs/privacy.md``. See the README
for the set-up commands and a quickstart.
"""

import logging

from dpknn import _core  # noqa: F401  (fails early with build instructions when not compiled)
from dpknn.utils.lazy import lazy_exports

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

# Each public name loads its module on first use (dpknn.utils.lazy): `import dpknn` and `dpknn --help` stay
# cheap (no scikit-learn, SciPy or pandas until a name needs them).
__getattr__, __dir__ = lazy_exports(__name__, {
    "BudgetAccountant": "dpknn.accounting",
    "BudgetExceededError": "dpknn.exceptions",
    "DetachedAccountantError": "dpknn.exceptions",
    "DomainError": "dpknn.exceptions",
    "ImputedDataError": "dpknn.exceptions",
    "PrivacyLeakWarning": "dpknn.exceptions",
    "WorkLimitError": "dpknn.exceptions",
    "KNNImputer": "dpknn.impute.knn",
    "L1Case": "dpknn.impute.knn",
    "CuratorReport": "dpknn.releases.report",
    "curator_report": "dpknn.releases.report",
    "Gaussian": "dpknn.mechanisms.additive",
    "Geometric": "dpknn.mechanisms.additive",
    "Laplace": "dpknn.mechanisms.additive",
    "CuratorDiagnostics": "dpknn.mechanisms.base",
    "Release": "dpknn.mechanisms.base",
    "RandomizedResponse": "dpknn.mechanisms.randomized_response",
    "RandomSource": "dpknn.mechanisms.randomness",
    "ExponentialMechanism": "dpknn.mechanisms.selection",
    "PermuteAndFlip": "dpknn.mechanisms.selection",
    "SmoothCauchy": "dpknn.mechanisms.smooth",
    "DPKMeans": "dpknn.models.kmeans",
    "PrivateImputation": "dpknn.releases.queries",
    "estimate_size": "dpknn.releases.queries",
    "Categorical": "dpknn.schema.attributes",
    "Continuous": "dpknn.schema.attributes",
    "EncodedData": "dpknn.schema.attributes",
    "Ordinal": "dpknn.schema.attributes",
    "Schema": "dpknn.schema.attributes",
    "RWN": "dpknn.sdc.rwn",
    "check_rng": "dpknn.utils.validation",
})
