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

# `pmse` names both a submodule and its function: importing the submodule would rebind the package's
# attribute to the module, so the function is bound here, eagerly, after it.
from dpknn.metrics.pmse import pmse
from dpknn.utils.lazy import lazy_exports

__all__ = [
    "PMSE",
    "AttributionRisk",
    "ClosestRecords",
    "CombinedEstimate",
    "Linkage",
    "MlEfficacy",
    "RegressionComparison",
    "SampleUniques",
    "ci_overlap",
    "closest_distances",
    "combine_fully_synthetic",
    "combine_imputations",
    "combine_partially_synthetic",
    "correct_attribution_probability",
    "correlation_change",
    "distance_to_closest_record",
    "linkage",
    "max_cooks_distance",
    "max_mahalanobis",
    "ml_efficacy",
    "ols_comparison",
    "pca_variance",
    "pmse",
    "propensity_features",
    "random_forest_misclassification",
    "regression_comparison",
    "risk_space",
    "sample_uniques",
    "standardized_difference",
    "tvd",
]

# Each public name loads its module on first use (dpknn.utils.lazy): importing the package stays cheap.
__getattr__, __dir__ = lazy_exports(__name__, {
    "CombinedEstimate": "dpknn.metrics.combining",
    "combine_fully_synthetic": "dpknn.metrics.combining",
    "combine_imputations": "dpknn.metrics.combining",
    "combine_partially_synthetic": "dpknn.metrics.combining",
    "AttributionRisk": "dpknn.metrics.disclosure",
    "ClosestRecords": "dpknn.metrics.disclosure",
    "Linkage": "dpknn.metrics.disclosure",
    "SampleUniques": "dpknn.metrics.disclosure",
    "closest_distances": "dpknn.metrics.disclosure",
    "correct_attribution_probability": "dpknn.metrics.disclosure",
    "distance_to_closest_record": "dpknn.metrics.disclosure",
    "linkage": "dpknn.metrics.disclosure",
    "max_cooks_distance": "dpknn.metrics.disclosure",
    "max_mahalanobis": "dpknn.metrics.disclosure",
    "risk_space": "dpknn.metrics.disclosure",
    "sample_uniques": "dpknn.metrics.disclosure",
    "MlEfficacy": "dpknn.metrics.fidelity",
    "ml_efficacy": "dpknn.metrics.fidelity",
    "tvd": "dpknn.metrics.fidelity",
    "RegressionComparison": "dpknn.metrics.inference",
    "ci_overlap": "dpknn.metrics.inference",
    "regression_comparison": "dpknn.metrics.inference",
    "standardized_difference": "dpknn.metrics.inference",
    "PMSE": "dpknn.metrics.pmse",
    "propensity_features": "dpknn.metrics.pmse",
    "correlation_change": "dpknn.metrics.utility",
    "ols_comparison": "dpknn.metrics.utility",
    "pca_variance": "dpknn.metrics.utility",
    "random_forest_misclassification": "dpknn.metrics.utility",
})
