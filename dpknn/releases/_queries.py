"""Private counts, proportions, means and variances on k-NN-imputed data.

:class:`PrivateImputation` imputes the missing values of the attribute set A with
:class:`~dpknn.impute.KNNImputer` (or takes :class:`~dpknn.releases.Statistics` computed elsewhere,
such as a Parquet folder's) and answers queries on the imputed data with the smooth-sensitivity
mechanisms of Clifton et al. (2022, §5): the noise is calibrated to L1(D), so one record's
influence through the donors it gives is covered. Each method builds a validated query
(:mod:`dpknn.releases._query`) and makes it through the one release path,
:func:`dpknn.releases.release`, which states the theorems. Neighbouring relation: add or remove
one record.

Methods (``method=``):

- ``"smooth"`` (default): the paper's mechanisms (Corollaries 5.2, 5.5, 5.7) with the exact
  constants of the default PolyPlace or the paper's generalized Cauchy noise (``docs/privacy.md``).
- ``"ignore_missing"``: answer on the query's available cases, the records whose values of the
  query's own attributes (its conditions and its column) are observed, with ordinary mechanisms
  (geometric for counts, Laplace for means and variances): the estimate a statistician computes
  without imputing. Differentially private, but biased when data are not missing completely at
  random.

The paper's non-private "global sensitivity" comparison is not offered here; it lives apart, in
:mod:`dpknn.releases._baseline`, for the experiments that reproduce the paper and for
``dpknn release --allow-non-dp``.

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

from dpknn.accounting import BudgetAccountant
from dpknn.accounting._budget import check_accountant
from dpknn.impute._knn import DEFAULT_MAX_WORK, KNNImputer
from dpknn.mechanisms._additive import Geometric
from dpknn.mechanisms._randomness import as_source
from dpknn.releases._query import NOISES, Count, Mean, Proportion, SmoothNoise, Variance
from dpknn.releases._release import release
from dpknn.releases._statistics import InMemoryStatistics, Statistics
from dpknn.schema._flags import check_not_imputed

__all__ = ["NOISES", "PrivateImputation", "estimate_size"]

logger = logging.getLogger(__name__)


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
    return dataclasses.replace(rel.clamp(0, math.inf), params={**rel.params, "query": "number of records"})


class PrivateImputation:
    """Private queries on data whose attributes A are k-NN imputed.

    Parameters
    ----------
    df : pandas.DataFrame
        The data (not modified).
    schema : Schema
        Public domains; ``schema.imputed`` is the attribute set A.
    accountant : BudgetAccountant
        The budget: every release is checked against it (before the data are touched) and
        recorded in it. Required; ``BudgetAccountant(math.inf)`` keeps a ledger without a limit.
    k : int, default 1
        Donors per incomplete record (all complete records when there are fewer than k).
    rng : numpy.random.Generator, int or None
        Source of all noise. None (default): the operating system's CSPRNG. A seed or a
        Generator is for reproducibility only: with a known seed the noise can be removed.
    noise : {"polyplace", "cauchy"}, default "polyplace"
        Noise of the smooth releases. ``"polyplace"``: :class:`~dpknn.mechanisms.SmoothPolyPlace`,
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
    statistics : Statistics
        CONFIDENTIAL: the counts and sums the releases read.
    imputer : KNNImputer or DistributedImputation
        The fitted imputation. CONFIDENTIAL: ``imputer.l1_``, its donors and counts are data.
    imputed : pandas.DataFrame
        The imputed data (confidential microdata; in-memory statistics only).
    releases : list of Release
        Every release made, in order (their ``to_dict()`` is what may be published).

    References
    ----------
    .. [1] Clifton et al. (2022), §5.
    """

    def __init__(self, df, schema, *, accountant, k=1, rng=None, noise="polyplace", gamma="optimal",
                 progress=False, max_work=DEFAULT_MAX_WORK):
        accountant = check_accountant(accountant)  # before the fit, not after it
        smooth = SmoothNoise(noise, gamma)
        check_not_imputed(df, "df")
        imputer = KNNImputer(schema, k=k, max_work=max_work, progress=progress)
        imputed = imputer.fit_transform(df)
        self._setup(InMemoryStatistics(imputer, df, imputed), accountant, rng, smooth)

    @classmethod
    def from_imputer(cls, imputer, df, *, accountant, rng=None, noise="polyplace", gamma="optimal"):
        """Use an already fitted :class:`KNNImputer`; ``df`` must be the data it was fitted on."""
        if not isinstance(imputer, KNNImputer) or not hasattr(imputer, "l1_"):
            raise TypeError("imputer must be a fitted dpknn.KNNImputer.")
        accountant = check_accountant(accountant)
        return cls.from_statistics(InMemoryStatistics(imputer, df), accountant=accountant, rng=rng, noise=noise,
                                   gamma=gamma)

    @classmethod
    def from_statistics(cls, statistics, *, accountant, rng=None, noise="polyplace", gamma="optimal"):
        """Release from ``statistics`` (a :class:`~dpknn.releases.Statistics`: in memory, a Parquet folder's
        :class:`~dpknn.releases.ParquetStatistics`, or cached). Closing this object closes them."""
        if not isinstance(statistics, Statistics):
            raise TypeError(f"statistics must be a dpknn.releases.Statistics, got {type(statistics).__name__}.")
        self = cls.__new__(cls)
        self._setup(statistics, check_accountant(accountant), rng, SmoothNoise(noise, gamma))
        return self

    def _setup(self, statistics, accountant, rng, smooth):
        self.statistics = statistics
        self.imputer = statistics.fit
        self.schema = statistics.schema
        self.accountant = accountant
        self.rng = as_source(rng)
        self.smooth = smooth
        self.noise, self.gamma = smooth.noise, smooth.gamma
        self.releases = []
        self._owner = True

    def with_accountant(self, accountant, *, rng=None):
        """A shallow copy that releases against ``accountant`` (the fit and data are shared).

        A PrivateImputation that was pickled (sent to or received from a joblib or
        multiprocessing worker) holds a detached copy of its accountant, which refuses to spend
        (see :class:`~dpknn.accounting.BudgetAccountant`). Give it the accountant it should
        spend from: the parent's own accountant once the object is back in the parent, or in a
        worker a fresh ``BudgetAccountant(eps_worker)`` whose ε the parent has already spent.
        The copy does not own the statistics: closing it leaves the original working.

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
        new._owner = False
        if rng is not None:
            new.rng = as_source(rng)
        return new

    @property
    def imputed(self):
        """The imputed data (CONFIDENTIAL microdata); only for statistics held in memory."""
        try:
            return self.statistics.imputed
        except AttributeError:
            raise AttributeError(f"{type(self.statistics).__name__} holds no imputed DataFrame in memory.") from None

    @property
    def l1(self):
        """CONFIDENTIAL: L1(D) of the data (never publish it). With universes, the sum over the
        universes; each release uses the L1 of the universes it reads (``imputer.l1_for``)."""
        return int(self.imputer.l1_)

    def close(self):
        """Close the statistics (remove a Parquet release's donors, close a cluster it started)."""
        if self._owner:
            self.statistics.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def release(self, query):
        """Make ``query`` (a :class:`~dpknn.releases.Count`, ``Proportion``, ``Mean`` or ``Variance``),
        charging this object's accountant; the release is appended to :attr:`releases`."""
        rel = release(query, self.statistics, accountant=self.accountant, rng=self.rng, smooth=self.smooth)
        self.releases.append(rel)
        return rel

    def count(self, where=None, *, epsilon, method="smooth", noise=None, gamma=None):
        """Private count of the records (after imputation) that satisfy ``where``.

        Smooth bound 1 + L1(D) (Theorem 5.1, Corollary 5.2) with smooth noise rounded to
        integers when ``where`` involves an imputed attribute; otherwise the count does not
        depend on imputation and the geometric mechanism with sensitivity 1 is used. The
        release is an integer >= 0 (negative noisy counts become 0: post-processing).

        Parameters
        ----------
        where : dict or None
            Column -> inclusive range ``(low, high)`` (None = open end) or, for Ordinal and
            Categorical attributes, a list of allowed values; combined with AND. None: all.
        epsilon : float
            Above ln 2 (2 ln 2 with Cauchy noise) when the smooth mechanism is used.
        method : {"smooth", "ignore_missing"}
        noise : {"polyplace", "cauchy"} or None (the object's default)
        gamma : "optimal", "paper", float or None (the object's default; Cauchy noise only)
        """
        return self.release(Count(where=where, epsilon=epsilon, method=method, noise=noise, gamma=gamma))

    def proportion(self, where, *, within=None, epsilon, denominator_epsilon=None, method="smooth",
                   noise=None, gamma=None):
        """Private proportion of the records of ``within`` that also satisfy ``where``.

        Released as two counts (post-processing: their ratio, clipped to [0, 1]): the
        numerator (records satisfying both) with ``epsilon`` and the denominator with
        ``denominator_epsilon`` (default: ``epsilon``). The denominator uses an ordinary count
        mechanism when ``within`` does not involve imputed attributes (Clifton et al. 2022,
        §5.1). The total cost is ``epsilon + denominator_epsilon``.
        """
        return self.release(Proportion(where=where, within=within, epsilon=epsilon,
                                       denominator_epsilon=denominator_epsilon, method=method, noise=noise,
                                       gamma=gamma))

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
        return self.release(Mean(column=column, where=where, bounds=bounds, epsilon=epsilon,
                                 count_epsilon=count_epsilon, method=method, noise=noise, gamma=gamma))

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
        return self.release(Variance(column=column, where=where, bounds=bounds, epsilon=epsilon,
                                     mean_epsilon=mean_epsilon, count_epsilon=count_epsilon, method=method,
                                     noise=noise, gamma=gamma))
