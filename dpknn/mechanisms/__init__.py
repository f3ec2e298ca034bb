"""Mechanisms on one base, the exact samplers they draw from, and the sources of randomness.

Every noisy number, randomized bit or private choice the package makes comes from a subclass of
:class:`Mechanism`: additive noise on a public grid (:mod:`~dpknn.mechanisms.additive`), smooth-
sensitivity noise (:mod:`~dpknn.mechanisms.smooth`), private selection
(:mod:`~dpknn.mechanisms.selection`) and randomized response. The samplers
(:mod:`~dpknn.mechanisms.noise`) and the sources of bits (:mod:`~dpknn.mechanisms.randomness`) are
used only by the mechanisms.
"""

from dpknn.utils.lazy import lazy_exports

__all__ = [
    "LN2",
    "CauchyCalibration",
    "CuratorDiagnostics",
    "DiscreteGaussian",
    "ExponentialMechanism",
    "Gaussian",
    "Geometric",
    "Laplace",
    "Mechanism",
    "PermuteAndFlip",
    "PolyPlaceCalibration",
    "ProportionEstimate",
    "RandomSource",
    "RandomizedResponse",
    "Release",
    "ScoreSelection",
    "SmoothCauchy",
    "SmoothPolyPlace",
    "as_source",
    "cauchy_admissible",
    "choose_gamma",
    "choose_polyplace",
    "jsonable",
    "noise",
    "public_grid",
]

# Each public name loads its module on first use (dpknn.utils.lazy): importing the package stays cheap.
__getattr__, __dir__ = lazy_exports(__name__, {
    "DiscreteGaussian": "dpknn.mechanisms.additive",
    "Gaussian": "dpknn.mechanisms.additive",
    "Geometric": "dpknn.mechanisms.additive",
    "Laplace": "dpknn.mechanisms.additive",
    "CuratorDiagnostics": "dpknn.mechanisms.base",
    "Mechanism": "dpknn.mechanisms.base",
    "Release": "dpknn.mechanisms.base",
    "jsonable": "dpknn.mechanisms.base",
    "public_grid": "dpknn.mechanisms.base",
    "ProportionEstimate": "dpknn.mechanisms.randomized_response",
    "RandomizedResponse": "dpknn.mechanisms.randomized_response",
    "RandomSource": "dpknn.mechanisms.randomness",
    "as_source": "dpknn.mechanisms.randomness",
    "ExponentialMechanism": "dpknn.mechanisms.selection",
    "PermuteAndFlip": "dpknn.mechanisms.selection",
    "ScoreSelection": "dpknn.mechanisms.selection",
    "LN2": "dpknn.mechanisms.smooth",
    "CauchyCalibration": "dpknn.mechanisms.smooth",
    "PolyPlaceCalibration": "dpknn.mechanisms.smooth",
    "SmoothCauchy": "dpknn.mechanisms.smooth",
    "SmoothPolyPlace": "dpknn.mechanisms.smooth",
    "cauchy_admissible": "dpknn.mechanisms.smooth",
    "choose_gamma": "dpknn.mechanisms.smooth",
    "choose_polyplace": "dpknn.mechanisms.smooth",
})
