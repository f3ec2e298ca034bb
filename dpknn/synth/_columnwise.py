"""Column-by-column DP synthesis that imputes as it goes (KaminoI, made valid).

Attributes are visited in an order S₁, …, S_d. Stage 1 releases a noisy histogram of S₁ on the
rows observed on S₁. Stage j ≥ 2 releases a DP naive-Bayes model of S_j given S₁..S_{j−1},
fitted on the rows observed on S_j, whose features S_{<j} are complete because every earlier
stage has already filled its attribute's missing cells by **sampling its own released model**
(never the raw distribution, as the official code does). Synthetic rows are drawn stage by stage
from the same released models.

Privacy (add/remove one row with its missingness pattern; substitution costs twice):

- **Order.** Given (``order``), or by increasing public ``missing_rates``; when neither is
  given, by increasing *noisy* missing counts: d counts of missing cells, each with discrete
  Laplace noise of scale d/ε₀ (a row changes each count by at most one, so the L1 sensitivity
  is d), ε₀ = ``order_share``·ε.
- **Stage j.** ε_j = (ε − ε₀)/d. Stage 1: one count per code of S₁, L1 sensitivity 1, discrete
  Laplace of scale 1/ε₁ per cell. Stage j ≥ 2: the j − 1 tables N(S_j, S_i), i < j; a row
  changes one cell of each, so the L1 sensitivity is j − 1 and each cell gets discrete Laplace
  noise of scale (j − 1)/ε_j (one draw per cell). The row's own imputed features depend on
  earlier *released* models and its own cells only, so stage j is ε_j-DP given the earlier
  outputs and adaptive sequential composition applies.
- Clipping at 0, smoothing and normalising the tables, imputation and sampling are
  post-processing. Total: ε-DP (δ = 0).

Under MCAR with public rates φ, stage j reads a row only if it is observed on S_j, and earlier
stages never read that bit, so its cost amplifies to ln(1 + (1 − φ_{S_j})(e^{ε_j} − 1))
(:meth:`ColumnwiseSynthesizer.mcar_epsilon`); the order estimate is not amplified.

References
----------
.. [1] Mohapatra, Zong, Kerschbaum, He (2024). "Differentially private data generation with
   missing data", §4 (KaminoI) and Theorem 5.12 (its amplification, here per stage).
.. [2] Ge, Mohapatra, He, Ilyas (2021). "Kamino: constraint-aware differentially private data
   synthesis", PVLDB 14(10).
.. [3] Ghosh, Roughgarden, Sundararajan (2012). The geometric mechanism.
.. [4] Dwork, Roth (2014), Theorem 3.16 (sequential composition).
"""

from __future__ import annotations

import logging
import math
import typing
from fractions import Fraction

import numpy as np

from dpknn.accounting._budget import charge, float_down
from dpknn.accounting._mcar import amplify_mcar
from dpknn.mechanisms._additive import Geometric
from dpknn.mechanisms._randomness import as_source
from dpknn.schema._discretization import Discretization
from dpknn.schema._flags import check_not_imputed
from dpknn.schema._marginals import count_tables, extended_codes, observed_block
from dpknn.synth._base import Synthesizer
from dpknn.synth._privbayes import check_epsilon, noisy_tables
from dpknn.utils._progress import progress_bar
from dpknn.utils._validation import (
    EPSILON,
    Boolean,
    Interval,
    Options,
    check_is_fitted,
    check_positive_int,
    check_rng,
    check_unit_interval,
    validate_params,
)

__all__ = ["ColumnwiseSynthesizer"]

logger = logging.getLogger(__name__)

_CHUNK = 1 << 18   # rows per block when sampling: bounds the (rows x classes) work arrays


def _log_conditionals(table, alpha):
    """log P(x | y) from noisy counts N(y, x) (y on axis 0), smoothed by ``alpha`` per cell."""
    t = table.astype(np.float64) + alpha
    return np.log(t / t.sum(axis=1, keepdims=True)).T   # shape (|x|, |y|): gathered by feature code


def _draw(logp, u):
    """One draw per row from rows of unnormalised log-probabilities."""
    p = np.exp(logp - logp.max(axis=1, keepdims=True))
    cdf = np.cumsum(p, axis=1)
    return np.minimum((cdf < (u * cdf[:, -1])[:, None]).sum(axis=1), p.shape[1] - 1)


class ColumnwiseSynthesizer(Synthesizer):
    """ε-DP column-wise synthesis with DP naive-Bayes stages that impute missing cells (KaminoI).

    ε-DP under add/remove one row with its missingness pattern (module docstring: the order,
    the stages' noise and the composition theorem).

    Parameters
    ----------
    attributes : sequence of Ordinal, Categorical or Continuous
    epsilon : float
    order : list of str or None
        The visiting order. None: by increasing ``missing_rates``, or by increasing noisy
        missing counts when those are not given either.
    missing_rates : dict or None
        Public missing rate per attribute (used only to order; ties keep the declared order).
    model : {"naive_bayes"}
        The stage model: noisy-count naive Bayes (the only one built).
    bins : int, default 10
    order_share : float, default 0.05
        Share of ε spent on the order when it is estimated.
    smoothing : float, default 1.0
        Pseudo-count added to every noisy cell before normalising (post-processing).
    n_jobs : int, default 2
    progress : bool, default False
    rng : numpy.random.Generator, int or None
        Noise and imputation source of :meth:`fit` (None: the OS CSPRNG for noise, OS entropy
        for imputation draws).

    Attributes
    ----------
    order_ : tuple of str
    tables_ : list of list of ndarray of int64
        Released noisy counts: ``[[N(S₁)], [N(S₂, S₁)], [N(S₃, S₁), N(S₃, S₂)], ...]``, clipped
        at 0, the stage's attribute on axis 0.
    stage_epsilon_ : float
    epsilon_ : float
    noisy_missing_counts_ : dict or None
        The released missing counts, when the order was estimated.
    """

    parameter_constraints: typing.ClassVar[dict] = {
        "epsilon": EPSILON,
        "model": Options("naive_bayes"),
        "bins": Interval("int", 1, None, closed="left"),
        "order_share": Interval("real", 0, 1, closed="neither"),
        "smoothing": Interval("real", 0, None, closed="left"),
        "n_jobs": Interval("int", 1, None, closed="left"),
        "progress": Boolean(),
    }

    def __init__(self, attributes, *, epsilon, order=None, missing_rates=None, model="naive_bayes", bins=10,
                 order_share=0.05, smoothing=1.0, n_jobs=2, progress=False, rng=None):
        self.attributes = attributes
        self.epsilon = epsilon
        self.order = order
        self.missing_rates = missing_rates
        self.model = model
        self.bins = bins
        self.order_share = order_share
        self.smoothing = smoothing
        self.n_jobs = n_jobs
        self.progress = progress
        self.rng = rng

    def _validate(self):
        disc = Discretization(self.attributes, self.bins)
        eps = check_epsilon(self.epsilon)
        if self.model != "naive_bayes":
            raise ValueError(f"model must be 'naive_bayes' (the only stage model built), got {self.model!r}.")
        if isinstance(self.smoothing, bool) or not isinstance(self.smoothing, (int, float)) \
                or not (math.isfinite(self.smoothing) and self.smoothing > 0):
            raise ValueError(f"smoothing must be a finite number > 0, got {self.smoothing!r}.")
        check_positive_int(self.n_jobs, "n_jobs")
        names = disc.names
        if self.order is not None:
            order = list(self.order)
            if sorted(order) != sorted(names):
                raise ValueError(f"order must list every attribute once, {names}; got {order!r}.")
            return disc, eps, Fraction(0), [names.index(a) for a in order]
        if self.missing_rates is not None:
            if not isinstance(self.missing_rates, dict) or set(self.missing_rates) != set(names):
                raise ValueError(f"missing_rates must map every attribute {names} to a public rate, "
                                 f"got {self.missing_rates!r}.")
            rates = [check_unit_interval(self.missing_rates[a], f"missing_rates[{a!r}]", closed=True) for a in names]
            return disc, eps, Fraction(0), sorted(range(len(names)), key=lambda j: rates[j])
        return disc, eps, Fraction(check_unit_interval(self.order_share, "order_share")) * eps, None

    def fit(self, X, y=None, *, accountant=None):
        """Release the stage models learnt from ``X`` (missing cells as NaN/None; not modified).

        ``accountant`` (a :class:`~dpknn.accounting.BudgetAccountant`) is charged ε before
        the data are read; None: a new accountant holding exactly ε (:func:`~dpknn.accounting.charge`);
        either is kept as ``accountant_``.
        """
        validate_params(self)   # the declared parameter_constraints, before anything is read or charged
        check_not_imputed(X, "X")  # imputed values would be learnt as observed ones
        disc, eps, eps0, order = self._validate()
        self.accountant_ = charge(accountant, float(eps), 0.0, label="ColumnwiseSynthesizer")
        src = as_source(self.rng)
        gen = check_rng(src.generator)
        codes = disc.encode(X).astype(np.int64)
        self._note_outside_universes(X)
        d = codes.shape[0]
        sizes = disc.sizes
        self.noisy_missing_counts_ = None
        if order is None:
            missing = (codes < 0).sum(axis=1)
            # One record changes each of the d counts by at most one: L1 sensitivity d.
            counts_mech = Geometric(epsilon=eps0, sensitivity=d)
            noisy = [counts_mech.release(int(m), rng=src).value for m in missing]
            self.noisy_missing_counts_ = dict(zip(disc.names, noisy))
            order = sorted(range(d), key=lambda j: noisy[j])
        stage_eps = (eps - eps0) / d

        tables = []
        for j, a in enumerate(progress_bar(order, progress=self.progress, desc="Columnwise stages", unit="stage")):
            earlier = order[:j]
            if j == 0:
                counts = [np.bincount(codes[a][codes[a] >= 0], minlength=sizes[a])]
                mech = Geometric(epsilon=stage_eps)
            else:
                ext = extended_codes(codes[[a, *earlier]], sizes[[a, *earlier]])
                counts = [observed_block(t) for t in
                          count_tables(ext, sizes[[a, *earlier]], [(0, i + 1) for i in range(j)], n_jobs=self.n_jobs)]
                mech = Geometric(epsilon=stage_eps / j)   # j tables, stage_eps / j apiece
            noisy = noisy_tables(counts, mech, src)
            tables.append(noisy)
            gaps = np.flatnonzero(codes[a] < 0)
            if gaps.size:
                codes[a, gaps] = self._stage_draw(noisy, [codes[i, gaps] for i in earlier], gaps.size, gen)
        self.discretization_ = disc
        self.order_ = tuple(disc.names[a] for a in order)
        self._order = tuple(order)
        self.tables_ = tables
        self.stage_epsilon_ = float_down(stage_eps)
        self.epsilon_ = float(eps)
        self.order_epsilon_ = float(eps0)
        self.delta_ = 0.0
        self.n_features_in_ = d
        logger.info("ColumnwiseSynthesizer: order %s, %.4g per stage", self.order_, float(stage_eps))
        return self

    def _stage_draw(self, noisy, features, n, gen):
        """Draw the stage attribute for ``n`` rows with the given feature codes (one array per table)."""
        if not features:
            p = noisy[0].astype(np.float64) + self.smoothing
            return gen.choice(p.size, size=n, p=p / p.sum())
        # The class prior from every table's margin (they estimate the same counts).
        prior = np.mean([t.sum(axis=1) for t in noisy], axis=0) + self.smoothing
        log_prior = np.log(prior / prior.sum())
        logc = [_log_conditionals(t, self.smoothing) for t in noisy]
        out = np.empty(n, dtype=np.int64)
        for lo in range(0, n, _CHUNK):
            hi = min(lo + _CHUNK, n)
            logp = np.broadcast_to(log_prior, (hi - lo, log_prior.size)).copy()
            for lc, f in zip(logc, features):
                logp += lc[f[lo:hi]]
            out[lo:hi] = _draw(logp, gen.random(hi - lo))
        return out

    def released_params(self):
        """Public bins, the column order, and the noisy missing counts when the fit released them."""
        out = {"bins": self.bins, "order": list(self.order_)}
        if self.noisy_missing_counts_ is not None:
            out["noisy_missing_counts"] = self.noisy_missing_counts_
        return out

    def sample(self, n, *, rng=None):
        """``n`` complete, domain-valid synthetic rows (post-processing of the released models)."""
        check_is_fitted(self, "tables_")
        n = check_positive_int(n, "n", minimum=0)
        gen = check_rng(rng)
        codes = np.empty((self.n_features_in_, n), dtype=np.int64)
        for j, (a, noisy) in enumerate(zip(self._order, self.tables_)):
            codes[a] = self._stage_draw(noisy, [codes[i] for i in self._order[:j]], n, gen)
        return self.discretization_.decode(codes, rng=gen)

    def mcar_epsilon(self, missing_rates):
        """ε of the fitted release under MCAR with public ``missing_rates`` (per-stage amplification).

        Σ_j ln(1 + (1 − φ_{S_j})(e^{ε_j} − 1)) plus the unamplified ε of the order estimate.
        Valid only when the missingness really is MCAR with these fixed, public rates.
        """
        check_is_fitted(self, "tables_")
        if not isinstance(missing_rates, dict) or set(missing_rates) != set(self.order_):
            raise ValueError(f"missing_rates must map every attribute {list(self.order_)} to a public rate.")
        return self.order_epsilon_ + math.fsum(
            amplify_mcar(self.stage_epsilon_, 1 - missing_rates[a])[0] for a in self.order_)
