"""One release path: ``release(query, statistics, accountant=..., rng=...)``.

The query (:mod:`dpknn.releases._query`) is validated against the public schema and its whole cost
checked against the accountant before any statistic is read; its releases are then made by the
mechanisms of Clifton et al. (2022, §5) on the counts and exact sums of ``statistics``
(:mod:`dpknn.releases._statistics`) and recorded in the accountant one by one. A query that does
not read an imputed attribute is not affected by imputation and uses an ordinary mechanism
(geometric counts, Laplace means and variances: the paper's remark at the start of §5).

Every release is post-processed into the public range of its query: a count is at least 0, a
proportion lies in [0, 1], a mean in the declared bounds [a, b], a variance in [0, (b - a)²/4].
What is published is :meth:`~dpknn.mechanisms.Release.to_dict`; L1(D), S(D), the true counts and
the noise scales derived from them stay in its curator diagnostics.

Neighbouring relation: add or remove one record.

References
----------
.. [1] Clifton, Hanson, Kifer, Shamis, et al. (2022). "Differentially private k-nearest
   neighbor missing data imputation". Theorems 5.1, 5.4, 5.6; Corollaries 5.2, 5.5, 5.7.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

from dpknn.accounting import BudgetAccountant
from dpknn.mechanisms._additive import Geometric, Laplace
from dpknn.mechanisms._base import CuratorDiagnostics, Release, public_grid
from dpknn.releases._query import Count, Mean, Proportion, SmoothNoise, Variance, available_conditions, involves_imputed
from dpknn.releases._sensitivity import count_smooth, mean_global, mean_smooth, variance_global, variance_smooth
from dpknn.releases._statistics import Statistics, universe_of
from dpknn.schema._conditions import describe_conditions, public_conditions

__all__ = ["release"]

# Steps of the grid of a mean or variance below the scale of its bounds.
FINE_BITS = 60


def release(query, statistics, *, accountant, rng, smooth=None):
    """Release ``query`` on ``statistics``, charging ``accountant``.

    Parameters
    ----------
    query : Count, Proportion, Mean or Variance
    statistics : Statistics
        CONFIDENTIAL counts and sums of the imputed data.
    accountant : BudgetAccountant
        Checked for the query's whole cost before any statistic is read; every release is recorded.
    rng : RandomSource
        The source of all noise (:func:`dpknn.mechanisms._randomness.as_source`).
    smooth : SmoothNoise or None
        The smooth noise of a query that does not set its own; None: PolyPlace.

    Returns
    -------
    Release
    """
    if not isinstance(statistics, Statistics):
        raise TypeError(f"statistics must be a dpknn.releases.Statistics, got {type(statistics).__name__}.")
    if not isinstance(accountant, BudgetAccountant):
        raise TypeError(f"accountant must be a BudgetAccountant, got {accountant!r}.")
    smooth = SmoothNoise() if smooth is None else smooth
    for kind, make in _RELEASES.items():
        if type(query) is kind:
            return make(_Context(statistics, accountant, rng), query.checked(statistics.schema), smooth)
    raise TypeError(f"query must be a Count, Proportion, Mean or Variance, got {type(query).__name__}.")


@dataclasses.dataclass(frozen=True)
class _Context:
    statistics: Statistics
    accountant: BudgetAccountant
    rng: object

    @property
    def schema(self):
        return self.statistics.schema

    def record(self, rel, label):
        self.accountant.spend(rel.epsilon, rel.delta, label=label)
        return rel


def _where_text(where, universe=None):
    """The subpopulation of a ledger label, as text: the ledger is published and read by people. A statistic of
    an attribute with a universe is over the records inside it, and the label says so ("over all records" of a
    mean over the universe misled a reader)."""
    text = f" where {describe_conditions(where)}" if where else " over all records"
    if universe is None:
        return text
    inside = f"inside its universe ({describe_conditions(universe.where)})"
    return f" where {describe_conditions(where)}, {inside}" if where else f" over the records {inside}"


def _universe_param(universe):
    """The public ``universe`` parameter of a release over an attribute's universe (none if none)."""
    return {} if universe is None else {"universe": universe.to_public()}


# --- checks from public inputs alone -----------------------------------------------------------
# A query's mechanisms are checked before anything is released or read, L1(D) included: each check
# builds the query's mechanism at the public worst case (L1(D) counts records, so it is below 2^63,
# the row positions' range; the smallest size estimate; the widest spread about a mean), whose noise
# scale is the largest any data could give. A query that passes cannot fail on its data later (after a
# part of it was released and charged), and a refusal says nothing about the data.
MAX_L1 = 2**63 - 1


def _check_count(schema, epsilon, where, method, smooth):
    """Refuse a count the data could not be released with (public inputs only)."""
    _count_mechanism(schema, epsilon, where, method, smooth, MAX_L1)


def _check_mean(q, epsilon, s_min, involves_where, involves_col, smooth):
    """Refuse a mean (or a variance's mean) whose noise could overflow (public inputs only)."""
    _mean_mechanism(epsilon, s_min, q.bounds, involves_where, involves_col, q.method, smooth, MAX_L1)


# --- counts ------------------------------------------------------------------------------------
def _count_mechanism(schema, epsilon, where, method, smooth, l1):
    if method == "smooth" and involves_imputed(schema, where):
        return smooth.mechanism(epsilon, count_smooth(l1), 1)
    return Geometric(epsilon=epsilon, sensitivity=1)


def _count_release(ctx, where, epsilon, method, smooth, label, universe=None):
    involves = involves_imputed(ctx.schema, where)
    l1 = ctx.statistics.l1_for(list(where)) if method == "smooth" and involves else 0
    mech = _count_mechanism(ctx.schema, epsilon, where, method, smooth, l1)
    true = ctx.statistics.count(where, observed_only=method == "ignore_missing", universe=universe)
    rel = mech.release(true, rng=ctx.rng)
    # The noise-free centre the noise was added to: for the curator's tails (dpknn.releases.curator_report).
    diag = {**rel.diagnostics.values, "centre": true}
    if method == "smooth" and involves:
        diag.update(l1=l1, theorem="5.1")
    rel = dataclasses.replace(rel.clamp(0, math.inf),
                              params={**rel.params, "query": "count", "method": method,
                                      "where": public_conditions(where), "involves_imputed": involves},
                              diagnostics=CuratorDiagnostics(diag))
    return ctx.record(rel, label)


def _count(ctx, q, smooth):
    smooth = smooth.override(q.noise, q.gamma)
    ctx.accountant.check(q.epsilon)
    _check_count(ctx.schema, q.epsilon, q.where, q.method, smooth)
    return _count_release(ctx, q.where, q.epsilon, q.method, smooth, label=f"count{_where_text(q.where)}")


def _proportion(ctx, q, smooth):
    smooth = smooth.override(q.noise, q.gamma)
    both = {**q.within}
    for col, spec in q.where.items():
        if col in both:
            raise ValueError(f"column {col!r} appears in both where and within; merge the conditions.")
        both[col] = spec
    ctx.accountant.check(q.cost)
    _check_count(ctx.schema, q.epsilon, both, q.method, smooth)
    _check_count(ctx.schema, q.denominator_epsilon, q.within, q.method, smooth)
    num = _count_release(ctx, both, q.epsilon, q.method, smooth, label=f"proportion numerator{_where_text(both)}")
    den = _count_release(ctx, _available(ctx, q.method, q.within, q.where), q.denominator_epsilon, q.method, smooth,
                         label=f"proportion denominator{_where_text(q.within)}")
    # Clipped to [0, 1] before dividing, so that huge noisy counts cannot overflow a float.
    value = 0.0 if num.value <= 0 else 1.0 if num.value >= den.value else num.value / den.value
    # Above 1 (or 0/0): the ratio of the released counts left [0, 1] (the counts mark their own clamps).
    clamped = "high" if num.value > den.value else "low" if den.value == 0 else None
    return Release(value=value, epsilon=num.epsilon + den.epsilon, delta=0.0, mechanism="ratio of counts",
                   params={"query": "proportion", "method": q.method, "where": public_conditions(q.where),
                           "within": public_conditions(q.within)},
                   parts={"numerator": num, "denominator": den}, clamped=clamped)


# --- means and variances -----------------------------------------------------------------------
def _mean_mechanism(epsilon, s, bounds, involves_where, involves_col, method, smooth, l1):
    # The grid comes from the public bounds only (fine enough for any count s < 2^40).
    grid = public_grid(max(abs(bounds[0]), abs(bounds[1])), bits=FINE_BITS)
    if method == "smooth" and (involves_where or involves_col):
        bound = mean_smooth(l1, bounds, s, depends_on_imputed=involves_where)
        variant = "5.4b" if involves_where else "5.4a"
        return smooth.mechanism(epsilon, bound, grid), variant
    # M/s derives from the released count: kept for the curator from the start (published_sensitivity=False), so
    # that the published parameters depend on the public inputs alone.
    mech = Laplace(epsilon=epsilon, sensitivity=mean_global(bounds, s, 0), grid=grid, published_sensitivity=False)
    return mech, "no imputation"


@dataclasses.dataclass(frozen=True)
class _Numeric:
    """What a mean or variance release needs besides its budgets (CONFIDENTIAL: ``l1``)."""

    smooth: SmoothNoise
    involves_where: bool
    involves_col: bool
    l1: int
    universe: object

    @property
    def involves(self):
        return self.involves_where or self.involves_col


def _numeric(ctx, q, smooth):
    """Check a mean or variance's whole cost against the budget and its mechanisms from public inputs alone
    (the count's, the mean's at the smallest size estimate ``q``'s kind allows, a variance's at the widest
    spread), then read what its releases need."""
    smooth = smooth.override(q.noise, q.gamma)
    ctx.accountant.check(q.cost)
    schema = ctx.schema
    involves_where, involves_col = involves_imputed(schema, q.where), q.column in schema.imputed_names
    _check_count(schema, q.count_epsilon, q.where, q.method, smooth)
    if isinstance(q, Variance):
        _check_mean(q, q.mean_epsilon, 2.0, involves_where, involves_col, smooth)
        half_range2 = ((q.bounds[1] - q.bounds[0]) / 2) ** 2
        n = _Numeric(smooth, involves_where, involves_col, MAX_L1, None)
        _variance_mechanism(q, n, 2.0, q.bounds[0], public_grid(half_range2, bits=FINE_BITS))
    else:
        _check_mean(q, q.epsilon, 1.0, involves_where, involves_col, smooth)
    return _Numeric(smooth, involves_where, involves_col, ctx.statistics.l1_for([*q.where, q.column]),
                    universe_of(schema, q.column))


def _available(ctx, method, where, columns):
    """``where`` of a count (under ``ignore_missing``: of the query's available cases, :func:`available_conditions`)."""
    return available_conditions(ctx.schema, where, columns) if method == "ignore_missing" else where


def _moments(ctx, q, universe):
    return ctx.statistics.moments(q.column, q.where, q.bounds, observed_only=q.method == "ignore_missing",
                                  universe=universe)


def _mean(ctx, q, smooth):
    n = _numeric(ctx, q, smooth)
    count = _count_release(ctx, _available(ctx, q.method, q.where, [q.column]), q.count_epsilon, q.method, n.smooth,
                           label=f"count for mean of {q.column}{_where_text(q.where, n.universe)}",
                           universe=n.universe)
    s = max(float(count.value), 1.0)
    mech, variant = _mean_mechanism(q.epsilon, s, q.bounds, n.involves_where, n.involves_col, q.method, n.smooth,
                                    n.l1)
    moments = _moments(ctx, q, n.universe)
    centre = moments.total / Fraction(s)
    rel = ctx.record(mech.release(centre, rng=ctx.rng), f"mean of {q.column}{_where_text(q.where, n.universe)}")
    diag = dict(rel.diagnostics.values)
    diag.update(s=s, n_records=moments.n, centre=float(centre))
    if variant.startswith("5.4"):
        diag["l1"] = n.l1
    return Release(
        value=rel.value, epsilon=rel.epsilon + count.epsilon, delta=0.0, mechanism=rel.mechanism,
        params={**rel.params, "query": "mean", "method": q.method, "column": q.column,
                "where": public_conditions(q.where), **_universe_param(n.universe), "bounds": q.bounds,
                "theorem": variant},
        parts={"count": count}, diagnostics=CuratorDiagnostics(diag)).clamp(*q.bounds)


def _variance_mechanism(q, n, s, ybar, grid):
    if q.method == "smooth" and n.involves:
        return n.smooth.mechanism(q.epsilon, variance_smooth(n.l1, q.bounds, s, ybar), grid)
    return Laplace(epsilon=q.epsilon, sensitivity=variance_global(q.bounds, s, ybar, 0), grid=grid,
                   published_sensitivity=False)   # derived from the released count, as a mean's


def _variance(ctx, q, smooth):
    n = _numeric(ctx, q, smooth)
    count = _count_release(ctx, _available(ctx, q.method, q.where, [q.column]), q.count_epsilon, q.method, n.smooth,
                           label=f"count for variance of {q.column}{_where_text(q.where, n.universe)}",
                           universe=n.universe)
    s = max(float(count.value), 2.0)
    mech, variant = _mean_mechanism(q.mean_epsilon, s, q.bounds, n.involves_where, n.involves_col, q.method,
                                    n.smooth, n.l1)
    moments = _moments(ctx, q, n.universe)
    mean_rel = ctx.record(mech.release(moments.total / Fraction(s), rng=ctx.rng),
                          f"mean for variance of {q.column}{_where_text(q.where, n.universe)}")
    mean_rel = dataclasses.replace(mean_rel, value=float(mean_rel.value),
                                   params={**mean_rel.params, "query": "mean", "theorem": variant}).clamp(*q.bounds)
    ybar = mean_rel.value
    half_range2 = ((q.bounds[1] - q.bounds[0]) / 2) ** 2
    var_mech = _variance_mechanism(q, n, s, ybar, public_grid(half_range2, bits=FINE_BITS))
    centre = moments.squared_deviations(ybar) / (Fraction(s) - 1)
    rel = ctx.record(var_mech.release(centre, rng=ctx.rng), f"variance of {q.column}{_where_text(q.where, n.universe)}")
    diag = dict(rel.diagnostics.values)
    diag.update(s=s, n_records=moments.n, centre=float(centre))
    if q.method == "smooth" and n.involves:
        diag["l1"] = n.l1
    return Release(
        value=rel.value, epsilon=rel.epsilon + mean_rel.epsilon + count.epsilon,
        delta=0.0, mechanism=rel.mechanism,
        params={**rel.params, "query": "variance", "method": q.method, "column": q.column,
                "where": public_conditions(q.where), **_universe_param(n.universe), "bounds": q.bounds,
                "theorem": "5.6"},
        parts={"count": count, "mean": mean_rel}, diagnostics=CuratorDiagnostics(diag)).clamp(0.0, half_range2)


_RELEASES = {Count: _count, Proportion: _proportion, Mean: _mean, Variance: _variance}
