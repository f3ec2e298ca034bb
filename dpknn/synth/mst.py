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
   (:mod:`dpknn.synth.tree_model`) and sample from it by controlled rounding.

**Missing values.** A missing cell is one more code of its attribute (the last), so the tables
hold the missingness pattern along with the values and the synthetic data reproduce it, the
way MST and AIM are run on incomplete data with missingness as a category. An attribute named
in ``never_missing`` (a public fact of the survey design, such as an item with no
non-response) gets no such code, so the synthesiser never invents gaps in it; :meth:`fit`
refuses data with a gap there (a refusal that reveals one bit, ``docs/privacy.md``). Outside
its universe an attribute has its "not applicable" code (:class:`~dpknn.schema.Discretization`),
and synthetic values there are blanked.

**Privacy** (zero-concentrated DP, add/remove one record with its missingness pattern; every
step reads the data only through the mechanism named):

- Budget: ρ = :func:`~dpknn.accounting.zcdp_rho` (ε, δ), the largest ρ whose exact conversion
  (Canonne, Kamath, Steinke 2020, Corollary 13) gives (ε, δ)-DP. With ``bins`` "auto" or
  "quantiles", ρ_q = ``quantile_share``·ρ first, else ρ_q = 0; of the rest ρ' = ρ − ρ_q,
  ρ₁ = ``one_way_share``·ρ', ρ₂ = ``selection_share``·ρ', ρ₃ = ρ' − ρ₁ − ρ₂, as exact fractions.
- Step 0 (``bins`` "auto" or "quantiles"): DP approximate quantiles of every binned numeric
  attribute, ρ_q in all (:mod:`dpknn.synth.bins`, which states the theorems). "auto" uses them as
  the shape of the values inside the public bins, "quantiles" as the bins themselves.
- Step 1: d tables of L2 sensitivity 1, each :class:`~dpknn.mechanisms.DiscreteGaussian` with
  ρ₁/d (σ² = d/(2ρ₁); CKS 2020, Theorem 4).
- Step 2: r choices, r = d − 1 − (universe edges), each
  :class:`~dpknn.mechanisms.ExponentialMechanism` with ε_s = √(8ρ₂/r) rounded down, which is
  ε_s-bounded-range and so ε_s²/8-zCDP (Cesar and Rogers 2021, Lemma 3.2).
- Step 3: d − 1 tables, each with ρ₃/(d − 1).
- Step 4 and sampling are post-processing.

Adaptive composition adds ρ (Bun and Steinke 2016, Lemma 2.3): ρ_q + ρ₁ + r·ε_s²/8 + ρ₃ ≤ ρ, so
the fit is (ε, δ)-DP. The sizes of the tables, the universes and the bins are public inputs; the
number of rows is not needed (the model's total is estimated from the noisy tables).

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
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.cluster.hierarchy import DisjointSet

from dpknn.accounting.zcdp import exponential_epsilon, zcdp_rho
from dpknn.impute.flags import check_not_imputed
from dpknn.mechanisms.additive import DiscreteGaussian
from dpknn.mechanisms.randomness import as_source
from dpknn.mechanisms.selection import ExponentialMechanism
from dpknn.schema.attributes import Continuous, Ordinal
from dpknn.schema.discretization import Discretization
from dpknn.schema.marginals import count_tables, extended_codes
from dpknn.synth.base import Synthesizer
from dpknn.synth.bins import quantile_edges
from dpknn.synth.tree_model import Measurement, estimate_total, fit_tree, project_simplex
from dpknn.utils.progress import progress_bar
from dpknn.utils.validation import (
    EPSILON,
    POSITIVE_DELTA,
    check_is_fitted,
    check_positive_int,
    check_rng,
    check_unit_interval,
)

__all__ = [
    "MSTSynthesizer",
    "ZcdpBudget",
    "binned_attributes",
    "edge_scores",
    "measure_edges",
    "measure_one_way",
    "measure_quantiles",
    "select_tree",
    "universe_edges",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ZcdpBudget:
    """ρ and its parts (exact fractions), and the (ε, δ) they were converted from."""

    epsilon: float
    delta: float
    rho: Fraction
    quantiles: Fraction
    one_way: Fraction
    selection: Fraction
    two_way: Fraction


def _budget(epsilon, delta, one_way_share, selection_share, quantile_share):
    eps = EPSILON.check(epsilon, "epsilon")
    delta = POSITIVE_DELTA.check(delta, "delta")
    s1 = Fraction(check_unit_interval(one_way_share, "one_way_share"))
    s2 = Fraction(check_unit_interval(selection_share, "selection_share"))
    sq = Fraction(check_unit_interval(quantile_share, "quantile_share", closed=True))
    if s1 <= 0 or s2 <= 0 or s1 + s2 >= 1:
        raise ValueError(f"one_way_share ({one_way_share}) and selection_share ({selection_share}) must be > 0 "
                         "with a sum below 1 (the rest measures the tree's edges).")
    if sq >= 1:
        raise ValueError(f"quantile_share must be below 1 (the rest fits the model), got {quantile_share}.")
    rho = Fraction(zcdp_rho(eps, delta))
    rest = rho - sq * rho
    return ZcdpBudget(eps, delta, rho, sq * rho, s1 * rest, s2 * rest, rest - s1 * rest - s2 * rest)


def binned_attributes(disc):
    """The numeric attributes whose codes are bins of several values in ``disc`` (every Continuous,
    and every Ordinal wider than one value per bin) and that have no given edges: those whose
    quantiles ``bins="auto"`` and ``"quantiles"`` release. A public choice."""
    given = {name for name, _ in disc.edges}
    return [a for a in disc.attributes if a.name not in given and
            (isinstance(a, Continuous) or (isinstance(a, Ordinal) and disc.ordinal_width(a) > 1))]


def measure_quantiles(X, attributes, levels, rho, src):
    """Step 0: DP quantile edges (:func:`~dpknn.synth.bins.quantile_edges`) of each of
    ``attributes``, ρ in all; the counted values are the observed ones inside the attribute's universe."""
    if not attributes:
        return []
    eps = exponential_epsilon(rho, levels * len(attributes))
    out = []
    for a in attributes:
        values, missing = a.read_column(X)
        keep = ~missing if a.universe is None else ~missing & a.universe.mask(X)
        out.append(quantile_edges(np.asarray(values, dtype=np.float64)[keep], a, levels=levels, epsilon=eps, src=src))
    return out


def measure_one_way(ext, ext_sizes, rho, src):
    """Step 1: one noisy table per attribute, each ρ/d-zCDP. ``ext`` holds extended codes
    (missing = last code); ``ext_sizes`` the table sizes."""
    d = ext.shape[0]
    mech = DiscreteGaussian(rho=rho / d)
    out = []
    for a in range(d):
        counts = np.bincount(ext[a].astype(np.int64), minlength=int(ext_sizes[a]))[: int(ext_sizes[a])]
        out.append(Measurement((a,), mech.release_array(counts, rng=src), mech.sigma))
    return out


def universe_edges(attributes):
    """The public edges (a, b): attribute a's universe is stated on attribute b (without cycles)."""
    names = [a.name for a in attributes]
    ds = DisjointSet(range(len(names)))
    edges = []
    for i, a in enumerate(attributes):
        for col, *_ in () if a.universe is None else a.universe.conditions:
            j = names.index(col)
            if j != i and not ds.connected(i, j):
                ds.merge(i, j)
                edges.append((j, i))
    return edges


def edge_scores(pair_counts, one_way):
    """Step 2's scores: ‖x_ab − round(n̂ μ_a ⊗ μ_b)‖₁ for every pair, μ_a the projection of the
    released one-way table a onto the simplex and n̂ their total (the estimator's
    :func:`~dpknn.synth.tree_model.estimate_total`). The model is post-processing of releases and
    is rounded to integers, so every score is an exact integer whose add/remove sensitivity is 1."""
    total = estimate_total(one_way)
    mu = [project_simplex(m.counts / total) for m in one_way]
    return {(a, b): float(np.abs(x - np.rint(total * np.outer(mu[a], mu[b])).astype(np.int64)).sum())
            for (a, b), x in pair_counts.items()}


def select_tree(pair_counts, one_way, fixed, rho, src, *, progress=False):
    """Step 2: the tree's edges, ``fixed`` (public) first, then private choices (module docstring).

    Parameters
    ----------
    pair_counts : dict (a, b) -> ndarray of int64
        True two-way tables (a < b), extended and cut to the table sizes: data, never released.
    one_way : list of Measurement
        Step 1's releases.
    fixed : list of (int, int)
        Public edges, a forest.
    rho : Fraction
        ρ₂ for all choices together.
    src : RandomSource
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
    mech = ExponentialMechanism(epsilon=exponential_epsilon(rho, rounds), sensitivity=1.0)
    scores = edge_scores(pair_counts, one_way)
    for _ in progress_bar(range(rounds), progress=progress, desc="MST tree", unit="edge"):
        cands = [e for e in sorted(scores) if not ds.connected(*e)]
        a, b = cands[mech.select(np.array([scores[e] for e in cands]), rng=src)]
        ds.merge(a, b)
        edges.append((a, b))
    return edges


def measure_edges(pair_counts, edges, rho, src):
    """Step 3: one noisy two-way table per tree edge, each ρ/(d − 1)-zCDP."""
    mech = DiscreteGaussian(rho=rho / len(edges))
    out = []
    for a, b in edges:
        x = pair_counts[(a, b)] if a < b else pair_counts[(b, a)].T
        out.append(Measurement((a, b), mech.release_array(x, rng=src), mech.sigma))
    return out


class MSTSynthesizer(Synthesizer):
    """Differentially private synthetic data by MST on incomplete data (the ``dpknn synth`` default).

    (ε, δ)-DP under add/remove one record (with its missingness pattern), through ρ-zCDP with
    the exact conversion: see the module docstring for the theorem each step relies on.

    Parameters
    ----------
    attributes : sequence of Ordinal, Categorical or Continuous
        The public domains (wide numeric ones cut into ``bins`` public bins,
        :class:`~dpknn.schema.Discretization`), universes included.
    epsilon : float
        Total ε of :meth:`fit`.
    delta : float in (0, 1), default 1e-9
    bins : int, "auto" or "quantiles", default "auto"
        An int: that many equal public bins of each wide numeric attribute, values drawn inside a
        bin from the fitted model's shape (``docs/synthesis.md`` says when to prefer which).
        ``"auto"``: 10 equal public bins, values drawn inside a bin from the shape of
        2^``quantile_levels`` DP quantiles of the attribute's observed values
        (:mod:`dpknn.synth.bins`, ``quantile_share`` of ρ), so a skewed amount keeps its median.
        ``"quantiles"``: the bins are cut at those quantiles (an Ordinal with at most
        2^``quantile_levels`` values keeps one code per value).
    bin_edges : dict or None
        Public inner edges of some numeric attributes, ``{name: edges}`` (for money, say
        :func:`~dpknn.schema.geometric_edges`); they take precedence over ``bins``.
    quantile_share : float, default 0.1
        Share of ρ for the quantiles when ``bins`` is "auto" or "quantiles".
    quantile_levels : int, default 4
        Levels of the quantile recursion: up to 2^levels bins.
    never_missing : sequence of str, default ()
        Attributes that have no gaps by design (public): they get no missing code.
    one_way_share, selection_share : float, default 0.2 and 0.1
        Shares of ρ for the one-way tables and for the tree; the rest measures the edges. MST
        splits ⅓, ⅓, ⅓; 0.2, 0.1, 0.7 gave a 2-way TVD 3-12 % lower on the public tables of
        ``benchmarks/compare_synthesis.py`` (the edge tables carry the one-way evidence too).
    iterations : int, default 2000
        Most steps of the estimator.
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
        The released noisy tables (one-way, then the edges).
    model_ : TreeModel
        The fitted distribution (post-processing of ``measurements_``).
    rho_ : float
        The zCDP budget spent.
    epsilon_, delta_ : float

    Examples
    --------
    >>> from dpknn import Categorical, Ordinal
    >>> from dpknn.datasets.census import make_census
    >>> from dpknn.synth import MSTSynthesizer
    >>> attrs = [Ordinal("AGE", 0, 99), Ordinal("SCHOOL", 0, 17), Categorical("SEX", [1, 2])]
    >>> model = MSTSynthesizer(attrs, epsilon=1.0, never_missing=["SEX"], rng=0).fit(make_census(5_000, rng=0))
    >>> model.sample(3, rng=0).shape
    (3, 3)
    """

    def __init__(self, attributes, *, epsilon, delta=1e-9, bins="auto", bin_edges=None, quantile_share=0.1,
                 quantile_levels=4, never_missing=(), one_way_share=0.2, selection_share=0.1, iterations=2000,
                 n_jobs=2, progress=False, rng=None):
        self.attributes = attributes
        self.epsilon = epsilon
        self.delta = delta
        self.bins = bins
        self.bin_edges = bin_edges
        self.quantile_share = quantile_share
        self.quantile_levels = quantile_levels
        self.never_missing = never_missing
        self.one_way_share = one_way_share
        self.selection_share = selection_share
        self.iterations = iterations
        self.n_jobs = n_jobs
        self.progress = progress
        self.rng = rng

    def _validate(self):
        mode = self.bins if isinstance(self.bins, str) else "equal"
        if mode not in ("auto", "quantiles", "equal"):
            raise ValueError(f"bins must be a positive int, 'auto' or 'quantiles', got {self.bins!r}.")
        levels = check_positive_int(self.quantile_levels, "quantile_levels")
        if levels > 8:
            raise ValueError(f"quantile_levels must be at most 8 (256 bins), got {levels}.")
        width = {"auto": 10, "quantiles": 2**levels}.get(mode, self.bins)
        disc = Discretization(self.attributes, width, self.bin_edges)
        never = tuple(self.never_missing)
        unknown = [c for c in never if c not in disc.names]
        if unknown:
            raise ValueError(f"never_missing names {unknown}, which are not attributes; the attributes are "
                             f"{disc.names}.")
        check_positive_int(self.iterations, "iterations")
        check_positive_int(self.n_jobs, "n_jobs")
        budget = _budget(self.epsilon, self.delta, self.one_way_share, self.selection_share,
                         0 if mode == "equal" else self.quantile_share)
        wide = [] if mode == "equal" else binned_attributes(disc)
        if wide and budget.quantiles <= 0:
            raise ValueError(f"bins={mode!r} needs quantile_share > 0 to release the quantiles of "
                             f"{[a.name for a in wide]}; give an int bins or public bin_edges instead.")
        return disc, np.array([n in never for n in disc.names]), budget, mode, wide

    def fit(self, X, y=None, *, accountant=None):
        """Measure, select, measure, estimate (module docstring) on ``X``, a DataFrame holding the
        attribute columns (missing cells as NaN/None; not modified).

        Parameters
        ----------
        X : pandas.DataFrame
        y : ignored
        accountant : BudgetAccountant or None
            Charged (ε, δ) before the data are read; refused when it does not fit.

        Raises
        ------
        ValueError
            When an attribute declared ``never_missing`` has a gap (one bit, ``docs/privacy.md``).
        """
        check_not_imputed(X, "X")
        disc, never, budget, mode, wide = self._validate()
        if accountant is not None:
            accountant.spend(budget.epsilon, budget.delta, label="MST (zCDP)")
        src = as_source(self.rng)
        codes = disc.encode(X)  # domain errors and the never_missing refusal before anything is released
        gaps = [n for n, nv, row in zip(disc.names, never, codes) if nv and (row < 0).any()]
        if gaps:
            raise ValueError(f"attributes declared never_missing have gaps: {gaps}. Remove them from never_missing "
                             "(their gaps then become a code of their own) or impute them first.")
        quantiles = measure_quantiles(X, wide, self.quantile_levels, budget.quantiles, src)
        self.public_edges_ = {name: list(e) for name, e in disc.edges}
        self.bin_edges_ = {q.name: list(q.edges) for q in quantiles}
        if mode == "quantiles" and quantiles:
            disc = Discretization(disc.attributes, disc.bins, {**dict(disc.edges), **self.bin_edges_})
            codes = disc.encode(X)
        by_name = {q.name: q for q in quantiles} if mode == "auto" else {}
        self.shapes_ = [by_name[a.name].shape(a) if a.name in by_name else None for a in disc.attributes]
        sizes = disc.sizes
        ext_sizes = sizes + ~never
        ext = extended_codes(codes, sizes)
        d = len(sizes)
        logger.info("MST: %d attributes, rho=%.6g (epsilon=%g, delta=%g)", d, float(budget.rho), budget.epsilon,
                    budget.delta)
        one_way = measure_one_way(ext, ext_sizes, budget.one_way, src)
        edges = []
        if d > 1:
            pairs = [(a, b) for a in range(d) for b in range(a + 1, d)]
            cut = [t[: ext_sizes[a], : ext_sizes[b]].astype(np.int64)
                   for (a, b), t in zip(pairs, count_tables(ext, sizes, pairs, n_jobs=self.n_jobs))]
            pair_counts = dict(zip(pairs, cut))
            fixed = universe_edges(disc.attributes)
            edges = select_tree(pair_counts, one_way, fixed, budget.selection, src, progress=self.progress)
            two_way = measure_edges(pair_counts, edges, budget.two_way, src)
        else:
            two_way = []
        self.measurements_ = one_way + two_way
        self.model_ = fit_tree(ext_sizes, edges, self.measurements_, iterations=self.iterations)
        self.discretization_ = disc
        self.never_missing_ = tuple(bool(v) for v in never)
        self.tree_ = tuple((disc.names[a], disc.names[b]) for a, b in edges)
        self.rho_ = float(budget.rho)
        self.epsilon_ = float(budget.epsilon)
        self.delta_ = float(budget.delta)
        self.n_features_in_ = d
        return self

    def released_params(self):
        """Public bins, released bin edges, never-missing attributes, budget split, the released
        tree and the noise."""
        one = self.measurements_[0].sigma
        two = self.measurements_[-1].sigma if len(self.measurements_) > self.n_features_in_ else None
        return {"bins": self.bins, "bin_edges": self.public_edges_, "released_bin_edges": self.bin_edges_,
                "quantile_share": self.quantile_share if isinstance(self.bins, str) else 0.0,
                "never_missing": list(self.never_missing), "rho": self.rho_,
                "one_way_share": self.one_way_share, "selection_share": self.selection_share,
                "tree": [list(e) for e in self.tree_], "sigma_one_way": one, "sigma_two_way": two}

    def sample(self, n, *, rng=None):
        """``n`` synthetic rows: a DataFrame with the attribute columns in declared order.

        Domain-valid; gaps where the model puts them (never in a ``never_missing`` attribute),
        every attribute missing outside its universe. Post-processing of the released tables;
        ``rng`` (Generator, int or None) drives it.
        """
        check_is_fitted(self, "model_")
        n = check_positive_int(n, "n", minimum=0)
        gen = check_rng(rng)
        marginals = self.model_.marginals()
        codes = self.model_.sample_codes(n, gen, marginals=marginals)
        sizes = self.discretization_.sizes
        codes[codes >= sizes[:, None]] = -1
        nodes, _, _ = marginals
        return self.discretization_.decode(codes, rng=gen, masses=nodes, shapes=self.shapes_)
