"""dpknn: differentially private release of survey and census data with missing values.

Exact k-nearest-neighbour imputation with smooth-sensitivity releases, data processing with
privacy amplification, and Randomization Within Neighbourhoods (disclosure control, not DP).
What a release publishes and what stays with the curator: ``docs/privacy.md``. See the README
for the set-up commands and a quickstart.
"""

import logging

from dpknn import _core  # noqa: F401  (fails early with build instructions when not compiled)
from dpknn.utils._lazy import install_moved_modules, lazy_exports

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0.dev0"

__all__ = [
    "RWN",
    "BudgetAccountant",
    "BudgetExceededError",
    "Categorical",
    "Continuous",
    "CuratorDiagnostics",
    "CuratorReport",
    "DPKMeans",
    "DetachedAccountantError",
    "DomainError",
    "EncodedData",
    "ExponentialMechanism",
    "Gaussian",
    "Geometric",
    "ImputedDataError",
    "KNNImputer",
    "L1Case",
    "Laplace",
    "Ordinal",
    "PermuteAndFlip",
    "PrivacyLeakWarning",
    "PrivateImputation",
    "RandomSource",
    "RandomizedResponse",
    "Release",
    "Schema",
    "SmoothCauchy",
    "WorkLimitError",
    "__version__",
    "check_rng",
    "curator_report",
    "estimate_size",
]

# Each public name loads its module on first use (dpknn.utils._lazy): `import dpknn` and `dpknn --help` stay
# cheap (no scikit-learn, SciPy or pandas until a name needs them).
__getattr__, __dir__ = lazy_exports(__name__, {
    "BudgetAccountant": "dpknn.accounting",
    "BudgetExceededError": "dpknn.exceptions",
    "DetachedAccountantError": "dpknn.exceptions",
    "DomainError": "dpknn.exceptions",
    "ImputedDataError": "dpknn.exceptions",
    "PrivacyLeakWarning": "dpknn.exceptions",
    "WorkLimitError": "dpknn.exceptions",
    "KNNImputer": "dpknn.impute._knn",
    "L1Case": "dpknn.impute._knn",
    "CuratorReport": "dpknn.releases._report",
    "curator_report": "dpknn.releases._report",
    "Gaussian": "dpknn.mechanisms._additive",
    "Geometric": "dpknn.mechanisms._additive",
    "Laplace": "dpknn.mechanisms._additive",
    "CuratorDiagnostics": "dpknn.mechanisms._base",
    "Release": "dpknn.mechanisms._base",
    "RandomizedResponse": "dpknn.mechanisms._randomized_response",
    "RandomSource": "dpknn.mechanisms._randomness",
    "ExponentialMechanism": "dpknn.mechanisms._selection",
    "PermuteAndFlip": "dpknn.mechanisms._selection",
    "SmoothCauchy": "dpknn.mechanisms._smooth",
    "DPKMeans": "dpknn.models._kmeans",
    "PrivateImputation": "dpknn.releases._queries",
    "estimate_size": "dpknn.releases._queries",
    "Categorical": "dpknn.schema._attributes",
    "Continuous": "dpknn.schema._attributes",
    "EncodedData": "dpknn.schema._attributes",
    "Ordinal": "dpknn.schema._attributes",
    "Schema": "dpknn.schema._attributes",
    "RWN": "dpknn.sdc._rwn",
    "check_rng": "dpknn.utils._validation",
})

# The implementation modules took a leading underscore (issue 49: the public surface is each subpackage's
# __all__). Their old paths still import, with a DeprecationWarning naming the package to import from.
# Three old paths are also public functions of their package (`dpknn.metrics.pmse`, `dpknn.releases.release`,
# `dpknn.cli.main`, the console script of earlier installs): those packages are ProtectedPackage modules, so that
# importing the old path cannot rebind the function's name to the module.
install_moved_modules(__name__, {
    "accounting": ("budget", "mcar", "rdp", "zcdp"),
    "cli": ("common", "data", "experiments", "impute", "main", "sdc", "synth"),
    "datasets": ("census", "missingness"),
    "experiments": ("amplification", "census", "demo", "synthesis"),
    "impute": ("binning", "distributed", "knn", "scheme"),
    "mechanisms": ("additive", "base", "noise", "randomized_response", "randomness", "selection", "smooth"),
    "metrics": ("analysis", "combining", "disclosure", "evaluation", "fidelity", "inference", "pmse", "utility"),
    "models": ("kmeans",),
    "processing": ("pipeline", "transforms"),
    "releases": ("baseline", "parquet", "queries", "query", "queryfile", "release", "report", "sensitivity",
                 "statistics", "summation"),
    "schema": ("attributes", "codebook", "coded_files", "conditions", "discretization", "draft", "fixed_width",
               "flags", "geometry", "marginals"),
    "sdc": ("neighbourhoods", "rwn"),
    "synth": ("aim", "auto", "base", "bins", "columnwise", "data", "distributed", "graphical_model", "marginal",
              "misgan", "misgan_torch", "mst", "privbayes", "ranks", "scores", "tabular"),
    "utils": ("cluster", "extras", "io", "lazy", "plotting", "progress", "report", "validation"),
}, elsewhere={"dpknn.impute.flags": "dpknn.schema._flags"}, hints={
    # the flags' public names are dpknn.impute's; the helpers have none but dpknn.check_rng and dpknn.EncodedData
    "dpknn.impute.flags": "import its public names (drop_flags, flag_column) from dpknn.impute",
    "dpknn.schema.flags": "import its public names (drop_flags, flag_column) from dpknn.impute",
    "utils": "its one public name is dpknn.check_rng; the rest is internal",
    "dpknn.schema.attributes": "import its public names from dpknn.schema (EncodedData from dpknn)",
})
