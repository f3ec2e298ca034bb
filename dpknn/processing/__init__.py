"""Data processing before a release: clamp, data-independent impute, resize with amplification; plans in TOML."""

from dpknn.utils._lazy import lazy_exports

__all__ = [
    "ProcessingPlan",
    "ProcessingResult",
    "Resized",
    "clamp",
    "impute",
    "resize",
    "run_plan",
]

# Each public name loads its module on first use (dpknn.utils._lazy): importing the package stays cheap.
__getattr__, __dir__ = lazy_exports(__name__, {
    "ProcessingPlan": "dpknn.processing._pipeline",
    "ProcessingResult": "dpknn.processing._pipeline",
    "run_plan": "dpknn.processing._pipeline",
    "Resized": "dpknn.processing._transforms",
    "clamp": "dpknn.processing._transforms",
    "impute": "dpknn.processing._transforms",
    "resize": "dpknn.processing._transforms",
})
