"""DP synthetic data from incomplete data.

Built so far: :mod:`dpknn.synth.scores`, the mutual-information score of PrivBayes's structure
search and its add/remove sensitivity under a public row bound. Its private selection is
:class:`dpknn.selection.PermuteAndFlip`.
"""

from .scores import mutual_information_score, score_sensitivity

__all__ = ["mutual_information_score", "score_sensitivity"]
