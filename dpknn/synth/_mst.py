"""MST for incomplete data: noisy marginals on a private maximum spanning tree, one fitted model.

The algorithm is MST (McKenna, Miklau, Sheldon 2021), the winner of the NIST 2018 synthetic-data
challenge, made aware of missing values and of public universes:

1. **Measure** every attribute's one-way table with discrete Gaussian noise.
2. **Select** a spanning tree of the attributes: first the edges universes impose (an attribute
   joined to each attribute its universe is stated on; public), then, while the tree is not
   spanning, the exponential mechanism picks an edge (a, b) joining two components with score
   ‖x_ab − round(n̂ μ_a ⊗ μ_b)‖₁, the error of the independence model fitted to step 1's
   releases. Adding one record changes x_ab by one in one cell and nothing else, so the score,
   an exact integer, has sensitivity 1.
3. **Measure** the two-way table of every tree edge with discrete Gaussian noise.
4. **Estimate** one distribution that factorises over the tree from all the noisy tables
   (:mod:`dpknn.synth._graphical_model`; on a tree its junction tree is the tree's edges) and
   sample from it by controlled rounding.

**Missing values.** A missing cell is one more code of its attribute (the last), so the tables
hold the missingness pattern along with the values and the synthetic data reproduce it, the
way MST and AIM are run on incomplete data with missingness as a category; ``never_missing``,
universes, bins and the quantiles are shared with AIM (:mod:`dpknn.synth._marginal`).

**Privacy** (zero-concentrated DP, add/remove one record with its missingness pattern; every
step reads the data only through the mechanism named):

- Budget: ρ = :func:`~dpknn.accounting.zcdp_rho` (ε, δ), the largest ρ whose exact conversion
  (Canonne, Kamath, Steinke 2020, Corollary 13) gives (ε, δ)-DP. With ``bins`` "auto" or
  "quantiles" and some attribute binned by quantiles (a public fact of the domains),
  ρ_q = ``quantile_share``·ρ first, else ρ_q = 0; of the rest ρ' = ρ − ρ_q,
  ρ₁ = ``one_way_share``·ρ', ρ₂ = ``selection_share``·ρ', ρ₃ = ρ' − ρ₁ − ρ₂, as exact fractions.
- Step 0 (``bins`` "auto" or "quantiles"): DP approximate quantiles of every binned numeric
  attribute, ρ_q in all (:mod:`dpknn.synth._bins`, which states the theorems). "auto" uses them as
  the shape of the values inside the public bins, "quantiles" as the bins themselves.
- Step 1: d tables of L2 sensitivity 1, each :class:`~dpknn.mechanisms.DiscreteGaussian` with
  ρ₁/d (σ² = d/(2ρ₁); CKS 2020, Theorem 4).
- Step 2: r choices, r = d − 1 − (universe edges), each
  :class:`~dpknn.mechanisms.ExponentialMechanism` with ε_s = √(8ρ₂/r) rounded down, which is
  ε_s-bounded-range and so ε_s²/8-zCDP (Cesar and Rogers 2021, Lemma 3.2).
- Step 3: d − 1 + e tables, the tree's edges and e tables beside it: the analyses' tables the tree cannot hold
  and the pairs of the analyses' covariates (:func:`~dpknn.synth._marginal.beside_tree`; public, from
  ``analyses``; e = 0 without analyses or with ``mcar_rates``), table t with ρ₃·w_t/Σw: w_t =
  ``ANALYSIS_WEIGHT`` (3) for an analysis' table (its response with a covariate, two of its covariates), 1 for
  the others, the chosen edges included whatever they join (:func:`~dpknn.synth._marginal.edge_costs`). The
  analysis' tables (those beside the tree within the size limit of ``max_model_size="auto"`` at this ε, sized
  on the released bins) are fixed before any table is measured and the number of chosen edges is r, so every
  w_t and Σw are public or released and the costs add up to ρ₃ exactly; without analyses every table gets
  ρ₃/(d − 1). When the universes fix the whole tree (r = 0, a public fact), nothing is chosen and the tables
  get ρ₂ too: ρ₃ + ρ₂.
- Step 4 and sampling are post-processing.

Adaptive composition adds ρ (Bun and Steinke 2016, Lemma 2.3): ρ_q + ρ₁ + r·ε_s²/8 + ρ₃ ≤ ρ, so
the fit is (ε, δ)-DP. The sizes of the tables, the universes and the bins are public inputs; the
number of rows is not needed (the model's total is estimated from the noisy tables).

**Pure DP** (``noise="laplace"``, δ = 0): the same steps and shares of the total ε instead of
ρ; the tables get :class:`~dpknn.mechanisms.Geometric` (discrete Laplace) noise, the d tables
of step 1 ε₁/d each and the edges ε₃/(d − 1) each, every one ε-DP for its share on L1
sensitivity 1 (Ghosh, Roughgarden, Sundararajan 2012); each choice of step 2 is the
exponential mechanism at ε_s = ε₂/r rounded down, ε_s-DP (McSherry and Talwar 2007,
Theorem 6). Adaptive sequential composition (Dwork and Roth 2014, Theorem 3.16) adds them:
ε_q + ε₁ + r·ε_s + ε₃ ≤ ε (:mod:`dpknn.synth._marginal`).

**MCAR amplification** (``mcar_rates``, pure DP only). An attribute whose cells are missing
independently at a public fixed rate φ (an assumption the curator vouches for) gets no missing
code, so every table involving it reads only the rows observed on it: the differing record enters
a table only if it is observed there. Steps 1 and 3 together then cost at most
:func:`~dpknn.accounting.tree_bound` (ε₁', ε₃', φ) for whatever tree step 2 chooses (rooted at a
fixed attribute, each other attribute is the child of one edge, whose table it must be observed
to enter; ``docs/amplification.md``), and :func:`amplified_costs` scales ε₁/d and ε₃/(d − 1) up
to the largest pair whose bound stays within ε₁ + ε₃. Steps 0 and 2 read all rows and are charged
in full, so ε_q + r·ε_s + tree_bound ≤ ε. The estimator reads each table divided by its public
observation probability and sampling redraws the gaps at φ (post-processing).

References
----------
.. [1] McKenna, Miklau, Sheldon (2021). "Winning the NIST contest: a scalable and general
   approach to differentially private synthetic data", J. Priv. Confidentiality 11(3), Alg. 1.
.. [2] Canonne, Kamath, Steinke (2020). "The discrete Gaussian for differential privacy",
   NeurIPS, Theorem 4 and Corollary 13.
.. [3] Cesar, Rogers (2021). "Bounding, concentrating, and truncating: unifying privacy loss
   composition for data analytics", ALT, Lemma 3.2.
.. [4] Bun, Steinke (2016). "Concentrated differential privacy", TCC, Lemma 2.3.
"""

from __future__ import annotations

import logging
import numbers
import typing
from dataclasses import replace
from fractions import Fraction

import numpy as np
from scipy.cluster.hierarchy import DisjointSet

from dpknn.accounting._budget import float_down
from dpknn.accounting._mcar import observed_probability, tree_bound
from dpknn.mechanisms._selection import ExponentialMechanism
from dpknn.synth._graphical_model import estimate_total, fit_model, project_simplex
from dpknn.synth._marginal import (
    MARGINAL_CONSTRAINTS,
    MarginalSynthesizer,
    auto_model_size,
    beside_tree,
    edge_costs,
    edge_weights,
    mean_pair_cells,
    measure,
    rescaled,
    universe_edges,
)
from dpknn.utils._progress import progress_bar
from dpknn.utils._validation import Interval, check_unit_interval

__all__ = ["MSTSynthesizer", "amplified_costs", "edge_scores", "mst_budget", "select_tree"]

logger = logging.getLogger(__name__)


def mst_budget(rho, one_way_share, selection_share):
    """(ρ₁, ρ₂, ρ₃): ρ (a Fraction; or ε under pure DP) split into the one-way tables, the tree
    and the edges, exactly."""
    s1 = Fraction(check_unit_interval(one_way_share, "one_way_share"))
    s2 = Fraction(check_unit_interval(selection_share, "selection_share"))
    if s1 <= 0 or s2 <= 0 or s1 + s2 >= 1:
        raise ValueError(f"one_way_share ({one_way_share}) and selection_share ({selection_share}) must be > 0 "
                         "with a sum below 1 (the rest measures the tree's edges).")
    return s1 * rho, s2 * rho, rho - s1 * rho - s2 * rho


def edge_scores(pair_counts, one_way, *, observed=None):
    """Step 2's scores: ‖x_ab − round(p_ab n̂ μ_a ⊗ μ_b)‖₁ for every pair, μ_a the projection of
    the released one-way table a (as an estimate of all rows, :func:`~dpknn.synth._marginal.rescaled`)
    onto the simplex, n̂ their total (the estimator's
    :func:`~dpknn.synth._graphical_model.estimate_total`) and p_ab the public probability that a row
    is observed on the pair's MCAR attributes (``observed[(a, b)]``, 1 by default), on whose rows
    x_ab is counted. The model is post-processing of releases and is rounded to integers, so every
    score is an exact integer whose add/remove sensitivity is 1."""
    total = estimate_total(one_way)
    mu = [project_simplex(m.counts / total) for m in one_way]
    observed = observed or {}
    return {(a, b): float(np.abs(x - np.rint(observed.get((a, b), 1.0) * total * np.outer(mu[a], mu[b]))
                                 .astype(np.int64)).sum())
            for (a, b), x in pair_counts.items()}


def amplified_costs(one_way, edges, d, rates):
    """(ε₁', ε₃'): the ε of each one-way and each edge table when the tables of the attributes
    with public MCAR rates ``rates`` (φ > 0) read only their observed rows.

    ``one_way`` and ``edges`` (Fractions) are the parts of the total for the d one-way and the
    d − 1 edge tables. Both per-table ε are scaled up by the largest λ >= 1 whose a-priori bound
    :func:`~dpknn.accounting.tree_bound` (valid for any tree) stays within ``one_way + edges``
    (less a relative 10⁻¹², for the floating point of the logarithms), then rounded down.
    """
    base1 = Fraction(one_way) / d
    base3 = Fraction(edges) / (d - 1) if d > 1 else Fraction(0)
    target = float(one_way + edges) * (1 - 1e-12)

    def fits(lam):
        return tree_bound(float_down(lam * base1), float_down(lam * base3), rates) <= target

    if not fits(Fraction(1)):
        # A gain below the margin (rates of order 10⁻¹³): plain composition, exact in fractions.
        return base1, base3
    lo, hi = Fraction(1), Fraction(2)
    while fits(hi) and hi < 2**40:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        lo = Fraction(float_down(lo))
    if not fits(lo):   # λ = 1 fits (checked above) and bisection keeps a fitting λ; the proof rests on it
        raise RuntimeError(f"MST's amplified tables would exceed their part {float(one_way + edges)}; please report "
                           "this.")
    return Fraction(float_down(lo * base1)), Fraction(float_down(lo * base3))


def select_tree(pair_counts, one_way, fixed, budget, src, *, observed=None, progress=False):
    """Step 2: the tree's edges, ``fixed`` (public) first, then private choices (module docstring).

    Parameters
    ----------
    pair_counts : dict (a, b) -> ndarray of int64
        True two-way tables (a < b), extended and cut to the table sizes: data, never released.
    one_way : list of Measurement
        Step 1's releases.
    fixed : list of (int, int)
        Public edges, a forest.
    budget : ZCDPBudget or PureBudget
        ρ₂ (or ε₂) for all choices together.
    src : RandomSource
    observed : dict (a, b) -> float or None
        Public probability that a row is observed on the pair's MCAR attributes (:func:`edge_scores`).
    progress : bool
    """
    d = len(one_way)
    ds = DisjointSet(range(d))
    edges = []
    for a, b in fixed:
        ds.merge(a, b)
        edges.append((a, b))
    rounds = d - 1 - len(edges)
    if rounds <= 0:
        return edges
    mech = ExponentialMechanism(epsilon=budget.choice_epsilon(budget.total, rounds), sensitivity=1.0)
    scores = edge_scores(pair_counts, one_way, observed=observed)
    for _ in progress_bar(range(rounds), progress=progress, desc="MST tree", unit="edge"):
        cands = [e for e in sorted(scores) if not ds.connected(*e)]
        a, b = cands[mech.select(np.array([scores[e] for e in cands]), rng=src)]
        ds.merge(a, b)
        edges.append((a, b))
    return edges




class MSTSynthesizer(MarginalSynthesizer):
    """Differentially private synthetic data by MST on incomplete data (``dpknn synth --method mst``).

    (ε, δ)-DP under add/remove one record (with its missingness pattern), through ρ-zCDP with
    the exact conversion, or ε-DP with ``noise="laplace"``: see the module docstring for the
    theorem each step relies on.

    Parameters
    ----------
    attributes : sequence of Ordinal, Categorical or Continuous
        The public domains (wide numeric ones cut into ``bins`` public bins,
        :class:`~dpknn.schema.Discretization`), universes included.
    epsilon : float
        Total ε of :meth:`fit`.
    delta : float in (0, 1), default 1e-9
        Unused with ``noise="laplace"`` (δ = 0).
    noise : {"auto", "gaussian", "laplace"}, default "auto"
        Discrete Gaussian noise accounted in zCDP, discrete Laplace noise for pure ε-DP, or
        whichever gives the planned tables the smaller expected L1 error, Gaussian whenever
        quantiles are released (:mod:`dpknn.synth._marginal` says why): for MST's few tables without
        quantiles usually Laplace.
    bins : int, "auto" or "quantiles", default "auto"
        An int: that many equal public bins of each wide numeric attribute, values drawn inside a
        bin from the fitted model's shape (``docs/synthesis.md`` says when to prefer which).
        ``"auto"``: each wide numeric attribute's point masses at public candidates (0, the
        range's ends) found by one noisy histogram and given a bin of their own, and its model bins
        cut at its DP quantiles of the first 4 levels (16 bins, ``MODEL_LEVELS``), the deeper
        levels, up to 2^``quantile_levels``, shaping the values inside (:mod:`dpknn.synth._bins`,
        ``quantile_share`` of ρ); an Ordinal with few values per equal bin keeps 10 equal bins.
        ``"quantiles"``: the bins are cut at all those quantiles (an Ordinal with at most
        2^``quantile_levels`` values keeps one code per value).
    bin_edges : dict or None
        Public inner edges of some numeric attributes, ``{name: edges}`` (for money, say
        :func:`~dpknn.schema.geometric_edges`); they take precedence over ``bins``.
    quantile_share : float, default 0.1
        Share of ρ for the quantiles (and point masses) when ``bins`` is "auto" or "quantiles".
    quantile_levels : int, default 6
        Levels of the quantile recursion: up to 2^levels bins or shape steps.
    analyses : sequence of str or "auto", default ()
        The regressions the file is for, ``"y ~ x1 + x2"`` (public): y is joined to each x in the
        tree, the pairs of the xs are measured beside it (up to 4 xs;
        :func:`~dpknn.synth._marginal.covariate_pairs`), and y's values inside its bins follow the
        xs (``rank_share``; ``docs/synthesis.md``, "Analyses"). "auto": each amount (a Continuous, an
        Ordinal of 16 values a bin or more) on every other attribute, for a file whose analyses nobody
        can name (:func:`~dpknn.synth._marginal.auto_analyses`; the record's ``analyses`` lists them).
    rank_share : float, default 0.1
        Share of the model's part of ρ for the within-bin rank sums of an analysis' response
        (:mod:`dpknn.synth._ranks`), spent only when some analysis' response has quantile bins and a
        covariate the rank sums are bought for.
    within_bin : {"auto", "ranks", "copula"}, default "auto"
        How the amounts with released quantile shapes (``bins="auto"``) that the analyses name are drawn
        inside their bins: each by its released rank sums, or (two or more of them) together by a
        Gaussian copula of the fitted model (:mod:`dpknn.synth._copula`; post-processing, no budget),
        the rank sums then bought only for the covariates outside it. The copula is an assumption about
        the data: it kept the youth survey's height slope at ε = 1 and steepened the GSS wage table's
        prestige slope at ε = 4 (``docs/synthesis.md``, "Analyses"). "auto": the copula where the
        response's rank sums by the other amounts would be noise for ``n_rows``
        (:func:`~dpknn.synth._marginal.useful_rank_sums`), the rank sums where they can be read or
        without ``n_rows``; ``within_bin_chosen`` in the record ("shape" where neither is drawn: no analysis names an
        amount with a released shape, or no rank sum is bought).
    n_rows : int or None
        A public or released number of rows (a census total, or
        :class:`~dpknn.synth.AutoSynthesizer`'s released count; never ``len(X)``). With
        ``bins="auto"`` it lets the quantiles be bought level by level while a level is
        θ-useful for that many rows (:func:`~dpknn.synth._marginal.useful_levels`), the rest of
        their share going to the model: on tables of a few thousand rows at ε ≤ 2 the
        quantiles' ranks are mostly noise. The point masses are bought even when no level is.
        None: every level is bought.
    never_missing : sequence of str, default ()
        Attributes that have no gaps by design (public): they get no missing code.
    mcar_rates : dict or None
        ``{name: φ}``: attributes whose cells are missing completely at random, each independently
        with the public, fixed rate 0 < φ < 1 (a fact of the survey's design, never estimated from
        the data). Their tables read only the rows observed on them, which MCAR turns into a
        Poisson sample and so amplifies (:func:`~dpknn.accounting.tree_bound`): the tables get a
        larger ε for the same total (pure DP; ``noise`` "auto" takes "laplace", "gaussian" is
        refused). The model has no missing code for them; sampling blanks their cells at φ.
        Attributes with a universe are refused (a row outside it is never missing there).
    one_way_share, selection_share : float, default 0.2 and 0.1
        Shares of ρ for the one-way tables and for the tree; the rest measures the edges. MST
        splits ⅓, ⅓, ⅓; 0.2, 0.1, 0.7 gave a 2-way TVD 3-12 % lower on the public tables of
        ``benchmarks/compare_synthesis.py`` (the edge tables carry the one-way evidence too).
    iterations : int, default 500
        Most steps of the estimator (entropic mirror descent, :func:`~dpknn.synth._graphical_model.fit_model`). It
        reaches a table's structural zeros (an amount missing wherever a status says "not working"), where L-BFGS
        stopped 4 % of the rows away at ε = 1000; on the tables of ``benchmarks/compare_synthesis.py`` the two
        gave the same 2-way TVD and regressions, mirror descent in half the time.
    n_jobs : int, default 2
        Threads of the counting kernel.
    progress : bool, default False
    rng : numpy.random.Generator, int or None
        Noise source of :meth:`fit` (None: the OS CSPRNG).

    Attributes
    ----------
    public_edges_ : dict
        The public inner edges given in ``bin_edges``, checked, by attribute.
    bin_edges_ : dict
        The inner edges released by the DP quantiles (``bins`` "auto" or "quantiles"), by
        attribute: the shape inside the bins ("auto") or the bins ("quantiles").
    tree_ : tuple of (str, str)
        The released edges, universe edges first.
    measurements_ : list of Measurement
        The released noisy tables: the one-way tables, then the fixed edges (universes', analyses'), the tables
        beside the tree (``covariate_pairs_``) and the chosen edges.
    covariate_pairs_ : tuple of (str, str)
        The tables measured beside the tree: the analysis tables it cannot hold (they would close a cycle), then
        the pairs of the analyses' covariates (:func:`~dpknn.synth._marginal.beside_tree`); the record's
        ``covariate_pairs``.
    edge_sigmas_ : tuple of (float or None, float or None)
        The noise deviation of a two-way table of weight 1 and of an analysis table (None where there is none),
        public; in the record as ``sigma_two_way`` and ``sigma_analysis_tables``.
    model_ : GraphicalModel
        The fitted distribution (post-processing of ``measurements_``).
    noise_ : str
        The noise used ("gaussian" or "laplace").
    table_epsilons_ : tuple of float or None
        With ``mcar_rates``: the amplified ε of each one-way and of each edge table (public: they
        follow from ε, the shares, d and the rates).
    rho_ : float or None
        The zCDP budget spent (None under pure DP).
    epsilon_, delta_ : float

    Examples
    --------
    >>> from dpknn import Categorical, Ordinal
    >>> from dpknn.datasets import make_census
    >>> from dpknn.synth import MSTSynthesizer
    >>> attrs = [Ordinal("AGE", 0, 99), Ordinal("SCHOOL", 0, 17), Categorical("SEX", [1, 2])]
    >>> model = MSTSynthesizer(attrs, epsilon=1.0, never_missing=["SEX"], rng=0).fit(make_census(5_000, rng=0))
    >>> model.sample(3, rng=0).shape
    (3, 3)
    """

    parameter_constraints: typing.ClassVar[dict] = {
        **MARGINAL_CONSTRAINTS,
        "one_way_share": Interval("real", 0, 1, closed="neither"),
        "selection_share": Interval("real", 0, 1, closed="neither"),
    }

    def __init__(self, attributes, *, epsilon, delta=1e-9, noise="auto", bins="auto", bin_edges=None,
                 quantile_share=0.1, quantile_levels=6, rank_share=0.1, within_bin="auto", analyses=(), n_rows=None,
                 never_missing=(), mcar_rates=None,
                 one_way_share=0.2, selection_share=0.1, iterations=500, n_jobs=2, progress=False, rng=None):
        self.attributes = attributes
        self.epsilon = epsilon
        self.delta = delta
        self.noise = noise
        self.bins = bins
        self.bin_edges = bin_edges
        self.quantile_share = quantile_share
        self.quantile_levels = quantile_levels
        self.rank_share = rank_share
        self.within_bin = within_bin
        self.analyses = analyses
        self.n_rows = n_rows
        self.never_missing = never_missing
        self.mcar_rates = mcar_rates
        self.one_way_share = one_way_share
        self.selection_share = selection_share
        self.iterations = iterations
        self.n_jobs = n_jobs
        self.progress = progress
        self.rng = rng

    def _validate_method(self, disc):
        mst_budget(Fraction(1), self.one_way_share, self.selection_share)

    def observed_rates(self, disc):
        """φ of each attribute named in ``mcar_rates`` (0 for the others), checked: public rates in
        (0, 1) of attributes that may be missing, have no universe and condition no other's universe."""
        rates = np.zeros(len(disc.names))
        if self.mcar_rates is None:
            return rates
        if not isinstance(self.mcar_rates, dict):
            raise TypeError(f"mcar_rates must be a dict attribute -> public MCAR rate, got {self.mcar_rates!r}.")
        if not self.mcar_rates:
            raise ValueError("mcar_rates is empty; pass None when no attribute has a public MCAR rate.")
        conditions = {col for a in disc.attributes if a.universe is not None for col, *_ in a.universe.conditions}
        for name, phi in self.mcar_rates.items():
            if name not in disc.names:
                raise ValueError(f"mcar_rates names {name!r}, which is not an attribute; the attributes are "
                                 f"{disc.names}.")
            if isinstance(phi, bool) or not isinstance(phi, numbers.Real) or not 0 < float(phi) < 1:
                raise ValueError(f"mcar_rates[{name!r}] must be a public rate in (0, 1), got {phi!r}; an attribute "
                                 "that is never missing belongs in never_missing.")
            if name in tuple(self.never_missing):
                raise ValueError(f"{name!r} is in both never_missing and mcar_rates; keep one.")
            if disc.attributes[disc.names.index(name)].universe is not None:
                raise ValueError(f"{name!r} has a universe: rows outside it are never missing there, so its gaps "
                                 "are not MCAR and cannot amplify; remove it from mcar_rates.")
            if name in conditions:
                raise ValueError(f"{name!r} states another attribute's universe: where it is missing that universe "
                                 "is unknown, so the tables could not agree; remove it from mcar_rates.")
            rates[disc.names.index(name)] = float(phi)
        return rates

    def planned_tables(self, sizes):
        """Step 1's d tables and step 3's d − 1 edges (each the mean size of a pair's table)."""
        s1, _, s3 = mst_budget(Fraction(1), self.one_way_share, self.selection_share)
        d = len(sizes)
        edges = [(s3 / (d - 1), mean_pair_cells(sizes))] * (d - 1) if d > 1 else []
        return [(s1 / d, int(c)) for c in sizes] + edges

    def candidate_sets(self, disc):
        """Every one-way table and every pair: step 2 scores all pairs, step 3 measures those chosen."""
        d = len(disc.names)
        return [(a,) for a in range(d)] + [(a, b) for a in range(d) for b in range(a + 1, d)]

    def select_and_fit(self, counts, budget, src, *, disc, rates):
        """Steps 1-4 (module docstring) with ``budget.total`` in all; ``rates`` the public MCAR rates."""
        # An analysis' response joined to each covariate (public, like the universes' edges): the tree measures
        # the pairs a regression reads.
        analyses = self.analyses_of(disc)
        fixed = universe_edges(disc.attributes, [(y, x) for y, xs in analyses for x in xs])
        # The analysis tables the tree cannot hold and each pair of an analysis' covariates are measured beside the
        # tree (beside_tree and covariate_pairs say why), unless already a fixed edge; not with MCAR rates, whose
        # amplification bound holds for a spanning tree's tables only.
        extra = [] if rates.any() else beside_tree(analyses, fixed, counts.ext_sizes, auto_model_size(self.epsilon),
                                                   sized_pairs=isinstance(self.analyses, str))
        rho1, rho2, rho3 = mst_budget(budget.total, self.one_way_share, self.selection_share)
        d = len(counts.sizes)
        if len(fixed) >= d - 1:   # the universes fix the tree (public): no choice to pay for
            rho2, rho3 = Fraction(0), rho3 + rho2
        self.selection_spent_ = bool(rho2)
        # Step 3's tables: the fixed edges, the covariate pairs, then the r = d - 1 - len(fixed) chosen edges. Their
        # weights (edge_weights) and so their costs are fixed here, from public facts, before any edge is chosen.
        chosen = max(d - 1 - len(fixed), 0)
        if rates.any():   # the amplification bound is for equal edge costs: MCAR rates keep equal shares
            cost1, cost3 = amplified_costs(rho1, rho3, d, rates)
            self.table_epsilons_ = (float(cost1), float(cost3))
            weights = [1] * (len(fixed) + chosen)   # no covariate pairs with MCAR rates
            costs = [cost3] * len(weights)
        else:
            weights = edge_weights([*fixed, *extra], [(y, x) for y, xs in analyses for x in xs] + extra, chosen)
            cost1, costs = rho1 / d, edge_costs(rho3, weights)
            self.table_epsilons_ = None
        one_way = [measure(counts, (a,), cost1, src, budget=budget) for a in range(d)]
        scaled = [rescaled(m, rates) for m in one_way]   # as estimates of all rows: the scores and the fit
        edges, two_way = [], []
        if d > 1:
            pairs = [(a, b) for a in range(d) for b in range(a + 1, d)]
            pair_counts = dict(zip(pairs, counts.tables(pairs)))
            by_index = dict(enumerate(rates))
            observed = {pair: observed_probability(pair, by_index) for pair in pairs}
            edges = select_tree(pair_counts, scaled, fixed, replace(budget, total=rho2), src, observed=observed,
                                progress=self.progress)
            # select_tree returns the fixed edges first, then the chosen ones: the order of the weights.
            tables = [*edges[:len(fixed)], *extra, *edges[len(fixed):]]
            two_way = [measure(counts, e, c, src, budget=budget) for e, c in zip(tables, costs)]
        # The σ of a table of weight 1 and of an analysis table (None where there is none), for the public record.
        self.edge_sigmas_ = tuple(next((m.sigma for m, w in zip(two_way, weights) if (w > 1) == heavy), None)
                                  for heavy in (False, True))
        self.covariate_pairs_ = tuple(tuple(disc.names[v] for v in p) for p in extra)
        model = fit_model(counts.ext_sizes, [m.attributes for m in two_way] or [(0,)],
                          scaled + [rescaled(m, rates) for m in two_way],
                          iterations=self.iterations, method="mirror")
        return one_way + two_way, model, edges

    @property
    def tree_(self):
        """The released edges (names), universe edges first."""
        return self.structure_

    def released_params(self):
        """Public bins, released bin edges, never-missing attributes, budget split, the released
        tree and the noise."""
        one = self.measurements_[0].sigma
        two, analysis = self.edge_sigmas_
        return {**super().released_params(), "one_way_share": self.one_way_share,
                "selection_share": self.selection_share if self.selection_spent_ else 0.0,
                "tree": [list(e) for e in self.tree_],
                "covariate_pairs": [list(p) for p in self.covariate_pairs_],
                "sigma_one_way": one, "sigma_two_way": two, "sigma_analysis_tables": analysis,
                **({} if self.table_epsilons_ is None else
                   {"mcar_rates": dict(self.mcar_rates), "table_epsilons": list(self.table_epsilons_),
                    "mcar_bound": "accounting.tree_bound (any spanning tree)"})}
