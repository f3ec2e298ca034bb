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

from dpknn.metrics.combining import (
    CombinedEstimate,
    combine_fully_synthetic,
    combine_imputations,
    combine_partially_synthetic,
)
from dpknn.metrics.disclosure import (
    AttributionRisk,
    ClosestRecords,
    Linkage,
    SampleUniques,
    closest_distances,
    correct_attribution_probability,
    distance_to_closest_record,
    linkage,
    max_cooks_distance,
    max_mahalanobis,
    risk_space,
    sample_uniques,
)
from dpknn.metrics.fidelity import MlEfficacy, ml_efficacy, tvd
from dpknn.metrics.inference import RegressionComparison, ci_overlap, regression_comparison, standardized_difference
from dpknn.metrics.pmse import PMSE, pmse, propensity_features
from dpknn.metrics.utility import correlation_change, ols_comparison, pca_variance, random_forest_misclassification

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
