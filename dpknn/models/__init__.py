"""Differentially private models fitted on released statistics."""

from dpknn.models.kmeans import DPKMeans

__all__ = ["DPKMeans"]
