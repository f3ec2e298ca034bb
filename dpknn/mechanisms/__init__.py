"""Mechanisms on one base, the exact samplers they draw from, and the sources of randomness.

Every noisy number, randomized bit or private choice the package makes comes from a subclass of
:class:`Mechanism`, which publishes a :class:`Release` and keeps :class:`CuratorDiagnostics`: additive noise on
a public grid (:class:`Laplace`, :class:`Geometric`, :class:`Gaussian`, :class:`DiscreteGaussian`), smooth-
sensitivity noise (:class:`SmoothCauchy`, :class:`SmoothPolyPlace`), private selection
(:class:`ExponentialMechanism`, :class:`PermuteAndFlip`) and :class:`RandomizedResponse`, all drawing from a
:class:`RandomSource`. The exact samplers (``dpknn/mechanisms/_noise.py``) are used only by the mechanisms.
"""

from dpknn.utils._lazy import lazy_exports

__all__ = [
    "CuratorDiagnostics",
    "DiscreteGaussian",
    "ExponentialMechanism",
    "Gaussian",
    "Geometric",
    "Laplace",
    "Mechanism",
    "PermuteAndFlip",
    "PrivacyUnit",
    "PublishedRecord",
    "RandomSource",
    "RandomizedResponse",
    "Release",
    "SmoothCauchy",
    "SmoothPolyPlace",
    "to_json",
]

# Each public name loads its module on first use (dpknn.utils._lazy): importing the package stays cheap.
# Names that left the public list still load, with a DeprecationWarning.
__getattr__, __dir__ = lazy_exports(__name__, {
    "DiscreteGaussian": "dpknn.mechanisms._additive",
    "Gaussian": "dpknn.mechanisms._additive",
    "Geometric": "dpknn.mechanisms._additive",
    "Laplace": "dpknn.mechanisms._additive",
    "CuratorDiagnostics": "dpknn.mechanisms._base",
    "Mechanism": "dpknn.mechanisms._base",
    "Release": "dpknn.mechanisms._base",
    "PrivacyUnit": "dpknn.mechanisms._base",
    "PublishedRecord": "dpknn.mechanisms._base",
    "to_json": "dpknn.mechanisms._base",
    "RandomizedResponse": "dpknn.mechanisms._randomized_response",
    "RandomSource": "dpknn.mechanisms._randomness",
    "ExponentialMechanism": "dpknn.mechanisms._selection",
    "PermuteAndFlip": "dpknn.mechanisms._selection",
    "SmoothCauchy": "dpknn.mechanisms._smooth",
    "SmoothPolyPlace": "dpknn.mechanisms._smooth",
}, internal={
    "jsonable": "dpknn.mechanisms._base",
    "public_grid": "dpknn.mechanisms._base",
    "ProportionEstimate": "dpknn.mechanisms._randomized_response",
    "as_source": "dpknn.mechanisms._randomness",
    "ScoreSelection": "dpknn.mechanisms._selection",
    "CauchyCalibration": "dpknn.mechanisms._smooth",
    "LN2": "dpknn.mechanisms._smooth",
    "PolyPlaceCalibration": "dpknn.mechanisms._smooth",
    "cauchy_admissible": "dpknn.mechanisms._smooth",
    "choose_gamma": "dpknn.mechanisms._smooth",
    "choose_polyplace": "dpknn.mechanisms._smooth",
})
