"""Bin edges that fit amounts, released by DP approximate quantiles (``bins="auto"``).

Equal bins of a public range put a skewed amount (a wage whose public range is 25 times its
median) mostly in the lowest bin, and the synthetic values spread uniformly over it. Bins at the
amount's quantiles hold equal shares of the records wherever the records are. The quantiles are
data, so they are released:

**Mechanism** (Kaplan, Ligett, Stemmer 2022, "Differentially private approximate quantiles",
ICML, Algorithm 1, with 2^L bins): on a public grid G of candidate edges, release the median of
the observed values by the exponential mechanism, split the values at it, and release the median
of each half inside its part of the grid, down to L levels. A candidate g for the median of m
values scores −|2·#{x < g} − m|, an integer. Adding or removing one value moves #{x < g} by at
most 1 and m by exactly 1, so the score by at most 1: sensitivity 1, exact.

**Privacy** (add/remove one record): at each level the parts are disjoint intervals fixed by the
edges already released, so one record's value is in at most one part, and the level's medians
together are one ε_q-DP exponential mechanism run on disjoint data (parallel composition,
McSherry 2009, Theorem 4). An ε_q-DP exponential mechanism is ε_q-bounded-range, hence
ε_q²/8-zCDP (Cesar and Rogers 2021, Lemma 3.2). L levels on each of the k attributes compose to
k·L·ε_q²/8 ≤ ρ_q (Bun and Steinke 2016, Lemma 2.3); :func:`~dpknn.accounting.exponential_epsilon` takes the
largest ε_q that fits, checked in exact fractions. A missing value and a value outside its universe are not
counted: that is a function of the record alone, so the bound holds.

The grid is public: an Ordinal's integers (at most :data:`GRID` evenly spread ones) and
:data:`GRID` evenly spaced points inside a Continuous range. The edges released are grid points,
sampled exactly (:class:`~dpknn.mechanisms.ExponentialMechanism`); a part whose grid is empty
releases nothing (so an attribute can get fewer than 2^L bins, a fact about the public grid).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from sklearn.isotonic import isotonic_regression

from dpknn.mechanisms._additive import DiscreteGaussian, Geometric
from dpknn.mechanisms._selection import ExponentialMechanism
from dpknn.schema._attributes import Categorical, Ordinal
from dpknn.schema._discretization import ValueShape, slot_middles

__all__ = ["FALSE_MASS", "GRID", "HEAP_SHARE", "MASS_GRID", "POINT_MASS_SHARE", "QUANTILE_THETA", "OrdinalHeaps",
           "QuantileEdges", "ValueHistogram", "bin_candidates", "candidate_grid", "false_mass_threshold",
           "mass_candidates", "mass_step", "median_scores", "point_masses", "quantile_edges", "rank_scores",
           "value_histogram"]

GRID = 4096

#: A level of quantiles is bought when the records of each of its parts are at least θ times its median's rank
#: error (``dpknn.synth._marginal.useful_levels``), and a public edge cuts a model bin when the records on each side
#: are θ times a count's noise (:meth:`QuantileEdges.refinement`); 2.5, the θ of
#: :class:`~dpknn.synth.AutoSynthesizer`.
QUANTILE_THETA = 2.5


@dataclass(frozen=True)
class QuantileEdges:
    """The released inner edges of one attribute (integers for an Ordinal), the rank each edge aims
    at (k/2^levels, public given the recursion's released path), the levels run and the ε_q of
    each level; and the values released as point masses (:func:`point_masses`), whose records the
    quantiles do not count."""

    name: str
    edges: tuple
    ranks: tuple
    levels: int
    epsilon: float
    point_masses: tuple = ()
    heaps: tuple = ()
    rest: float = 0.0

    def model_edges(self, attribute, levels, *, public=(), noise=1.0, theta=QUANTILE_THETA):
        """Inner edges of the attribute's model bins: its quantile edges of the first ``levels`` levels (rank
        k/2^levels); the ``public`` edges of :meth:`refinement` (all of them when no level was bought); and edges
        that give each point mass a bin of its own ([v, v + 1) for an Ordinal, [v, v⁺) for a Continuous, v⁺ the
        next float): post-processing of released values."""
        keep = {e for e, r in zip(self.edges, self.ranks) if float(r * 2**levels).is_integer()}
        keep |= set(public) if not self.levels else set(self.refinement(attribute, keep, public, noise * theta))
        for v in self.point_masses:
            if isinstance(attribute, Ordinal):
                keep |= {v, v + 1}
            else:
                keep |= {v, float(np.nextafter(v, np.inf))}
        cast = int if isinstance(attribute, Ordinal) else float
        return tuple(sorted(cast(e) for e in keep if attribute.lower < e <= attribute.upper))

    def refinement(self, attribute, edges, public, least):
        """The ``public`` edges that cut a bin of ``edges`` holding a whole public bin, where the public pieces on
        both sides hold at least ``least`` records by the released shape (:meth:`shape`) and count (``rest``, the
        values away from the point masses): where the levels bought are too few to say how the values spread and
        the public bins can (a wage's median alone leaves half the records to a tail drawn to the range's end).
        Post-processing of released values."""
        shape = self.shape(attribute)
        top = attribute.upper + 1 if isinstance(attribute, Ordinal) else attribute.upper
        ends = np.r_[attribute.lower, sorted(edges), top].astype(np.float64)
        cuts = np.setdiff1d(np.asarray([e for e in public if attribute.lower < e < top], dtype=np.float64), ends)
        # Only a bin that holds a whole public bin (the range's ends are public edges too) is cut: a narrower one
        # already says more than the public bins could.
        grid = np.r_[ends[0], np.setdiff1d(np.asarray(public, dtype=np.float64), ends[[0, -1]]), ends[-1]]
        whole = np.searchsorted(grid, ends[1:], side="right") - np.searchsorted(grid, ends[:-1], side="left") >= 2
        cuts = cuts[whole[np.searchsorted(ends, cuts, side="right") - 1]]
        pieces = np.unique(np.r_[ends, cuts])
        # P(X < e) at each end: a piece is [e, e'), so an atom on a public edge belongs to the piece above it.
        full = self.rest * np.diff(shape.cdf_at(pieces)) >= least
        return [e for e, ok in zip(pieces[1:-1], full[:-1] & full[1:]) if ok and e in cuts]

    def shape(self, attribute):
        """The :class:`~dpknn.schema._discretization.ValueShape` of ``attribute`` whose bins are cut at
        the edges and hold the ranks' differences (an Ordinal's values v span [v, v + 1)); its top bin the
        generalised Pareto tail fitted to the upper quarter's edges (``pareto_top``), which the quantiles'
        levels place at survivals 1/4, 1/8, …, 2^−levels and between; and the heaps as atoms (:meth:`atoms`):
        post-processing of released values."""
        top = attribute.upper + 1 if isinstance(attribute, Ordinal) else attribute.upper
        ends = np.r_[attribute.lower, self.edges, top].astype(np.float64)
        atoms = self.atoms(attribute)
        # The quantiles counted the heaps' values, whose edges straddle a heap wherever the noise put them: the
        # bins' law is what the ranks leave below each edge once the atoms below it are taken out, made monotone
        # (isotonic regression, the ends held) where a heap's share outruns its bins' ranks.
        below = np.array([sum(w for p, w in atoms if p < e) for e in ends])
        left = np.r_[0.0, self.ranks, 1.0] - below
        weight = np.r_[1e9, np.ones(len(self.ranks)), 1e9]
        cdf = isotonic_regression(left, sample_weight=weight, y_min=0.0, y_max=float(left[-1]))
        return ValueShape(ends[:-1], ends[1:], np.maximum(np.diff(cdf), 0.0), pareto_top=True, atoms=atoms,
                          laws=np.diff(np.r_[0.0, self.ranks, 1.0]) if atoms else None)

    def atoms(self, attribute):
        """The heaps as the shape's atoms: (position, share), each heap's released count over ``rest`` (an
        Ordinal's value v at v + 1/2, the middle of its slot [v, v + 1)), scaled down where they would hold more
        than 1 − 2^−levels of the values together (the least the quantiles leave to the others)."""
        if not self.heaps:
            return ()
        share = np.array([max(k, 0) for _, k in self.heaps], dtype=np.float64) / max(self.rest, 1.0)
        share *= min(1.0, (1.0 - 2.0 ** -max(self.levels, 1)) / max(share.sum(), 1e-12))
        middles = slot_middles(attribute, [v for v, _ in self.heaps])
        return tuple((float(p), float(w)) for p, w in zip(middles, share))


@dataclass(frozen=True)
class OrdinalHeaps:
    """The released point masses of a narrow Ordinal, one whose public bins hold too few values to be worth
    quantiles (``dpknn.synth._marginal.SHAPED_WIDTH``): the values found with their released counts
    (:func:`point_masses`), the released count of its counted values (``rest``), and the count its histogram's
    noise reaches on an empty cell (``floor``, :func:`false_mass_threshold`: public). Its model bins stay the public
    ones; inside them its values are drawn from the model's masses with the heaps as atoms (:meth:`shape`)."""

    name: str
    heaps: tuple
    rest: float
    floor: float = 0.0

    def shares(self):
        """Each heap's value and its released count over ``rest``: the share of the counted values it holds."""
        return tuple((v, max(k, 0) / max(self.rest, 1.0)) for v, k in self.heaps)

    def shape(self, attribute, lo, hi, masses):
        """The :class:`~dpknn.schema._discretization.ValueShape` on the bins [``lo``, ``hi``) with the model's
        ``masses`` (of the value codes) in which each heap's value holds its released share (:meth:`shares`), the
        heaps of a bin holding at most the bin's mass (the model's masses and the heaps' counts carry noise of
        their own; the model's decide how many records a bin gets), and the bin's other values share the rest by
        the law inside the bin that the model's masses give (:func:`~dpknn.schema._discretization.bin_positions`).
        That law covers the heaps' slots too: in a bin of mass m whose law gives the heaps' slots the parts f_v
        (F in all) and whose heaps hold s_v (S in all), the law keeps L = (m − S)/(1 − F) and each heap's atom is
        s_v − L·f_v, so that every heap holds its share and every other value L·f_v; where the heaps are every
        value of the bin (F = 1) they share it all. A heap whose atom is below ``floor`` records stands out of its
        neighbours by less than noise reaches (an even age among uniform ages, 2.4 % each, is found) and is drawn
        by the law instead, and L is found again without it. Post-processing of released values."""
        m = np.maximum(np.asarray(masses, dtype=np.float64)[: lo.size], 0.0)
        m = m / m.sum() if m.sum() > 0 else np.full(lo.size, 1.0 / lo.size)
        middles = slot_middles(attribute, [v for v, _ in self.heaps])
        share = np.array([w for _, w in self.shares()], dtype=np.float64)
        where = np.searchsorted(hi, middles, side="right")
        held = np.bincount(where, weights=share, minlength=lo.size)
        share *= np.minimum(1.0, m[where] / np.maximum(held[where], 1e-300))
        law = ValueShape(lo, hi, m)
        f = (law.cdf_at(middles + 0.5) - law.cdf_at(middles - 0.5)) / np.maximum(m[where], 1e-300)
        active = share > 0
        while True:
            big_f = np.bincount(where, weights=f * active, minlength=lo.size)
            big_s = np.bincount(where, weights=share * active, minlength=lo.size)
            whole = big_f >= 1.0 - 1e-12
            kept = np.where(whole, 0.0, np.maximum(m - big_s, 0.0) / np.where(whole, 1.0, 1.0 - big_f))
            atoms = np.where(whole[where], share * m[where] / np.maximum(big_s[where], 1e-300),
                             share - kept[where] * f) * active
            weak = active & (atoms * self.rest < max(self.floor, 0.0) + 1e-9)
            if not weak.any():
                break
            active &= ~weak
        # A law needs some mass off its atoms (ValueShape): where the heaps take every bin, leave them a trace.
        atoms *= min(1.0, (1.0 - 1e-9) / max(atoms.sum(), 1e-300))
        left = np.maximum(m - np.bincount(where, weights=atoms, minlength=lo.size), 0.0)
        return ValueShape(lo, hi, left if left.sum() > 0 else m, laws=m,
                          atoms=tuple((float(p), float(w)) for p, w in zip(middles, atoms) if w > 0))


#: A range's end or 0 is a point mass when its noisy count holds at least this share of the noisy number of counted
#: values (and more than noise alone reaches, :func:`false_mass_threshold`): 44 % of ACS incomes are exactly 0, 0.5 %
#: would be noise; it costs a model bin.
POINT_MASS_SHARE = 0.05
#: A round value inside the range is a heap at this share: an atom of the drawing law costs no model bin.
HEAP_SHARE = 0.02
#: An amount's round values, candidate heaps, cut its range in at most this many steps (:func:`mass_step`).
MASS_GRID = 50
#: The chance that noise alone makes any empty candidate a point mass is at most this (a union bound).
FALSE_MASS = 0.05


def bin_candidates(attribute):
    """The candidates whose point mass gets a model bin of its own: the range's ends, and 0 inside it (no income,
    no hours: a state of its own, not a heap of a continuum)."""
    a = attribute
    cands = {a.lower, a.upper} | ({0} if a.lower < 0 < a.upper else set())
    return tuple(sorted(int(v) if isinstance(a, Ordinal) else float(v) for v in cands))


def mass_step(attribute):
    """The public spacing of an attribute's round values: the smallest of 1, 2 and 5 times a power of ten that
    cuts its range in at most :data:`MASS_GRID` steps (at least 1 on an Ordinal)."""
    span = float(attribute.upper - attribute.lower)
    e = math.floor(math.log10(span / MASS_GRID)) if span > 0 else 0
    step = next(m * 10.0**k for k in (e, e + 1) for m in (1, 2, 5) if span <= MASS_GRID * m * 10.0**k)
    return max(step, 1.0) if isinstance(attribute, Ordinal) else step


def mass_candidates(attribute):
    """The public values an amount may pile up on: :func:`bin_candidates`, and the range's round values, the
    multiples of :func:`mass_step` (the heaps of a recorded amount: 12 years of schooling, 40 hours, 15 minutes,
    an income bracket's code)."""
    a = attribute
    step = mass_step(a)
    k = np.arange(math.ceil(a.lower / step - 1e-9), math.floor(a.upper / step + 1e-9) + 1)
    digits = max(0, -math.floor(math.log10(step))) + 1   # 0.05 * 3 is 0.15000000000000002; rounded, 0.15
    cast = int if isinstance(a, Ordinal) else float
    rounds = {cast(v) for v in np.round(k * step, digits) if a.lower <= v <= a.upper}
    return tuple(sorted(rounds | set(bin_candidates(a))))


def false_mass_threshold(mechanism, candidates):
    """A count that the mechanism's noise on one empty cell exceeds with probability at most
    :data:`FALSE_MASS`/``candidates``, so on any of ``candidates`` empty cells with probability at most
    :data:`FALSE_MASS` (the union bound): exact for the discrete Laplace (P(Z >= t) = a^t/(1 + a), a = e^−ε),
    the sub-Gaussian bound e^{−t²/2σ²} for the discrete Gaussian (Canonne, Kamath, Steinke 2020), Chebyshev's
    for any other noise. Public: a fact of the mechanism and of the number of candidates."""
    p = FALSE_MASS / max(candidates, 1)
    if isinstance(mechanism, Geometric):
        a = mechanism.alpha
        return max(math.ceil(math.log(p * (1 + a)) / math.log(a)), 1)
    if isinstance(mechanism, DiscreteGaussian):
        return mechanism.sigma * math.sqrt(2 * math.log(1 / p))
    return math.sqrt(mechanism.variance() / p)


@dataclass(frozen=True)
class ValueHistogram:
    """What the point masses and the quantiles read of an attribute's counted values: data, never released.

    ``below[j]`` counts the values v with g_{j−1} <= v < g_j on the public candidate grid g (``below[0]``: those
    under g_0, the last entry: those at or above the last point), and ``at`` the values equal to each public mass
    candidate (:func:`mass_candidates`). Both are sums over records, so the histograms of disjoint parts of the
    data (Parquet partitions) add up to the whole's (:meth:`merged`), and every score of :func:`quantile_edges` and
    count of :func:`point_masses` is a function of them: the released values are those of the sorted values.
    """

    name: str
    below: np.ndarray
    at: tuple

    def merged(self, other):
        """The histogram of the union of two disjoint sets of records."""
        return ValueHistogram(self.name, self.below + other.below, tuple(a + b for a, b in zip(self.at, other.at)))

    @property
    def total(self):
        """The number of counted values."""
        return int(self.below.sum())

    def without(self, masses, attribute, *, grid):
        """The histogram less the values equal to the released point masses ``masses`` (post-processing: which
        values to leave out is released)."""
        below = self.below.copy()
        cands = mass_candidates(attribute)
        for v in masses:
            below[int(np.searchsorted(grid, v, side="right"))] -= self.at[cands.index(v)]
        return ValueHistogram(self.name, below, tuple(0 if c in masses else k for c, k in zip(cands, self.at)))


#: The widest Ordinal whose values :func:`value_histogram` tallies before placing them on the grid.
TALLY_WIDTH = 1 << 16


def value_histogram(values, attribute, *, grid=None):
    """The :class:`ValueHistogram` of ``values`` (the attribute's counted values) on the public grid."""
    g = candidate_grid(attribute) if grid is None else np.asarray(grid, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    cands = np.asarray(mass_candidates(attribute), dtype=np.float64)
    v, weights = _tallied(v, attribute)
    below = np.bincount(np.searchsorted(g, v, side="right"), weights=weights, minlength=g.size + 1)
    i = np.minimum(np.searchsorted(cands, v), cands.size - 1)
    hit = cands[i] == v
    at = np.bincount(i[hit], weights=None if weights is None else weights[hit], minlength=cands.size)
    # Float weights are exact: counts of records stay far below 2^53.
    return ValueHistogram(attribute.name, below.astype(np.int64), tuple(int(k) for k in at))


def _tallied(v, attribute):
    """``(values, None)``, or for an Ordinal of at most :data:`TALLY_WIDTH` values ``(each value, its count)``: the
    same histogram, with two binary searches per value of the range instead of per record (a census partition of
    10^6 ages or years of schooling: 10^2 searches, where the searches per record were most of the scan's time)."""
    if not isinstance(attribute, Ordinal) or not v.size:
        return v, None
    lo, width = attribute.lower, attribute.upper - attribute.lower
    # Bounds beyond 2^52 are not all exact in float64, so v - lo could land on another integer.
    if width >= TALLY_WIDTH or max(abs(lo), abs(attribute.upper)) > 2**52:
        return v, None
    k = v - lo
    ik = k.astype(np.int64)
    if not (np.array_equal(ik, k) and ik.min() >= 0 and ik.max() <= width):
        return v, None      # not the Ordinal's integers (a caller's own values): placed one by one
    counts = np.bincount(ik, minlength=width + 1)
    present = np.flatnonzero(counts)
    return (present + lo).astype(np.float64), counts[present].astype(np.float64)


def point_masses(values, attribute, mechanism, src):
    """The public candidates (:func:`mass_candidates`) that hold a point mass of ``values``, and the noisy counts.

    One histogram per attribute: the count of each candidate value, of every other value, and of the values at
    any candidate, released by ``mechanism`` (a :class:`~dpknn.mechanisms.Geometric` or
    :class:`~dpknn.mechanisms.DiscreteGaussian` of the synthesiser's currency). Adding or removing one record moves
    its candidate's cell and the last cell by one, or the others' cell by one: L1 sensitivity 2, L2 sensitivity
    √2, so ``mechanism`` is calibrated to them (the mechanism of sensitivity 1 at half the cost, in either
    currency: ``budget.mechanism(cost / 2)``). The last two cells add up to the number of counted values with the
    noise of two cells, where the sum of every cell would carry the noise of each candidate's. The choice of point
    masses reads the noisy counts only.

    ``values`` is an array of the counted values or their :class:`ValueHistogram`.

    Returns
    -------
    (tuple of values, ndarray of the noisy counts: the candidates', the others', then those at any candidate)
    """
    hist = values if isinstance(values, ValueHistogram) else value_histogram(values, attribute)
    cands = mass_candidates(attribute)
    counts = np.array([*hist.at, hist.total - sum(hist.at), sum(hist.at)], dtype=np.int64)
    noisy = np.asarray(mechanism.release_array(counts, rng=src), dtype=np.int64)
    total = max(int(noisy[-2] + noisy[-1]), 1)
    floor = false_mass_threshold(mechanism, len(cands))
    share = dict.fromkeys(cands, HEAP_SHARE) | dict.fromkeys(bin_candidates(attribute), POINT_MASS_SHARE)
    found = tuple(c for c, k in zip(cands, noisy[:-2]) if k >= share[c] * total and k >= floor)
    return found, noisy


def candidate_grid(attribute, size=GRID):
    """The public candidate edges of a numeric attribute: strictly inside (lower, upper]."""
    a = attribute
    if isinstance(a, Categorical):
        raise TypeError(f"attribute {a.name!r} is categorical; quantile edges are for numeric attributes.")
    if isinstance(a, Ordinal):
        span = a.upper - a.lower
        if span <= size:
            return np.arange(a.lower + 1, a.upper + 1, dtype=np.float64)
        return np.unique(np.rint(np.linspace(a.lower, a.upper, size + 2)[1:-1]))
    return np.linspace(a.lower, a.upper, size + 2)[1:-1]


def median_scores(sorted_values, grid):
    """−|2·#{x < g} − m| for each candidate g (integers; sensitivity 1, module docstring)."""
    return rank_scores(np.searchsorted(sorted_values, grid, side="left"), sorted_values.size)


def rank_scores(below, m):
    """The median scores −|2·below − m| of candidates with ``below`` = #{x < g} of ``m`` values."""
    return -np.abs(2 * np.asarray(below) - m).astype(np.float64)


def quantile_edges(values, attribute, *, levels, epsilon, src, grid=None, masses=()):
    """Up to 2^levels − 1 edges near the quantiles k/2^levels of ``values``, each level
    ``epsilon``-DP (module docstring).

    Parameters
    ----------
    values : ndarray of float or ValueHistogram
        The attribute's counted values (observed and inside the universe), or their histogram on ``grid``: data,
        never released.
    attribute : Ordinal or Continuous
    levels : int
    epsilon : float
        ε_q of each level.
    src : RandomSource
    grid : ndarray or None
        The public candidates (default :func:`candidate_grid`).
    masses : tuple
        Released point masses (:func:`point_masses`): their values are not counted (a released choice, so
        post-processing), and they are kept in the result.

    Returns
    -------
    QuantileEdges
    """
    g = candidate_grid(attribute) if grid is None else np.asarray(grid, dtype=np.float64)
    hist = values if isinstance(values, ValueHistogram) else value_histogram(values, attribute, grid=g)
    if hist.below.size != g.size + 1:
        raise ValueError(f"the histogram of {attribute.name!r} has {hist.below.size} cells; one more than the grid's "
                         f"{g.size} points was expected (a histogram is read on the grid it was counted on).")
    if masses:
        hist = hist.without(masses, attribute, grid=g)
    # F[j] = #{v < g_j}; a part is the values in [edge, next edge) and the grid points strictly between its edges,
    # so #{v in the part, v < g} = F(g) − F(edge) for every candidate g of the part: the scores of the sorted
    # values, read from the histogram.
    below = np.cumsum(hist.below)
    mech = ExponentialMechanism(epsilon=epsilon, sensitivity=1.0) if levels else None   # 0 levels: masses only
    parts = [(0, g.size, 0, int(below[-1]), Fraction(0), Fraction(1))]   # candidates [c0, c1), F range [f0, f1)
    found = []
    for _ in range(levels):
        nxt = []
        for c0, c1, f0, f1, r0, r1 in parts:
            if c1 <= c0:
                continue
            k = c0 + mech.select(rank_scores(below[c0:c1] - f0, f1 - f0), rng=src)
            mid = (r0 + r1) / 2
            found.append((float(g[k]), float(mid)))
            fk = int(below[k])
            nxt += [(c0, k, f0, fk, r0, mid), (k + 1, c1, fk, f1, mid, r1)]
        parts = nxt
    found.sort()
    cast = int if isinstance(attribute, Ordinal) else float
    return QuantileEdges(attribute.name, tuple(cast(e) for e, _ in found), tuple(r for _, r in found), levels,
                         epsilon, tuple(masses))
