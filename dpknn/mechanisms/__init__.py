"""Mechanisms on one base, the exact samplers they draw from, and the sources of randomness.

Every noisy number, randomized bit or private choice the package makes comes from a subclass of
:class:`Mechanism`: additive noise on a public grid (:mod:`~dpknn.mechanisms.additive`), smooth-
sensitivity noise (:mod:`~dpknn.mechanisms.smooth`), private selection
(:mod:`~dpknn.mechanisms.selection`) and randomized response. The samplers
(:mod:`~dpknn.mechanisms.noise`) and the sources of bits (:mod:`~dpknn.mechanisms.randomness`) are
used only by the mechanisms.
"""

from dpknn.mechanisms import noise
from dpknn.mechanisms.additive import DiscreteGaussian, Gaussian, Geometric, Laplace
from dpknn.mechanisms.base import CuratorDiagnostics, Mechanism, Release, jsonable, public_grid
from dpknn.mechanisms.randomized_response import ProportionEstimate, RandomizedResponse
from dpknn.mechanisms.randomness import RandomSource, as_source
from dpknn.mechanisms.selection import ExponentialMechanism, PermuteAndFlip, ScoreSelection
from dpknn.mechanisms.smooth import (
    LN2,
    CauchyCalibration,
    PolyPlaceCalibration,
    SmoothCauchy,
    SmoothPolyPlace,
    cauchy_admissible,
    choose_gamma,
    choose_polyplace,
)

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
