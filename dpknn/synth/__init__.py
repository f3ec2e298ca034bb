"""DP synthetic data from incomplete data.

- :class:`PrivBayes`: PrivBayes and PrivBayesE (a noisy Bayesian network; missing cells
  dropped per table, dropped with their rows, or kept as a value).
- :class:`ColumnwiseSynthesizer`: column-by-column synthesis with DP naive-Bayes models that
  also impute the missing cells (KaminoI).
- :class:`DPMisGAN`: MisGAN trained with DP-SGD on its critics (needs torch, the ``gan`` extra;
  importing this package does not).
- :class:`Discretization`: the public bins PrivBayes and the column-wise synthesiser use;
  :class:`TabularEncoding`: the public one-hot and scaled columns of the GAN.
- :mod:`dpknn.synth.scores`: the score of PrivBayes's structure search and its sensitivity.
"""

from .columnwise import ColumnwiseSynthesizer
from .domain import Discretization
from .misgan import DPMisGAN
from .privbayes import PrivBayes
from .scores import mutual_information_score, score_sensitivity
from .tabular import TabularEncoding

__all__ = ["ColumnwiseSynthesizer", "DPMisGAN", "Discretization", "PrivBayes", "TabularEncoding",
           "mutual_information_score", "score_sensitivity"]
