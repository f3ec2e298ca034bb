"""Utility and disclosure-risk measures for perturbed data (RWN diagnostics, Perry et al. 2022 §8)."""

from .disclosure import closest_distances, max_cooks_distance, max_mahalanobis
from .utility import correlation_change, ols_comparison, pca_variance, random_forest_misclassification

__all__ = [
    "closest_distances",
    "correlation_change",
    "max_cooks_distance",
    "max_mahalanobis",
    "ols_comparison",
    "pca_variance",
    "random_forest_misclassification",
]
