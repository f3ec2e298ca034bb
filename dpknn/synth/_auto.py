"""AIM where the budget pays for its rounds, MST where it does not: the default of ``dpknn synth``.

AIM (:class:`~dpknn.synth.AIMSynthesizer`) spreads its budget over 16·d rounds so that it can
keep several dependences per attribute; MST (:class:`~dpknn.synth.MSTSynthesizer`) spends it on
2d − 1 tables of a spanning tree. When the rows are few for the budget, AIM's tables are mostly
noise and MST's few, sharper tables fit better; when they are many, AIM wins. Which side a table
is on depends on its number of rows, which is not public, so it is released first:

1. **Count.** ñ = n + Z, Z discrete Laplace of scale 1/ε₀, ε₀ = ``count_share``·ε
   (:class:`~dpknn.mechanisms.Geometric`): adding or removing one record changes n by one, so
   this is ε₀-DP (Ghosh, Roughgarden, Sundararajan 2012).
2. **Choice** (post-processing of ñ): θ-usefulness, the rule PrivBayes uses for its degree
   (Zhang et al. 2017, §4.4), applied to AIM's tables. AIM's first tables get noise of standard
   deviation s per cell (public: from ε − ε₀, δ, its rounds and the domains); a two-way table
   holds ñ/c̄ rows per cell on average, c̄ the mean size of the two-way tables (public). AIM
   runs when (ñ/c̄)/s ≥ θ, MST otherwise.
3. **Fit** the chosen synthesiser with (ε − ε₀, δ) on the same data, its noise drawn from the
   same source after the count's, and ñ as its ``n_rows``: with ``bins="auto"`` it buys only
   the levels of quantiles that are θ-useful for ñ rows
   (:func:`~dpknn.synth._marginal.useful_levels`; post-processing of ñ), and the model gets
   the rest of their share.

**Privacy**, add/remove one record with its missingness pattern: step 1 is (ε₀, 0)-DP, step 3
(ε − ε₀, δ)-DP, and sequential composition (Dwork and Roth 2014, Theorem 3.16) gives (ε, δ)-DP.
δ is that of AIM or MST, whichever is larger, even when the other ran: which one runs depends on
ñ, so MST's pure DP alone (its ``noise`` may pick it) is not the guarantee of the whole. ñ,
clamped at 0, is a released value; it is published in the sidecar along with the choice.

The default θ = 2.5 was set on the public tables of ``benchmarks/compare_synthesis.py``
(``benchmarks/README.md``): between 1.7 (SLID at ε = 1, where MST fitted 14 % better) and 3.3
(SLID at ε = 2, where AIM fitted 12 % better).

References
----------
.. [1] McKenna, Mullins, Sheldon, Miklau (2022). "AIM: an adaptive and iterative mechanism for
   differentially private synthetic data", PVLDB 15(11).
.. [2] McKenna, Miklau, Sheldon (2021). "Winning the NIST contest: a scalable and general
   approach to differentially private synthetic data", J. Priv. Confidentiality 11(3).
.. [3] Zhang, Cormode, Procopiuc, Srivastava, Xiao (2017). "PrivBayes: private data release via
   Bayesian networks", ACM TODS 42(4), §4.4.
.. [4] Ghosh, Roughgarden, Sundararajan (2012). "Universally utility-maximizing privacy
   mechanisms", SIAM J. Comput.
.. [5] Dwork, Roth (2014). "The algorithmic foundations of differential privacy", Theorem 3.16.
"""

from __future__ import annotations

import logging
import math
import typing
from fractions import Fraction

from dpknn.accounting._budget import charge, float_down
from dpknn.mechanisms._additive import Geometric
from dpknn.mechanisms._randomness import as_source
from dpknn.synth._aim import AIMSynthesizer
from dpknn.synth._base import Synthesizer
from dpknn.synth._data import FrameData, TableData
from dpknn.synth._marginal import MARGINAL_CONSTRAINTS, check_epsilon_bound, mean_pair_cells
from dpknn.synth._mst import MSTSynthesizer
from dpknn.utils._validation import (
    POSITIVE,
    InstanceOf,
    Interval,
    Options,
    check_is_fitted,
    check_positive_real,
    check_unit_interval,
    validate_params,
)

__all__ = ["AutoSynthesizer", "aim_usefulness"]

logger = logging.getLogger(__name__)


def aim_usefulness(rows, aim, plan):
    """Step 2's ratio (ñ/c̄)/s for ``rows`` (a released count), an unfitted ``aim`` and its
    ``plan`` (:meth:`~dpknn.synth.AIMSynthesizer.plan`; all public)."""
    sizes = plan.disc.sizes + ~plan.gapless
    share = aim.planned_tables(sizes)[0][0]
    sd = math.sqrt(plan.budget.mechanism((plan.budget.total - plan.quantiles) * share).variance())
    return max(rows, 0) / mean_pair_cells(sizes) / sd


class AutoSynthesizer(Synthesizer):
    """Differentially private synthetic data by AIM or MST, chosen on a released row count.

    (ε, δ)-DP under add/remove one record (with its missingness pattern): a count at
    ``count_share``·ε, then the chosen synthesiser with the rest (module docstring).

    Parameters
    ----------
    attributes : sequence of Ordinal, Categorical or Continuous
        The public domains, universes included.
    epsilon : float
        Total ε of :meth:`fit`.
    delta : float in (0, 1), default 1e-9
    theta : float, default 2.5
        AIM runs when its first tables are θ-useful (module docstring), MST otherwise.
    count_share : float, default 0.01
        Share of ε for the row count.
    noise, bins, bin_edges, quantile_share, quantile_levels, analyses, rank_share, within_bin, never_missing, n_jobs :
        Passed to the chosen synthesiser (:class:`~dpknn.synth.AIMSynthesizer`,
        :class:`~dpknn.synth.MSTSynthesizer`).
    workload, max_model_size :
        Passed to AIM when it is chosen; AIM's ε is (1 − ``count_share``)·ε, so "auto" sizes
        its model for that ε (79,200 cells at ε = 4).
    progress : bool, default False
    rng : numpy.random.Generator, int or None
        Noise source of :meth:`fit` (None: the OS CSPRNG); the count and the chosen synthesiser
        draw from it in turn.

    Attributes
    ----------
    method_ : str
        "aim" or "mst".
    synthesizer_ : AIMSynthesizer or MSTSynthesizer
        The fitted synthesiser.
    released_rows_ : int
        ñ, the released row count.
    epsilon_, delta_ : float
        The whole fit's privacy: δ is the larger of AIM's and MST's (module docstring).

    Examples
    --------
    >>> from dpknn import Categorical, Ordinal
    >>> from dpknn.datasets import make_census
    >>> from dpknn.synth import AutoSynthesizer
    >>> attrs = [Ordinal("AGE", 0, 99), Ordinal("SCHOOL", 0, 17), Categorical("SEX", [1, 2])]
    >>> model = AutoSynthesizer(attrs, epsilon=1.0, never_missing=["SEX"], rng=0).fit(make_census(5_000, rng=0))
    >>> model.method_, model.sample(3, rng=0).shape
    ('mst', (3, 3))
    """

    parameter_constraints: typing.ClassVar[dict] = {
        **{k: v for k, v in MARGINAL_CONSTRAINTS.items() if k not in ("n_rows", "iterations")},
        "theta": POSITIVE,
        "count_share": Interval("real", 0, 1, closed="neither"),
        "workload": (Interval("int", 1, 4, closed="both"), InstanceOf((list, tuple), "sequence of attribute sets")),
        "max_model_size": (Interval("int", 1, None, closed="left"), Options("auto")),
    }

    def __init__(self, attributes, *, epsilon, delta=1e-9, theta=2.5, count_share=0.01, noise="auto",
                 workload=2, max_model_size="auto", bins="auto", bin_edges=None, quantile_share=0.1,
                 quantile_levels=6, rank_share=0.1, within_bin="auto",
                 analyses=(), never_missing=(), n_jobs=2, progress=False, rng=None):
        self.attributes = attributes
        self.epsilon = epsilon
        self.delta = delta
        self.theta = theta
        self.count_share = count_share
        self.noise = noise
        self.workload = workload
        self.max_model_size = max_model_size
        self.bins = bins
        self.bin_edges = bin_edges
        self.quantile_share = quantile_share
        self.quantile_levels = quantile_levels
        self.rank_share = rank_share
        self.within_bin = within_bin
        self.analyses = analyses
        self.never_missing = never_missing
        self.n_jobs = n_jobs
        self.progress = progress
        self.rng = rng

    def _candidates(self, epsilon, rows=None):
        shared = {"epsilon": epsilon, "delta": self.delta, "noise": self.noise, "bins": self.bins,
                  "bin_edges": self.bin_edges, "quantile_share": self.quantile_share,
                  "quantile_levels": self.quantile_levels, "rank_share": self.rank_share,
                  "within_bin": self.within_bin,
                  "analyses": self.analyses, "n_rows": rows,
                  "never_missing": self.never_missing,
                  "n_jobs": self.n_jobs, "progress": self.progress}
        return {"aim": AIMSynthesizer(self.attributes, workload=self.workload, max_model_size=self.max_model_size,
                                      **shared),
                "mst": MSTSynthesizer(self.attributes, **shared)}

    def fit(self, X, y=None, *, accountant=None):
        """Release the count, choose, and fit the chosen synthesiser on ``X`` (a DataFrame holding
        the attribute columns; not modified).

        Parameters
        ----------
        X : pandas.DataFrame or TableData
            As for :meth:`AIMSynthesizer.fit <dpknn.synth.AIMSynthesizer.fit>` (a folder of Parquet partitions:
            :func:`~dpknn.synth._distributed.synthesize_parquet`).
        y : ignored
        accountant : BudgetAccountant or None
            Charged (ε, δ) before the data are read; refused when it does not fit. None: a new accountant
            holding exactly this cost (the one rule, :func:`~dpknn.accounting.charge`); either is kept as
            ``accountant_``.
        """
        validate_params(self)   # the declared parameter_constraints, before anything is read or charged
        data = X if isinstance(X, TableData) else FrameData(X)   # FrameData refuses imputed data
        eps = Fraction(check_epsilon_bound(self.epsilon))
        share = Fraction(check_unit_interval(self.count_share, "count_share"))
        check_positive_real(self.theta, "theta")
        eps0 = float_down(share * eps)
        rest = float_down(eps - Fraction(eps0))
        candidates = self._candidates(rest)
        plans = {k: c.plan() for k, c in candidates.items()}   # every parameter checked before the data
        # Either may run, so the mechanism's δ is the larger (MST alone may be pure DP; this is not).
        delta = max(p.delta for p in plans.values())
        self.accountant_ = charge(accountant, float(eps), delta,
                                  label=f"{type(self).__name__} (count, then AIM or MST)")
        data.scan(plans["aim"])   # domain errors and never_missing gaps before the count is drawn
        src = as_source(self.rng)
        rows = max(Geometric(epsilon=eps0).release(data.rows, rng=src).value, 0)   # post-processing: a count
        candidates = self._candidates(rest, rows)   # ñ buys the useful levels of quantiles (post-processing)
        ratio = aim_usefulness(rows, candidates["aim"], candidates["aim"].plan())
        method = "aim" if ratio >= self.theta else "mst"
        logger.info("AutoSynthesizer: released rows %d, AIM usefulness %.3g (theta %g): %s", rows, ratio,
                    self.theta, method)
        # The chosen one draws from the same source, after the count: independent noises.
        self.synthesizer_ = candidates[method].set_params(rng=src).fit(data)
        self.method_ = method
        self.released_rows_ = int(rows)
        self.epsilon_ = float(eps0) + self.synthesizer_.epsilon_
        self.delta_ = delta
        self.n_features_in_ = self.synthesizer_.n_features_in_
        self.n_outside_universe_ = self.synthesizer_.n_outside_universe_
        return self

    def released_params(self):
        """The choice and what it read (the released count, θ, the count's ε), then the chosen
        synthesiser's own record."""
        inner = self.synthesizer_
        return {"chosen": self.method_, "theta": self.theta, "count_share": self.count_share,
                "released_rows": self.released_rows_, "method_epsilon": inner.epsilon_,
                "method_delta": inner.delta_, **inner.released_params()}

    def sample(self, n, *, rng=None):
        """``n`` synthetic rows from the chosen synthesiser (post-processing; ``rng`` drives it)."""
        check_is_fitted(self, "synthesizer_")
        return self.synthesizer_.sample(n, rng=rng)
