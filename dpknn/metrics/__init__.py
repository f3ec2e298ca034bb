"""Utility and disclosure-risk measures, and combining rules for multiple copies.

- Utility: :func:`pmse` (propensity MSE with its null), :func:`ci_overlap`,
  :func:`standardized_difference`, :func:`regression_comparison`, :func:`tvd` (k-way marginals),
  :func:`ml_efficacy`, and the RWN diagnostics of Perry et al. (2022, §8).
- Disclosure risk: :func:`linkage`, :func:`distance_to_closest_record`,
  :func:`correct_attribution_probability`, :func:`sample_uniques`, and the RWN outlier measures.
- Combining rules: :func:`combine_imputations` (Rubin), :func:`combine_partially_synthetic`
  (Reiter), :func:`combine_fully_synthetic` (Raghunathan, Reiter & Rubin).

Every measure that reads the real data is an evaluation for the curator, not a release.
"""

import sys

from dpknn.utils._lazy import ProtectedPackage, lazy_exports

__all__ = [
    "analysis_measures",
    "ci_overlap",
    "closest_distances",
    "combine_fully_synthetic",
    "combine_imputations",
    "combine_partially_synthetic",
    "correct_attribution_probability",
    "correlation_change",
    "distance_to_closest_record",
    "evaluate",
    "linkage",
    "max_cooks_distance",
    "max_mahalanobis",
    "ml_efficacy",
    "ols_comparison",
    "pca_variance",
    "pmse",
    "random_forest_misclassification",
    "regression_comparison",
    "risk_space",
    "sample_uniques",
    "standardized_difference",
    "tvd",
]

# Each public name loads its module on first use (dpknn.utils._lazy): importing the package stays cheap.
# Names that left the public list still load, with a DeprecationWarning.
__getattr__, __dir__ = lazy_exports(__name__, {
    "evaluate": "dpknn.metrics._evaluation",
    "combine_fully_synthetic": "dpknn.metrics._combining",
    "combine_imputations": "dpknn.metrics._combining",
    "combine_partially_synthetic": "dpknn.metrics._combining",
    "closest_distances": "dpknn.metrics._disclosure",
    "correct_attribution_probability": "dpknn.metrics._disclosure",
    "distance_to_closest_record": "dpknn.metrics._disclosure",
    "linkage": "dpknn.metrics._disclosure",
    "max_cooks_distance": "dpknn.metrics._disclosure",
    "max_mahalanobis": "dpknn.metrics._disclosure",
    "risk_space": "dpknn.metrics._disclosure",
    "sample_uniques": "dpknn.metrics._disclosure",
    "ml_efficacy": "dpknn.metrics._fidelity",
    "tvd": "dpknn.metrics._fidelity",
    "ci_overlap": "dpknn.metrics._inference",
    "regression_comparison": "dpknn.metrics._inference",
    "standardized_difference": "dpknn.metrics._inference",
    "pmse": "dpknn.metrics._pmse",
    "correlation_change": "dpknn.metrics._utility",
    "ols_comparison": "dpknn.metrics._utility",
    "pca_variance": "dpknn.metrics._utility",
    "random_forest_misclassification": "dpknn.metrics._utility",
    "analysis_measures": "dpknn.metrics._analysis",
}, internal={
    "CombinedEstimate": "dpknn.metrics._combining",
    "AttributionRisk": "dpknn.metrics._disclosure",
    "ClosestRecords": "dpknn.metrics._disclosure",
    "Linkage": "dpknn.metrics._disclosure",
    "SampleUniques": "dpknn.metrics._disclosure",
    "MlEfficacy": "dpknn.metrics._fidelity",
    "RegressionComparison": "dpknn.metrics._inference",
    "PMSE": "dpknn.metrics._pmse",
    "propensity_features": "dpknn.metrics._pmse",
})

# `pmse` is a function here and the old path of its module (dpknn.metrics._pmse): importing that path must not
# rebind the name to the module (dpknn.utils._lazy.ProtectedPackage).
sys.modules[__name__].__class__ = ProtectedPackage
