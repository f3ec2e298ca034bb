"""What MST and AIM share: public bins, DP quantiles, missingness as a code, one fitted model.

A marginal synthesiser measures noisy count tables of attribute sets and fits one distribution
to them (:mod:`dpknn.synth.graphical_model`). The two here differ only in which tables they
measure (:class:`~dpknn.synth.MSTSynthesizer`: a maximum spanning tree;
:class:`~dpknn.synth.AIMSynthesizer`: an adaptive workload-driven choice). Everything around
that choice lives here:

- **Discretisation** by public bins (:class:`~dpknn.schema.Discretization`), with ``bins``
  "auto" or "quantiles" using DP approximate quantiles released first with ρ_q =
  ``quantile_share``·ρ (:mod:`dpknn.synth.bins`, which states the theorem).
- **Missing values** as one more code of an attribute (the last), except for an attribute in
  ``never_missing`` (a public fact of the survey design), which gets none and whose gaps
  :meth:`fit` refuses (a refusal that reveals one bit, ``docs/privacy.md``). Outside its universe
  an attribute has its "not applicable" code and its synthetic values are blanked.
- **Budget**: ρ = :func:`~dpknn.accounting.zcdp_rho` (ε, δ), the largest ρ whose exact conversion
  gives (ε, δ)-DP (Canonne, Kamath, Steinke 2020, Corollary 13); the method spends ρ − ρ_q, in
  exact fractions, and adaptive composition adds ρ (Bun and Steinke 2016, Lemma 2.3).
- **Measurement** of a table with :class:`~dpknn.mechanisms.DiscreteGaussian` noise: adding or
  removing one record changes one cell by one, so the L2 sensitivity is 1 and a table measured
  with ρ_m is ρ_m-zCDP (Canonne, Kamath, Steinke 2020, Theorem 4).

References
----------
.. [1] Canonne, Kamath, Steinke (2020). "The discrete Gaussian for differential privacy",
   NeurIPS, Theorem 4 and Corollary 13.
.. [2] Bun, Steinke (2016). "Concentrated differential privacy", TCC, Lemma 2.3.
"""

from __future__ import annotations

import abc
import logging
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.cluster.hierarchy import DisjointSet

from dpknn.accounting.zcdp import exponential_epsilon, zcdp_rho
from dpknn.impute.flags import check_not_imputed
from dpknn.mechanisms.additive import DiscreteGaussian
from dpknn.mechanisms.randomness import as_source
from dpknn.schema.attributes import Continuous, Ordinal
from dpknn.schema.discretization import Discretization
from dpknn.schema.marginals import count_tables, extended_codes
from dpknn.synth.base import Synthesizer
from dpknn.synth.bins import quantile_edges
from dpknn.synth.graphical_model import Measurement
from dpknn.utils.validation import (
    EPSILON,
    POSITIVE_DELTA,
    check_is_fitted,
    check_positive_int,
    check_rng,
    check_unit_interval,
)

__all__ = ["Counts", "MarginalSynthesizer", "binned_attributes", "measure", "measure_quantiles", "universe_edges"]

logger = logging.getLogger(__name__)


def binned_attributes(disc):
    """The numeric attributes whose codes are bins of several values in ``disc`` (every Continuous,
    and every Ordinal wider than one value per bin) and that have no given edges: those whose
    quantiles ``bins="auto"`` and ``"quantiles"`` release. A public choice."""
    given = {name for name, _ in disc.edges}
    return [a for a in disc.attributes if a.name not in given and
            (isinstance(a, Continuous) or (isinstance(a, Ordinal) and disc.ordinal_width(a) > 1))]


def measure_quantiles(X, attributes, levels, rho, src):
    """DP quantile edges (:func:`~dpknn.synth.bins.quantile_edges`) of each of ``attributes``, ρ in
    all; the counted values are the observed ones inside the attribute's universe."""
    if not attributes:
        return []
    eps = exponential_epsilon(rho, levels * len(attributes))
    out = []
    for a in attributes:
        values, missing = a.read_column(X)
        keep = ~missing if a.universe is None else ~missing & a.universe.mask(X)
        out.append(quantile_edges(np.asarray(values, dtype=np.float64)[keep], a, levels=levels, epsilon=eps, src=src))
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


class Counts:
    """The true extended count tables of attribute sets, computed once each: data, never released.

    ``ext`` holds extended codes (missing = last code), ``sizes`` the attributes' domain sizes and
    ``ext_sizes`` the table sizes (one more where an attribute may be missing).
    """

    def __init__(self, ext, sizes, ext_sizes, *, n_jobs=2):
        self.ext, self.sizes, self.ext_sizes, self.n_jobs = ext, sizes, ext_sizes, n_jobs
        self._tables = {}

    def __getitem__(self, attributes):
        return self.tables([attributes])[0]

    def tables(self, sets):
        """The tables of ``sets`` (tuples of attribute indices, axes in that order), int64."""
        todo = list(dict.fromkeys(tuple(sorted(s)) for s in sets if tuple(sorted(s)) not in self._tables))
        for s, t in zip(todo, count_tables(self.ext, self.sizes, todo, n_jobs=self.n_jobs)):
            self._tables[s] = t[tuple(slice(0, int(self.ext_sizes[v])) for v in s)].astype(np.int64)
        out = []
        for s in sets:
            key = tuple(sorted(s))
            out.append(np.transpose(self._tables[key], [key.index(v) for v in s]))
        return out


def measure(counts, attributes, rho, src):
    """The table of ``attributes`` with discrete Gaussian noise, ρ-zCDP (module docstring)."""
    mech = DiscreteGaussian(rho=rho)
    return Measurement(tuple(attributes), mech.release_array(counts[tuple(attributes)], rng=src), mech.sigma)


@dataclass(frozen=True)
class Prepared:
    """A fit's public plan: the discretisation, which attributes may not be missing, ρ (exact) and
    its quantile part, the bins mode and the attributes whose quantiles are released."""

    disc: Discretization
    never: np.ndarray
    epsilon: float
    delta: float
    rho: Fraction
    quantiles: Fraction
    mode: str
    wide: list


class MarginalSynthesizer(Synthesizer, abc.ABC):
    """The shared ``fit`` and ``sample`` of :class:`~dpknn.synth.MSTSynthesizer` and
    :class:`~dpknn.synth.AIMSynthesizer` (module docstring); a subclass chooses and measures the
    tables (:meth:`select_and_fit`) and lists its parameters in ``__init__``."""

    def _validate_method(self, disc):
        """Check the method's own parameters before anything is read."""

    @abc.abstractmethod
    def select_and_fit(self, counts, rho, src, *, disc):
        """Measure tables with ρ in all and fit a model: returns (measurements, model, structure),
        ``structure`` a list of released attribute-index tuples; ``disc`` the public discretisation."""

    def _prepare(self):
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
        self._validate_method(disc)
        eps = EPSILON.check(self.epsilon, "epsilon")
        delta = POSITIVE_DELTA.check(self.delta, "delta")
        share = Fraction(check_unit_interval(self.quantile_share, "quantile_share", closed=True))
        if share >= 1:
            raise ValueError(f"quantile_share must be below 1 (the rest fits the model), got {self.quantile_share}.")
        wide = [] if mode == "equal" else binned_attributes(disc)
        if wide and share <= 0:
            raise ValueError(f"bins={mode!r} needs quantile_share > 0 to release the quantiles of "
                             f"{[a.name for a in wide]}; give an int bins or public bin_edges instead.")
        rho = Fraction(zcdp_rho(eps, delta))
        rho_q = share * rho if mode != "equal" else Fraction(0)
        return Prepared(disc, np.array([n in never for n in disc.names]), eps, delta, rho, rho_q, mode, wide)

    def fit(self, X, y=None, *, accountant=None):
        """Release the quantiles (``bins`` "auto" or "quantiles"), measure and select tables, fit
        one model (the class docstring) on ``X``, a DataFrame holding the attribute columns
        (missing cells as NaN/None; not modified).

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
        plan = self._prepare()
        if accountant is not None:
            accountant.spend(plan.epsilon, plan.delta, label=f"{type(self).__name__} (zCDP)")
        src = as_source(self.rng)
        disc = plan.disc
        codes = disc.encode(X)  # domain errors and the never_missing refusal before anything is released
        gaps = [n for n, nv, row in zip(disc.names, plan.never, codes) if nv and (row < 0).any()]
        if gaps:
            raise ValueError(f"attributes declared never_missing have gaps: {gaps}. Remove them from never_missing "
                             "(their gaps then become a code of their own) or impute them first.")
        quantiles = measure_quantiles(X, plan.wide, self.quantile_levels, plan.quantiles, src)
        self.public_edges_ = {name: list(e) for name, e in disc.edges}
        self.bin_edges_ = {q.name: list(q.edges) for q in quantiles}
        if plan.mode == "quantiles" and quantiles:
            disc = Discretization(disc.attributes, disc.bins, {**dict(disc.edges), **self.bin_edges_})
            codes = disc.encode(X)
        by_name = {q.name: q for q in quantiles} if plan.mode == "auto" else {}
        self.shapes_ = [by_name[a.name].shape(a) if a.name in by_name else None for a in disc.attributes]
        ext_sizes = disc.sizes + ~plan.never
        counts = Counts(extended_codes(codes, disc.sizes), disc.sizes, ext_sizes, n_jobs=self.n_jobs)
        logger.info("%s: %d attributes, rho=%.6g (epsilon=%g, delta=%g)", type(self).__name__, len(disc.sizes),
                    float(plan.rho), plan.epsilon, plan.delta)
        self.measurements_, self.model_, structure = self.select_and_fit(
            counts, plan.rho - plan.quantiles, src, disc=disc)
        self.discretization_ = disc
        self.never_missing_ = tuple(bool(v) for v in plan.never)
        self.structure_ = tuple(tuple(disc.names[v] for v in s) for s in structure)
        self.rho_ = float(plan.rho)
        self.epsilon_ = plan.epsilon
        self.delta_ = plan.delta
        self.n_features_in_ = len(disc.sizes)
        return self

    def released_params(self):
        """Public bins, released bin edges, never-missing attributes and ρ (a subclass adds what it measured)."""
        return {"bins": self.bins, "bin_edges": self.public_edges_, "released_bin_edges": self.bin_edges_,
                "quantile_share": self.quantile_share if isinstance(self.bins, str) else 0.0,
                "never_missing": list(self.never_missing), "rho": self.rho_}

    def sample(self, n, *, rng=None):
        """``n`` synthetic rows: a DataFrame with the attribute columns in declared order.

        Domain-valid; gaps where the model puts them (never in a ``never_missing`` attribute),
        every attribute missing outside its universe. Post-processing of the released tables;
        ``rng`` (Generator, int or None) drives it.
        """
        check_is_fitted(self, "model_")
        n = check_positive_int(n, "n", minimum=0)
        gen = check_rng(rng)
        cliques = self.model_.clique_marginals()
        codes = self.model_.sample_codes(n, gen, cliques=cliques)
        sizes = self.discretization_.sizes
        codes[codes >= sizes[:, None]] = -1
        nodes = self.model_.attribute_marginals(cliques)
        return self.discretization_.decode(codes, rng=gen, masses=nodes, shapes=self.shapes_)
