"""Reproductions of the papers' experiments: the entry points behind ``dpknn demo`` and ``dpknn experiment``."""

from dpknn.utils._lazy import lazy_exports

__all__ = ["run_amplification_experiment", "run_census_experiment", "run_demo", "run_synthesis_experiment"]

# Each entry point loads its module on first use (dpknn.utils._lazy): the command line's parser stays cheap.
__getattr__, __dir__ = lazy_exports(__name__, {
    "run_amplification_experiment": "dpknn.experiments._amplification",
    "run_census_experiment": "dpknn.experiments._demo",
    "run_demo": "dpknn.experiments._demo",
    "run_synthesis_experiment": "dpknn.experiments._synthesis",
})
