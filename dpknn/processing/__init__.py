"""Data processing before a release: clamp, data-independent impute, resize with amplification; plans in TOML."""

from dpknn.utils.lazy import lazy_exports

__all__ = ["ProcessingPlan", "ProcessingResult", "Resized", "clamp", "impute", "resize", "run_plan"]

# Each public name loads its module on first use (dpknn.utils.lazy): importing the package stays cheap.
__getattr__, __dir__ = lazy_exports(__name__, {
    "ProcessingPlan": "dpknn.processing.pipeline",
    "ProcessingResult": "dpknn.processing.pipeline",
    "run_plan": "dpknn.processing.pipeline",
    "Resized": "dpknn.processing.transforms",
    "clamp": "dpknn.processing.transforms",
    "impute": "dpknn.processing.transforms",
    "resize": "dpknn.processing.transforms",
})
