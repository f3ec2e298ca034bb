"""Data processing before a release: clamp, data-independent impute, resize with amplification; plans in TOML."""

from dpknn.processing.pipeline import ProcessingPlan, ProcessingResult, run_plan
from dpknn.processing.transforms import Resized, clamp, impute, resize

__all__ = ["ProcessingPlan", "ProcessingResult", "Resized", "clamp", "impute", "resize", "run_plan"]
