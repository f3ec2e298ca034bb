"""Utility and disclosure-risk measures: perturbed data (RWN diagnostics, Perry et al. 2022 §8) and
synthetic data (k-way TVD and ML efficacy, Mohapatra et al. 2024 §6.1)."""

from .disclosure import closest_distances, max_cooks_distance, max_mahalanobis
from .fidelity import MlEfficacy, ml_efficacy, tvd
from .utility import correlation_change, ols_comparison, pca_variance, random_forest_misclassification

__all__ = [
    "MlEfficacy",
    "closest_distances",
    "correlation_change",
    "max_cooks_distance",
    "max_mahalanobis",
    "ml_efficacy",
    "ols_comparison",
    "pca_variance",
    "random_forest_misclassification",
    "tvd",
]
