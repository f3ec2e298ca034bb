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
- :class:`DPMisGAN`: MisGAN trained with DP-SGD on its critics (needs torch, the ``gan`` extra;
  importing this package does not).
- :class:`Discretization`: the public bins PrivBayes and the column-wise synthesiser use;
  :class:`TabularEncoding`: the public one-hot codes and in-bin positions of the GAN.
- :class:`Synthesizer`: their base; ``public_params()`` is what a fitted model publishes
  beside its rows (the ``dpknn synth`` sidecar).
- :mod:`dpknn.synth.scores`: the score of PrivBayes's structure search and its sensitivity.
"""

from dpknn.schema.discretization import Discretization
from dpknn.synth.aim import AIMSynthesizer
from dpknn.synth.auto import AutoSynthesizer
from dpknn.synth.base import Synthesizer
from dpknn.synth.columnwise import ColumnwiseSynthesizer
from dpknn.synth.misgan import DPMisGAN
from dpknn.synth.mst import MSTSynthesizer
from dpknn.synth.privbayes import PrivBayes
from dpknn.synth.scores import mutual_information_score, score_sensitivity
from dpknn.synth.tabular import TabularEncoding

__all__ = ["AIMSynthesizer", "AutoSynthesizer", "ColumnwiseSynthesizer", "DPMisGAN", "Discretization", "MSTSynthesizer",
           "PrivBayes", "Synthesizer", "TabularEncoding", "mutual_information_score", "score_sensitivity"]
