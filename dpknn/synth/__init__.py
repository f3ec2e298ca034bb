"""DP synthetic data from incomplete data.

- :class:`AutoSynthesizer`: AIM where the budget pays for its rounds, MST where it does not,
  chosen on a released row count; the default.
- :class:`AIMSynthesizer`: AIM (noisy tables chosen adaptively for a workload of marginals, one
  consistent model fitted to them; zCDP or pure DP), missingness as a category.
- :class:`MSTSynthesizer`: MST (noisy one- and two-way tables on a private maximum spanning
  tree, one consistent model fitted to them; zCDP or pure DP), missingness as a category.
- :class:`PrivBayes`: PrivBayes and PrivBayesE (a noisy Bayesian network; missing cells
  dropped per table, dropped with their rows, or kept as a value).
- :class:`ColumnwiseSynthesizer`: column-by-column synthesis with DP naive-Bayes models that
  also impute the missing cells (KaminoI).
- :func:`synthesize_parquet`: AIM, MST or the default fitted on a folder of Parquet partitions out of core on
  Dask (the same releases as in memory), its synthetic rows written as a folder of partitions.
- :class:`DPMisGAN`: MisGAN trained with DP-SGD on its critics (needs torch, the ``gan`` extra;
  importing this package does not).
- :class:`Synthesizer`: their base; ``public_record()`` (a :class:`~dpknn.mechanisms.PublishedRecord`) is
  what a fitted model publishes beside its rows (the ``dpknn synth`` sidecar). The public bins PrivBayes and
  the column-wise synthesiser use are :class:`dpknn.schema.Discretization`.
- :mod:`dpknn.synth._scores`: the score of PrivBayes's structure search and its sensitivity.
"""

from dpknn.utils._lazy import lazy_exports

__all__ = [
    "AIMSynthesizer",
    "AutoSynthesizer",
    "ColumnwiseSynthesizer",
    "DPMisGAN",
    "MSTSynthesizer",
    "PrivBayes",
    "Synthesizer",
    "synthesize_parquet",
]

# Each public name loads its module on first use (dpknn.utils._lazy): importing the package stays cheap.
# Names that left the public list still load, with a DeprecationWarning.
__getattr__, __dir__ = lazy_exports(__name__, {
    "AIMSynthesizer": "dpknn.synth._aim",
    "AutoSynthesizer": "dpknn.synth._auto",
    "Synthesizer": "dpknn.synth._base",
    "ColumnwiseSynthesizer": "dpknn.synth._columnwise",
    "DPMisGAN": "dpknn.synth._misgan",
    "MSTSynthesizer": "dpknn.synth._mst",
    "PrivBayes": "dpknn.synth._privbayes",
    "synthesize_parquet": "dpknn.synth._distributed",
}, moved={
    "Discretization": "dpknn.schema",
}, internal={
    "mutual_information_score": "dpknn.synth._scores",
    "score_sensitivity": "dpknn.synth._scores",
    "TabularEncoding": "dpknn.synth._tabular",
})
