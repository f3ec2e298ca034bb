"""Private counts, proportions, means and variances on k-NN-imputed data.

:class:`PrivateImputation` imputes the missing values of the attribute set A with
:class:`~dpknn.impute.KNNImputer` and answers queries on the imputed data with the
smooth-sensitivity mechanisms of Clifton et al. (2022, §5): the noise is calibrated to L1(D),
so one record's influence through the donors it gives is covered. Queries that do not involve
A at all are not affected by imputation and use ordinary mechanisms (the paper's remark at the
start of §5). Neighbouring relation: add or remove one record.

Methods (``method=``):

- ``"smooth"`` (default): the paper's mechanisms (Corollaries 5.2, 5.5, 5.7) with the exact
  generalized Cauchy constants (``docs/privacy.md``).
- ``"ignore_missing"``: drop incomplete records and answer on the complete ones with ordinary
  mechanisms (geometric for counts, Laplace for means and variances). Differentially private,
  but biased when data are not missing completely at random.

The paper's non-private "global sensitivity" comparison is not offered here; it lives with the
experiments that reproduce the paper (:mod:`dpknn.experiments.census`).

Every release is post-processed into the public range of its query: a count is at least 0, a
proportion lies in [0, 1], a mean in the declared bounds [a, b], a variance in [0, (b - a)²/4].

References
----------
.. [1] Clifton, Hanson, Kifer, Shamis, et al. (2022). "Differentially private k-nearest
   neighbor missing data imputation". Theorems 5.1, 5.4, 5.6; Corollaries 5.2, 5.5, 5.7.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import sys
from fractions import Fraction

import numpy as np

from dpknn.accounting import BudgetAccountant
from dpknn.impute.flags import check_not_imputed
from dpknn.impute.knn import DEFAULT_MAX_WORK, KNNImputer
from dpknn.mechanisms.additive import Geometric, Laplace
from dpknn.mechanisms.base import CuratorDiagnostics, Release, public_grid
from dpknn.mechanisms.noise import gamma_fraction
from dpknn.mechanisms.randomness import as_source
from dpknn.mechanisms.smooth import SmoothCauchy, SmoothPolyPlace, choose_gamma, choose_polyplace
from dpknn.releases import sensitivity as sens
from dpknn.releases.summation import exact_moments
from dpknn.schema.attributes import Categorical, Schema
from dpknn.schema.conditions import check_condition, conditions_mask, describe_conditions, public_conditions
from dpknn.utils.validation import check_positive_real

__all__ = ["PrivateImputation", "estimate_size"]

logger = logging.getLogger(__name__)

_METHODS = ("smooth", "ignore_missing")
# Noise of the smooth releases: PolyPlace (the default) or the paper's generalized Cauchy.
NOISES = ("polyplace", "cauchy")
# Steps of the grid of a mean or variance below the scale of its bounds.
_FINE_BITS = 60
# Public parameters of a Laplace release that depend on the released count: kept for the curator.
_COUNT_DERIVED = ("sensitivity", "scale")


def estimate_size(data, *, epsilon, rng=None):
    """Private number of records, by the geometric mechanism.

    Adding or removing one record changes the count by 1, so the geometric mechanism with
    sensitivity 1 is ε-DP under add/remove one record (Ghosh, Roughgarden, Sundararajan 2012).
    Returns a :class:`~dpknn.mechanisms.Release`; the count is post-processed to be >= 0.

    Parameters
    ----------
    data : DataFrame, Series or ndarray
    epsilon : float
    rng : numpy.random.Generator, int or None
        None: the operating system's CSPRNG.
    """
    rel = Geometric(epsilon=epsilon, sensitivity=1).release(len(data), rng=rng)
    return dataclasses.replace(rel, value=max(rel.value, 0), params={**rel.params, "query": "number of records"})


def _where_text(where):
    """The subpopulation of a ledger label, as text: the ledger is published and read by people."""
    return f" where {describe_conditions(where)}" if where else " over all records"


def _split_count_derived(release):
    """Move noise parameters derived from the released count into the curator diagnostics, so
    that the published parameters of a mean or variance depend on public inputs only."""
    diag = dict(release.diagnostics.values)
    params = dict(release.params)
    for key in _COUNT_DERIVED:
        if key in params:
            diag[key] = params.pop(key)
    return dataclasses.replace(release, params=params), diag


def _total_epsilon(**parts):
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


def _clip(value, low, high):
    return min(max(value, low), high)


class PrivateImputation:
    """Private queries on data whose attributes A are k-NN imputed.

    Parameters
    ----------
    df : pandas.DataFrame
        The data (not modified).
    schema : Schema
        Public domains; ``schema.imputed`` is the attribute set A.
    k : int, default 1
        Donors per incomplete record (all complete records when there are fewer than k).
    accountant : BudgetAccountant or None
        Budget every release is checked against (before the data are touched) and recorded
        in. None: an accountant without limit, still keeping the ledger.
    rng : numpy.random.Generator, int or None
        Source of all noise. None (default): the operating system's CSPRNG. A seed or a
        Generator is for reproducibility only: with a known seed the noise can be removed.
    noise : {"polyplace", "cauchy"}, default "polyplace"
        Noise of the smooth releases. ``"polyplace"``: :class:`~dpknn.mechanisms.base.SmoothPolyPlace`,
        any ε > ln 2, about a third of the Cauchy's spread at ε = 6 ln 2. ``"cauchy"``: the paper's
        generalized Cauchy (:class:`~dpknn.mechanisms.SmoothCauchy`, ε > 2 ln 2), for reproduction.
    gamma : "optimal", "paper" or float
        Default γ rule of the generalized Cauchy noise (see
        :func:`dpknn.mechanisms.choose_gamma`); with ``noise="cauchy"`` only.
    progress : bool, default False
        Passed to :class:`KNNImputer`.
    max_work : int
        Passed to :class:`KNNImputer`: the work allowed to certify L1(D) exactly.

    Attributes
    ----------
    imputer : KNNImputer
        The fitted imputer. CONFIDENTIAL: ``imputer.l1_``, its donors and counts are data.
    imputed : pandas.DataFrame
        The imputed data (confidential microdata).
    releases : list of Release
        Every release made, in order (their ``to_dict()`` is what may be published).

    References
    ----------
    .. [1] Clifton et al. (2022), §5.
    """

    def __init__(self, df, schema, *, k=1, accountant=None, rng=None, noise="polyplace", gamma="optimal",
                 progress=False, max_work=DEFAULT_MAX_WORK):
        accountant = self._check_accountant(accountant)  # before the fit, not after it
        check_not_imputed(df, "df")
        imputer = KNNImputer(schema, k=k, max_work=max_work, progress=progress)
        self._setup(imputer, df, accountant, rng, (noise, gamma), imputed=imputer.fit_transform(df))

    @classmethod
    def from_imputer(cls, imputer, df, *, accountant=None, rng=None, noise="polyplace", gamma="optimal"):
        """Use an already fitted :class:`KNNImputer`; ``df`` must be the data it was fitted on."""
        if not isinstance(imputer, KNNImputer) or not hasattr(imputer, "l1_"):
            raise TypeError("imputer must be a fitted dpknn.KNNImputer.")
        check_not_imputed(df, "df")
        self = cls.__new__(cls)
        self._setup(imputer, df, cls._check_accountant(accountant), rng, (noise, gamma))
        return self

    def with_accountant(self, accountant, *, rng=None):
        """A shallow copy that releases against ``accountant`` (the fit and data are shared).

        A PrivateImputation that was pickled (sent to or received from a joblib or
        multiprocessing worker) holds a detached copy of its accountant, which refuses to spend
        (see :class:`~dpknn.accounting.BudgetAccountant`). Give it the accountant it should
        spend from: the parent's own accountant once the object is back in the parent, or in a
        worker a fresh ``BudgetAccountant(eps_worker)`` whose ε the parent has already spent.

        Parameters
        ----------
        accountant : BudgetAccountant
            Not a detached (unpickled) one.
        rng : numpy.random.Generator, int, RandomSource or None
            None: keep this object's source. A copy of a seeded source repeats the noise of the
            original, so pass a new one when both may release (a seed is for tests only).
        """
        if not isinstance(accountant, BudgetAccountant):
            raise TypeError(f"accountant must be a BudgetAccountant, got {accountant!r}.")
        if accountant.detached:
            raise ValueError("accountant is a detached copy made by pickling, which cannot spend; pass the "
                             "original accountant or a new BudgetAccountant charged to the original first.")
        new = copy.copy(self)
        new.accountant = accountant
        new.releases = list(self.releases)
        if rng is not None:
            new.rng = as_source(rng)
        return new

    @staticmethod
    def _check_accountant(accountant):
        if accountant is None:
            return BudgetAccountant(math.inf)
        if not isinstance(accountant, BudgetAccountant):
            raise TypeError(f"accountant must be a BudgetAccountant or None, got {accountant!r}.")
        return accountant

    def _setup_releases(self, imputer, accountant, rng, smooth):
        """What every release needs besides the data: the fit, the budget, the noise source and the
        smooth noise (``smooth``: the pair (noise, gamma))."""
        self.imputer = imputer
        self.schema: Schema = imputer.schema
        self.accountant = accountant
        self.rng = as_source(rng)
        noise, gamma = smooth
        if noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {noise!r}.")
        if not (isinstance(gamma, str) and gamma in ("optimal", "paper")):
            if isinstance(gamma, str):
                raise ValueError(f"gamma must be 'optimal', 'paper' or a number > 1, got {gamma!r}.")
            gamma_fraction(gamma)   # a multiple of 1/4 > 1; admissibility is checked per release
            if noise != "cauchy":
                raise ValueError(f"gamma={gamma!r} sets the generalized Cauchy noise; pass noise='cauchy' with it.")
        self.noise = noise
        self.gamma = gamma
        self.releases = []

    def _setup(self, imputer, df, accountant, rng, smooth, imputed=None):
        self._setup_releases(imputer, accountant, rng, smooth)
        # transform() refuses data other than the data the imputer was fitted on.
        self.imputed = imputer.transform(df) if imputed is None else imputed
        names = self.schema.known_names + self.schema.imputed_names
        self._imputed_cols = {c: self.imputed[c].to_numpy() for c in names}
        complete = np.ones(len(df), dtype=bool)
        complete[imputer.incomplete_index_] = False
        self._complete = complete
        self._complete_cols = {c: df[c].to_numpy()[complete] for c in names}

    @property
    def l1(self):
        """CONFIDENTIAL: L1(D) of the data (never publish it). With universes, the sum over the
        universes; each release uses the L1 of the universes it reads (``imputer.l1_for``)."""
        return int(self.imputer.l1_)

    # --- validation ------------------------------------------------------------------------
    def _check_method(self, method):
        if method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {method!r}. The paper's non-private "
                             "'global' comparison lives in dpknn.experiments.census.")

    def _check_where(self, where, name="where"):
        if where is None:
            return {}
        if not isinstance(where, dict):
            raise TypeError(
                f"{name} must be a dict of column -> (low, high) or list of values, got {where!r}.")
        names = set(self.schema.known_names + self.schema.imputed_names)
        out = {}
        for col, spec in where.items():
            if col not in names:
                raise ValueError(f"{name} names column {col!r}, which is not in the schema "
                                 f"(attributes: {sorted(names)}).")
            out[col] = check_condition(self.schema.attribute(col), spec, f"{name}[{col!r}]")
        return out

    def _involves_imputed(self, *wheres):
        a = set(self.schema.imputed_names)
        return any(col in a for w in wheres for col in w)

    def _l1_of(self, where, column=None):
        """CONFIDENTIAL: the L1 of the universes of the imputed attributes a query reads."""
        return self.imputer.l1_for([*where, *([] if column is None else [column])])

    def _universe(self, column):
        """The universe of ``column`` (None: every record); a mean or variance is over it."""
        return self.schema.attribute(column).universe if column in self.schema.imputed_names else None

    def _mask(self, where, complete_only, universe=None):
        cols = self._complete_cols if complete_only else self._imputed_cols
        n = int(self._complete.sum()) if complete_only else self._complete.size
        return conditions_mask(cols, n, where, {} if universe is None else universe.where)

    def _bounds(self, column, bounds):
        names = self.schema.known_names + self.schema.imputed_names
        if column not in names:
            raise ValueError(f"column {column!r} is not in the schema (attributes: {list(names)}).")
        attr = self.schema.attribute(column)
        if isinstance(attr, Categorical):
            raise ValueError(
                f"column {column!r} is categorical; a mean or variance needs a numeric attribute.")
        if bounds is None:
            bounds = (attr.lower, attr.upper)
        return sens._check_bounds(bounds)

    def _smooth_noise(self, noise, gamma):
        """The smooth noise of one query, ``(noise, gamma)``, with this object's defaults for None."""
        noise = self.noise if noise is None else noise
        if noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {noise!r}.")
        if gamma is not None and noise != "cauchy":
            raise ValueError(f"gamma={gamma!r} sets the generalized Cauchy noise; pass noise='cauchy' with it.")
        return noise, (self.gamma if gamma is None else gamma)

    @staticmethod
    def _smooth_mechanism(epsilon, bound, grid, smooth):
        """The smooth-sensitivity mechanism of ``smooth`` = (noise, gamma) for S(D) = ``bound``."""
        noise, gamma = smooth
        if noise == "cauchy":
            return SmoothCauchy(epsilon=epsilon, smooth_bound=bound, grid=grid, gamma=gamma)
        return SmoothPolyPlace(epsilon=epsilon, smooth_bound=bound, grid=grid)

    @staticmethod
    def _check_smooth_epsilon(epsilon, smooth):
        """Refuse, before anything is read, an ε the smooth noise cannot use."""
        noise, gamma = smooth
        if noise == "cauchy":
            choose_gamma(epsilon, gamma)
        else:
            choose_polyplace(epsilon)

    def _numeric_query(self, column, where, bounds, method, smooth, **epsilons):
        """Validate a mean or variance query and check its whole cost against the budget."""
        self._check_method(method)
        names = tuple(epsilons)
        epsilons = tuple(check_positive_real(value, name) for name, value in epsilons.items())
        where = self._check_where(where)
        bounds = self._bounds(column, bounds)
        gamma = self._smooth_noise(*smooth)
        self.accountant.check(_total_epsilon(**dict(zip(names, epsilons))))
        return (epsilons, where, bounds, gamma, self._involves_imputed(where),
                column in self.schema.imputed_names)

    def _record(self, release, label):
        self.accountant.spend(release.epsilon, release.delta, label=label)
        return release

    def _finish(self, release):
        self.releases.append(release)
        return release

    # --- counts ----------------------------------------------------------------------------
    def _count_mechanism(self, epsilon, where, method, gamma):
        if method == "smooth" and self._involves_imputed(where):
            bound = sens.count_smooth(self._l1_of(where))
            return self._smooth_mechanism(epsilon, bound, 1, gamma)
        return Geometric(epsilon=epsilon, sensitivity=1)

    def _count_release(self, where, epsilon, method, gamma, label, universe=None):
        involves = self._involves_imputed(where)
        mech = self._count_mechanism(epsilon, where, method, gamma)
        true = self._count_of(where, method == "ignore_missing", universe)
        rel = mech.release(true, rng=self.rng)
        diag = dict(rel.diagnostics.values)
        if method == "smooth" and involves:
            diag.update(l1=self._l1_of(where), theorem="5.1")
        rel = dataclasses.replace(rel, value=max(rel.value, 0),
                       params={**rel.params, "query": "count", "method": method, "where": public_conditions(where),
                               "involves_imputed": involves},
                       diagnostics=CuratorDiagnostics(diag))
        return self._record(rel, label)

    def count(self, where=None, *, epsilon, method="smooth", noise=None, gamma=None):
        """Private count of the records (after imputation) that satisfy ``where``.

        Smooth bound 1 + L1(D) (Theorem 5.1, Corollary 5.2) with generalized Cauchy noise
        rounded to integers when ``where`` involves an imputed attribute; otherwise the count
        does not depend on imputation and the geometric mechanism with sensitivity 1 is used.
        The release is an integer >= 0 (negative noisy counts become 0: post-processing).

        Parameters
        ----------
        where : dict or None
            Column -> inclusive range ``(low, high)`` (None = open end) or, for Ordinal and
            Categorical attributes, a list of allowed values; combined with AND. None: all.
        epsilon : float
            At least 2 ln 2 when the smooth mechanism is used.
        method : {"smooth", "ignore_missing"}
        noise : {"polyplace", "cauchy"} or None (the object's default)
        gamma : "optimal", "paper", float or None (the object's default; Cauchy noise only)
        """
        self._check_method(method)
        epsilon = check_positive_real(epsilon, "epsilon")
        where = self._check_where(where)
        gamma = self._smooth_noise(noise, gamma)
        self.accountant.check(epsilon)
        self._count_mechanism(epsilon, where, method, gamma)  # validates ε first
        return self._finish(self._count_release(where, epsilon, method, gamma, label=f"count{_where_text(where)}"))

    def proportion(self, where, *, within=None, epsilon, denominator_epsilon=None, method="smooth",
                   noise=None, gamma=None):
        """Private proportion of the records of ``within`` that also satisfy ``where``.

        Released as two counts (post-processing: their ratio, clipped to [0, 1]): the
        numerator (records satisfying both) with ``epsilon`` and the denominator with
        ``denominator_epsilon`` (default: ``epsilon``). The denominator uses an ordinary count
        mechanism when ``within`` does not involve imputed attributes (Clifton et al. 2022,
        §5.1). The total cost is ``epsilon + denominator_epsilon``.
        """
        self._check_method(method)
        epsilon = check_positive_real(epsilon, "epsilon")
        den_eps = (epsilon if denominator_epsilon is None
                   else check_positive_real(denominator_epsilon, "denominator_epsilon"))
        where = self._check_where(where)
        within = self._check_where(within, "within")
        gamma = self._smooth_noise(noise, gamma)
        both = {**within}
        for col, spec in where.items():
            if col in both:
                raise ValueError(f"column {col!r} appears in both where and within; merge the conditions.")
            both[col] = spec
        self.accountant.check(_total_epsilon(epsilon=epsilon, denominator_epsilon=den_eps))
        self._count_mechanism(epsilon, both, method, gamma)
        self._count_mechanism(den_eps, within, method, gamma)
        num = self._count_release(both, epsilon, method, gamma, label=f"proportion numerator{_where_text(both)}")
        den = self._count_release(within, den_eps, method, gamma, label=f"proportion denominator{_where_text(within)}")
        # Clipped to [0, 1] before dividing, so that huge noisy counts cannot overflow a float.
        value = 0.0 if num.value <= 0 else 1.0 if num.value >= den.value else num.value / den.value
        return self._finish(Release(
            value=value, epsilon=num.epsilon + den.epsilon, delta=0.0, mechanism="ratio of counts",
            params={"query": "proportion", "method": method, "where": public_conditions(where),
                    "within": public_conditions(within)},
            parts={"numerator": num, "denominator": den}))

    # --- means and variances -----------------------------------------------------------------
    def _selected(self, column, where, method):
        """The values of ``column`` of the records of ``where`` (in the column's universe)."""
        complete_only = method == "ignore_missing"
        mask = self._mask(where, complete_only, self._universe(column))
        cols = self._complete_cols if complete_only else self._imputed_cols
        return cols[column][mask]

    def _values(self, column, where, bounds, method):
        return summand(self._selected(column, where, method), bounds)

    # The two statistics every release reads; dpknn.impute.distributed computes them partition by partition.
    def _count_of(self, where, complete_only, universe=None):
        """CONFIDENTIAL: number of records (imputed data, or complete records only) in ``where``."""
        return int(self._mask(where, complete_only, universe).sum())

    def _moments(self, column, where, bounds, method):
        """CONFIDENTIAL: exact n, Σ y and Σ y² over the records of ``where`` (in ``column``'s universe)
        of ``column`` clamped to ``bounds`` (:class:`~dpknn.releases.Moments`). Exact, so that a
        smooth release is centred on the query's true value and no rounding is charged in S(D)."""
        return exact_moments(self._values(column, where, bounds, method))

    def _mean_mechanism(self, epsilon, s, bounds, involves_where, involves_col, method, gamma, l1):
        # The grid comes from the public bounds only (fine enough for any count s < 2^40).
        grid = public_grid(max(abs(bounds[0]), abs(bounds[1])), bits=_FINE_BITS)
        if method == "smooth" and (involves_where or involves_col):
            bound = sens.mean_smooth(l1, bounds, s, depends_on_imputed=involves_where)
            variant = "5.4b" if involves_where else "5.4a"
            return self._smooth_mechanism(epsilon, bound, grid, gamma), variant
        return Laplace(epsilon=epsilon, sensitivity=sens.mean_global(bounds, s, 0), grid=grid), "no imputation"

    def mean(self, column, *, where=None, bounds=None, epsilon, count_epsilon, method="smooth", noise=None,
             gamma=None):
        """Private mean of ``column`` over the records satisfying ``where``.

        First a private count s of the subpopulation (``count_epsilon``), then the mean
        ``(1/s) Σ Y`` with noise calibrated to Theorem 5.4 (Corollary 5.5): variant (a) when
        the subpopulation does not involve imputed attributes, (b) when it does; values are
        clamped to ``bounds``. Sequential composition: the cost is ``epsilon + count_epsilon``.
        s is the released count clamped to at least 1, and the released mean is clamped to
        ``bounds`` (both post-processing).

        Parameters
        ----------
        column : str
            A numeric attribute of the schema (usually in A).
        bounds : (low, high) or None
            Public bounds; None takes the schema's declared range.
        """
        (epsilon, count_epsilon), where, bounds, gamma, involves_where, involves_col = self._numeric_query(
            column, where, bounds, method, (noise, gamma), epsilon=epsilon, count_epsilon=count_epsilon)
        l1, universe = self._l1_of(where, column), self._universe(column)
        self._count_mechanism(count_epsilon, where, method, gamma)
        self._mean_mechanism(epsilon, 1.0, bounds, involves_where, involves_col, method, gamma, l1)
        count = self._count_release(where, count_epsilon, method, gamma,
                                    label=f"count for mean of {column}{_where_text(where)}", universe=universe)
        s = max(float(count.value), 1.0)
        mech, variant = self._mean_mechanism(epsilon, s, bounds, involves_where, involves_col, method, gamma, l1)
        moments = self._moments(column, where, bounds, method)
        rel = self._record(mech.release(moments.total / Fraction(s), rng=self.rng),
                           f"mean of {column}{_where_text(where)}")
        rel, diag = _split_count_derived(rel)
        diag.update(s=s, n_records=moments.n)
        if variant.startswith("5.4"):
            diag["l1"] = l1
        return self._finish(Release(
            value=_clip(rel.value, *bounds), epsilon=rel.epsilon + count.epsilon, delta=0.0,
            mechanism=rel.mechanism,
            params={**rel.params, "query": "mean", "method": method, "column": column,
                    "where": public_conditions(where), **_universe_param(universe), "bounds": bounds,
                    "theorem": variant},
            parts={"count": count}, diagnostics=CuratorDiagnostics(diag)))

    def variance(self, column, *, where=None, bounds=None, epsilon, mean_epsilon, count_epsilon,
                 method="smooth", noise=None, gamma=None):
        """Private variance of ``column`` over the records satisfying ``where``.

        A private count s (``count_epsilon``), a private mean Ȳ (``mean_epsilon``), then
        ``(1/(s-1)) Σ (Y - Ȳ)²`` with the smooth bound of Theorem 5.6 (Corollary 5.7). The
        released count is clamped to at least 2 and the released mean to ``bounds`` before
        they are used (post-processing), so no outcome of the data is refused. The released
        variance is clamped to [0, (b - a)²/4], the range of the variance of any distribution
        on [a, b].
        """
        (epsilon, mean_epsilon, count_epsilon), where, bounds, gamma, involves_where, involves_col = \
            self._numeric_query(column, where, bounds, method, (noise, gamma), epsilon=epsilon,
                                mean_epsilon=mean_epsilon, count_epsilon=count_epsilon)
        involves = involves_where or involves_col
        l1, universe = self._l1_of(where, column), self._universe(column)
        self._count_mechanism(count_epsilon, where, method, gamma)
        self._mean_mechanism(mean_epsilon, 2.0, bounds, involves_where, involves_col, method, gamma, l1)
        if method == "smooth" and involves:
            self._check_smooth_epsilon(epsilon, gamma)
        count = self._count_release(where, count_epsilon, method, gamma,
                                    label=f"count for variance of {column}{_where_text(where)}", universe=universe)
        s = max(float(count.value), 2.0)
        mech, variant = self._mean_mechanism(mean_epsilon, s, bounds, involves_where, involves_col, method,
                                             gamma, l1)
        moments = self._moments(column, where, bounds, method)
        mean_rel = self._record(mech.release(moments.total / Fraction(s), rng=self.rng),
                                f"mean for variance of {column}{_where_text(where)}")
        mean_rel, mean_diag = _split_count_derived(mean_rel)
        ybar = _clip(float(mean_rel.value), *bounds)
        mean_rel = dataclasses.replace(mean_rel, value=ybar, diagnostics=CuratorDiagnostics(mean_diag),
                                       params={**mean_rel.params, "query": "mean", "theorem": variant})
        half_range2 = ((bounds[1] - bounds[0]) / 2) ** 2
        grid = public_grid(half_range2, bits=_FINE_BITS)
        if method == "smooth" and involves:
            bound = sens.variance_smooth(l1, bounds, s, ybar)
            var_mech = self._smooth_mechanism(epsilon, bound, grid, gamma)
        else:
            var_mech = Laplace(epsilon=epsilon, sensitivity=sens.variance_global(bounds, s, ybar, 0), grid=grid)
        squares = moments.squared_deviations(ybar)
        rel = self._record(var_mech.release(squares / (Fraction(s) - 1), rng=self.rng),
                           f"variance of {column}{_where_text(where)}")
        rel, diag = _split_count_derived(rel)
        diag.update(s=s, n_records=moments.n)
        if method == "smooth" and involves:
            diag["l1"] = l1
        return self._finish(Release(
            value=_clip(rel.value, 0.0, half_range2), epsilon=rel.epsilon + mean_rel.epsilon + count.epsilon,
            delta=0.0, mechanism=rel.mechanism,
            params={**rel.params, "query": "variance", "method": method, "column": column,
                    "where": public_conditions(where), **_universe_param(universe), "bounds": bounds,
                    "theorem": "5.6"},
            parts={"count": count, "mean": mean_rel}, diagnostics=CuratorDiagnostics(diag)))


def summand(values, bounds):
    """The terms a mean or variance adds up: ``values`` clamped to ``bounds`` (also used by
    :mod:`dpknn.impute.distributed`, partition by partition)."""
    return np.clip(np.asarray(values, dtype=np.float64), bounds[0], bounds[1])


def _universe_param(universe):
    """The public ``universe`` parameter of a release over an attribute's universe (none if none)."""
    return {} if universe is None else {"universe": universe.to_public()}
