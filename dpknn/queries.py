"""Private counts, proportions, means and variances on k-NN-imputed data, and the baselines.

:class:`PrivateImputation` imputes the missing values of the attribute set A with
:class:`~dpknn.imputation.KNNImputer` and answers queries on the imputed data with the
smooth-sensitivity mechanisms of Clifton et al. (2022, §5): the noise is calibrated to L1(D),
so one record's influence through the donors it gives is covered. Queries that do not involve
A at all are not affected by imputation and use ordinary mechanisms (the paper's remark at the
start of §5). Neighbouring relation: add or remove one record.

Methods (``method=``):

- ``"smooth"`` (default): the paper's mechanisms (Corollaries 5.2, 5.5, 5.7) with the exact
  generalized Cauchy constants of DESIGN.md §4.
- ``"ignore_missing"``: drop incomplete records and answer on the complete ones with ordinary
  mechanisms (geometric for counts, Laplace for means and variances). Differentially private,
  but biased when data are not missing completely at random.
- ``"global"``: the paper's comparison (§6.3): imputed data and the Laplace mechanism at the
  "optimistic global sensitivity" that replaces L1(D) by the number of missing records. This
  baseline is **not** differentially private (that sensitivity depends on the data) and its
  releases say so in ``details``.

References
----------
.. [1] Clifton, Hanson, Kifer, Shamis, et al. (2022). "Differentially private k-nearest
   neighbor missing data imputation". Theorems 5.1, 5.4, 5.6; Corollaries 5.2, 5.5, 5.7; §6.3.
"""

from __future__ import annotations

import logging
import math
import numbers

import numpy as np
import pandas as pd

from . import sensitivity as sens
from .accounting import BudgetAccountant
from .imputation import KNNImputer
from .mechanisms import Geometric, Laplace, Release, SmoothCauchy
from .schema import Categorical, Schema
from .validation import check_positive_real, check_rng

__all__ = ["PrivateImputation"]

logger = logging.getLogger(__name__)

_METHODS = ("smooth", "ignore_missing", "global")
_NOT_DP = ("baseline of Clifton et al. (2022, §6.3), NOT differentially private: its sensitivity "
           "1 + (number of missing records) depends on the data")


class PrivateImputation:
    """Private queries on data whose attributes A are k-NN imputed.

    Parameters
    ----------
    df : pandas.DataFrame
        The data (not modified).
    schema : Schema
        Public domains; ``schema.imputed`` is the attribute set A.
    k : int, default 1
        Donors per incomplete record.
    accountant : BudgetAccountant or None
        Budget every release is checked against (before the data are touched) and recorded
        in. None: an accountant without limit, still keeping the ledger.
    rng : numpy.random.Generator, int or None
        Source of all noise. Seeded generators are for reproducibility, not security.
    gamma : "optimal", "paper" or float
        Default γ rule of the generalized Cauchy noise (see
        :func:`dpknn.sensitivity.choose_gamma`).

    Attributes
    ----------
    imputer : KNNImputer
        The fitted imputer (``imputer.l1_`` is L1(D)).
    imputed : pandas.DataFrame
        The imputed data.
    releases : list of Release
        Every release made, in order.

    References
    ----------
    .. [1] Clifton et al. (2022), §5.
    """

    def __init__(self, df, schema, *, k=1, accountant=None, rng=None, gamma="optimal", progress=False):
        accountant = self._check_accountant(accountant)  # before the fit, not after it
        imputer = KNNImputer(schema, k=k, progress=progress)
        self._setup(imputer, df, accountant, rng, gamma, imputed=imputer.fit_transform(df))

    @classmethod
    def from_imputer(cls, imputer, df, *, accountant=None, rng=None, gamma="optimal"):
        """Use an already fitted :class:`KNNImputer` (fitted on ``df``)."""
        if not isinstance(imputer, KNNImputer) or not hasattr(imputer, "l1_"):
            raise TypeError("imputer must be a fitted dpknn.KNNImputer.")
        self = cls.__new__(cls)
        self._setup(imputer, df, accountant, rng, gamma)
        return self

    @staticmethod
    def _check_accountant(accountant):
        if accountant is None:
            return BudgetAccountant(math.inf)
        if not isinstance(accountant, BudgetAccountant):
            raise TypeError(f"accountant must be a BudgetAccountant or None, got {accountant!r}.")
        return accountant

    def _setup(self, imputer, df, accountant, rng, gamma, imputed=None):
        accountant = self._check_accountant(accountant)
        self.imputer = imputer
        self.schema: Schema = imputer.schema
        self.accountant = accountant
        self.rng = check_rng(rng)
        self.gamma = gamma
        self.imputed = imputer.transform(df) if imputed is None else imputed
        names = self.schema.known_names + self.schema.imputed_names
        self._imputed_cols = {c: self.imputed[c].to_numpy() for c in names}
        complete = np.ones(len(df), dtype=bool)
        complete[imputer.incomplete_index_] = False
        self._complete = complete
        self._complete_cols = {c: df[c].to_numpy()[complete] for c in names}
        self.n_missing = int(imputer.incomplete_index_.size)
        self.l1 = int(imputer.l1_)
        self.releases = []

    # --- helpers -----------------------------------------------------------------------------
    def _check_method(self, method):
        if method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {method!r}.")

    def _check_where(self, where, name="where"):
        if where is None:
            return {}
        if not isinstance(where, dict):
            raise TypeError(
                f"{name} must be a dict of column -> (low, high) or list of values, got {where!r}.")
        names = set(self.schema.known_names + self.schema.imputed_names)
        for col, spec in where.items():
            if col not in names:
                raise ValueError(f"{name} names column {col!r}, which is not in the schema "
                                 f"(attributes: {sorted(names)}).")
            attr = self.schema.attribute(col)
            if isinstance(spec, tuple):
                if len(spec) != 2:
                    raise ValueError(f"{name}[{col!r}] must be a (low, high) pair, got {spec!r}.")
                if isinstance(attr, Categorical):
                    raise ValueError(f"{name}[{col!r}]: categorical attribute; give a list of categories.")
                lo, hi = spec
                for v in (lo, hi):
                    if v is not None and (not isinstance(v, numbers.Real) or math.isnan(v)):
                        raise ValueError(f"{name}[{col!r}] bounds must be numbers or None, got {spec!r}.")
                if lo is not None and hi is not None and lo > hi:
                    raise ValueError(f"{name}[{col!r}] has low > high: {spec!r}.")
            elif isinstance(spec, (list, set, frozenset)):
                if isinstance(attr, Categorical):
                    bad = [v for v in spec if v not in attr.categories]
                    if bad:
                        raise ValueError(f"{name}[{col!r}] lists values outside the categories: {bad[:5]}.")
            else:
                raise TypeError(f"{name}[{col!r}] must be a (low, high) tuple or a list, got {spec!r}.")
        return where

    def _involves_imputed(self, *wheres):
        a = set(self.schema.imputed_names)
        return any(col in a for w in wheres for col in w)

    def _mask(self, where, complete_only):
        cols = self._complete_cols if complete_only else self._imputed_cols
        n = int(self._complete.sum()) if complete_only else self._complete.size
        mask = np.ones(n, dtype=bool)
        for col, spec in where.items():
            v = cols[col]
            if isinstance(spec, tuple):
                lo, hi = spec
                if lo is not None:
                    mask &= v >= lo
                if hi is not None:
                    mask &= v <= hi
            else:
                if v.dtype == object:
                    mask &= pd.Index(list(spec), dtype=object).get_indexer(v) >= 0
                else:
                    mask &= np.isin(v, list(spec))
        return mask

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

    def _numeric_query(self, column, where, bounds, method, gamma, **epsilons):
        """Validate a mean or variance query and check its whole cost against the budget."""
        self._check_method(method)
        epsilons = tuple(check_positive_real(value, name) for name, value in epsilons.items())
        where = self._check_where(where)
        bounds = self._bounds(column, bounds)
        gamma = self.gamma if gamma is None else gamma
        self.accountant.check(math.fsum(epsilons))
        return (epsilons, where, bounds, gamma, self._involves_imputed(where),
                column in self.schema.imputed_names)

    def _record(self, release, label):
        self.accountant.spend(release.epsilon, release.delta, label=label)
        return release

    def _count_mechanism(self, epsilon, involves, method, gamma):
        if method == "smooth" and involves:
            return SmoothCauchy(epsilon=epsilon, smooth_bound=sens.count_smooth(self.l1), gamma=gamma)
        if method == "global" and involves:
            return Laplace(epsilon=epsilon, sensitivity=sens.count_global(self.n_missing))
        if method == "global":
            return Laplace(epsilon=epsilon, sensitivity=sens.count_global(0))
        return Geometric(epsilon=epsilon, sensitivity=1)

    def _count_release(self, where, epsilon, method, gamma, label):
        involves = self._involves_imputed(where)
        mech = self._count_mechanism(epsilon, involves, method, gamma)
        value = int(self._mask(where, method == "ignore_missing").sum())
        details = {"method": method, "where": dict(where), "involves_imputed": involves}
        if method == "global" and involves:
            details.update(differentially_private=False, note=_NOT_DP)
        uses_l1 = method == "smooth" and involves
        if isinstance(mech, Geometric):
            rel = mech.release(value, rng=self.rng, details=details)
        else:
            rel = mech.release(float(value), rng=self.rng, l1=self.l1 if uses_l1 else None, details=details)
        return self._record(rel, label)

    def _finish(self, release):
        self.releases.append(release)
        return release

    # --- public queries ------------------------------------------------------------------------
    def count(self, where=None, *, epsilon, method="smooth", gamma=None):
        """Private count of the records (after imputation) that satisfy ``where``.

        Smooth bound 1 + L1(D) (Theorem 5.1, Corollary 5.2) when ``where`` involves an imputed
        attribute; otherwise the count does not depend on imputation and the two-sided
        geometric mechanism with sensitivity 1 is used.

        Parameters
        ----------
        where : dict or None
            Column -> inclusive (low, high) range (None = open) or list of allowed values,
            combined with AND. None: all records.
        epsilon : float
            At least 2 ln 2 when the smooth mechanism is used.
        method : {"smooth", "ignore_missing", "global"}
        gamma : "optimal", "paper", float or None (the object's default)
        """
        self._check_method(method)
        epsilon = check_positive_real(epsilon, "epsilon")
        where = self._check_where(where)
        gamma = self.gamma if gamma is None else gamma
        self.accountant.check(epsilon)
        self._count_mechanism(epsilon, self._involves_imputed(where), method, gamma)  # validates ε first
        return self._finish(self._count_release(where, epsilon, method, gamma, label=f"count {where}"))

    def proportion(self, where, *, within=None, epsilon, denominator_epsilon=None, method="smooth",
                   gamma=None):
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
        gamma = self.gamma if gamma is None else gamma
        both = {**within}
        for col, spec in where.items():
            if col in both:
                raise ValueError(f"column {col!r} appears in both where and within; merge the conditions.")
            both[col] = spec
        self.accountant.check(epsilon + den_eps)
        self._count_mechanism(epsilon, self._involves_imputed(both), method, gamma)
        self._count_mechanism(den_eps, self._involves_imputed(within), method, gamma)
        num = self._count_release(both, epsilon, method, gamma, label=f"proportion numerator {both}")
        den = self._count_release(within, den_eps, method, gamma, label=f"proportion denominator {within}")
        value = min(max(num.value / max(den.value, 1.0), 0.0), 1.0)
        details = {"method": method, "numerator": num, "denominator": den,
                   "differentially_private": num.details.get("differentially_private", True)
                   and den.details.get("differentially_private", True)}
        return self._finish(Release(value=value, epsilon=num.epsilon + den.epsilon, delta=0.0,
                                    sensitivity=float("nan"), mechanism="ratio of counts",
                                    l1=num.l1 if num.l1 is not None else den.l1, details=details))

    def _sum_over(self, column, where, bounds, method):
        complete_only = method == "ignore_missing"
        mask = self._mask(where, complete_only)
        cols = self._complete_cols if complete_only else self._imputed_cols
        values = np.clip(cols[column][mask].astype(np.float64), bounds[0], bounds[1])
        return values

    def _mean_mechanism(self, epsilon, s, bounds, involves_where, involves_col, method, gamma):
        if method == "smooth" and (involves_where or involves_col):
            bound = sens.mean_smooth(self.l1, bounds, s, depends_on_imputed=involves_where)
            variant = "5.4b" if involves_where else "5.4a"
            return SmoothCauchy(epsilon=epsilon, smooth_bound=bound, gamma=gamma), variant
        if method == "global" and (involves_where or involves_col):
            bound = sens.mean_global(bounds, s, self.n_missing, depends_on_imputed=involves_where)
            return Laplace(epsilon=epsilon, sensitivity=bound), "global"
        return Laplace(epsilon=epsilon, sensitivity=sens.mean_global(bounds, s, 0)), "no imputation"

    def mean(self, column, *, where=None, bounds=None, epsilon, count_epsilon, method="smooth", gamma=None):
        """Private mean of ``column`` over the records satisfying ``where``.

        First a private count s of the subpopulation (``count_epsilon``), then the mean
        ``(1/s) Σ Y`` with noise calibrated to Theorem 5.4 (Corollary 5.5): variant (a) when
        the subpopulation does not involve imputed attributes, (b) when it does; values are
        clamped to ``bounds``. Sequential composition: the cost is ``epsilon + count_epsilon``.
        s is clamped to at least 1 (post-processing of the released count).

        Parameters
        ----------
        column : str
            A numeric attribute of the schema (usually in A).
        bounds : (low, high) or None
            Public bounds; None takes the schema's declared range.
        """
        (epsilon, count_epsilon), where, bounds, gamma, involves_where, involves_col = self._numeric_query(
            column, where, bounds, method, gamma, epsilon=epsilon, count_epsilon=count_epsilon)
        self._count_mechanism(count_epsilon, involves_where, method, gamma)
        self._mean_mechanism(epsilon, 1.0, bounds, involves_where, involves_col, method, gamma)
        count = self._count_release(where, count_epsilon, method, gamma, label=f"count for mean of {column}")
        s = max(float(count.value), 1.0)
        mech, variant = self._mean_mechanism(epsilon, s, bounds, involves_where, involves_col, method, gamma)
        values = self._sum_over(column, where, bounds, method)
        details = {"method": method, "column": column, "where": dict(where), "bounds": bounds,
                   "s": s, "count": count, "theorem": variant}
        if method == "global" and (involves_where or involves_col):
            details.update(differentially_private=False, note=_NOT_DP)
        uses_l1 = method == "smooth" and variant.startswith("5.4")
        rel = mech.release(float(values.sum()) / s, rng=self.rng, l1=self.l1 if uses_l1 else None,
                           details=details)
        self._record(rel, f"mean of {column} {where}")
        return self._finish(Release(value=rel.value, epsilon=rel.epsilon + count.epsilon, delta=0.0,
                                    sensitivity=rel.sensitivity, mechanism=rel.mechanism, l1=rel.l1,
                                    details=rel.details))

    def variance(self, column, *, where=None, bounds=None, epsilon, mean_epsilon, count_epsilon,
                 method="smooth", gamma=None):
        """Private variance of ``column`` over the records satisfying ``where``.

        A private count s (``count_epsilon``), a private mean Ȳ (``mean_epsilon``), then
        ``(1/(s-1)) Σ (Y - Ȳ)²`` with the smooth bound of Theorem 5.6 (Corollary 5.7).
        Refused when s < 2; the count is then already spent (it is in the ledger) but the mean
        and the variance are not.
        """
        (epsilon, mean_epsilon, count_epsilon), where, bounds, gamma, involves_where, involves_col = \
            self._numeric_query(column, where, bounds, method, gamma, epsilon=epsilon, mean_epsilon=mean_epsilon,
                                count_epsilon=count_epsilon)
        involves = involves_where or involves_col
        self._count_mechanism(count_epsilon, involves_where, method, gamma)
        self._mean_mechanism(mean_epsilon, 1.0, bounds, involves_where, involves_col, method, gamma)
        if method == "smooth" and involves:
            sens.choose_gamma(epsilon, gamma)
        count = self._count_release(where, count_epsilon, method, gamma,
                                    label=f"count for variance of {column}")
        s = float(count.value)
        if s < 2:
            raise ValueError(
                f"the released size of the subpopulation is {s:.3g} < 2, so a variance cannot be released; "
                f"the count (epsilon={count_epsilon:g}) was spent, the mean and variance were not."
            )
        mech, variant = self._mean_mechanism(mean_epsilon, s, bounds, involves_where, involves_col, method,
                                             gamma)
        values = self._sum_over(column, where, bounds, method)
        mean_rel = mech.release(float(values.sum()) / s, rng=self.rng,
                                l1=self.l1 if method == "smooth" and involves else None,
                                details={"method": method, "theorem": variant, "s": s})
        self._record(mean_rel, f"mean for variance of {column}")
        ybar = min(max(float(mean_rel.value), bounds[0]), bounds[1])
        if method == "smooth" and involves:
            bound = sens.variance_smooth(self.l1, bounds, s, ybar)
            var_mech = SmoothCauchy(epsilon=epsilon, smooth_bound=bound, gamma=gamma)
        else:
            affected = self.n_missing if method == "global" and involves else 0
            var_mech = Laplace(epsilon=epsilon, sensitivity=sens.variance_global(bounds, s, ybar, affected))
        details = {"method": method, "column": column, "where": dict(where), "bounds": bounds, "s": s,
                   "mean": ybar, "count": count, "mean_release": mean_rel, "theorem": "5.6"}
        if method == "global" and involves:
            details.update(differentially_private=False, note=_NOT_DP)
        rel = var_mech.release(float(((values - ybar) ** 2).sum()) / (s - 1.0), rng=self.rng,
                               l1=self.l1 if method == "smooth" and involves else None, details=details)
        self._record(rel, f"variance of {column} {where}")
        return self._finish(Release(value=rel.value, epsilon=rel.epsilon + mean_rel.epsilon + count.epsilon,
                                    delta=0.0, sensitivity=rel.sensitivity, mechanism=rel.mechanism,
                                    l1=rel.l1, details=rel.details))
