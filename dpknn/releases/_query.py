"""Queries as validated records: what is asked, what it costs, and which theorem releases it.

A query (:class:`Count`, :class:`Proportion`, :class:`Mean`, :class:`Variance`) holds public
inputs only: conditions, bounds, budgets, the method and the smooth noise. :meth:`Query.checked`
validates it against a schema before any data are read, and :attr:`Query.cost` is its total ε by
sequential composition, so a budget can be checked before anything is computed.
:func:`dpknn.releases.release` makes the release.

Neighbouring relation throughout: add or remove one record (Clifton et al. 2022, §5).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from dataclasses import dataclass

from dpknn.mechanisms._noise import gamma_fraction
from dpknn.mechanisms._smooth import SmoothCauchy, SmoothPolyPlace, choose_gamma, choose_polyplace
from dpknn.releases._sensitivity import check_bounds
from dpknn.schema._attributes import Categorical
from dpknn.schema._conditions import check_condition
from dpknn.utils._validation import check_positive_real

__all__ = ["METHODS", "NOISES", "Count", "Mean", "Proportion", "Query", "SmoothNoise", "Variance",
           "available_conditions", "check_where", "involves_imputed", "numeric_bounds"]

METHODS = ("smooth", "ignore_missing")
# Noise of the smooth releases: PolyPlace (the default) or the paper's generalized Cauchy.
NOISES = ("polyplace", "cauchy")


@dataclass(frozen=True)
class SmoothNoise:
    """The noise of smooth-sensitivity releases: ``noise`` in :data:`NOISES` and, for the generalized
    Cauchy only, its γ rule (``"optimal"``, ``"paper"`` or a multiple of 1/4 above 1).

    Attributes
    ----------
    noise : {"polyplace", "cauchy"}, default "polyplace"
        ``"polyplace"``: :class:`~dpknn.mechanisms.SmoothPolyPlace` (any ε > ln 2); ``"cauchy"``: the paper's
        generalized Cauchy, :class:`~dpknn.mechanisms.SmoothCauchy` (ε > 2 ln 2).
    gamma : "optimal", "paper" or float, default "optimal"
        The γ rule of the generalized Cauchy noise (:func:`~dpknn.mechanisms.choose_gamma`); a number needs
        ``noise="cauchy"``.
    """

    noise: str = "polyplace"
    gamma: object = "optimal"

    def __post_init__(self):
        if self.noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {self.noise!r}.")
        if not (isinstance(self.gamma, str) and self.gamma in ("optimal", "paper")):
            if isinstance(self.gamma, str):
                raise ValueError(f"gamma must be 'optimal', 'paper' or a number > 1, got {self.gamma!r}.")
            gamma_fraction(self.gamma)   # a multiple of 1/4 > 1; admissibility is checked per release
            if self.noise != "cauchy":
                raise ValueError(f"gamma={self.gamma!r} sets the generalized Cauchy noise; pass noise='cauchy' "
                                 "with it.")

    def override(self, noise=None, gamma=None):
        """This noise with a query's own ``noise`` and ``gamma`` where they are given."""
        noise = self.noise if noise is None else noise
        if noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {noise!r}.")
        if gamma is not None and noise != "cauchy":
            raise ValueError(f"gamma={gamma!r} sets the generalized Cauchy noise; pass noise='cauchy' with it.")
        return SmoothNoise(noise, self.gamma if gamma is None else gamma)

    def check_epsilon(self, epsilon):
        """Refuse, before anything is read, an ε this noise cannot use."""
        if self.noise == "cauchy":
            choose_gamma(epsilon, self.gamma)
        else:
            choose_polyplace(epsilon)

    def mechanism(self, epsilon, bound, grid):
        """The smooth-sensitivity mechanism for the β-smooth bound S(D) = ``bound``."""
        if self.noise == "cauchy":
            return SmoothCauchy(epsilon=epsilon, smooth_bound=bound, grid=grid, gamma=self.gamma)
        return SmoothPolyPlace(epsilon=epsilon, smooth_bound=bound, grid=grid)


def check_where(schema, where, name="where"):
    """Conditions ``where`` (None: all records) checked against ``schema``, as a dict."""
    if where is None:
        return {}
    if not isinstance(where, dict):
        raise TypeError(f"{name} must be a dict of column -> (low, high) or list of values, got {where!r}.")
    names = set(schema.known_names + schema.imputed_names)
    out = {}
    for col, spec in where.items():
        if col not in names:
            raise ValueError(f"{name} names column {col!r}, which is not in the schema (attributes: {sorted(names)}).")
        out[col] = check_condition(schema.attribute(col), spec, f"{name}[{col!r}]")
    return out


def numeric_bounds(schema, column, bounds):
    """The public bounds of a mean or variance of ``column`` (None: the schema's declared range)."""
    names = schema.known_names + schema.imputed_names
    if column not in names:
        raise ValueError(f"column {column!r} is not in the schema (attributes: {list(names)}).")
    attr = schema.attribute(column)
    if isinstance(attr, Categorical):
        raise ValueError(f"column {column!r} is categorical; a mean or variance needs a numeric attribute.")
    return check_bounds((attr.lower, attr.upper) if bounds is None else bounds)


def available_conditions(schema, where, columns):
    """``where`` and a condition that holds exactly where each imputed attribute of ``columns`` is
    observed (its whole public domain; a condition never holds on a missing value).

    Under ``ignore_missing`` a query is answered on its available cases, the records whose values
    of its own attributes are observed: the count a mean or variance divides by is over those of its
    sum (``columns``: the column), and a proportion's denominator over those of its numerator
    (``columns``: the numerator's conditions). The conditions are public: they name domains only.
    """
    out = dict(where)
    for col in columns:
        if col in schema.imputed_names and col not in out:
            a = schema.attribute(col)
            out[col] = list(a.categories) if isinstance(a, Categorical) else (a.lower, a.upper)
    return out


def involves_imputed(schema, *columns):
    """Whether any of ``columns`` (iterables of names, e.g. conditions) is an imputed attribute."""
    a = set(schema.imputed_names)
    return any(col in a for group in columns for col in group)


def total_epsilon(**parts):
    """The ε of a query made of several releases; a clear error when it is beyond the float range."""
    try:
        total = math.fsum(parts.values())
    except OverflowError:
        total = math.inf
    if not math.isfinite(total):
        given = ", ".join(f"{name}={value:g}" for name, value in parts.items())
        raise ValueError(f"the total epsilon of this query ({given}) exceeds the largest float, "
                         f"{sys.float_info.max:g}; choose epsilons whose sum is finite.")
    return total


def _check_method(method):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}. The paper's non-private "
                         "'global' comparison lives in dpknn.experiments._census.")


@dataclass(frozen=True, kw_only=True)
class Query:
    """Fields every query has: its ``method`` (``"smooth"`` or ``"ignore_missing"``) and the smooth noise
    (None: the caller's default) and γ (Cauchy noise only).

    Attributes
    ----------
    method : {"smooth", "ignore_missing"}, default "smooth"
        ``"smooth"``: on the imputed data, with noise calibrated to L1(D) when the query reads an imputed
        attribute; ``"ignore_missing"``: on the query's available cases, with ordinary mechanisms.
    noise : {"polyplace", "cauchy"} or None, default None
        Noise of the smooth releases; None: the caller's default (a :class:`SmoothNoise`).
    gamma : "optimal", "paper", float or None, default None
        γ rule of the generalized Cauchy noise (``"optimal"``, ``"paper"`` or a multiple of 1/4 above 1);
        it needs ``noise="cauchy"``, given here or by the caller. None: the caller's default.
    """

    method: str = "smooth"
    noise: str | None = None
    gamma: object = None

    #: The budgets of the query, in the order its releases spend them.
    budgets = ("epsilon",)

    @property
    def cost(self):
        """Total ε of the query (sequential composition of its releases)."""
        return total_epsilon(**{name: getattr(self, name) for name in self.budgets})

    def involves(self, schema):
        """Whether the query reads an imputed attribute (its smooth releases then pay for L1(D))."""
        return involves_imputed(schema, *self.columns())

    def columns(self):
        """The groups of columns the query reads."""
        return (self.where,)

    def theorem(self, schema):
        """Which result its last release uses on ``schema``: a theorem of Clifton et al. (2022, §5), or the
        ordinary mechanism of a query that reads no imputed attribute."""
        raise NotImplementedError

    def checked(self, schema):
        """The query with its inputs validated against ``schema`` (conditions as dicts, budgets floats)."""
        _check_method(self.method)
        return dataclasses.replace(self, **{name: check_positive_real(getattr(self, name), name)
                                            for name in self.budgets},
                                   where=check_where(schema, self.where))


@dataclass(frozen=True, kw_only=True)
class Count(Query):
    """Count of the records (after imputation) satisfying ``where``: Theorem 5.1 / Corollary 5.2 when it
    reads an imputed attribute, the geometric mechanism otherwise.

    Attributes
    ----------
    where : dict or None, default None
        Conditions on the records counted: column -> ``(low, high)`` range (None: an open end) or, for an
        Ordinal or Categorical attribute, a list of values; combined with AND. None: all records.
    epsilon : float
        Budget of the count, > 0 (above ln 2, or 2 ln 2 with Cauchy noise, for a smooth release).
    method, noise, gamma
        As for every :class:`Query`.
    """

    where: dict | None = None
    epsilon: float

    def theorem(self, schema):
        return "5.1" if self.method == "smooth" and self.involves(schema) else "geometric"


@dataclass(frozen=True, kw_only=True)
class Proportion(Query):
    """Share of the records of ``within`` that satisfy ``where``: two counts (numerator with ``epsilon``,
    denominator with ``denominator_epsilon``, default ``epsilon``), their ratio clipped to [0, 1].

    Attributes
    ----------
    where : dict or None, default None
        Conditions of the numerator beside ``within`` (the numerator counts ``within`` AND ``where``; a
        column in both is refused), in the form of a count's ``where``. None: no further condition.
    within : dict or None, default None
        Conditions of the denominator, in the same form. None: all records.
    epsilon : float
        Budget of the numerator, > 0.
    denominator_epsilon : float or None, default None
        Budget of the denominator; None: ``epsilon`` (the query then costs 2 ``epsilon``).
    method, noise, gamma
        As for every :class:`Query`.
    """

    where: dict | None = None
    within: dict | None = None
    epsilon: float
    denominator_epsilon: float | None = None

    @property
    def cost(self):
        den = self.epsilon if self.denominator_epsilon is None else self.denominator_epsilon
        return total_epsilon(epsilon=self.epsilon, denominator_epsilon=den)

    def columns(self):
        return (self.where, self.within)

    def theorem(self, schema):
        return "5.1" if self.method == "smooth" and self.involves(schema) else "geometric"

    def checked(self, schema):
        _check_method(self.method)
        epsilon = check_positive_real(self.epsilon, "epsilon")
        den = (epsilon if self.denominator_epsilon is None
               else check_positive_real(self.denominator_epsilon, "denominator_epsilon"))
        return dataclasses.replace(self, epsilon=epsilon, denominator_epsilon=den,
                                   where=check_where(schema, self.where),
                                   within=check_where(schema, self.within, "within"))


@dataclass(frozen=True, kw_only=True)
class Mean(Query):
    """Mean of ``column`` clamped to ``bounds`` over the records of ``where`` (in the column's universe):
    a count with ``count_epsilon``, then Theorem 5.4 / Corollary 5.5 (variant a or b).

    Attributes
    ----------
    column : str
        A numeric (Ordinal or Continuous) attribute of the schema.
    where : dict or None, default None
        Conditions on the records averaged: column -> ``(low, high)`` range (None: an open end) or, for an
        Ordinal or Categorical attribute, a list of values; combined with AND. None: all records.
    bounds : (low, high) or None, default None
        Public bounds the values are clamped to, finite with low < high; None: the schema's declared range.
    epsilon : float
        Budget of the mean, > 0.
    count_epsilon : float
        Budget of the count of the subpopulation the sum is divided by, > 0.
    method, noise, gamma
        As for every :class:`Query`.
    """

    column: str
    where: dict | None = None
    bounds: tuple | None = None
    epsilon: float
    count_epsilon: float

    budgets = ("epsilon", "count_epsilon")

    def columns(self):
        return (self.where, [self.column])

    def theorem(self, schema):
        if self.method != "smooth" or not self.involves(schema):
            return "no imputation"
        return "5.4b" if involves_imputed(schema, self.where) else "5.4a"

    def checked(self, schema):
        query = super().checked(schema)
        return dataclasses.replace(query, bounds=numeric_bounds(schema, self.column, self.bounds))


@dataclass(frozen=True, kw_only=True)
class Variance(Mean):
    """Variance of ``column`` clamped to ``bounds``: a count (``count_epsilon``), a mean
    (``mean_epsilon``), then Theorem 5.6 / Corollary 5.7 about the released mean.

    Attributes
    ----------
    column : str
        A numeric (Ordinal or Continuous) attribute of the schema.
    where : dict or None, default None
        Conditions on the records whose values are taken: column -> ``(low, high)`` range (None: an open end) or, for an
        Ordinal or Categorical attribute, a list of values; combined with AND. None: all records.
    bounds : (low, high) or None, default None
        Public bounds the values are clamped to, finite with low < high; None: the schema's declared range.
    epsilon : float
        Budget of the variance, > 0.
    count_epsilon : float
        Budget of the count of the subpopulation, > 0.
    mean_epsilon : float
        Budget of the mean the variance is taken about, > 0.
    method, noise, gamma
        As for every :class:`Query`.
    """

    mean_epsilon: float

    budgets = ("epsilon", "mean_epsilon", "count_epsilon")

    def theorem(self, schema):
        return "5.6"
