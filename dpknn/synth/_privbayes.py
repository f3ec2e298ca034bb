"""PrivBayes and PrivBayesE: DP synthetic data from a Bayesian network, with missing values.

The network is learnt greedily: a root drawn uniformly at random (it does not look at the
data), then d − 1 private selections, each choosing a child X outside the network so far and
its parents Π, ``min(degree, |V|)`` nodes of it, by the score s = n_S·I_S(X; Π). Then one noisy
count table per conditional is released, and synthetic rows are drawn from the noisy network.

How a set S of attributes is counted (``missing``):

- ``"complete_rows"``: PrivBayes on the rows with no missing cell;
- ``"observe"``: PrivBayesE, every score and table on the rows observed on its own attributes;
- ``"value"``: all rows, a missing cell being one more code of its attribute, so that the
  synthetic data reproduce missingness (structural gaps such as "not asked").

Privacy (add/remove one row together with its missingness pattern; substitution costs twice):

1. **Row bound.** The score's sensitivity needs a public bound N on the rows any score is
   computed on. ``max_rows`` is that bound; when None, N is released as
   n + Z + ⌈ln(1/δ)/ε₀⌉ with Z discrete Laplace of scale 1/ε₀, ε₀ = ``rows_share``·ε
   (geometric mechanism), and N ≤ n happens with probability below δ, which is charged.
   ``degree="auto"`` also needs ñ = n + Z, released the same way (ε₀ is spent even when
   ``max_rows`` is given; no δ is then charged, since ñ only chooses k).
2. **Degree** (``degree="auto"``): θ-usefulness (Zhang et al. 2017, §4.4, Definition 4.6 and
   Lemma 4.7). A noisy table is θ-useful when its average cell count is at least θ times the
   noise scale per cell. With k parents, step 4 releases m_k = max(d − k, 1) tables at noise
   scale m_k/ε₂, and the largest (k+1)-way table the search could choose, over the k + 1
   largest public domains, has s_(k+1) cells (product of those sizes). Rating the largest table
   makes every table θ-useful, not just an average one (the search favours the wide attributes,
   whose mutual information is largest). k is the largest of 1, 2, 3 (and at most d − 1) with
   ñ·ε₂ / (m_k·s_(k+1)) ≥ θ, and 1 when none is. The default θ = 8 is the paper's recommended θ = 4 in its
   convention: it releases frequencies under substitution (noise scale 2(d − k)/(nε₂), twice
   ours), so for binary attributes (s_(k+1) = 2^{k+1}) the rule is exactly its
   nε₂/((d − k)·2^{k+2}) ≥ 4. The rule reads ñ, ε₂ and the public domains only, so the choice
   is post-processing of ñ.
3. **Structure.** Each selection is permute-and-flip with ε₁/(d − 1), ε₁ = β(ε − ε₀), on scores
   of sensitivity g(N) = (N+1)ln(N+1) − N ln N (:func:`~dpknn.synth.score_sensitivity`),
   which holds for every n_S ≤ N, so PrivBayesE's data-dependent n_S is covered. The official
   PrivBayesE code calibrates to the complete-data sensitivity, n/n_S times too little noise.
4. **Tables.** m = max(d − degree, 1) count tables (the first degree + 1 attributes form one
   joint table): each cell gets discrete Laplace noise of scale m/ε₂, ε₂ = ε − ε₀ − ε₁. Adding
   a row changes one cell of each table by one, so each table has L1 sensitivity 1. Negative
   counts are clipped to 0, each parent configuration is normalised, and an empty one is
   uniform (post-processing).

By sequential composition the whole is (ε, δ)-DP, δ = 0 when ``max_rows`` is given. Everything
the fitted model keeps (the network, the released N, the noisy counts) is a released value;
scores and true counts never leave :meth:`PrivBayes.fit`.

References
----------
.. [1] Zhang, Cormode, Procopiuc, Srivastava, Xiao (2017). "PrivBayes: private data release via
   Bayesian networks", ACM TODS 42(4), Algorithms 2-4.
.. [2] Mohapatra, Zong, Kerschbaum, He (2024). "Differentially private data generation with
   missing data", §4 (PrivBayesE).
.. [3] McKenna, Sheldon (2020). "Permute-and-flip", NeurIPS, Theorem 1.
.. [4] Ghosh, Roughgarden, Sundararajan (2012). "Universally utility-maximizing privacy
   mechanisms", SIAM J. Comput. (the geometric mechanism).
.. [5] Dwork, Roth (2014). "The algorithmic foundations of differential privacy", Theorem 3.16
   (sequential composition).
"""

from __future__ import annotations

import itertools
import logging
import math
import typing
from fractions import Fraction

import numpy as np

from dpknn.accounting._budget import charge, float_down
from dpknn.mechanisms._additive import Geometric
from dpknn.mechanisms._randomness import as_source
from dpknn.mechanisms._selection import PermuteAndFlip
from dpknn.schema._discretization import Discretization
from dpknn.schema._flags import check_not_imputed
from dpknn.schema._marginals import count_tables, extended_codes, observed_block
from dpknn.synth._base import Synthesizer, check_never_missing
from dpknn.synth._scores import check_row_bound, mutual_information_score, score_sensitivity
from dpknn.utils._progress import progress_bar
from dpknn.utils._validation import (
    EPSILON,
    POSITIVE,
    Boolean,
    Interval,
    Options,
    check_is_fitted,
    check_positive_int,
    check_positive_real,
    check_rng,
    check_unit_interval,
    validate_params,
)

__all__ = ["PrivBayes", "useful_degree"]

logger = logging.getLogger(__name__)

MISSING_MODES = ("observe", "complete_rows", "value")
MAX_DEGREE = 3


def useful_degree(rows, epsilon, sizes, theta):
    """Step 2 (module docstring): the largest k in 1..min(3, d − 1) whose every table is
    θ-useful with ``rows`` (a released count), ε₂ = ``epsilon`` and public domain ``sizes``; 1
    if none is."""
    d = len(sizes)
    log_sizes = np.sort(np.log(np.asarray(sizes, dtype=np.float64)))[::-1]
    best = 1
    for k in range(1, min(MAX_DEGREE, max(d - 1, 1)) + 1):
        # In logarithms, so that no product of wide domains overflows.
        if math.log(max(rows, 1)) + math.log(float(epsilon)) - math.log(max(d - k, 1)) \
                - float(log_sizes[: k + 1].sum()) >= math.log(theta):
            best = k
    return best


def check_epsilon(epsilon):
    """ε as an exact Fraction (finite, > 0): budget shares are computed without rounding."""
    return Fraction(EPSILON.check(epsilon, "epsilon"))


def row_bound_margin(epsilon, delta):
    """Margin t with P(Z <= -t) < δ for Z discrete Laplace of scale 1/ε: ⌈ln(1/δ)/ε⌉."""
    return math.ceil(math.log(1.0 / delta) / float(epsilon))


def noisy_tables(tables, mechanism, src):
    """Each count table released by ``mechanism`` (a :class:`~dpknn.mechanisms.Geometric`
    calibrated to one table), clipped at 0 (post-processing; int64)."""
    return [np.maximum(mechanism.release_array(t, rng=src), 0) for t in tables]


def conditional(counts):
    """P(X | parents) from counts with X on axis 0: each column normalised, empty ones uniform."""
    c = counts.reshape(counts.shape[0], -1).astype(np.float64)
    tot = c.sum(axis=0)
    p = np.where(tot > 0, c / np.where(tot > 0, tot, 1.0), 1.0 / c.shape[0])
    return p.reshape(counts.shape)


def sample_conditional(p, parent_codes, u):
    """Draw X ~ p[:, cfg] for each row; ``p`` has X on axis 0 and the parents on the other axes."""
    k = p.shape[0]
    flat = p.reshape(k, -1)
    m = flat.shape[1]
    if parent_codes:
        cfg = np.ravel_multi_index(tuple(c.astype(np.int64) for c in parent_codes), p.shape[1:])
    else:
        cfg = np.zeros(u.shape[0], dtype=np.int64)
    cdf = np.cumsum(flat, axis=0)
    cdf[-1] = 1.0
    # One increasing sequence over all configurations: column c's CDF lives in [c, c + 1].
    keys = (cdf + np.arange(m)).T.ravel()
    idx = np.searchsorted(keys, cfg + u, side="right") - cfg * k
    return np.minimum(idx, k - 1)


class PrivBayes(Synthesizer):
    """Differentially private synthetic data by a noisy Bayesian network (PrivBayes, PrivBayesE).

    (ε, δ)-DP under add/remove one row (with its missingness pattern): see the module
    docstring for the theorem each step relies on and the budget split. δ = 0 when
    ``max_rows`` is given.

    Parameters
    ----------
    attributes : sequence of Ordinal, Categorical or Continuous
        The public domains (numeric ones cut into ``bins`` equal public bins,
        :class:`~dpknn.schema.Discretization`).
    epsilon : float
        Total ε of :meth:`fit`.
    degree : int or "auto", default "auto"
        Parents per attribute (1 to 3), or "auto": the largest degree whose noisy tables are
        θ-useful (module docstring, step 2), from a released row count and the public domains.
    theta : float, default 8.0
        θ of ``degree="auto"``: the least ratio of a table's average cell count to its noise
        scale. 8 is the paper's recommended 4 in its convention (module docstring).
    missing : {"observe", "complete_rows", "value"}, default "observe"
        How missing cells are treated (module docstring). "observe" is PrivBayesE.
    bins : int, default 10
    beta : float, default 0.5
        Share of ε (after the row bound) spent on the structure.
    max_rows : int or None
        Public bound on the number of rows. None: released privately with ``rows_share``·ε.
        :meth:`fit` refuses data with more rows than ``max_rows`` (ValueError). Whether it does
        depends on the data, so the refusal reveals one bit (``docs/privacy.md``, "Refusals that
        reveal one bit"); declare a bound that no possible data set exceeds, or use None.
    rows_share : float, default 0.01
        Share of ε for the row bound when ``max_rows`` is None.
    delta : float, default 1e-9
        Failure probability of the private row bound (charged only when ``max_rows`` is None).
    never_missing : sequence of str, default ()
        Attributes with no gaps by design (a public fact, such as the known attributes of a schema).
        With ``missing="value"`` the sampler never draws their "missing" code (post-processing: their
        true count there is 0) and :meth:`fit` refuses data with a gap in one (a refusal that reveals one
        bit, ``docs/privacy.md``); the other modes draw no gaps and ignore it.
    n_jobs : int, default 2
        Threads of the counting kernel.
    progress : bool, default False
        Show a progress bar over the structure search.
    rng : numpy.random.Generator, int or None
        Noise source of :meth:`fit` (None: the OS CSPRNG).

    Attributes
    ----------
    network_ : tuple of (str, tuple of str)
        (child, parents) in the order they were added; the root first.
    noisy_counts_ : list of ndarray of int64
        The released tables: the joint of the first ``degree + 1`` attributes (in network
        order), then one table per later child with the child on axis 0 and its parents next.
    degree_ : int
        The degree used (``degree``, or the θ-useful one).
    max_rows_ : int
        The row bound used (public, or released).
    epsilon_, delta_ : float
        Privacy spent by :meth:`fit`.

    Examples
    --------
    >>> from dpknn import Categorical, Ordinal
    >>> from dpknn.datasets import make_census
    >>> from dpknn.synth import PrivBayes
    >>> attrs = [Ordinal("AGE", 0, 99), Ordinal("SCHOOL", 0, 17), Categorical("SEX", [1, 2])]
    >>> model = PrivBayes(attrs, epsilon=1.0, max_rows=10_000, rng=0).fit(make_census(5_000, rng=0))
    >>> model.sample(3, rng=0).shape
    (3, 3)
    """

    parameter_constraints: typing.ClassVar[dict] = {
        "epsilon": EPSILON,
        "degree": (Interval("int", 1, None, closed="left"), Options("auto")),
        "theta": POSITIVE,
        "missing": Options(*MISSING_MODES),
        "bins": Interval("int", 1, None, closed="left"),
        "beta": Interval("real", 0, 1, closed="neither"),
        "max_rows": (Interval("int", 1, None, closed="left"), None),
        "rows_share": Interval("real", 0, 1, closed="neither"),
        "delta": Interval("real", 0, 1, closed="neither"),
        "n_jobs": Interval("int", 1, None, closed="left"),
        "progress": Boolean(),
    }

    def __init__(self, attributes, *, epsilon, degree="auto", theta=8.0, missing="observe", bins=10, beta=0.5,
                 max_rows=None, rows_share=0.01, delta=1e-9, never_missing=(), n_jobs=2, progress=False, rng=None):
        self.attributes = attributes
        self.epsilon = epsilon
        self.degree = degree
        self.theta = theta
        self.missing = missing
        self.bins = bins
        self.beta = beta
        self.max_rows = max_rows
        self.rows_share = rows_share
        self.delta = delta
        self.never_missing = never_missing
        self.n_jobs = n_jobs
        self.progress = progress
        self.rng = rng

    # --- validation -------------------------------------------------------------------------------
    def _budget(self):
        """(ε₀, ε₁, ε₂, δ) as exact fractions (δ a float); ε₀ = 0 with a public row bound and a
        fixed degree."""
        eps = check_epsilon(self.epsilon)
        beta = Fraction(check_unit_interval(self.beta, "beta"))
        eps0, delta = Fraction(0), 0.0
        if self.max_rows is None or self.degree == "auto":
            eps0 = Fraction(check_unit_interval(self.rows_share, "rows_share")) * eps
        if self.max_rows is None:
            delta = check_unit_interval(self.delta, "delta")
        else:
            check_row_bound(self.max_rows)
        eps1 = beta * (eps - eps0)
        return eps0, eps1, eps - eps0 - eps1, delta

    def _validate(self):
        disc = Discretization(self.attributes, self.bins)
        if self.missing not in MISSING_MODES:
            raise ValueError(f"missing must be one of {MISSING_MODES}, got {self.missing!r}.")
        if isinstance(self.degree, str) and self.degree == "auto":
            degree = "auto"
            check_positive_real(self.theta, "theta")
        else:
            degree = check_positive_int(self.degree, "degree")
            if degree > MAX_DEGREE:
                raise ValueError(f"degree must be 1, 2, 3 or 'auto', got {degree}.")
        check_positive_int(self.n_jobs, "n_jobs")
        check_never_missing(self.never_missing, disc.names)
        if self.never_missing and self.missing != "value":
            raise ValueError(f"never_missing applies to missing='value' only: missing={self.missing!r} draws no gap, "
                             "so no attribute needs to be kept from one.")
        return disc, degree, self._budget()

    # --- fitting ----------------------------------------------------------------------------------
    def fit(self, X, y=None, *, accountant=None):
        """Learn the noisy network from ``X`` (a DataFrame holding the attribute columns).

        Parameters
        ----------
        X : pandas.DataFrame
            Missing cells as NaN/None; other values must lie in their declared domains. Not
            modified.
        y : ignored
        accountant : BudgetAccountant or None
            Charged (ε, δ) before the data are read; refused when it does not fit. None: a new accountant
            holding exactly this cost (the one rule, :func:`~dpknn.accounting.charge`); either is kept as
            ``accountant_``.
        """
        validate_params(self)   # the declared parameter_constraints, before anything is read or charged
        check_not_imputed(X, "X")  # imputed values would be learnt as observed ones
        disc, k, (eps0, eps1, eps2, delta) = self._validate()
        eps = eps0 + eps1 + eps2
        self.accountant_ = charge(accountant, float(eps), delta,
                                  label=f"PrivBayes(missing={self.missing!r}, degree={k})")
        src = as_source(self.rng)
        codes = disc.encode(X)
        self._note_outside_universes(X)
        # Only where it matters: the other modes draw no gap (and complete_rows drops rows with one).
        never = self.never_missing if self.missing == "value" else ()
        gaps = [a for a in never if (codes[disc.names.index(a)] < 0).any()]
        if gaps:
            raise ValueError(f"attributes declared never_missing have gaps: {gaps}. Remove them from never_missing "
                             "or impute them first.")
        d, n = codes.shape
        sizes = disc.sizes

        if eps0 > 0:
            noisy_n = Geometric(epsilon=eps0).release(len(X), rng=src).value
        if self.max_rows is None:
            N = max(1, noisy_n + row_bound_margin(eps0, delta))
        else:
            N = int(self.max_rows)
            if n > N:
                raise ValueError(f"X has {n} rows, more than the public bound max_rows={N}; the score sensitivity "
                                 "would not hold. Declare a larger bound.")
        if self.missing == "complete_rows":
            codes = codes[:, (codes >= 0).all(axis=0)]
        ext = extended_codes(codes, sizes)
        # With missingness as a value, the extended domain is the domain.
        block = (lambda t: t.astype(np.int64)) if self.missing == "value" else observed_block
        ext_sizes = sizes + 1 if self.missing == "value" else sizes
        if k == "auto":
            k = useful_degree(noisy_n, eps2, ext_sizes, float(self.theta))
        logger.info("PrivBayes: %d attributes, %d rows used, degree %d, missing=%r, N=%d", d, ext.shape[1], k,
                    self.missing, N)

        order, parents = self._structure(ext, sizes, block, k, N, eps1, src)
        tables = self._marginals(ext, sizes, block, order, parents, k, eps2, src)

        self.discretization_ = disc
        self.sizes_ = ext_sizes
        self._order = tuple(order)
        self._parents = {v: tuple(p) for v, p in parents.items()}
        self.network_ = tuple((disc.names[v], tuple(disc.names[p] for p in parents[v])) for v in order)
        self.noisy_counts_ = tables
        self.degree_ = int(k)
        self.max_rows_ = int(N)
        self.epsilon_ = float(eps)
        self.delta_ = float(delta)
        self.n_features_in_ = d
        return self

    def _structure(self, ext, sizes, block, k, N, eps1, src):
        d = ext.shape[0]
        root = src.randbelow(d)
        order, parents = [root], {root: ()}
        if d == 1:
            return order, parents
        selector = PermuteAndFlip(epsilon=float_down(eps1 / (d - 1)), sensitivity=score_sensitivity(N))
        cache = {}
        steps = progress_bar(range(1, d), progress=self.progress, desc="PrivBayes structure", unit="attribute")
        for _ in steps:
            inside = sorted(order)
            r = min(k, len(inside))
            cands = [(x, pi) for x in range(d) if x not in parents for pi in itertools.combinations(inside, r)]
            sets = sorted({tuple(sorted((x, *pi))) for x, pi in cands})
            new = [s for s in sets if s not in cache]
            cache.update(zip(new, count_tables(ext, sizes, new, n_jobs=self.n_jobs)))
            scores = np.empty(len(cands))
            for i, (x, pi) in enumerate(cands):
                s = tuple(sorted((x, *pi)))
                axes = [s.index(a) for a in (x, *pi)]
                scores[i] = mutual_information_score(block(np.transpose(cache[s], axes)))
            x, pi = cands[selector.select(scores, rng=src)]
            order.append(x)
            parents[x] = pi
            # A set whose attributes are all in the network is never a candidate again.
            for s in [s for s in cache if all(a in parents for a in s)]:
                del cache[s]
        return order, parents

    def _marginals(self, ext, sizes, block, order, parents, k, eps2, src):
        head = tuple(order[: k + 1])
        sets = [head] + [(v, *parents[v]) for v in order[k + 1:]]
        m = len(sets)
        counted = count_tables(ext, sizes, [tuple(sorted(s)) for s in sets], n_jobs=self.n_jobs)
        true = []
        for s, t in zip(sets, counted):
            srt = tuple(sorted(s))
            true.append(block(np.transpose(t, [srt.index(a) for a in s])))
        logger.info("PrivBayes: %d noisy tables, %d cells, noise scale %.4g", m, sum(t.size for t in true),
                    float(m / eps2))
        # m tables of L1 sensitivity 1 each, eps2 / m apiece (basic composition).
        return noisy_tables(true, Geometric(epsilon=eps2 / m), src)

    # --- sampling ---------------------------------------------------------------------------------
    def _never_codes(self):
        """{attribute index: its "missing" code} of the ``never_missing`` attributes whose tables have that
        code (``missing="value"``): the sampler never draws it, since their true count there is 0 by a
        public fact (post-processing)."""
        if self.missing != "value":
            return {}
        names, sizes = self.discretization_.names, self.discretization_.sizes
        return {names.index(a): int(sizes[names.index(a)]) for a in self.never_missing}

    def released_params(self):
        """Public bins and degree, the released network and the row bound (a public input, or
        released as a noisy count plus a margin)."""
        return {"bins": self.bins, "degree": self.degree_,
                **({"degree_rule": "auto", "theta": float(self.theta)} if self.degree == "auto" else {}),
                "network": [[c, list(p)] for c, p in self.network_], "max_rows": self.max_rows_,
                **({"never_missing": list(self.never_missing)} if self.missing == "value" else {}),
                "max_rows_is": "public input" if self.max_rows is not None else "released (noisy count + margin)"}

    def sample(self, n, *, rng=None):
        """``n`` synthetic rows: a DataFrame with the attribute columns in declared order.

        Domain-valid; complete unless ``missing="value"``. Post-processing of the released
        tables, so it costs no privacy; ``rng`` (Generator, int or None) drives it.
        """
        check_is_fitted(self, "noisy_counts_")
        n = check_positive_int(n, "n", minimum=0)
        gen = check_rng(rng)
        d = self.n_features_in_
        k = min(self.degree_, d - 1)
        codes = np.empty((d, n), dtype=np.int64)
        never = self._never_codes()
        head = self._order[: k + 1]
        allowed = np.ones(self.noisy_counts_[0].shape, dtype=bool)
        for i, v in enumerate(head):
            if v in never:
                allowed[(slice(None),) * i + (never[v],)] = False
        joint = np.where(allowed, self.noisy_counts_[0], 0).astype(np.float64).ravel()
        tot = joint.sum()
        p = joint / tot if tot > 0 else allowed.ravel() / allowed.sum()
        flat = sample_conditional(p[:, None], [], gen.random(n))
        for v, c in zip(head, np.unravel_index(flat, self.noisy_counts_[0].shape)):
            codes[v] = c
        for v, counts in zip(self._order[k + 1:], self.noisy_counts_[1:]):
            p = conditional(counts)
            if v in never:
                # Without the "missing" code: renormalised, and uniform over the other codes where it held it all.
                keep = (np.arange(p.shape[0]) != never[v]).reshape(-1, *[1] * (p.ndim - 1))
                q = np.where(keep, p, 0.0)
                tot = q.sum(axis=0, keepdims=True)
                p = np.where(tot > 0, q / np.where(tot > 0, tot, 1.0), keep / keep.sum())
            codes[v] = sample_conditional(p, [codes[p_] for p_ in self._parents[v]], gen.random(n))
        if self.missing == "value":
            sizes = self.discretization_.sizes
            codes[codes == sizes[:, None]] = -1
        return self.discretization_.decode(codes, rng=gen)
