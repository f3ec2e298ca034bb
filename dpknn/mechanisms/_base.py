"""Mechanisms, the :class:`Release` they publish, and the curator's confidential diagnostics.

**What is published.** Every DP output of the package publishes one record type,
:class:`PublishedRecord`: its (ε, δ), its privacy unit as a value (:class:`PrivacyUnit`, the neighbouring
relation the guarantee holds for, under the one key ``privacy_unit``), its public parameters and its public
parts; :func:`to_json` is the one strict serialiser of what is published. A :class:`Release` is the record of
one released value: the value, the mechanism's name and public parameters only (the grid, γ, the global
sensitivity of a global mechanism, the query's bounds and conditions), plus its public sub-releases. A
synthesiser's or DP k-means' record holds the public inputs and what the fit released. Everything that depends
on the data (L1(D), a smooth bound S(D), the noise scale calibrated to it, released-count clamps, row counts)
is kept in :class:`CuratorDiagnostics`: a :class:`Release` carries them beside its public fields
(``diagnostics``, which :meth:`Release.to_dict` never writes; a pickle of a release is the curator's, not a
publication), a synthesiser and DP k-means in ``curator_``. A mechanism puts such a number there when it
computes it (a Laplace mechanism whose Δ came from a released count is built with
``published_sensitivity=False``), never into the published parameters to be taken out again.

**How numbers are released.** Every released value is an integer number of steps of a public
grid, a power of two derived from public parameters only. The true value is rounded to the grid
and an integer noise drawn by an exact sampler (:mod:`dpknn.mechanisms._noise`) is added; the rounding is
charged in the sensitivity. Nothing depends on floating-point noise, so the low-order bits of a
release reveal nothing (Mironov 2012).

Neighbouring relation throughout: add or remove one record. ``rng=None`` draws from the
operating system's CSPRNG; seeds are for reproducibility only.

References
----------
.. [1] Dwork, McSherry, Nissim, Smith (2006). "Calibrating noise to sensitivity in private data
   analysis".
.. [2] Ghosh, Roughgarden, Sundararajan (2012). "Universally utility-maximizing privacy
   mechanisms" (geometric mechanism).
.. [3] Canonne, Kamath, Steinke (2020). "The discrete Gaussian for differential privacy",
   Theorem 7 and Algorithms 1-3.
.. [4] Balle, Wang (2018). "Improving the Gaussian mechanism for differential privacy", Theorem 8.
.. [5] Nissim, Raskhodnikova, Smith (2007), Lemma 2.6; Clifton et al. (2022), Theorems 3.6 and
   3.8 with the exact constants (``docs/privacy.md``).
.. [6] Mironov (2012). "On significance of the least significant bits for differential privacy".
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import json
import math
import numbers
import typing
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType

import numpy as np

from dpknn.utils._validation import Constraint, check_params, check_positive_real

__all__ = [
    "CuratorDiagnostics",
    "Mechanism",
    "PrivacyUnit",
    "PublishedRecord",
    "Release",
    "check_grid",
    "exact_epsilon",
    "from_grid",
    "grid_steps",
    "in_units",
    "jsonable",
    "noise_survival",
    "public_grid",
    "to_grid",
    "to_json",
]

# Grid steps below the public noise scale: fine enough to be invisible, coarse enough to be cheap.
_GRID_BITS = 20


def jsonable(v):
    """``v`` as plain JSON-ready data: releases as their publishable dicts, numpy scalars as Python ones,
    fractions as floats, mappings and sequences converted item by item.

    Parameters
    ----------
    v : object
        The value; mapping keys become strings, tuples become lists, anything else is returned as it is.
    """
    if isinstance(v, PublishedRecord):
        return v.to_dict()
    if isinstance(v, PrivacyUnit):
        return v.value
    if isinstance(v, (dict, MappingProxyType)):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return v.item()
    if isinstance(v, Fraction):
        return float(v)
    return v


def to_json(obj, *, ascii_only=False):
    """Strict JSON of ``obj`` (no NaN or Infinity, nothing turned into a string behind the caller's back), after
    :func:`jsonable`: the one serialiser of what the package publishes.

    Parameters
    ----------
    obj : object
        A record, or plain data holding records (converted by :func:`jsonable`).
    ascii_only : bool, default False
        Escape non-ASCII characters. Off by default, so that ledger labels such as "AGE ≥ 16" read as written
        (files are UTF-8); the synthesis sidecar has always been escaped.

    Raises
    ------
    TypeError
        A value JSON cannot hold (an object no rule above converts).
    ValueError
        NaN or an infinity.
    """
    return json.dumps(jsonable(obj), indent=2, allow_nan=False, ensure_ascii=ascii_only)


class PrivacyUnit(str, enum.Enum):
    """The privacy unit of a guarantee: the neighbouring relation ε and δ hold for.

    Every DP output of dpknn is (ε, δ)-DP for :attr:`ADD_REMOVE`: data sets that differ by one record added or
    removed (one person's row). :attr:`REPLACE` (one record's values changed, the size public) appears where a
    transformation states what it assumes, as resizing does. Published under the key ``privacy_unit`` as its
    value, the words below.
    """

    ADD_REMOVE = "add/remove one record"
    REPLACE = "replace one record"

    def __str__(self):
        return self.value

    @classmethod
    def parse(cls, value):
        """The unit named by ``value``: a unit, its published words, or the short names ``"add_remove"`` and
        ``"replace"`` of a processing plan.

        Parameters
        ----------
        value : PrivacyUnit or str
            The unit or one of its names.
        """
        if isinstance(value, cls):
            return value
        short = {"add_remove": cls.ADD_REMOVE, "replace": cls.REPLACE}
        try:
            return short[value] if value in short else cls(value)
        except (TypeError, ValueError):   # TypeError: an unhashable value, such as a list from a TOML file
            raise ValueError(f"a privacy unit is 'add_remove' or 'replace' ({cls.ADD_REMOVE.value!r} or "
                             f"{cls.REPLACE.value!r}); got {value!r}.") from None


@dataclass(frozen=True, kw_only=True)
class PublishedRecord:
    """What one DP output publishes: its budget, its privacy unit, its public parameters and public parts.

    The one record type of dpknn's outputs (a released value is the subclass :class:`Release`). It holds
    released values and public inputs only; data-dependent numbers go to :class:`CuratorDiagnostics` (a
    release's ``diagnostics`` field, never serialised; an estimator's ``curator_``). A parameter may not take
    a header's name (``epsilon``, ``delta``, ``privacy_unit``) or ``parts``.

    Parameters
    ----------
    epsilon : float
        The ε the output spent.
    delta : float
        The δ the output spent.
    unit : PrivacyUnit, default PrivacyUnit.ADD_REMOVE
        The neighbouring relation ε and δ hold for.
    params : mapping
        Public parameters and released structure, by name (kept read-only).
    parts : mapping of str to PublishedRecord
        Public records this one was computed from (kept read-only).
    """

    epsilon: float
    delta: float
    unit: PrivacyUnit = PrivacyUnit.ADD_REMOVE
    params: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    parts: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self):
        object.__setattr__(self, "unit", PrivacyUnit.parse(self.unit))
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        object.__setattr__(self, "parts", MappingProxyType(dict(self.parts)))
        clash = sorted({"epsilon", "delta", "privacy_unit", "parts"} & set(self.params))
        if clash:
            raise ValueError(f"a record's parameters may not be named {clash}: the header (epsilon, delta, "
                             "privacy_unit) and the parts are the record's own fields.")

    # A mappingproxy cannot be pickled: pickle plain dicts and make them read-only again.
    def __getstate__(self):
        return {**self.__dict__, "params": dict(self.params), "parts": dict(self.parts)}

    def __setstate__(self, state):
        for name, value in state.items():
            object.__setattr__(self, name, value)
        self.__post_init__()

    def header(self):
        """The budget and the unit, as every published record begins."""
        return {"epsilon": self.epsilon, "delta": self.delta, "privacy_unit": self.unit.value}

    def to_dict(self):
        """The record as JSON-ready data: the header, then the public parameters by name, then the parts."""
        out = {**self.header(), **jsonable(self.params)}
        if self.parts:
            out["parts"] = {k: v.to_dict() for k, v in self.parts.items()}
        return out


@dataclass(frozen=True)
class CuratorDiagnostics:
    """CONFIDENTIAL: data-dependent quantities behind a release, for the curator only.

    L1(D), smooth bounds, noise scales calibrated to them, clamped counts and row counts are
    exact functions of the data: publishing any of them can tell neighbouring data sets apart
    with certainty. They are kept here and never appear in :meth:`Release.to_dict`.

    Parameters
    ----------
    values : mapping of str to anything
        The quantities by name (kept read-only).
    """

    values: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self):
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))

    # A mappingproxy cannot be pickled: pickle plain dicts and make them read-only again.
    def __getstate__(self):
        return {"values": dict(self.values)}

    def __setstate__(self, state):
        object.__setattr__(self, "values", MappingProxyType(dict(state["values"])))

    def to_dict(self):
        """A JSON-ready dict, marked confidential (for ``--diagnostics`` files only)."""
        return {"confidential": True, **jsonable(self.values)}


@dataclass(frozen=True, kw_only=True, init=False)
class Release(PublishedRecord):
    """A differentially private release of one value: what may be published.

    Attributes
    ----------
    value : float or int
        The released value (an integer number of ``params["grid"]`` steps).
    epsilon, delta : float
        Privacy cost of this release and its parts.
    mechanism : str
        Name of the mechanism.
    unit : PrivacyUnit
        The neighbouring relation ε and δ hold for (add/remove one record).
    params : mapping
        Public parameters only: grid, γ, α, β, global sensitivities, the query, its bounds.
    parts : mapping of str to Release
        Public sub-releases this one was computed from (a mean's count, a proportion's
        numerator and denominator).
    diagnostics : CuratorDiagnostics
        Confidential, data-dependent quantities (empty for a global mechanism); never serialised
        by :meth:`to_dict`.
    clamped : {"low", "high"} or None
        ``"low"`` or ``"high"`` when post-processing moved the mechanism's noisy output to that end of
        the release's public range (a count below 0 released as 0, a mean above its bounds as the
        upper bound): the value says little then, a released 0 is not a true 0. A function of the
        noisy output alone, so public; :meth:`to_dict` writes it when set.
    """

    value: float | int
    mechanism: str
    diagnostics: CuratorDiagnostics = field(default_factory=CuratorDiagnostics, repr=False, compare=False)
    clamped: str | None = None

    # Written out rather than generated, so that the order of the arguments stays the one Release has always had
    # (value, epsilon, delta, mechanism, params, parts, diagnostics, clamped), positional or by name; the record's
    # unit, new with PublishedRecord, is keyword-only.
    def __init__(self, value, epsilon, delta, mechanism, params=None, parts=None, diagnostics=None, clamped=None, *,
                 unit=PrivacyUnit.ADD_REMOVE):
        for name, v in (("value", value), ("epsilon", epsilon), ("delta", delta), ("mechanism", mechanism),
                        ("params", {} if params is None else params), ("parts", {} if parts is None else parts),
                        ("diagnostics", CuratorDiagnostics() if diagnostics is None else diagnostics),
                        ("clamped", clamped), ("unit", unit)):
            object.__setattr__(self, name, v)
        self.__post_init__()

    def to_dict(self):
        """The publishable fields as a JSON-ready dict (no curator diagnostics): the value, the record's header,
        the mechanism, its public parameters under ``params`` (beside the value they are the mechanism's, not the
        output's) and the parts."""
        out = {"value": jsonable(self.value), **self.header(),
               "mechanism": self.mechanism, "params": jsonable(self.params),
               "parts": {k: v.to_dict() for k, v in self.parts.items()}}
        if self.clamped is not None:
            out["clamped"] = self.clamped
        return out

    def clamp(self, low, high):
        """This release post-processed into the public range [low, high]: its value clipped there and
        :attr:`clamped` set when the clip moved it (the noisy value alone decides, so this is public)."""
        side = "low" if self.value < low else "high" if self.value > high else None
        if side is None:
            return self
        return dataclasses.replace(self, value=type(self.value)(low if side == "low" else high), clamped=side)

    def curator_dict(self):
        """CONFIDENTIAL: the diagnostics of this release and of its parts."""
        out = self.diagnostics.to_dict()
        if self.parts:
            out["parts"] = {k: v.curator_dict() for k, v in self.parts.items()}
        return out


# --- the public grid ----------------------------------------------------------------------------
def public_grid(scale, *, bits=_GRID_BITS):
    """The power of two 2^(floor(log2(scale)) - bits), for a *public* scale > 0.

    ``scale`` must be computed from public parameters only (bounds, ε, a global sensitivity,
    released values), never from L1(D) or n: the grid is published with every release.

    Parameters
    ----------
    scale : float
        The public scale, a positive real (e.g. the noise scale of the release).
    bits : int, default 20
        How many binary orders of magnitude the grid lies below ``scale``.
    """
    scale = check_positive_real(scale, "scale")
    e = math.floor(math.log2(scale)) - bits
    return math.ldexp(1.0, max(e, -1000))


def check_grid(grid):
    """``grid`` as a float if it is a positive power of two (a public grid), else a clear error."""
    return PublicGrid().check(grid, "grid")


class PublicGrid(Constraint):
    """A positive power of two: the public grid released numbers lie on."""

    def check(self, value, name):
        g = check_positive_real(value, name)
        m, _ = math.frexp(g)
        if m != 0.5:
            raise ValueError(f"{name} must be a power of two (public), got {value!r}.")
        return g

    def invalid_values(self):
        return [3.0, 0.0, -0.5, "1"]


def to_grid(value, grid):
    """round(value / grid) as an exact integer (value a finite real)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise TypeError(f"value must be a real number, got {type(value).__name__} {value!r}.")
    if isinstance(value, (float, np.floating)) and not math.isfinite(value):
        raise ValueError(f"value must be finite, got {value!r}.")
    return round(Fraction(value) / Fraction(grid))


def from_grid(m, grid):
    """The released float m · grid (post-processing of the integer m)."""
    return float(Fraction(m) * Fraction(grid))


def in_units(z, grid, size):
    """Noise of ``z`` grid steps in value units (an array for tests, a float for one draw)."""
    return z * grid if size is not None else from_grid(z, grid)


def exact_epsilon(epsilon):
    """ε as the exact rational it was given as (a float's own value, or a Fraction budget share),
    so that a noise scale derived from it is the same whichever caller built the mechanism."""
    return Fraction(epsilon)


# Mechanisms by name, so that the law of a release's noise can be found from the release alone (noise_survival).
_BY_NAME = {}


class Mechanism(abc.ABC):
    """Base of every mechanism in dpknn that draws randomness for privacy: each noisy number,
    randomized bit or private choice the package publishes or uses comes from a subclass's
    :meth:`release` or :meth:`release_array`.

    A subclass sets ``name``, ``epsilon`` and ``delta`` (its privacy cost under its stated
    neighbouring relation, by the theorem its docstring states) and implements
    :meth:`public_params` (what a release may publish about it) and :meth:`release`. Additive
    noise mechanisms also implement :meth:`variance` (of one coordinate's noise, in value units)
    and :meth:`noise`; :meth:`release_array` releases every coordinate of a vector at once, with
    the subclass's guarantee for the vector's sensitivity (L1 for Laplace and geometric noise).
    """

    name = None
    delta = 0.0
    #: Declared constraints of the constructor's parameters (:mod:`dpknn.utils._validation`),
    #: checked by :meth:`checked_params` before anything is derived from them.
    parameter_constraints: typing.ClassVar[dict] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if isinstance(cls.__dict__.get("name"), str):
            _BY_NAME[cls.__dict__["name"]] = cls

    @classmethod
    def noise_survival(cls, release, x):
        """P(Z > x) for the noise Z that ``release`` added, in value units (CONFIDENTIAL where the
        noise scale is data-dependent: it is read from the release's curator diagnostics).

        The noise is symmetric, so P(Z < −x) is the same number. An additive mechanism gives its
        exact law; a grid finer than the noise scale is ignored (the noise is taken as continuous
        there), an integer noise is exact. None for a mechanism without numeric noise."""
        return None

    def checked_params(self, **params):
        """``params`` checked against the class's ``parameter_constraints`` (converted values)."""
        return check_params(type(self).parameter_constraints, params)

    @abc.abstractmethod
    def public_params(self):
        """The mechanism's public parameters (never a data-dependent number)."""

    @abc.abstractmethod
    def release(self, value, *, rng=None):
        """Release ``value`` (Generator, int seed or None = OS CSPRNG for ``rng``) as a :class:`Release`."""

    def variance(self):
        """Variance of the noise of one coordinate, in value units."""
        raise NotImplementedError(f"{type(self).__name__} does not add numeric noise.")

    def noise(self, size=None, *, rng=None):
        """Noise alone, in value units: a float for ``size=None``, else an array (for tests)."""
        raise NotImplementedError(f"{type(self).__name__} does not add numeric noise.")

    def release_array(self, values, *, rng=None):
        """Release every coordinate of ``values`` at once; an array of released values."""
        raise NotImplementedError(f"{type(self).__name__} releases one value at a time; use release().")

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self.public_params().items())
        cost = f"epsilon={self.epsilon!r}" + (f", delta={self.delta!r}" if self.delta else "")
        return f"{type(self).__name__}({cost}{', ' if params else ''}{params})"


def noise_survival(release, x):
    """P(Z > x) (an array like ``x``) for the noise Z of ``release``'s last step, from its mechanism's
    exact law (:meth:`Mechanism.noise_survival`), or None when its mechanism adds no numeric noise.

    For the curator's tails (``dpknn.releases.curator_report``): heavy-tailed smooth noise makes errors of
    many noise scales far more likely than a standard deviation or a 90% interval suggests."""
    cls = _BY_NAME.get(release.mechanism)
    return None if cls is None else cls.noise_survival(release, np.asarray(x, dtype=np.float64))


def grid_steps(values, grid):
    """round(values / grid) for an array of finite reals, exactly (the grid is a power of two, so
    the division is exact and numpy's rint rounds half to even like Python's round)."""
    values = np.asarray(values, dtype=np.float64)
    if not np.isfinite(values).all():
        raise ValueError("values must be finite.")
    steps = np.rint(values / grid)
    if steps.size and np.abs(steps).max() >= 2.0**62:
        raise ValueError(f"values are too large for the grid {grid!r}: more than 2^62 steps.")
    return steps.astype(np.int64)
