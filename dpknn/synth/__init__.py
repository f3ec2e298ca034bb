"""DP synthetic data from incomplete data.

- :class:`PrivBayes`: PrivBayes and PrivBayesE (a noisy Bayesian network; missing cells
  dropped per table, dropped with their rows, or kept as a value).
- :class:`ColumnwiseSynthesizer`: column-by-column synthesis with DP naive-Bayes models that
  also impute the missing cells (KaminoI).
- :class:`Discretization`: the public bins both use.
- :mod:`dpknn.synth.scores`: the score of PrivBayes's structure search and its sensitivity.
"""

from .columnwise import ColumnwiseSynthesizer
from .domain import Discretization
from .privbayes import PrivBayes
from .scores import mutual_information_score, score_sensitivity

__all__ = ["ColumnwiseSynthesizer", "Discretization", "PrivBayes", "mutual_information_score", "score_sensitivity"]
