"""AIM for incomplete data: marginals chosen adaptively for a workload, one fitted model.

The algorithm is AIM (McKenna, Mullins, Sheldon, Miklau 2022), made aware of missing values and
of public universes the way :mod:`dpknn.synth._mst` is (:mod:`dpknn.synth._marginal`):

1. **Measure** every attribute's one-way table, and the two-way table of every universe edge
   (public), each with discrete Gaussian noise of ρ_m = 0.9·ρ/T (T rounds, public); the table of
   each analysis' response with each of its covariates (public; those a tree of the others cannot hold
   while the model stays within its size limit, :func:`~dpknn.synth._marginal.beside_tree`) with
   ``ANALYSIS_WEIGHT``·ρ_m, as
   MST gives its analysis tables that many times an edge's share. At ρ_m they were the noisiest
   tables of the fit: the rounds re-measure what scores worst, and on the GSS wage table at ε = 1
   they never came back to income x age, whose association the model kept 14 % weak (age's slope
   238 against 268; 254 at 3·ρ_m, ``benchmarks/within_bin_loss.py``). Then, where those released
   tables show a covariate selecting the response's complete cases, the **complete-case tables**
   (the response coarsened to observed or not, with a pair of covariates; ρ_m each;
   :func:`~dpknn.synth._marginal.complete_case_tables`), within the model's size limit; the rounds'
   size allowance then grows from the cells they force to the limit.
2. **Repeat** until the budget is spent:

   a. **Select** the attribute set r among the candidates (every subset of a workload set,
      weight w_r = Σ_W |r ∩ W|) whose model, once r is added, stays within the round's size
      limit (``max_model_size`` cells times the share of ρ spent so far), by the exponential
      mechanism with score w_r·(‖x_r − round(n̂ μ_r)‖₁ − √(2/π)·σ·|r|), μ the current model, |r|
      the cells of r's table and σ the noise of the next measurement. x̂_r = round(n̂ μ_r) is
      post-processing of releases rounded to integers, so ‖x_r − x̂_r‖₁ moves by at most one
      when a record is added or removed and every score by at most w_r ≤ max_r w_r = Δ.
   b. **Measure** r's table with ρ_m.
   c. **Estimate** one distribution from every table so far
      (:mod:`dpknn.synth._graphical_model`, warm-started from the last).
   d. **Anneal**: when the estimate of r moved by at most the noise's expected L1 size
      (‖n̂ μ'_r − n̂ μ_r‖₁ ≤ √(2/π)·σ·|r|), the next rounds use ρ_m and ρ_s four times larger
      (σ halved, ε doubled). When less than two rounds' worth of ρ is left, the last round
      takes all of it.

**Privacy** (zero-concentrated DP, add/remove one record with its missingness pattern):

- Budget ρ and the quantiles' part ρ_q as in :mod:`dpknn.synth._marginal`; AIM spends R = ρ − ρ_q.
- Step 1: d + u + a tables (a the analysis tables), each ρ_m-zCDP or, an analysis table,
  ANALYSIS_WEIGHT·ρ_m-zCDP (L2 sensitivity 1; Canonne, Kamath, Steinke 2020, Theorem 4); then c
  complete-case tables, each ρ_m-zCDP (a record counts in one cell of the coarsened table: L2
  sensitivity 1), which ones chosen from the released tables (post-processing; ``docs/privacy.md``).
- Step 2a: :class:`~dpknn.mechanisms.ExponentialMechanism` with ε_s the largest float with
  ε_s²/8 ≤ ρ_s = 0.1·ρ/T (scaled as step 2d says), which is ε_s-bounded-range and so
  ε_s²/8-zCDP (Cesar and Rogers 2021, Lemma 3.2).
- Step 2b: ρ_m-zCDP. Steps 2c-2d read releases only (post-processing), so the choices of r, ρ_m
  and ρ_s in later rounds are adaptive in the sense of Bun and Steinke (2016, Lemma 2.3): the
  costs add, and the loop stops once Σ of the exact costs reaches R (checked in fractions,
  never exceeded), so the fit is ρ-zCDP and (ε, δ)-DP.

**Pure DP** (``noise="laplace"``, δ = 0): the same steps in ε (:mod:`dpknn.synth._marginal`).
Tables get :class:`~dpknn.mechanisms.Geometric` (discrete Laplace) noise with ε_m = 0.9·ε'/T
(ε' = ε − ε_q), ε_m-DP on L1 sensitivity 1 (Ghosh, Roughgarden, Sundararajan 2012); a choice is
the exponential mechanism at ε_s = 0.1·ε'/T, ε_s-DP (McSherry and Talwar 2007, Theorem 6); the
scores subtract the discrete Laplace noise's expected size 2a/(1 − a²) per cell (a = e^{−ε_m});
annealing doubles ε_m and ε_s (which halves the noise's scale). Adaptive sequential composition
(Dwork and Roth 2014, Theorem 3.16) adds the costs, and the same exact stopping rule keeps
their sum at most ε'.

The workload, T, ``max_model_size`` and the domains are public; the number of rows is not
needed (the model's total is estimated from the noisy tables).

References
----------
.. [1] McKenna, Mullins, Sheldon, Miklau (2022). "AIM: an adaptive and iterative mechanism for
   differentially private synthetic data", PVLDB 15(11), Algorithm 1.
.. [2] Canonne, Kamath, Steinke (2020). "The discrete Gaussian for differential privacy",
   NeurIPS, Theorem 4.
.. [3] Cesar, Rogers (2021). "Bounding, concentrating, and truncating: unifying privacy loss
   composition for data analytics", ALT, Lemma 3.2.
.. [4] Bun, Steinke (2016). "Concentrated differential privacy", TCC, Lemma 2.3.
"""

from __future__ import annotations

import itertools
import logging
import math
import typing
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpknn.mechanisms._selection import ExponentialMechanism
from dpknn.synth._graphical_model import fit_model, model_cells
from dpknn.synth._marginal import (
    ANALYSIS_WEIGHT,
    MARGINAL_CONSTRAINTS,
    SELECTION_SD,
    MarginalSynthesizer,
    auto_model_size,
    beside_tree,
    complete_case_tables,
    edge_weights,
    measure,
    selection_strength,
    universe_edges,
)
from dpknn.utils._progress import progress_bar
from dpknn.utils._validation import (
    InstanceOf,
    Interval,
    Options,
    check_positive_int,
    check_positive_int_or_auto,
)

__all__ = ["AIMSynthesizer", "Round", "affordable", "auto_model_size", "candidate_scores", "workload_candidates"]

logger = logging.getLogger(__name__)

ROUND_TOL = 1e-10   # a round's estimate only scores the next candidates: looser than the final fit's


@dataclass(frozen=True)
class Round:
    """One round's public record: the chosen ``attributes`` and the cost of the choice and of the
    measurement (exact fractions: ρ under zCDP, ε under pure DP); ``groups`` the coarsening of a complete-case
    table (:func:`~dpknn.synth._marginal.complete_case_tables`), None for a table of the attributes' codes."""

    attributes: tuple
    cost_select: Fraction
    cost_measure: Fraction
    groups: tuple | None = None


def workload_candidates(workload):
    """{attribute set: weight}: every nonempty subset r of a workload set, weighted by
    Σ over the workload of |r ∩ W| (AIM's weighting)."""
    sets = [tuple(sorted(w)) for w in workload]
    out = {}
    for w in sets:
        for k in range(1, len(w) + 1):
            for r in itertools.combinations(w, k):
                out.setdefault(r, sum(len(set(r) & set(x)) for x in sets))
    return out


def affordable(candidates, cliques, sizes, limit):
    """The candidates whose addition keeps the model within ``limit`` cells, and those that join no attributes the
    measured sets ``cliques`` do not join already (the fit's model is then the same: free).

    The size is that of the model the fit will build: :func:`model_cells` of the measured sets with the candidate, the
    triangulation :func:`fit_model` runs. That of the current model's cliques with it can be far smaller, since the
    greedy triangulation is not monotone: on twelve of the pairs measured on the wide table at ε = 4 (seed 8) it is
    10,959 cells where the fit builds 90,924 (``tests/test_aim.py``), and the whole run, sized the old way, built a
    model of 271,872 cells against the limit of 79,200 in 25 s (``docs/synthesis.md``, "Speed")."""
    cliques = list(dict.fromkeys(tuple(c) for c in cliques))   # the same graph, each set once
    edges = {frozenset(p) for c in cliques for p in itertools.combinations(c, 2)}
    out = {}
    for r, w in candidates.items():
        if all(frozenset(p) in edges for p in itertools.combinations(r, 2)) or \
                model_cells(sizes, [*cliques, r]) <= limit:
            out[r] = w
    return out


def candidate_scores(candidates, counts, model, noise_abs, *, cliques=None):
    """Step 2a's scores (module docstring), in the order of ``candidates``; ``counts`` gives the
    true tables (data, never released), ``noise_abs`` the next measurement's expected noise size
    per cell (public), ``cliques`` the model's clique marginals if computed."""
    cliques = model.clique_marginals() if cliques is None else cliques
    tables = counts.tables(list(candidates))
    scores = []
    for (r, w), x in zip(candidates.items(), tables):
        fitted = np.rint(model.total * model.marginal(r, cliques)).astype(np.int64)
        scores.append(w * (float(np.abs(x - fitted).sum()) - noise_abs * x.size))
    return np.array(scores)


class AIMSynthesizer(MarginalSynthesizer):
    """Differentially private synthetic data by AIM on incomplete data.

    (ε, δ)-DP under add/remove one record (with its missingness pattern), through ρ-zCDP with
    the exact conversion, or ε-DP with ``noise="laplace"``: see the module docstring for the
    theorem each step relies on.

    Parameters
    ----------
    attributes : sequence of Ordinal, Categorical or Continuous
        The public domains (wide numeric ones cut into public bins), universes included.
    epsilon : float
        Total ε of :meth:`fit`.
    delta : float in (0, 1), default 1e-9
        Unused with ``noise="laplace"`` (δ = 0).
    noise : {"auto", "gaussian", "laplace"}, default "auto"
        Discrete Gaussian noise accounted in zCDP, discrete Laplace noise for pure ε-DP, or
        whichever gives the planned tables the smaller expected L1 error, Gaussian whenever
        quantiles are released (:mod:`dpknn.synth._marginal`): Gaussian for AIM's 16d rounds on the
        public tables.
    workload : int or sequence of sequences of str, default 2
        The marginals the synthetic data should preserve: an int k for every set of k attributes
        (k ≤ 4), or the sets by name.
    max_model_size : int or "auto", default "auto"
        Most cells of the fitted model (its junction tree's cliques) once the budget is spent.
        Larger models fit higher-order structure at a cost in time: on CPS1988 (7 attributes,
        MNAR gaps, ε = 4) 1,000,000 let the model grow to the full 179,685-cell joint, 2-way TVD
        0.0035 in 50-180 s, against 0.0045 in 12 s at 20,000 (``benchmarks/README.md``).
        "auto": 20,000 cells per unit of ε, from 20,000 to 200,000 (:func:`auto_model_size`),
        since a larger budget measures the tables of a larger model well enough to pay for them.
    rounds : int or None
        T, which sets the first rounds' noise (ρ_m = 0.9ρ/T); None: 16 × the attributes (AIM's).
    bins, bin_edges, quantile_share, quantile_levels, rank_share, within_bin, n_rows, never_missing :
        As :class:`~dpknn.synth.MSTSynthesizer`'s.
    analyses : sequence of str or "auto", default ()
        As :class:`~dpknn.synth.MSTSynthesizer`'s, except that y's table with each x is among
        the first tables, with ``ANALYSIS_WEIGHT`` (3) times a first table's budget, and the
        analysis' attribute set weighs ``ANALYSIS_WEIGHT`` times in the workload, whose rounds may
        then choose the xs' pairs (none is forced).
    iterations : int, default 300
        Most steps of the final estimate, by entropic mirror descent (each round's warm-started
        one, by L-BFGS, takes at most a tenth; :func:`~dpknn.synth._graphical_model.fit_model`).
        On 20,000 × 10 at ε = 4, 1000 took 25 s and 300 took 2 s, for a 2-way TVD of 0.015 against
        0.017 (``benchmarks/synthesis_speed.py``; issue 48's goal is 5 s at every ε <= 4).
    n_jobs : int, default 2
        Threads of the counting kernel.
    progress : bool, default False
        A bar of the share of ρ spent.
    rng : numpy.random.Generator, int or None
        Noise source of :meth:`fit` (None: the OS CSPRNG).

    Attributes
    ----------
    rounds_ : list of Round
        The released choices and what each cost.
    measurements_ : list of Measurement
        The released noisy tables.
    model_ : GraphicalModel
        The fitted distribution (post-processing of ``measurements_``).
    max_model_size_ : int
        The model's size limit used (``max_model_size``, or "auto"'s value for ``epsilon``).
    selection_strengths_ : dict
        {(y, x): selection strength} of each analysis' response y and covariate x, read from their released first
        table (:func:`~dpknn.synth._marginal.selection_strength`); it decides the complete-case tables.
    bin_edges_, public_edges_, noise_, rho_, epsilon_, delta_ :
        As :class:`~dpknn.synth.MSTSynthesizer`'s.

    Examples
    --------
    >>> from dpknn import Categorical, Ordinal
    >>> from dpknn.datasets import make_census
    >>> from dpknn.synth import AIMSynthesizer
    >>> attrs = [Ordinal("AGE", 0, 99), Ordinal("SCHOOL", 0, 17), Categorical("SEX", [1, 2])]
    >>> model = AIMSynthesizer(attrs, epsilon=1.0, never_missing=["SEX"], rng=0).fit(make_census(5_000, rng=0))
    >>> model.sample(3, rng=0).shape
    (3, 3)
    """

    parameter_constraints: typing.ClassVar[dict] = {
        **MARGINAL_CONSTRAINTS,
        "workload": (Interval("int", 1, 4, closed="both"), InstanceOf((list, tuple), "sequence of attribute sets")),
        "max_model_size": (Interval("int", 1, None, closed="left"), Options("auto")),
        "rounds": (Interval("int", 1, None, closed="left"), None),
    }

    def __init__(self, attributes, *, epsilon, delta=1e-9, noise="auto", workload=2, max_model_size="auto",
                 rounds=None, bins="auto", bin_edges=None, quantile_share=0.1, quantile_levels=6, rank_share=0.1,
                 within_bin="auto", analyses=(), n_rows=None, never_missing=(), iterations=300, n_jobs=2,
                 progress=False, rng=None):
        self.attributes = attributes
        self.epsilon = epsilon
        self.delta = delta
        self.noise = noise
        self.workload = workload
        self.max_model_size = max_model_size
        self.rounds = rounds
        self.bins = bins
        self.bin_edges = bin_edges
        self.quantile_share = quantile_share
        self.quantile_levels = quantile_levels
        self.rank_share = rank_share
        self.within_bin = within_bin
        self.analyses = analyses
        self.n_rows = n_rows
        self.never_missing = never_missing
        self.iterations = iterations
        self.n_jobs = n_jobs
        self.progress = progress
        self.rng = rng

    def _workload_sets(self, names):
        if isinstance(self.workload, (int, np.integer)) and not isinstance(self.workload, bool):
            k = check_positive_int(self.workload, "workload")
            if k > 4:
                raise ValueError(f"workload must be at most 4 (sets of 4 attributes), got {k}.")
            return list(itertools.combinations(range(len(names)), min(k, len(names))))
        sets = []
        for w in self.workload:
            unknown = [c for c in w if c not in names]
            if unknown or not 0 < len(set(w)) <= 4:
                raise ValueError(f"workload set {list(w)} must name 1 to 4 attributes among {names}"
                                 f"{'; unknown: ' + str(unknown) if unknown else ''}.")
            sets.append(tuple(sorted(names.index(c) for c in set(w))))
        if not sets:
            raise ValueError("workload is empty; give an int (every set of that many attributes) or sets of names.")
        return sets

    def model_size(self):
        """The model's size limit in cells: ``max_model_size``, or :func:`auto_model_size` of ``epsilon``."""
        size = check_positive_int_or_auto(self.max_model_size, "max_model_size",
                                          auto="20,000 cells per unit of epsilon")
        return auto_model_size(self.epsilon) if size == "auto" else size

    def _validate_method(self, disc):
        self.model_size()
        if self.rounds is not None:
            check_positive_int(self.rounds, "rounds")
        self._workload_sets(disc.names)

    def planned_tables(self, sizes):
        """T tables at 0.9/T of the budget each (their sizes do not matter: all share one noise)."""
        rounds = 16 * len(sizes) if self.rounds is None else self.rounds
        return [(Fraction(9, 10 * rounds), 1)] * rounds

    def _candidates(self, disc):
        """(The first tables' public edges, {candidate set: weight}, the analysis tables, those of the edges that sit
        beside a tree, last among them): the universes' edges and each analysis' response with each covariate (an
        analysis table) are measured first (public), and the analyses weigh in the workload (ANALYSIS_WEIGHT copies of
        each analysis' attribute set), so the rounds spend where the analyst will look."""
        analyses = self.analyses_of(disc)
        tables = [(y, x) for y, xs in analyses for x in xs]
        fixed = universe_edges(disc.attributes, tables)
        # A model may hold the cycles a tree may not, within its size limit (sized with every gap code: public, and
        # the same for candidate_sets and the fit); returned apart too, for the size allowance.
        beside = beside_tree(analyses, fixed, disc.sizes + 1, self.model_size(), pairs=False)
        sets = self._workload_sets(disc.names)
        for y, xs in analyses:
            group = [(y, *xs)] if len(xs) <= 3 else [(y, x) for x in xs]
            sets += [tuple(sorted(g)) for g in group] * ANALYSIS_WEIGHT
        return [*fixed, *beside], workload_candidates(sets), tables, beside

    def candidate_sets(self, disc):
        """The first tables (every attribute, the public edges) and every candidate of the rounds that the model's
        size limit can ever afford: a junction tree holding r has at least r's cells, so a set of more cells than
        ``model_size()`` (counted without the gap codes, to keep every one that might fit) is never chosen."""
        fixed, candidates, _, _ = self._candidates(disc)
        first = [(a,) for a in range(len(disc.names))] + [tuple(sorted(e)) for e in fixed]
        # Every complete-case table an analysis may have (whether its response has a gap code is the fit's to see).
        every_gap = disc.sizes + 1
        first += [tuple(sorted(t)) for t, _ in complete_case_tables(self.analyses_of(disc), disc,
                                                                     every_gap)]
        limit = self.model_size()
        fits = [r for r in candidates if math.prod(int(disc.sizes[a]) for a in r) <= limit]
        return list(dict.fromkeys([*first, *fits]))

    def _complete_case_tables(self, disc, sizes, measurements, limit):
        """The complete-case tables measured after the first tables (:func:`~dpknn.synth._marginal.complete_case_tables`
        says why), in order: where two or more of an analysis' covariates select its response's complete cases in the
        released first tables (:data:`~dpknn.synth._marginal.SELECTION_SD`; post-processing), those of each pair
        holding one of them, each while the model it forces with the first tables and those before it stays within
        ``limit`` cells (public: the sizes and the limit). Also {(y, x): selection strength} of every analysis table
        measured, for the record."""
        released = {frozenset(m.attributes): m for m in measurements if len(m.attributes) == 2}
        strength, out = {}, []
        first = [m.attributes for m in measurements]
        for y, xs in self.analyses_of(disc):
            for x in xs:
                m = released.get(frozenset((y, x)))
                if m is not None:
                    strength[(y, x)] = selection_strength(m.counts if m.attributes[0] == y else m.counts.T,
                                                          disc.value_codes(disc.attributes[y]),
                                                          disc.value_codes(disc.attributes[x]))
            # Two of this analysis' covariates or more select y's complete cases (SELECTION_SD says why); a table for
            # each pair holding one of them.
            selective = {x for x in xs if strength.get((y, x), 0.0) >= SELECTION_SD}
            if len(selective) < 2:
                continue
            for t, groups in complete_case_tables([(y, xs)], disc, sizes):
                if (t, groups) not in out and selective & set(t[1:]) and \
                        model_cells(sizes, [*first, *(u for u, _ in out), t]) <= limit:
                    out.append((t, groups))
        return out, strength

    def select_and_fit(self, counts, budget, src, *, disc, rates):
        """Steps 1-2 (module docstring) with ``budget.total`` (ρ, or ε under pure DP) in all; AIM takes
        no MCAR rates (``rates`` is all zero)."""
        rho = budget.total
        limit = self.max_model_size_ = self.model_size()
        sizes = tuple(int(s) for s in counts.ext_sizes)
        d = len(sizes)
        fixed, candidates, analysis_tables, beside = self._candidates(disc)
        sensitivity = max(candidates.values())
        first = [(a,) for a in range(d)] + [tuple(e) for e in fixed]
        rounds = 16 * d if self.rounds is None else self.rounds
        weights = edge_weights(first, analysis_tables, 0)   # ANALYSIS_WEIGHT for an analysis table, as in MST
        # Checked before anything is measured, with every complete-case table an analysis may have (public).
        most = len(complete_case_tables(self.analyses_of(disc), disc, sizes))
        if rounds <= sum(weights) + most:
            raise ValueError(f"rounds ({rounds}) must exceed the {sum(weights) + most} round shares of the first "
                             f"tables (one per attribute, universe edge and complete-case table, {ANALYSIS_WEIGHT} "
                             "per analysis table).")
        rho_m, rho_s = 9 * rho / (10 * rounds), rho / (10 * rounds)
        costs = [rho_m * w for w in weights]
        measurements = [measure(counts, r, c, src, budget=budget) for r, c in zip(first, costs)]
        self.rounds_ = [Round(r, Fraction(0), c) for r, c in zip(first, costs)]
        coarse, self.selection_strengths_ = self._complete_case_tables(disc, sizes, measurements, limit)
        # The cells the complete-case tables force into the model (public): the rounds' size allowance grows from
        # there to the limit, as it grows from 0 without them, so that they do not stop the rounds from adding the
        # tables they would have added (with a table for every pair of its covariates, forced cliques of up to 9,500
        # cells had held the GSS wage table's rounds for half the budget at ε = 1: its CI overlap over ten seeds 0.18
        # without any, -0.02 with them, 0.21 with them and this allowance; benchmarks/README.md).
        # The analysis tables beside a tree of the fixed edges force cells too: counted with the complete-case tables,
        # else a model they take near the limit would hold the rounds until the spent share caught up.
        tree = first[:len(first) - len(beside)]   # the one-way tables and the tree's edges: beside_tree's come last
        forced = (model_cells(sizes, [*first, *(t for t, _ in coarse)]) - model_cells(sizes, tree)
                  if coarse or beside else 0)
        for t, groups in coarse:
            measurements.append(measure(counts, t, rho_m, src, budget=budget, groups=groups))
            self.rounds_.append(Round(t, Fraction(0), rho_m, groups))
            first.append(t)
        used = sum((r.cost_measure for r in self.rounds_), Fraction(0))
        model = fit_model(sizes, first, measurements, iterations=self.iterations)
        marginals = model.clique_marginals()
        bar = progress_bar(progress=self.progress, total=100, desc="AIM", unit="% of rho")
        last = False
        while not last:
            if rho - used < 2 * (rho_m + rho_s):
                rho_m, rho_s, last = 9 * (rho - used) / 10, (rho - used) / 10, True
            eps = budget.choice_epsilon(rho_s)
            cost = budget.choice_cost(eps) + rho_m
            used += cost
            noise_abs = budget.expected_abs(rho_m)
            allowed = affordable(candidates, [m.attributes for m in measurements], sizes,
                                 forced + (limit - forced) * float(used / rho))
            keys = list(allowed)
            scores = candidate_scores(allowed, counts, model, noise_abs, cliques=marginals)
            r = keys[ExponentialMechanism(epsilon=eps, sensitivity=sensitivity).select(scores, rng=src)]
            measurements.append(measure(counts, r, rho_m, src, budget=budget))
            self.rounds_.append(Round(r, budget.choice_cost(eps), rho_m))
            before = model.total * model.marginal(r, marginals)
            # The final model is the one sampled: mirror descent fits it closer (compare_estimators.py).
            model = fit_model(sizes, [m.attributes for m in measurements], measurements, start=model,
                              **({"iterations": self.iterations, "method": "mirror"} if last else
                                 {"iterations": max(self.iterations // 10, 1), "tol": ROUND_TOL}))
            marginals = model.clique_marginals()   # one forward pass per model: here and the next scores
            moved = np.abs(model.total * model.marginal(r, marginals) - before).sum()
            logger.debug("AIM round %d: %s, noise %.4g per cell, %.1f%% of the budget", len(self.rounds_), r,
                         noise_abs, 100 * float(used / rho))
            bar.update(100 * float(cost / rho))
            if moved <= noise_abs * before.size:
                rho_m, rho_s = budget.sharpen * rho_m, budget.sharpen * rho_s
        bar.close()
        if used > rho:   # the loop's invariant, on which the proof rests: never reached
            raise RuntimeError(f"AIM spent {float(used)} > {float(rho)}, its budget; please report this.")
        return measurements, model, [m.attributes for m in measurements[d:]]

    def released_params(self):
        """Public bins, released bin edges, never-missing attributes, ρ, the workload, the tables
        measured with their noise and every round's released choice with its costs."""
        names = self.discretization_.names
        return {**super().released_params(),
                "selection_strengths": [[names[y], names[x], v] for (y, x), v in self.selection_strengths_.items()],
                "measured": [[[names[v] for v in m.attributes], m.sigma,
                              *([] if m.groups is None else [{"status_of": names[m.attributes[0]]}])]
                             for m in self.measurements_],
                "workload": self.workload if isinstance(self.workload, int)
                else [list(w) for w in self.workload], "max_model_size": self.max_model_size_,
                "rounds": [[[names[v] for v in r.attributes], float(r.cost_select), float(r.cost_measure),
                            *([] if r.groups is None else [{"status_of": names[r.attributes[0]]}])]
                           for r in self.rounds_]}
