"""What MST and AIM share: public bins, DP quantiles, missingness as a code, one fitted model.

A marginal synthesiser measures noisy count tables of attribute sets and fits one distribution
to them (:mod:`dpknn.synth._graphical_model`). The two here differ only in which tables they
measure (:class:`~dpknn.synth.MSTSynthesizer`: a maximum spanning tree;
:class:`~dpknn.synth.AIMSynthesizer`: an adaptive workload-driven choice). Everything around
that choice lives here:

- **Discretisation** by public bins (:class:`~dpknn.schema.Discretization`), with ``bins``
  "auto" or "quantiles" using DP approximate quantiles released first with ρ_q =
  ``quantile_share``·ρ (:mod:`dpknn.synth._bins`, which states the theorem); when no attribute
  is wide enough to be binned by quantiles (public: the domains say so), ρ_q = 0. Given a
  public or released row count ``n_rows``, ``"auto"`` buys the quantiles level by level, only
  while a level is θ-useful (:func:`useful_levels`); the share of the levels not bought goes to
  the model.
- **The data** are read only as sums over records (:mod:`dpknn.synth._data`): a scan (checks, row count, each
  released amount's histogram on its public grid) and the counts of the tables the method may read; a DataFrame
  in memory or a folder of Parquet partitions out of core (:mod:`dpknn.synth._distributed`) gives the same sums,
  so the same releases for the same seed.
- **Missing values** as one more code of an attribute (the last), except for an attribute in
  ``never_missing`` (a public fact of the survey design), which gets none and whose gaps
  :meth:`fit` refuses (a refusal that reveals one bit, ``docs/privacy.md``), and except for an
  attribute with a public MCAR rate (:class:`~dpknn.synth.MSTSynthesizer`'s ``mcar_rates``),
  whose tables read its observed rows and whose gaps are redrawn at that rate. Outside its universe
  an attribute has its "not applicable" code and its synthetic values are blanked.
- **Budget** in one of two currencies (``noise``), costs in exact fractions:

  - ``"gaussian"`` (zCDP): the total is ρ = :func:`~dpknn.accounting.zcdp_rho`
    (ε, δ), the largest ρ whose exact conversion gives (ε, δ)-DP (Canonne, Kamath, Steinke 2020,
    Corollary 13). A table measured with cost c gets :class:`~dpknn.mechanisms.DiscreteGaussian`
    noise of σ² = 1/(2c) and is c-zCDP (same paper, Theorem 4); a choice by the exponential
    mechanism at ε_s is ε_s-bounded-range and costs ε_s²/8 (Cesar and Rogers 2021, Lemma 3.2).
    Adaptive composition adds the costs (Bun and Steinke 2016, Lemma 2.3).
  - ``"laplace"`` (pure ε-DP, δ = 0): the total is ε. A table measured with cost c gets
    :class:`~dpknn.mechanisms.Geometric` (discrete Laplace) noise of scale 1/c per cell and is
    c-DP (Ghosh, Roughgarden, Sundararajan 2012, on the table's L1 distance); a choice at ε_s
    costs ε_s (McSherry and Talwar 2007, Theorem 6). Adaptive sequential composition adds the
    costs (Dwork and Roth 2014, Theorem 3.16). For a user who must publish δ = 0; at the same ε
    the Gaussian currency is usually more accurate, since many tables compose in √ rather than
    linearly.

  - ``"auto"``: whichever of the two gives the planned tables (a public plan from the domains,
    :meth:`MarginalSynthesizer.planned_tables`) the smaller expected L1 error, Σ cells × E|Z|
    per cell (the scores are L1 distances); ties go to ``"gaussian"``. The choice reads ε, δ and
    the public domains only. With k tables sharing the budget, the Gaussian's noise grows like
    √k and the Laplace's like k, but the (ε, δ) conversion of zCDP costs a factor of about
    √(ln(1/δ)): pure DP wins for fewer than about ln(1/δ) ≈ 21 tables (δ = 10⁻⁹), as in MST's
    tree and AIM with few rounds on few attributes, and zCDP for more. When quantiles or point
    masses are released first (some attribute is binned by them, a public fact) ``"auto"`` keeps
    ``"gaussian"``: the recursion's kL exponential mechanisms cost ε_q²/8 each in zCDP against ε_q
    in pure DP, so the same share buys ε_q = √(8ρ_q/(kL)) against ε_q = ε·share/(kL), about 2.6
    times larger for one amount of 7 steps at ε = 1, and the model's bins are those quantiles.
    (Chosen by the tables alone, a 4-attribute table of 20,000 rows took Laplace, and the
    weight-on-height slope fell from 86 to 38-52 at ε = 1; 77-79 with Gaussian;
    ``tests/test_ranks.py``.)

  Either way adding or removing one record changes one cell of a table by one (L1 and L2
  sensitivity 1); the quantiles take ``quantile_share`` of the total and the method the rest.

References
----------
.. [1] Canonne, Kamath, Steinke (2020). "The discrete Gaussian for differential privacy",
   NeurIPS, Theorem 4 and Corollary 13.
.. [2] Bun, Steinke (2016). "Concentrated differential privacy", TCC, Lemma 2.3.
.. [3] Cesar, Rogers (2021). "Bounding, concentrating, and truncating: unifying privacy loss
   composition for data analytics", ALT, Lemma 3.2.
.. [4] Ghosh, Roughgarden, Sundararajan (2012). "Universally utility-maximizing privacy
   mechanisms", SIAM J. Comput.
.. [5] McSherry, Talwar (2007). "Mechanism design via differential privacy", FOCS, Theorem 6.
.. [6] Dwork, Roth (2014). "The algorithmic foundations of differential privacy", Theorem 3.16.
"""

from __future__ import annotations

import abc
import itertools
import logging
import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import ClassVar

import numpy as np
from scipy.cluster.hierarchy import DisjointSet
from threadpoolctl import threadpool_limits

from dpknn.accounting._budget import charge, float_down
from dpknn.accounting._mcar import observed_probability
from dpknn.accounting._zcdp import exponential_epsilon, zcdp_rho
from dpknn.mechanisms._additive import DiscreteGaussian, Geometric
from dpknn.mechanisms._randomness import as_source
from dpknn.schema._attributes import Continuous, Ordinal, log_outside_universes
from dpknn.schema._discretization import Discretization
from dpknn.schema._marginals import extended_codes
from dpknn.synth._base import Synthesizer, check_never_missing
from dpknn.synth._bins import (
    QUANTILE_THETA,
    OrdinalHeaps,
    bin_candidates,
    candidate_grid,
    false_mass_threshold,
    mass_candidates,
    point_masses,
    quantile_edges,
)
from dpknn.synth._copula import copula_ranks, fit_copula
from dpknn.synth._data import FrameData, RankPlan, TableData
from dpknn.synth._graphical_model import Measurement, coarsen, model_cells, round_counts
from dpknn.synth._ranks import RANK_STEPS, conditional_ranks, release_ranks
from dpknn.utils._validation import (
    EPSILON,
    POSITIVE_DELTA,
    Boolean,
    Interval,
    Options,
    check_is_fitted,
    check_params,
    check_positive_int,
    check_positive_real,
    check_rng,
    check_unit_interval,
    validate_params,
)

__all__ = ["ANALYSIS_WEIGHT", "MAX_EPSILON", "MAX_PAIRED_COVARIATES", "MODEL_LEVELS", "NOISES",
           "SELECTION_SD", "SHAPED_WIDTH", "WITHIN_BIN", "MarginalSynthesizer", "Prepared", "PureBudget", "ZCDPBudget",
           "analysis_pairs", "analysis_texts", "auto_analyses", "auto_model_size", "beside_tree", "binned_attributes",
           "blank_at_rates",
           "check_epsilon_bound", "complete_case_tables", "covariate_pairs",
           "edge_costs", "edge_weights", "joint_amounts", "mean_pair_cells", "measure", "measure_quantiles",
           "planned_error", "public_cuts", "rescaled", "response_status", "selection_strength", "universe_edges",
           "useful_levels"]

logger = logging.getLogger(__name__)

EXPECTED_ABS = math.sqrt(2 / math.pi)   # E|Z| / σ of a normal: the discrete Gaussian's, closely, for σ >= 1


@dataclass(frozen=True)
class ZCDPBudget:
    """A total ρ and what each step costs in zCDP (module docstring, "gaussian")."""

    total: Fraction
    noise: ClassVar[str] = "gaussian"
    #: A cost this many times larger halves the noise's scale (σ ∝ 1/√ρ).
    sharpen: ClassVar[int] = 4

    def mechanism(self, cost, sensitivity=1):
        """The table mechanism of cost ``cost`` (a Fraction) for integer vectors of L2 sensitivity ``sensitivity``."""
        return DiscreteGaussian(rho=cost, sensitivity=sensitivity)

    def choice_epsilon(self, cost, steps=1):
        """ε_s of each of ``steps`` exponential mechanisms that share ``cost``."""
        return exponential_epsilon(cost, steps)

    def choice_cost(self, epsilon):
        """The exact cost of one exponential mechanism at ``epsilon``."""
        return Fraction(epsilon) ** 2 / 8

    def expected_abs(self, cost):
        """E|Z| per cell of a table measured with ``cost`` (public, for scores)."""
        return EXPECTED_ABS * math.sqrt(1 / (2 * float(cost)))


@dataclass(frozen=True)
class PureBudget:
    """A total ε and what each step costs in pure DP (module docstring, "laplace")."""

    total: Fraction
    noise: ClassVar[str] = "laplace"
    sharpen: ClassVar[int] = 2   # the scale is 1/ε

    def mechanism(self, cost, sensitivity=1):
        """The table mechanism of cost ``cost`` for integer vectors of L1 sensitivity ``sensitivity``: discrete
        Laplace of scale sensitivity/cost."""
        return Geometric(epsilon=cost, sensitivity=sensitivity)

    def choice_epsilon(self, cost, steps=1):
        """ε_s of each of ``steps`` exponential mechanisms that share ``cost``: cost/steps, rounded down."""
        return float_down(Fraction(cost) / steps)

    def choice_cost(self, epsilon):
        """The exact cost of one exponential mechanism at ``epsilon``: ε itself."""
        return Fraction(epsilon)

    def expected_abs(self, cost):
        """E|Z| per cell of a table measured with ``cost``: 2a/(1 − a²) for P(z) ∝ a^|z|, a = e^{−cost}."""
        a = math.exp(-float(cost))
        return 2 * a / (1 - a * a)


NOISES = ("auto", "gaussian", "laplace")
#: How the amounts an analysis names are drawn inside their bins: "ranks", each by its released rank sums;
#: "copula", together by the within-bin copula of the fitted model (:mod:`dpknn.synth._copula`), an assumption about
#: the data (it steepened the GSS wage table's prestige slope where the rank sums could be read, ``docs/synthesis.md``);
#: "auto", the copula where the rank sums of the response by the other amounts would be noise
#: (:func:`useful_rank_sums`), the rank sums where they can be read.
WITHIN_BIN = ("auto", "ranks", "copula")
#: The spread of one record's within-bin rank, uniform on [0, 1] when nothing else is known: 1/√12. The scale on
#: which a cell of rank sums moves with the records' other attributes (:func:`useful_rank_sums`).
RANK_SD = 1 / math.sqrt(12)

#: The parameters AIM and MST share, as declared constraints (``validate_params`` in ``fit``).
MARGINAL_CONSTRAINTS = {
    "epsilon": EPSILON,
    "delta": POSITIVE_DELTA,
    "noise": Options(*NOISES),
    "quantile_share": Interval("real", 0, 1, closed="left"),
    "quantile_levels": Interval("int", 1, None, closed="left"),
    "rank_share": Interval("real", 0, 1, closed="left"),
    "within_bin": Options(*WITHIN_BIN),
    "n_rows": (Interval("int", 0, None, closed="left"), None),
    "iterations": Interval("int", 1, None, closed="left"),
    "n_jobs": Interval("int", 1, None, closed="left"),
    "progress": Boolean(),
}

#: The largest ε a marginal synthesiser takes: past it the noise scales underflow the floats the model is
#: fitted in (σ² near 1e-308 at ε = 1e308), while from ε = 1e4 on the tables are exact to a record anyway.
MAX_EPSILON = 1e6


#: The least noise deviation a measurement is weighed with (:func:`measure`), in counts.
MIN_SIGMA = 1e-3


def check_epsilon_bound(epsilon):
    """``epsilon`` checked (finite, > 0) and at most :data:`MAX_EPSILON`, as a float."""
    eps = EPSILON.check(epsilon, "epsilon")
    if eps > MAX_EPSILON:
        raise ValueError(f"epsilon={eps:g} is more than {MAX_EPSILON:g}: the tables' noise scale (1/sqrt(rho)) "
                         "would fall below what a float resolves. Far below that bound the tables are already exact "
                         "to a record (epsilon = 1e4 is the usual non-private ceiling).")
    return eps


def mean_pair_cells(sizes):
    """The mean number of cells of the two-way tables of attributes of table sizes ``sizes``
    (public); a single attribute's own size when there is no pair."""
    pairs = [int(a) * int(b) for a, b in itertools.combinations(sizes, 2)]
    return sum(pairs) / len(pairs) if pairs else float(sizes[0])


def planned_error(budget, share, plan):
    """Σ cells × E|noise| per cell over the planned tables ``plan`` [(share of the method's part,
    cells)], the method's part being ``share`` of ``budget.total``: the expected L1 error of the
    noisy tables, which ``noise="auto"`` minimises (public: it reads the budget and the domains
    only)."""
    return sum(cells * budget.expected_abs(share * budget.total * s) for s, cells in plan)


#: ``bins="auto"`` cuts an amount's model bins at its DP quantiles of at most this many levels (2^4 = 16 bins),
#: plus a bin per point mass; the levels bought beyond shape the values inside those bins. A regression of an
#: amount on other attributes rests on the model's bins (equal bins of income on 0-500,000 left almost every
#: income in the first: OLS R² 0.15 -> 0.03), and a finer model costs noise per cell.
MODEL_LEVELS = 4

#: ``bins="auto"`` shapes an Ordinal inside its bins by DP quantiles only when a bin holds at least this
#: many values (an amount recorded in whole units); narrower bins (ages, years, scores) are drawn from the
#: model's own shape, within half a bin of where quantiles would put them, and their share of ρ is not
#: spent. On GSSvocab (four Ordinals of 2-8 values per bin) that share cost 8 % in 2-way TVD at ε = 0.5.
SHAPED_WIDTH = 16




def useful_levels(rows, attributes, budget, part, levels, *, theta=QUANTILE_THETA):
    """How many levels of quantiles, at most ``levels``, are worth their budget for ``rows`` records.

    ``part`` of ``budget`` pays for ``levels`` levels on each of ``attributes``, so each level
    runs an exponential mechanism at ε_q = ``budget.choice_epsilon(part, levels·k)``. Its median
    of m values falls, with probability at least 1 − 1/e, within (ln|G| + 1)/ε_q ranks of the
    true one (|G| the public candidate grid): the score −|2·#{x < g} − m| has sensitivity 1 and
    moves by 2 per rank, and the exponential mechanism's output scores within (2/ε_q)(ln|G| + t)
    of the best with probability at least 1 − e^{−t} (McSherry and Talwar 2007, Theorem 8; here
    t = 1). Level L splits the records into 2^L parts of about rows/2^L;
    it is θ-useful when a part holds at least θ times that error, the rule PrivBayes applies to
    its noisy tables (Zhang et al. 2017, §4.4). Returns the number of levels from the first that
    are; 0 when even the median is not. Reads public values only: ``rows`` is public or released.
    """
    if not attributes or rows <= 0:
        return 0
    eps_q = budget.choice_epsilon(part, levels * len(attributes))
    error = (math.log(max(candidate_grid(a).size for a in attributes)) + 1) / eps_q
    bought = 0
    while bought < levels and rows / 2 ** (bought + 1) >= theta * error:
        bought += 1
    return bought


def rank_pairs(analyses, names, shaped, joint):
    """The (response, covariate) index pairs whose within-bin rank sums (:mod:`dpknn.synth._ranks`) are released:
    each analysis' response whose name is in ``shaped`` (amounts with released quantile shapes), with each of its
    covariates outside ``joint``, the within-bin copula's amounts, which it draws together (public)."""
    pairs = [(y, x) for y, xs in analyses if names[y] in shaped for x in xs if x not in joint]
    return tuple(dict.fromkeys(pairs))


def useful_rank_sums(rows, cells, sigma, *, theta=QUANTILE_THETA):
    """Whether a released table of within-bin rank sums (:mod:`dpknn.synth._ranks`) of ``cells`` cells, with noise of
    standard deviation ``sigma`` ranks a cell, can be read for ``rows`` records: θ-useful, the rule PrivBayes applies
    to its noisy tables (Zhang et al. 2017, §4.4), here a cell's ``rows / cells`` records times the spread of one
    record's rank (:data:`RANK_SD`) against the noise. Public values only (``rows`` public or released).

    Why it decides how values are drawn inside their bins (``within_bin="auto"``): where the rank sums cannot be told
    from their noise, the sampler would draw the amounts inside their bins nearly independently of each other, which
    flattens the slopes that live inside the bins, and the model's within-bin copula (:mod:`dpknn.synth._copula`,
    post-processing) carries the association the model holds across the bins into them instead. Where they can be
    read, they are the data's own within-bin association, and the copula's assumption is not needed: on the GSS wage
    table at ε = 4, where they are θ-useful, it overstated the prestige slope (``docs/synthesis.md``, "Analyses").
    """
    return rows / cells * RANK_SD >= theta * sigma


def binned_attributes(disc, *, min_width=2):
    """The numeric attributes whose codes are bins of several values in ``disc`` (every Continuous,
    and every Ordinal with at least ``min_width`` values per bin) and that have no given edges:
    those whose quantiles ``bins="quantiles"`` (``min_width`` 2) and ``"auto"`` (:data:`SHAPED_WIDTH`)
    release. A public choice."""
    given = {name for name, _ in disc.edges}
    return [a for a in disc.attributes if a.name not in given and
            (isinstance(a, Continuous) or (isinstance(a, Ordinal) and disc.ordinal_width(a) >= min_width))]


def measure_quantiles(histograms, attributes, levels, budget, src, *, masses=False, heaped=(), narrow=0):
    """DP quantile edges (:func:`~dpknn.synth._bins.quantile_edges`) of each of ``attributes``,
    ``budget.total`` in all, read from ``histograms`` (name -> :class:`~dpknn.synth._bins.ValueHistogram` of the
    counted values: the observed ones inside the attribute's universe; :class:`~dpknn.synth._data.Scan`).

    With ``masses``, each attribute's point masses (:func:`~dpknn.synth._bins.point_masses`) come first, one
    histogram per attribute at the cost of one level, and the quantiles leave their values out: the k
    attributes spend k(L + 1) equal parts of ``budget.total`` less ``narrow`` (the histograms' noise, or each
    level's exponential mechanism, at that part's cost). With ``levels`` 0 only the point masses are released, k
    parts. Each of the narrow Ordinals ``heaped`` (``masses`` only) then releases its histogram at an equal part
    of ``narrow``, every value found an atom of its shape (:class:`~dpknn.synth._bins.OrdinalHeaps`), after the
    amounts' releases, which are those of a table without them.

    Returns
    -------
    (list of :class:`~dpknn.synth._bins.QuantileEdges` of ``attributes``, list of
    :class:`~dpknn.synth._bins.OrdinalHeaps` of ``heaped``)"""
    if heaped and not masses:
        raise ValueError("narrow Ordinals release point masses only: heaped needs masses=True.")
    k = len(attributes)
    steps = levels + 1 if masses else levels
    # Each histogram and each attribute's level at one equal part. A histogram has L1 2, L2 √2: the mechanism of
    # sensitivity 1 at half its part (point_masses).
    part = (budget.total - narrow) / (steps * k) if k else Fraction(0)
    eps = budget.choice_epsilon(part * levels * k, levels * k) if levels and k else 0.0  # 0: masses only
    out = []
    for a in attributes:
        hist = histograms[a.name]
        if not masses:
            out.append(quantile_edges(hist, a, levels=levels, epsilon=eps, src=src))
            continue
        found, noisy = point_masses(hist, a, budget.mechanism(part / 2), src)   # L1 2, L2 √2: point_masses
        # A point mass at a range's end or at 0 gets a model bin of its own, and the quantiles leave its values
        # out; one at a round value inside (a heap) is counted by the quantiles and becomes an atom of the shape,
        # drawn inside whichever bin holds it. A bin of its own for each of a covariate's heaps (SLID's years of
        # schooling, YRBSS's heights), or quantiles without them, took the regressions' CI overlap below zero.
        counts, ends = dict(zip(mass_candidates(a), noisy[:-2])), bin_candidates(a)
        own = tuple(c for c in found if c in ends)
        found_heaps = tuple((c, int(counts[c])) for c in found if c not in ends)
        q = quantile_edges(hist, a, levels=levels, epsilon=eps, src=src, masses=own)
        # The released count of the values the shape describes: all but those of the masses with a bin of their own.
        rest = int(noisy[-2] + noisy[-1]) - sum(counts[c] for c in own)
        out.append(replace(q, point_masses=own, heaps=found_heaps, rest=float(max(rest, 0))))
    heaps = []
    for a in heaped:
        mechanism = budget.mechanism(Fraction(narrow) / len(heaped) / 2)
        found, noisy = point_masses(histograms[a.name], a, mechanism, src)
        counts = dict(zip(mass_candidates(a), noisy[:-2]))
        heaps.append(OrdinalHeaps(a.name, tuple((c, int(counts[c])) for c in found),
                                  float(max(int(noisy[-2] + noisy[-1]), 0)),
                                  false_mass_threshold(mechanism, len(counts))))
    return out, heaps


def public_cuts(disc, attribute, levels):
    """The public inner edges of ``attribute`` that may cut its model bins (:meth:`QuantileEdges.model_edges`): all
    of them when the ``levels`` of quantiles bought cut at most half as many bins as they do, none otherwise. A
    public choice given the released number of levels."""
    return disc.bounds(attribute)[0][1:] if 2**levels <= disc.value_codes(attribute) // 2 else ()


def analysis_pairs(analyses, names):
    """The analyses (public: what the analyst will fit; ``"y ~ x1 + x2"`` or a formula of the attributes,
    :func:`~dpknn.metrics._analysis.parse_regression`) as (index of y, indices of the variables of the xs)."""
    from dpknn.metrics._analysis import parse_regression

    if isinstance(analyses, str):
        raise TypeError(f"analyses must be a list of 'y ~ x1 + x2' strings or 'auto' (each amount on every other "
                        f"attribute), got the string {analyses!r}.")
    out = []
    for text in analyses:
        y, xs = parse_regression(text, names)
        unknown = [c for c in [y, *xs] if c not in names]
        if unknown:
            raise ValueError(f"analysis {text!r} names {unknown}, which are not attributes; the attributes are "
                             f"{list(names)}.")
        out.append((names.index(y), [names.index(x) for x in dict.fromkeys(xs) if x != y]))
    return out


def auto_analyses(disc):
    """``analyses="auto"``: each amount on every other attribute, as (y, xs) pairs of :func:`analysis_pairs`; public,
    from the domain alone. The amounts are the attributes drawn inside their bins: every Continuous and every Ordinal
    of at least :data:`SHAPED_WIDTH` values a bin.

    Why: an agency file is fitted by analysts nobody can name in advance, and these are the regressions
    ``dpknn evaluate`` measures when none is named (:func:`~dpknn.metrics._analysis.default_regressions`, whose
    amounts are told by the data; here by the domain). Named as analyses they buy each amount's table with every
    other attribute (:func:`beside_tree` where a tree cannot hold them) and, with ``within_bin="auto"``, draw the
    amounts together by the copula and buy no rank sums (``docs/synthesis.md``, "Analyses", says why). On four
    public tables (ε = 1, 4, ten seeds; ``benchmarks/README.md``, "Analyses nobody named") the R² ratio of each
    table's own regression rose in every cell against naming nothing and its CI overlap in 6 of 8, for a 2-way
    TVD up to 94 % higher; naming the regression did better in 6 of 8. Hence not the default."""
    names = disc.names
    amounts = [j for j, a in enumerate(disc.attributes)
               if isinstance(a, Continuous) or (isinstance(a, Ordinal) and disc.ordinal_width(a) >= SHAPED_WIDTH)]
    return [(y, [x for x in range(len(names)) if x != y]) for y in amounts]


def analysis_texts(analyses, names):
    """The (y, xs) pairs of :func:`analysis_pairs` as ``"y ~ x1 + x2"`` (the record's)."""
    return [f"{names[y]} ~ " + " + ".join(names[x] for x in xs) for y, xs in analyses]


def joint_amounts(analyses, names, shaped):
    """The attributes (indices, sorted) the within-bin copula draws together (:mod:`dpknn.synth._copula`): those
    the ``analyses`` ((y, xs) pairs of :func:`analysis_pairs`) name whose names are in ``shaped`` (amounts with
    released quantile shapes), when there are at least two; else ()."""
    named = sorted({v for y, xs in analyses for v in (y, *xs) if names[v] in shaped})
    return tuple(named) if len(named) >= 2 else ()


#: An analysis with at most this many covariates has every pair of them measured too (``covariate_pairs``).
MAX_PAIRED_COVARIATES = 4
#: How much more an analysis' tables weigh: copies of its attribute set in AIM's workload, the budget of each of its
#: tables among AIM's first tables against another first table's, and the share of MST's edge budget each of its
#: tables gets against a chosen edge's (:func:`edge_costs`).
ANALYSIS_WEIGHT = 3


def edge_weights(fixed, analysis_tables, chosen):
    """The weights of tables measured at fixed shares (MST's step-3 tables, AIM's first tables): the ``fixed`` tables
    (universes' and analyses' edges, then MST's covariate pairs; AIM's one-way tables too) in order,
    :data:`ANALYSIS_WEIGHT` for an analysis table (a pair of ``analysis_tables``: a response with a covariate, two
    covariates) and 1 for another, then 1 for each of the ``chosen`` edges whatever they join. Public facts only,
    known before any edge is chosen (:func:`edge_costs`)."""
    wanted = {frozenset(t) for t in analysis_tables}
    return [ANALYSIS_WEIGHT if frozenset(t) in wanted else 1 for t in fixed] + [1] * chosen


def edge_costs(total, weights):
    """The budget of each of MST's step-3 tables, ``total`` in all, in proportion to their ``weights``
    (:func:`edge_weights`): exact fractions that add up to ``total``.

    Why: a regression reads its response's table with each covariate and the covariates' tables; weighing them
    :data:`ANALYSIS_WEIGHT` times a chosen edge moves budget from the tables it does not read to those it does.
    The figures (the youth survey and ACS 2012 with their analyses, against equal shares): ``benchmarks/README.md``,
    "Synthesis for inference", printed by ``benchmarks/compare_synthesis.py`` with its ``dpknn auto analysis
    equal shares`` control."""
    return [total * w / sum(weights) for w in weights]


def auto_model_size(epsilon):
    """``max_model_size="auto"``: 20,000 cells per unit of ε, from 20,000 (ε ≤ 1) to 200,000 (ε ≥ 10).

    A larger budget measures the tables of a larger model well enough to pay for them: on CPS1988
    with MNAR gaps at ε = 4 (through :class:`~dpknn.synth.AutoSynthesizer`, 2 seeds) the larger
    model fitted 2-way TVD 0.0036 against 0.0048 at 20,000 cells, in up to 9 s instead of 4 s
    (``benchmarks/README.md``). The cap keeps the fit's time bounded: 1,000,000 cells took 50-180 s
    on the same table. A function of the public ε only.
    """
    epsilon = check_positive_real(epsilon, "epsilon")
    return int(20_000 * min(10.0, max(1.0, epsilon)))


def beside_tree(analyses, fixed, sizes, limit, *, pairs=True, sized_pairs=True):
    """The analysis tables a tree of the ``fixed`` edges cannot hold, then (``pairs``) the :func:`covariate_pairs`,
    each once, none that is a fixed edge, and each while the model it forces with the fixed edges and those before it
    stays within ``limit`` cells (``sizes`` the tables' sizes: public, from the released bins; the pairs only when
    ``sized_pairs``): the tables MST measures beside its tree, and AIM (without the pairs, which it does not force)
    among its first tables. Named analyses' pairs are measured whatever the size, as before (at most
    :data:`MAX_PAIRED_COVARIATES` covariates bound them); ``analyses="auto"``'s are held to the limit.

    Why: :func:`universe_edges` keeps a tree, so an analysis table that would close a cycle (two responses sharing
    covariates, as ``analyses="auto"`` names them) was not measured at all. With the youth survey's height first, its
    every table fixed the tree and weight's were dropped: ``weight ~ height + gender + age`` came out with an age
    slope of -0.08 (five seeds, ε = 1) against 1.52, since the tree made weight independent of age given height."""
    held = {frozenset(e) for e in fixed}
    out = []
    wanted = [(t, True) for y, xs in analyses for t in ((y, x) for x in xs)]
    wanted += [(t, sized_pairs) for t in covariate_pairs(analyses)] if pairs else []
    for t, sized in wanted:
        # Cycles make the junction tree's cliques grow: four amounts each joined to every attribute of a 10,000-row
        # loans table (analyses="auto") forced cliques of every amount at once, and one fit took 4.5 minutes.
        if frozenset(t) not in held and (not sized or model_cells(sizes, [*fixed, *out, t]) <= limit):
            held.add(frozenset(t))
            out.append(t)
    return out


def covariate_pairs(analyses):
    """The pairs (i, j), i < j, of each analysis' covariates (``analyses`` as :func:`analysis_pairs` gives
    them), for analyses with at most :data:`MAX_PAIRED_COVARIATES` covariates; public.

    Why: a regression's coefficients are partial effects, which the response's tables with each covariate do
    not determine. On a tree (y joined to each x) the model makes the covariates independent given y, so a
    covariate whose effect runs through another gets that effect as its own (youth survey, weight on height and
    sex at ε = 1: the sex coefficient 1.1 came out 8.9). All pairs of (y, x₁, …, x_k) pin every correlation of
    the linear model; with k covariates they are k(k − 1)/2 more tables, hence the cap. MST measures them beside
    its tree; AIM does not force them: its workload holds the analysis' whole attribute set, whose pairs its
    rounds may choose, and forcing them lowered the CI overlap on the wage and youth surveys at ε = 4 (0.42 →
    0.22, 0.47 → 0.21; 3 seeds, ``benchmarks/compare_synthesis.py``) while MST's rose (ε = 1: youth survey
    −1.89 → −0.70, ACS −0.57 → 0.26)."""
    out = []
    for _, xs in analyses:
        if len(xs) <= MAX_PAIRED_COVARIATES:
            out += [p for p in itertools.combinations(sorted(xs), 2) if p not in out]
    return out


def universe_edges(attributes, extra=()):
    """The public edges (a, b): attribute a's universe is stated on attribute b, then the pairs of ``extra``
    (an analysis' response and each covariate), all without cycles."""
    names = [a.name for a in attributes]
    ds = DisjointSet(range(len(names)))
    edges = []
    wanted = [(names.index(col), i) for i, a in enumerate(attributes)
              for col, *_ in (() if a.universe is None else a.universe.conditions)]
    for j, i in [*wanted, *extra]:
        if j != i and not ds.connected(i, j):
            ds.merge(i, j)
            edges.append((j, i))
    return edges


def measure(counts, attributes, cost, src, *, budget, groups=None):
    """The table of ``attributes`` with the noise of ``budget`` at ``cost`` (module docstring), of the attributes
    coarsened by the public ``groups`` when given (:func:`~dpknn.synth._graphical_model.coarsen`; a record still
    counts in one cell); the record keeps the noise's standard deviation, which weighs it in the estimate."""
    mech = budget.mechanism(cost)
    # A discrete noise's variance underflows to 0 at a huge budget (ε = 10^4, the non-private ceiling):
    # weighed as a thousandth of a count, the estimate's inverse-variance weights stay finite.
    return Measurement(tuple(attributes), mech.release_array(coarsen(counts[tuple(attributes)], groups), rng=src),
                       max(math.sqrt(mech.variance()), MIN_SIGMA), groups)


#: A covariate x selects an analysis' complete cases when the released table of the response y with x shows y's gap
#: rate varying across x's values by at least this much (:func:`selection_strength`); AIM measures the complete-case
#: tables where two covariates or more select. The released strengths (``benchmarks/coefficients_by_seed.py``):
#: SLID's age 0.19-0.24 and schooling 0.12-0.17 (sex 0.02-0.03); the GSS wage table's age 0.20-0.22 (gender 0.08,
#: prestige 0.05-0.06); the youth survey's at most 0.01 (weight is missing with height) and the exam scores' at most
#: 0.01 (complete). Why two: the tables force a clique of the response with two covariates into the model, which
#: costs it where the pairs' tables already say what the complete cases hold. With tables wherever one covariate
#: selected, the GSS wage table's CI overlap fell 0.15 -> 0.04 at ε = 1 (30 seeds) and 0.68 -> 0.49 at ε = 2 (ten),
#: its prestige slope 570 -> 540 and 603 -> 572 (real 594), while SLID's rose -0.35 -> 0.21 and -0.26 -> 0.22 at
#: ε = 2 and 4. With a table only where both covariates select (SLID's age and schooling alone) SLID reached -0.02
#: and -0.15: its sex, which does not select by itself, selects with age (``benchmarks/README.md``, "Complete-case
#: tables").
SELECTION_SD = 0.1


def selection_strength(table, response_codes, covariate_codes):
    """How much a response's gap rate varies with a covariate, from their released ``table`` (response's extended
    codes × covariate's, the response first): the standard deviation, weighted by each value code's count, of the
    share of the response's gap codes (those from ``response_codes`` on) among the records with that covariate
    value (the covariate's first ``covariate_codes`` codes). Noisy counts are read clipped at 0 (post-processing)."""
    t = np.maximum(np.asarray(table, dtype=np.float64), 0.0)[:, :covariate_codes]
    total, gaps = t.sum(axis=0), t[response_codes:].sum(axis=0)
    ok = total > 0
    if not ok.any():
        return 0.0
    rate, w = gaps[ok] / total[ok], total[ok]
    mean = float((w * rate).sum() / w.sum())
    return float(np.sqrt((w * (rate - mean) ** 2).sum() / w.sum()))


def complete_case_tables(analyses, disc, ext_sizes):
    """The tables (y, xᵢ, xⱼ) of each analysis' response y with each pair of its covariates, y coarsened to whether
    the record has a value (:func:`response_status`), as (attributes, groups) pairs; public, from the analyses and
    the domains. None for a response without a gap code (never missing, no universe), whose status is the same for
    every record, or for an analysis of more than :data:`MAX_PAIRED_COVARIATES` covariates.

    Why: a regression is fitted on the records observed on all its variables, so it reads the covariates' joint law
    among the records whose response is observed. The response's tables with each covariate and the covariates'
    tables do not fix it where the covariates select the complete cases jointly: on SLID (wages missing for 44 %,
    mostly people out of work, old or young and less schooled) age and schooling correlate at -0.10 among the records
    with wages and -0.29 in all, and a model of the pairs drew +0.01 to +0.04 among them; the slopes of
    ``wages ~ age + sex + education`` came out 0.19, 2.68 and 0.79 against 0.26, 3.38 and 0.91 (ε = 4, ten seeds,
    ``benchmarks/coefficients_by_seed.py``). These tables hold it at 2 or 3 cells per cell of the covariates' table.
    AIM measures them where two covariates or more select (:data:`SELECTION_SD`)."""
    out = []
    for y, xs in analyses:
        groups = response_status(disc, ext_sizes, y)
        if groups is None or len(xs) > MAX_PAIRED_COVARIATES:
            continue
        out += [((y, a, b), (groups, None, None)) for a, b in itertools.combinations(sorted(xs), 2)
                if ((y, a, b), (groups, None, None)) not in out]
    return out


def response_status(disc, ext_sizes, y):
    """The groups of attribute y's extended codes by the record's status: every value code in group 0, each gap code
    (not applicable, missing) a group of its own; None when y has no gap code."""
    k = disc.value_codes(disc.attributes[y])
    gaps = int(ext_sizes[y]) - k
    return tuple([0] * k + list(range(1, gaps + 1))) if gaps > 0 else None


@dataclass(frozen=True)
class Prepared:
    """A fit's public plan: the discretisation, which attributes may not be missing, the public
    MCAR rates of the attributes measured on their observed rows (0 elsewhere), the budget and
    its quantile part (exact), the bins mode, the attributes whose quantiles are released and the
    levels of their recursion, and the amounts the within-bin copula draws together (:func:`joint_amounts`)."""

    disc: Discretization
    never: np.ndarray
    mcar: np.ndarray
    epsilon: float
    delta: float
    budget: ZCDPBudget | PureBudget
    quantiles: Fraction
    mode: str
    wide: list
    levels: int
    ranks: Fraction = Fraction(0)
    heaped: list = ()
    narrow: Fraction = Fraction(0)
    joint: tuple = ()

    @property
    def gapless(self):
        """The attributes whose model has no missing code: never missing, or measured on their
        observed rows (their gaps are drawn again at the public rate)."""
        return self.never | (self.mcar > 0)


def rescaled(measurement, rates):
    """``measurement`` as an estimate of the table of all rows: a table measured on the rows
    observed on its attributes has expectation p_S times that of all rows, p_S = Π_{a ∈ S}(1 − φ_a)
    with the public ``rates`` φ, so its counts and σ are divided by p_S (post-processing)."""
    p = observed_probability(measurement.attributes, dict(enumerate(rates)))
    if p == 1.0:
        return measurement
    return replace(measurement, counts=measurement.counts / p, sigma=measurement.sigma / p)


def blank_at_rates(codes, rates, rng):
    """Blank (code −1) each attribute with a rate φ > 0 in ``codes`` (d, n), in place: each row with
    probability φ, by controlled rounding (:func:`~dpknn.synth._graphical_model.round_counts`) within
    the groups of rows that share the attribute's code and the gaps blanked before it. The gaps are
    then MCAR as the model says, and the synthetic table matches the rate within every code (and
    every earlier pattern of gaps) up to rounding instead of up to binomial error."""
    n = codes.shape[1]
    pattern = np.zeros(n, dtype=np.int64)   # the gaps blanked so far, as bits (the last 16 attributes')
    for i in np.flatnonzero(rates):
        _, group = np.unique(np.asarray(codes[i], dtype=np.int64) * 2**16 + pattern, return_inverse=True)
        order = rng.permutation(n)
        order = order[np.argsort(group[order], kind="stable")]   # rows of a group together, in random order
        blank = np.zeros(n, dtype=bool)
        start = 0
        for size in np.bincount(group):
            k = round_counts(np.array([1.0 - rates[i], rates[i]]), int(size), rng)[1]
            blank[order[start:start + k]] = True
            start += size
        codes[i, blank] = -1
        pattern = (pattern * 2 + blank) % 2**16
    return codes


class MarginalSynthesizer(Synthesizer, abc.ABC):
    """The shared ``fit`` and ``sample`` of :class:`~dpknn.synth.MSTSynthesizer` and
    :class:`~dpknn.synth.AIMSynthesizer` (module docstring); a subclass chooses and measures the
    tables (:meth:`select_and_fit`) and lists its parameters in ``__init__``."""

    def _validate_method(self, disc):
        """Check the method's own parameters before anything is read."""

    def observed_rates(self, disc):
        """The public MCAR rate φ of each attribute that is measured on its observed rows, 0 for
        the others (missingness a code): none unless a method takes ``mcar_rates``."""
        return np.zeros(len(disc.names))

    @abc.abstractmethod
    def planned_tables(self, sizes):
        """The tables the method plans to measure, from public facts only: a list of (share of
        its budget, cells), ``sizes`` the attributes' table sizes; for ``noise="auto"``."""

    @abc.abstractmethod
    def select_and_fit(self, counts, budget, src, *, disc, rates):
        """Measure tables with ``budget.total`` in all and fit a model: returns (measurements,
        model, structure), ``structure`` a list of released attribute-index tuples; ``disc`` the
        public discretisation, ``rates`` the checked public MCAR rates of :meth:`observed_rates`."""

    def plan(self):
        """The fit's public plan (a :class:`Prepared`: bins, budget and its currency, the quantiles'
        part), from the parameters alone: nothing is read from any data."""
        mode = self.bins if isinstance(self.bins, str) else "equal"
        if mode not in ("auto", "quantiles", "equal"):
            raise ValueError(f"bins must be a positive int, 'auto' or 'quantiles', got {self.bins!r}.")
        levels = check_positive_int(self.quantile_levels, "quantile_levels")
        if levels > 8:
            raise ValueError(f"quantile_levels must be at most 8 (256 bins), got {levels}.")
        width = {"auto": 10, "quantiles": 2**levels}.get(mode, self.bins)
        disc = Discretization(self.attributes, width, self.bin_edges)
        never = check_never_missing(self.never_missing, disc.names)
        check_positive_int(self.iterations, "iterations")
        check_positive_int(self.n_jobs, "n_jobs")
        self._validate_method(disc)
        eps = check_epsilon_bound(self.epsilon)
        if self.noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {self.noise!r}.")
        delta = POSITIVE_DELTA.check(self.delta, "delta") if self.noise != "laplace" else 0.0
        share = Fraction(check_unit_interval(self.quantile_share, "quantile_share", closed="left",
                                             why="the rest fits the model"))
        wide = [] if mode == "equal" else binned_attributes(disc, min_width=SHAPED_WIDTH if mode == "auto" else 2)
        if wide and share <= 0:
            raise ValueError(f"bins={mode!r} needs quantile_share > 0 to release the quantiles of "
                             f"{[a.name for a in wide]}; give an int bins or public bin_edges instead.")
        # "auto" also releases the point masses of the narrow Ordinals (bins of 2 to SHAPED_WIDTH - 1 values): drawn
        # evenly inside their bins, the American Community Survey's 40-hour week (43 % of workers) came out at 5 %,
        # and 12 years of schooling shared its bin's mass with 13 (benchmarks/narrow_heaps.py).
        heaped = [a for a in binned_attributes(disc) if a not in wide] if mode == "auto" and share > 0 else []
        never = np.array([n in never for n in disc.names])
        rates = self.observed_rates(disc)
        if rates.any() and self.noise == "gaussian":
            raise ValueError("mcar_rates amplify pure-DP tables only (accounting.mcar); use noise='laplace' or "
                             "'auto' (--noise laplace or auto), which then takes laplace, or drop mcar_rates.")
        rows = None if self.n_rows is None else check_positive_int(self.n_rows, "n_rows", minimum=0)
        # The quantile share in equal parts (measure_quantiles): each wide amount's levels and, with "auto", its
        # point-mass histogram; the parts not bought go to the model, and with no wide amount it gets them all.
        # Each narrow Ordinal's histogram costs one such part more, taken from the model's part (at most
        # levels + 1 parts in all, and half of what the model has): the wide amounts' releases stay as they were
        # (sharing the cut, SLID's heap of 12 years at ε = 0.5, near its noise floor, was found with fewer seeds:
        # benchmarks/README.md, "The default's grid now").
        steps = levels + 1 if mode == "auto" else levels
        unit = share / (steps * max(len(wide), 1)) if wide or heaped else Fraction(0)
        narrow = min(unit * min(len(heaped), steps), (1 - share) / 2) if heaped else Fraction(0)
        quantile_part = unit * steps * len(wide) + narrow
        pure = PureBudget(Fraction(eps))
        budget = pure if self.noise == "laplace" else ZCDPBudget(Fraction(zcdp_rho(eps, delta)))
        if rates.any():
            budget = pure
        elif self.noise == "auto" and not wide:   # min keeps the first of equals: gaussian
            # With quantiles to release the Gaussian currency is kept (module docstring, "auto").
            plan = self.planned_tables(disc.sizes + ~never)
            budget = min([budget, pure], key=lambda b: planned_error(b, 1 - quantile_part, plan))
        delta = delta if budget.noise == "gaussian" else 0.0
        # The currency is chosen before n_rows is read, so a released n_rows never changes δ.
        bought = levels if wide else 0
        if wide and mode == "auto" and rows is not None:
            bought = useful_levels(rows, wide, budget, unit * levels * len(wide) * budget.total, levels)
            # With no level worth its budget the point masses are still bought (their one part each): a count of
            # exact zeros is worth a histogram long before a median is worth a level (acs12 at ε = 1: 1,600 rows,
            # 35 % zeros, none released while they waited on the levels, issue 48).
            quantile_part = unit * (bought + 1) * len(wide) + narrow
        analyses = self.analyses_of(disc)
        wide_names = {a.name for a in wide}
        joint, ranks = self._within_bin_plan(analyses, disc.names, wide_names if mode == "auto" else set(), rows,
                                             bought, budget, quantile_part)
        return Prepared(disc, never, rates, eps, delta, budget, quantile_part * budget.total, mode,
                        wide if bought or mode == "auto" else [], bought, ranks,
                        heaped, narrow * budget.total, joint)

    def _within_bin_plan(self, analyses, names, shaped, rows, bought, budget, quantile_part):
        """(The amounts the within-bin copula draws together, the rank sums' part of the budget) for the analyses,
        the ``shaped`` amounts (with ``bins="auto"`` every binned amount gets a released shape), the released row
        count, the levels bought and the quantiles' part of ``budget``: public values only."""
        within = check_params({"within_bin": MARGINAL_CONSTRAINTS["within_bin"]},
                              {"within_bin": self.within_bin})["within_bin"]
        share = Fraction(check_unit_interval(self.rank_share, "rank_share", closed="left",
                                             why="the rest fits the model"))
        part = share * (1 - quantile_part) * budget.total
        joint = joint_amounts(analyses, names, shaped)
        if within == "auto" and isinstance(self.analyses, str):
            # analyses="auto" names every attribute a covariate: the rank sums' share spread over all of them is noise,
            # and matching the copula's ranks to it undid it (the youth survey at ε = 1, 22 pairs: the height slope
            # of weight ~ height + gender + age 58.9 against 76.5; 70.3 without them; benchmarks/README.md).
            # So the amounts are drawn together by the copula (where levels of their shapes were bought, as below),
            # and no rank sum is bought.
            return (joint if bought > 0 else ()), Fraction(0)
        if within == "auto" and joint and bought > 0 and rows is not None:
            # The copula where the response's rank sums by the other amounts would be noise: each such table, (its
            # bin, the other amount's bin or gap), has at most 2^L · (2^L + 1) cells and the noise of the rank sums
            # bought without the copula (in ranks).
            # rank_share=0 buys no rank sums: none can be read.
            pairs = rank_pairs(analyses, names, shaped, ())
            bins = 2 ** min(bought, MODEL_LEVELS)
            readable = part > 0 and any(x in joint for _, x in pairs)
            if readable:
                noise = math.sqrt(budget.mechanism(part / max(len(pairs), 1), sensitivity=RANK_STEPS).variance())
                readable = useful_rank_sums(rows, bins * (bins + 1), noise / RANK_STEPS)
            within = "ranks" if readable else "copula"
        joint = joint if within == "copula" else ()
        # Rank sums are bought only where a response with quantiles has a covariate outside the copula's amounts;
        # the copula's pairs cost nothing.
        return joint, (part if bought > 0 and rank_pairs(analyses, names, shaped, joint) else Fraction(0))

    @abc.abstractmethod
    def candidate_sets(self, disc):
        """Every attribute set (sorted index tuples) whose table :meth:`select_and_fit` may read, from public facts
        only (``disc``, the workload, the analyses): what one pass over a folder counts
        (:mod:`dpknn.synth._distributed`)."""

    def fit(self, X, y=None, *, accountant=None):
        """Release the quantiles (``bins`` "auto" or "quantiles"), measure and select tables, fit
        one model (the class docstring) on ``X``.

        Parameters
        ----------
        X : pandas.DataFrame or TableData
            The attribute columns (missing cells as NaN/None; not modified), or data read as sums over records
            (:class:`~dpknn.synth._data.TableData`: a folder of Parquet partitions,
            :func:`~dpknn.synth._distributed.synthesize_parquet`), which releases the same values for the same seed.
        y : ignored
        accountant : BudgetAccountant or None
            Charged (ε, δ) before the data are read; refused when it does not fit. None: a new accountant
            holding exactly this cost (the one rule, :func:`~dpknn.accounting.charge`); either is kept as
            ``accountant_``.

        Raises
        ------
        ValueError
            When an attribute declared ``never_missing`` has a gap (one bit, ``docs/privacy.md``).
        """
        validate_params(self)   # the declared parameter_constraints, before anything is read or charged
        # One BLAS thread: the estimator's many small products gain nothing from a pool per core, and on two cores
        # its threads contended with the counting kernel's and with other jobs (20,000 x 10 at ε = 4: 180 s of CPU
        # for 38 s of work, issue 48).
        with threadpool_limits(limits=1, user_api="blas"):
            return self._fit(X, accountant)

    def _fit(self, X, accountant):
        data = X if isinstance(X, TableData) else FrameData(X)   # FrameData refuses imputed data
        plan = self.plan()
        self.accountant_ = charge(accountant, plan.epsilon, plan.delta,
                                  label=f"{type(self).__name__} ({plan.budget.noise} noise)")
        src = as_source(self.rng)
        disc = plan.disc
        scan = data.scan(plan)  # domain errors and the never_missing refusal before anything is released
        self.n_outside_universe_ = log_outside_universes(scan.outside_universe, disc.attributes, logger)
        quantiles, heaped = measure_quantiles(scan.histograms, plan.wide, plan.levels,
                                              replace(plan.budget, total=plan.quantiles), src,
                                              masses=plan.mode == "auto", heaped=plan.heaped, narrow=plan.narrow)
        self.public_edges_ = {name: list(e) for name, e in disc.edges}
        self.bin_edges_ = {q.name: list(q.edges) for q in quantiles}
        self.quantile_edges_ = {q.name: q for q in quantiles}
        self.point_masses_ = {q.name: list(q.point_masses) for q in quantiles if q.point_masses}
        by_attr = {a.name: a for a in disc.attributes}
        # Each heap's value and its share of the values the shape describes (released counts' ratios).
        self.heaps_ = {q.name: [[v, w] for (v, _), (_, w) in zip(q.heaps, q.atoms(by_attr[q.name]))]
                       for q in quantiles if q.heaps}
        self.quantile_levels_ = plan.levels
        # The share of the budget the quantiles and point masses spent (0 when none was bought).
        self.quantile_share_ = float(plan.quantiles / plan.budget.total) if quantiles or heaped else 0.0
        model_total = plan.budget.total - plan.quantiles - plan.ranks
        if quantiles:
            # "quantiles": the model's bins are every released quantile; "auto": those of the first MODEL_LEVELS
            # levels, and a bin of its own for each point mass, the deeper levels shaping the values inside. With
            # so few levels bought that the quantiles cut at most half as many bins as the public edges, also the
            # public edges where the released shape puts records (all of them with none bought): one level left
            # half of SLID's wages to a tail drawn to the public bound. With more (the youth survey's 3 levels at
            # ε = 1 against 10 public bins) the public cuts cost its regression more than they bought.
            # A public piece is worth a bin when it holds θ times the noise of a table given 1/d of the model's
            # budget (a public yardstick: the tables the model measures get about that).
            noise = math.sqrt(plan.budget.mechanism(model_total / len(disc.sizes)).variance())
            model = {q.name: (q.edges if plan.mode == "quantiles" else
                              q.model_edges(by_attr[q.name], min(plan.levels, MODEL_LEVELS), noise=noise,
                                            public=public_cuts(disc, by_attr[q.name], q.levels)))
                     for q in quantiles}
            disc = Discretization(disc.attributes, disc.bins, {**dict(disc.edges), **model})
        by_name = {q.name: q for q in quantiles} if plan.mode == "auto" else {}
        self.shapes_ = [by_name[a.name].shape(a) if a.name in by_name else None for a in disc.attributes]
        ext_sizes = disc.sizes + ~plan.gapless   # an attribute measured on its observed rows has no gap code
        self.joint_ = plan.joint
        # "shape" where neither is drawn: each amount inside its bins from its own released shape (a new user read
        # "ranks" beside empty rank sums and took it for what was drawn).
        self.within_bin_ = "copula" if plan.joint else ("ranks" if plan.ranks > 0 else "shape")
        if self.within_bin == "copula" and not self.joint_:
            logger.warning("within_bin='copula' draws nothing together: the analyses name fewer than two amounts with "
                           "released quantile shapes (bins='auto'); values are drawn inside their bins as with "
                           "within_bin='ranks'.")
        rank_pairs = self._rank_pairs(disc) if plan.ranks > 0 else ()
        counts, rank_counts = data.count(disc, ext_sizes, self.candidate_sets(disc),
                                         RankPlan(rank_pairs, tuple(self.shapes_)), n_jobs=self.n_jobs)
        logger.info("%s: %d attributes, %s noise, total %.6g (epsilon=%g, delta=%g)", type(self).__name__,
                    len(disc.sizes), plan.budget.noise, float(plan.budget.total), plan.epsilon, plan.delta)
        self.measurements_, self.model_, structure = self.select_and_fit(
            counts, replace(plan.budget, total=model_total), src, disc=disc, rates=plan.mcar)
        self.copula_ = (fit_copula(self.model_, self.joint_, [disc.value_codes(a) for a in disc.attributes])
                        if self.joint_ else None)
        self._shape_heaps(disc, heaped)
        self.rank_sums_ = []
        if rank_pairs:
            mech = plan.budget.mechanism(plan.ranks / len(rank_pairs), sensitivity=RANK_STEPS)
            self.rank_sums_ = release_ranks(rank_counts, rank_pairs, mech, src)
        self.discretization_ = disc
        self.never_missing_ = tuple(bool(v) for v in plan.never)
        self.observed_rates_ = plan.mcar
        self.structure_ = tuple(tuple(disc.names[v] for v in s) for s in structure)
        self.noise_ = plan.budget.noise
        self.rho_ = float(plan.budget.total) if self.noise_ == "gaussian" else None
        self.epsilon_ = plan.epsilon
        self.delta_ = plan.delta
        self.n_features_in_ = len(disc.sizes)
        return self

    def _shape_heaps(self, disc, heaped):
        """The shapes of the narrow Ordinals with heaps (:meth:`~dpknn.synth._bins.OrdinalHeaps.shape`) from the
        fitted model's masses, into ``shapes_``, and into ``heaps_`` the heaps drawn as atoms with their released
        shares (a value the histogram found that stands out of its neighbours by less than noise is not one):
        post-processing of released tables and counts."""
        heaped = [h for h in heaped if h.heaps]
        if not heaped:
            return
        nodes = self.model_.attribute_marginals(self.model_.clique_marginals())
        for h in heaped:
            j = disc.names.index(h.name)
            a = disc.attributes[j]
            lo, hi = disc.bounds(a)
            shape = h.shape(a, lo, hi, np.asarray(nodes[j])[:disc.value_codes(a)])
            drawn = {p - 0.5 for p, _ in shape.atoms}   # an Ordinal's value v sits at v + 1/2
            kept = [[v, w] for v, w in h.shares() if v in drawn]
            if kept:
                self.shapes_[j], self.heaps_[h.name] = shape, kept

    def _rank_pairs(self, disc):
        """:func:`rank_pairs` of the fit: its shaped amounts and its copula's."""
        shaped = {a.name for a, s in zip(disc.attributes, self.shapes_) if s is not None}
        return rank_pairs(self.analyses_of(disc), disc.names, shaped, self.joint_)

    def analyses_of(self, disc):
        """The analyses as (y, xs) index pairs: :func:`analysis_pairs` of those named, :func:`auto_analyses` for
        ``"auto"``; public."""
        if isinstance(self.analyses, str) and self.analyses == "auto":
            return auto_analyses(disc)
        return analysis_pairs(self.analyses, disc.names)

    def released_params(self):
        """Public bins, released bin edges, never-missing attributes, the noise and ρ (None under pure
        DP); a subclass adds what it measured."""
        return {"bins": self.bins, "bin_edges": self.public_edges_, "released_bin_edges": self.bin_edges_,
                "released_point_masses": self.point_masses_, "released_heaps": self.heaps_,
                **({"analyses": analysis_texts(self.analyses_of(self.discretization_), self.discretization_.names),
                    "analyses_rule": "auto"} if isinstance(self.analyses, str) else {"analyses": list(self.analyses)}),
                "rank_share": float(Fraction(self.rank_share)) if self.rank_sums_ else 0.0,
                "rank_sums": [[self.discretization_.names[s.amount], self.discretization_.names[s.partner], s.sigma]
                              for s in self.rank_sums_],
                "within_bin": self.within_bin, "within_bin_chosen": self.within_bin_,
                "within_bin_copula": None if self.copula_ is None else {
                    "amounts": [self.discretization_.names[a] for a in self.copula_.amounts],
                    "correlation": self.copula_.correlation.round(6).tolist()},
                "quantile_share": self.quantile_share_,
                "quantile_levels": self.quantile_levels_ if self.bin_edges_ else 0, "n_rows": self.n_rows,
                "never_missing": list(self.never_missing), "noise": self.noise_, "rho": self.rho_}

    def sample(self, n, *, rng=None):
        """``n`` synthetic rows: a DataFrame with the attribute columns in declared order.

        Domain-valid; gaps where the model puts them (never in a ``never_missing`` attribute), in
        an attribute measured on its observed rows independently at its public MCAR rate, every
        attribute missing outside its universe. Post-processing of the released tables; ``rng``
        (Generator, int or None) drives it.
        """
        check_is_fitted(self, "model_")
        n = check_positive_int(n, "n", minimum=0)
        gen = check_rng(rng)
        cliques = self.model_.clique_marginals()
        codes = self.model_.sample_codes(n, gen, cliques=cliques)
        sizes = self.discretization_.sizes
        codes[codes >= sizes[:, None]] = -1
        blank_at_rates(codes, self.observed_rates_, gen)
        nodes = self.model_.attribute_marginals(cliques)
        ranks = None
        if self.rank_sums_ or self.copula_ is not None:
            disc = self.discretization_
            joint = {} if self.copula_ is None else copula_ranks(self.copula_, codes, gen)
            drawn = {}
            if self.rank_sums_:
                counts = {s.amount: self.model_.total
                          * np.asarray(nodes[s.amount])[:disc.value_codes(disc.attributes[s.amount])]
                          for s in self.rank_sums_}
                drawn = conditional_ranks(codes, extended_codes(codes, sizes), self.rank_sums_, counts, gen,
                                          uniforms=joint)
            ranks = [drawn.get(j, joint.get(j)) for j in range(len(sizes))]
        return self.discretization_.decode(codes, rng=gen, masses=nodes, shapes=self.shapes_, ranks=ranks)
