"""Public discretisation of attributes for synthesis: codes in, domain-valid values out.

Every bin is a function of the declared attributes and ``bins`` only, never of the data:

- :class:`~dpknn.schema.Categorical`: one code per declared category;
- :class:`~dpknn.schema.Ordinal`: its own codes (``bin_width``) when there are at most ``bins``
  of them; otherwise ``bins`` equal integer bins of width ⌈(upper − lower + 1)/bins⌉;
- :class:`~dpknn.schema.Continuous`: ``bins`` equal bins of [lower, upper] (the top bin closed);
- either numeric kind, when ``edges`` names it: the bins cut at the given edges (public ones, such
  as :func:`geometric_edges` for money, or released ones, such as DP quantiles,
  :mod:`dpknn.synth._bins`), plus the universes' ends for an Ordinal.

Decoding draws a value inside the code's bin (integers for an Ordinal), so synthetic values are
always inside the declared domain: uniformly, or, given the bins' masses (a released shape, such
as a fitted model's one-way marginal), from a density through them: linear inside an inner bin
between the densities at its edges (:func:`within_bin`), and in the lowest and highest bins, whose
outer end is only a public bound (a wage's range may be 25 times its median), when the density
falls outward, exponential from the density at the inner edge with the bin's mass
(:func:`tail_rate`), so a long empty tail is not filled uniformly. A missing cell has code −1.

A :class:`ValueShape` of DP quantiles (``pareto_top``, :meth:`~dpknn.synth._bins.QuantileEdges.shape`) draws
its highest bin from a generalised Pareto tail fitted to the shape's own upper quarter instead
(:func:`pareto_tail`): the exponential from the inner edge's density is the right law only for a light
tail, and an income's is heavy (the GSS wage table's
income, six levels of its exact quantiles: the exponential drew the top bin's values with 0.41 of the
data's mean excess over the bin's edge, ``benchmarks/pareto_tail.py``; the synthetic income's standard
deviation came out 16 % low and the slopes of a regression on it 4-9 % flat, even without noise,
``benchmarks/regression_ceiling.py --exponential-tail``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import optimize

from dpknn.schema._attributes import Categorical, Continuous, Ordinal, blank_outside_universes, check_universe
from dpknn.utils._validation import check_keys, check_positive_int

__all__ = [
    "AttributesFile",
    "Discretization",
    "ParetoTail",
    "ValueShape",
    "bin_positions",
    "check_attributes",
    "edge_densities",
    "falling_ends",
    "geometric_edges",
    "pareto_tail",
    "read_attributes",
    "read_attributes_file",
    "slot_middles",
    "tail_rate",
    "within_bin",
    "within_tail",
]

MISSING = -1


def check_attributes(attributes):
    """``attributes`` as a tuple of distinct-named Ordinal, Categorical or Continuous; else a clear error.

    Parameters
    ----------
    attributes : iterable of Ordinal, Categorical or Continuous
        At least one attribute; universes are checked against the other attributes of the list.
    """
    if isinstance(attributes, (str, bytes)) or not hasattr(attributes, "__iter__"):
        raise TypeError(f"attributes must be a list of Ordinal, Categorical or Continuous, got {attributes!r}.")
    attrs = tuple(attributes)
    if not attrs:
        raise ValueError("attributes must not be empty.")
    for a in attrs:
        if not isinstance(a, (Ordinal, Categorical, Continuous)):
            raise TypeError(f"attributes must be Ordinal, Categorical or Continuous, got {a!r}.")
    names = [a.name for a in attrs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"attributes must have distinct names, got duplicates {dup}.")
    return tuple(_checked_universe(a, attrs) for a in attrs)


def _checked_universe(attr, attrs):
    """``attr`` with its universe (if any) checked against the other attributes of the list."""
    if attr.universe is None:
        return attr
    others = [b for b in attrs if b.name != attr.name]
    for col, *_ in attr.universe.conditions:
        if col == attr.name:
            raise ValueError(f"universe of attribute {attr.name!r} names {attr.name!r} itself; a universe is a "
                             "condition on other attributes.")
        b = next((b for b in others if b.name == col), None)
        if isinstance(b, Continuous):
            raise ValueError(f"universe of attribute {attr.name!r} is a condition on the continuous {col!r}; "
                             "conditions are on ordinal or categorical attributes (declare it an ordinal).")
        if b is not None and b.universe is not None:
            raise ValueError(f"universe of attribute {attr.name!r} is a condition on {col!r}, which has a universe "
                             "of its own; a universe is a condition on attributes that apply to every record.")
    return replace(attr, universe=check_universe(attr, others, whole_bins=False))


def check_frame(df, names):
    """Raise unless ``df`` is a DataFrame holding every attribute column in ``names``."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"X must be a pandas DataFrame, got {type(df).__name__}.")
    absent = [n for n in names if n not in df.columns]
    if absent:
        raise ValueError(f"X lacks the attribute columns {absent}.")


def geometric_edges(lower, upper, n_bins, *, first):
    """``n_bins`` − 1 public inner edges for a money amount on [lower, upper]: ``first`` (the top
    of the lowest bin, say one month of the lowest wage) and geometric steps from it to ``upper``.

    Amounts are skewed: equal bins of a public range many times the median put most records in
    the lowest bin. Geometric bins keep the same relative width everywhere, and need no data.

    Parameters
    ----------
    lower, upper : float
        The public range of the amount.
    n_bins : int
        The number of bins, at least 2.
    first : float
        The top of the lowest bin, inside (lower, upper).
    """
    n_bins = check_positive_int(n_bins, "n_bins", minimum=2)
    if not lower < first < upper:
        raise ValueError(f"first must lie inside ({lower}, {upper}), got {first}.")
    if n_bins == 2:
        return (float(first),)
    base = first - lower
    ratio = ((upper - lower) / base) ** (1.0 / (n_bins - 1))
    return tuple(float(lower + base * ratio**k) for k in range(n_bins - 1))


def within_bin(u, f_left, f_right):
    """Position in [0, 1) inside a bin, for uniforms ``u``, under the linear density through the
    bin's end densities ``f_left`` and ``f_right`` (≥ 0; uniform where both are 0).

    The inverse of F(t) = (a t + (b − a) t²/2) / ((a + b)/2), written u(a + b)/(a + √(a² + (b² − a²) u))
    so that it is stable when a ≈ b.
    """
    u = np.asarray(u, dtype=np.float64)
    a = np.asarray(f_left, dtype=np.float64)
    b = np.asarray(f_right, dtype=np.float64)
    flat = (a + b) <= 0
    a, b = np.where(flat, 1.0, a), np.where(flat, 1.0, b)
    den = a + np.sqrt(np.maximum(a * a + (b * b - a * a) * u, 0.0))
    t = np.where(den > 0, u * (a + b) / np.where(den > 0, den, 1.0), 0.0)
    return np.clip(t, 0.0, np.nextafter(1.0, 0.0))


def tail_rate(f_inner, mass, width):
    """κ = λ·width of the exponential density f_inner·e^{−λ s} (s the distance from the inner edge)
    whose integral over the bin is ``mass``: the root of (1 − e^{−κ})/κ = mass/(f_inner·width),
    in [−50, 50] (κ < 0: the density grows outward); 0 (uniform) when f_inner or mass is 0."""
    if f_inner <= 0 or mass <= 0 or width <= 0:
        return 0.0
    r = mass / (f_inner * width)

    def h(k):
        return 1.0 if abs(k) < 1e-12 else -math.expm1(-k) / k

    if r >= h(-50.0):
        return -50.0
    if r <= h(50.0):
        return 50.0
    return float(optimize.brentq(lambda k: h(k) - r, -50.0, 50.0, xtol=1e-12))


def within_tail(u, kappa):
    """Position in [0, 1) from the inner edge, for uniforms ``u``, under the density ∝ e^{−κ t}."""
    u = np.asarray(u, dtype=np.float64)
    with np.errstate(divide="ignore"):   # u = 1 under a steep tail: −log(0) = inf, clipped to the edge
        t = u if abs(kappa) < 1e-12 else -np.log1p(u * np.expm1(-kappa)) / kappa
    return np.clip(t, 0.0, np.nextafter(1.0, 0.0))


def edge_densities(lo, hi, masses):
    """Densities at the ends of bins [lo, hi) from their ``masses`` (≥ 0): at an inner edge the mass
    of the two bins over their width; at the edges of the lowest and the highest bin (with three
    bins or more) the density of the inner neighbour, whose ends are both inside the data, not a
    public bound's reach; at the range's ends the end bin's own."""
    m = np.maximum(np.asarray(masses, dtype=np.float64)[: lo.size], 0.0)
    w = hi - lo
    f = np.r_[m[0] / w[0], (m[:-1] + m[1:]) / (w[:-1] + w[1:]), m[-1] / w[-1]]
    if lo.size >= 3:
        f[1], f[-2] = m[1] / w[1], m[-2] / w[-2]
    return f


def slot_middles(attribute, values):
    """Where ``values`` of ``attribute`` sit on the line of its bins and shapes: an Ordinal's value v spans
    [v, v + 1) and sits in the middle, v + 1/2 (so that drawn back and floored it is v); another's value is
    itself."""
    v = np.asarray(values, dtype=np.float64)
    return v + 0.5 if isinstance(attribute, Ordinal) else v


def falling_ends(lo, hi, masses):
    """(lowest, highest): whether each end bin of bins [lo, hi) with ``masses`` holds a tail, its density at
    most its inner neighbour's (three bins or more). An end bin denser than its neighbour holds a mode (equal
    bins of a skewed amount) and keeps the linear shape."""
    k = lo.size
    if k < 3:
        return False, False
    d = np.maximum(np.asarray(masses, dtype=np.float64)[:k], 0.0) / (hi - lo)
    return bool(d[0] <= d[1]), bool(d[k - 1] <= d[k - 2])


def bin_positions(lo, hi, masses, c, u):
    """Positions in [0, 1) inside the bins ``c`` (of bins [lo, hi) with ``masses``) for uniforms
    ``u``: linear between the edge densities (:func:`edge_densities`, :func:`within_bin`), and in
    an end bin whose density falls outward (:func:`falling_ends`), the exponential tail (:func:`tail_rate`)."""
    k = lo.size
    c = np.asarray(c, dtype=np.int64)
    u = np.asarray(u, dtype=np.float64)
    f = edge_densities(lo, hi, masses)
    t = within_bin(u, f[c], f[c + 1])
    low_tail, high_tail = falling_ends(lo, hi, masses)
    if low_tail or high_tail:
        m = np.maximum(np.asarray(masses, dtype=np.float64)[:k], 0.0)
        if high_tail:
            top = c == k - 1
            t[top] = within_tail(u[top], tail_rate(f[k - 1], m[k - 1], hi[k - 1] - lo[k - 1]))
        if low_tail:
            bottom = c == 0
            # 1 − u keeps t increasing in u: ValueShape tabulates these positions as a quantile function.
            t[bottom] = np.minimum(1.0 - within_tail(1.0 - u[bottom], tail_rate(f[1], m[0], hi[0] - lo[0])),
                                   np.nextafter(1.0, 0.0))
    return t


#: The fitted tail's shape ξ is kept in [XI_MIN, XI_MAX]: ξ = −1 is the uniform law, and beyond ξ = 2 the
#: fitted law has no finite moment of order 1/2, a tail no survey amount has been seen to need.
XI_MIN, XI_MAX = -0.9, 2.0
#: The fewest points a tail is fitted to: two parameters need three.
TAIL_POINTS = 3
#: A tail is fitted to the points of survival at most this (:func:`pareto_tail`).
TAIL_SURVIVAL = 0.25


@dataclass(frozen=True)
class ParetoTail:
    """A generalised Pareto law above ``threshold`` u: P(X > x | X > u) = (1 + ξ(x − u)/σ)^(−1/ξ) (the
    exponential e^{−(x − u)/σ} at ξ = 0; bounded above by u − σ/ξ when ξ < 0)."""

    threshold: float
    xi: float
    sigma: float

    def exponential_scale(self, x):
        """The exponential scale: −log of the survival ratio, (1/ξ)·log(1 + ξ(x − u)/σ)."""
        y = (np.asarray(x, dtype=np.float64) - self.threshold) / self.sigma
        return np.log1p(self.xi * y) / self.xi if abs(self.xi) > 1e-9 else y

    def end(self):
        """The law's upper end: u − σ/ξ for ξ < 0, else infinity."""
        return self.threshold - self.sigma / self.xi if self.xi < 0 else math.inf

    def positions(self, u, lo, hi):
        """Positions in [0, 1) inside [lo, hi) for uniforms ``u`` under the law restricted to [lo, min(hi, end)), or
        None when that interval is empty (lo at or past the law's end) or the law gives no finite value."""
        end = self.end()
        if not end > lo:
            return None
        za = float(self.exponential_scale(lo))
        if end < hi:
            # A bounded law ending inside the bin: the whole law above lo, whose exponential scale is za plus a unit
            # exponential (its end, where the scale is infinite, is never reached); read at the end itself the scale
            # would overflow.
            z, top = za - np.log1p(-np.asarray(u, dtype=np.float64)), end
        else:
            span = float(self.exponential_scale(hi)) - za
            z, top = za + within_tail(u, span) * span, hi
        x = self.threshold + self.sigma * (np.expm1(self.xi * z) / self.xi if abs(self.xi) > 1e-9 else z)
        if not np.isfinite(x).all():
            return None
        return np.clip((x - lo) / (hi - lo), 0.0, np.nextafter((top - lo) / (hi - lo), 0.0))


def pareto_tail(edges, survival):
    """The :class:`ParetoTail` fitted to the points (``edges``, ``survival``) of a shape's upper quarter (survival
    at most :data:`TAIL_SURVIVAL`): its threshold the point of largest survival, ξ and σ by least squares on the
    log survival ratios, each octave of survival (1/4–1/8, 1/8–1/16, …) weighing the same, so the many points
    near the threshold do not outvote the few of the tail. None with fewer than :data:`TAIL_POINTS` points
    (four levels of quantiles give four).

    Why the upper quarter: above a threshold the law of the excess tends to a generalised Pareto one as the
    threshold rises (Pickands 1975; Balkema and de Haan 1974), so the fit is biased by a threshold too low. From
    six levels of exact quantiles, fitted from the median (the whole upper half) a normal amount's top bin came
    out 30 % short of its mean excess, from the upper quarter 19 % (the exponential of :func:`bin_positions`:
    19 %, with a standard deviation 18 % too wide against the fit's 27 % too narrow), a gamma's 16 % and 9 %
    (the exponential: 27 %), a lognormal's within 2 % either way (the exponential: 44 % short; the fit's
    standard deviation 21 % too wide); ``benchmarks/pareto_tail.py`` prints these figures.

    The fit reads only the points it is given: of a shape built from released quantiles, post-processing.
    It is the quantile route to the tail of extreme-value theory (Pickands 1975, whose estimator of ξ reads
    three quantiles at survivals p, 2p, 4p; this fit reads every point of the upper quarter)."""
    x = np.asarray(edges, dtype=np.float64)
    s = np.asarray(survival, dtype=np.float64)
    keep = (s > 0) & (s <= TAIL_SURVIVAL + 1e-12) & np.isfinite(x)
    x, s = x[keep], s[keep]
    if x.size < TAIL_POINTS:
        return None
    i = int(np.argmax(s))
    u, su = x[i], s[i]
    above = (s < su) & (x > u)
    y, target = x[above] - u, np.log(s[above] / su)
    if y.size < TAIL_POINTS - 1:
        return None
    octave = np.floor(-np.log2(s[above])).astype(np.int64)
    weight = np.sqrt(1.0 / np.bincount(octave)[octave])
    scale = float(y[-1] / -target[-1]) if target[-1] < 0 else float(y[-1])

    def residuals(p):
        tail = ParetoTail(u, p[0], scale * math.exp(p[1]))
        arg = 1.0 + tail.xi * y / tail.sigma
        if np.any(arg <= 0):   # a point past a bounded law's end: infinitely unlikely
            return weight * 1e3
        return weight * (-tail.exponential_scale(y + u) - target)

    fit = optimize.least_squares(residuals, [0.1, 0.0], bounds=([XI_MIN, -10.0], [XI_MAX, 10.0]))
    return ParetoTail(float(u), float(fit.x[0]), float(scale * math.exp(fit.x[1])))


@dataclass(frozen=True)
class ValueShape:
    """A distribution of a numeric attribute on [lower, upper): bins [lo, hi) with ``masses`` and the
    law of :func:`bin_positions` inside each, tabulated as a CDF (``points`` per bin) to draw from
    its restriction to any interval. Post-processing: built from released edges and masses.

    With ``pareto_top`` (and at least :data:`TAIL_POINTS` edges in the upper quarter), the highest bin, when its
    density falls outward, holds the generalised Pareto tail fitted to the shape's upper quarter
    (:func:`pareto_tail`, kept as ``tail``; None where the rule of :func:`bin_positions` applies): the law of
    a shape from quantiles, whose upper quarter has points enough to say how heavy its tail is.

    ``atoms``, pairs (position, share), put that share of the whole law exactly at each position (a heaped
    value: 12 years of schooling, an income bracket's code), the bins' law holding the rest: the tabulated
    CDF jumps there (``grid`` repeats the position), and :meth:`cdf_at` gives either side of a jump. The law
    inside each bin (its position, the end bins' tails) is read from ``laws`` when given (the masses before the
    atoms were taken out of them: an end bin's tail fitted to what is left of its mass drew heights to the
    public bound), else from ``masses``."""

    lo: np.ndarray
    hi: np.ndarray
    masses: np.ndarray
    points: int = 256
    pareto_top: bool = False
    atoms: tuple = ()
    laws: np.ndarray = None

    def __post_init__(self):
        lo, hi = np.asarray(self.lo, dtype=np.float64), np.asarray(self.hi, dtype=np.float64)

        def normalised(masses):
            m = np.maximum(np.asarray(masses, dtype=np.float64), 0.0)
            return m / m.sum() if m.sum() > 0 else np.full(lo.size, 1.0 / lo.size)

        m = normalised(self.masses)
        law = m if self.laws is None else normalised(self.laws)
        u = np.linspace(0.0, 1.0, self.points + 1)[:-1]
        c = np.repeat(np.arange(lo.size), u.size)
        uu = np.tile(u, lo.size)
        t = bin_positions(lo, hi, law, c, uu)
        tail = None
        k = lo.size
        if self.pareto_top and falling_ends(lo, hi, law)[1]:
            fitted = pareto_tail(hi[:-1], 1.0 - np.cumsum(law)[:-1])
            top = c == k - 1
            drawn = None if fitted is None else fitted.positions(uu[top], lo[k - 1], hi[k - 1])
            if drawn is not None:
                t[top], tail = drawn, fitted
        object.__setattr__(self, "tail", tail)
        x = lo[c] + t * (hi - lo)[c]
        g = np.r_[0.0, np.cumsum(m)[:-1]][c] + uu * m[c]
        # The CDF reaches 1 at a bounded tail's end: between the last tabulated point and the range's end the
        # linear interpolation would otherwise spread the last 1/points of the top bin's mass past the law's end.
        ends = [min(float(hi[-1]), tail.end())] if tail is not None and tail.end() < hi[-1] else []
        x, idx = np.unique(np.r_[x, ends, hi[-1]], return_index=True)
        f = np.maximum.accumulate(np.r_[g, np.ones(len(ends)), 1.0][idx])
        atoms = sorted(self.atoms)
        pos = np.array([p for p, _ in atoms], dtype=np.float64)
        share = np.array([w for _, w in atoms], dtype=np.float64)
        if share.sum() >= 1.0 or (share < 0).any():
            raise ValueError(f"the atoms' shares must be non-negative and add up to less than 1, got {share}.")
        # The atoms' shares below each position (sorted), read by cdf_at with one binary search per value.
        object.__setattr__(self, "_bins", (x, f, pos, np.r_[0.0, np.cumsum(share)]))
        # The whole law's CDF at every tabulated point, then both sides of each atom's jump.
        xs = np.r_[x, pos, pos]
        fs = np.r_[self.cdf_at(x, "right"), self.cdf_at(pos, "left"), self.cdf_at(pos, "right")]
        order = np.lexsort((fs, xs))
        object.__setattr__(self, "grid", xs[order])
        object.__setattr__(self, "cdf", np.maximum.accumulate(fs[order]))

    def cdf_at(self, x, side="left"):
        """P(X < x) (``side="left"``), P(X <= x) (``"right"``) or their mean (``"mid"``: where a value on an
        atom ranks inside its jump)."""
        xb, fb, pos, below = self._bins
        x = np.asarray(x, dtype=np.float64)
        out = (1.0 - below[-1]) * np.interp(x, xb, fb)
        if pos.size == 0:
            return out
        left, right = (below[np.searchsorted(pos, x, side=s)] for s in ("left", "right"))
        return out + {"left": left, "right": right, "mid": (left + right) / 2}[side]

    def draw_between(self, a, b, u):
        """Values in [a, b) for uniforms ``u`` from the shape restricted to [a, b) (uniform where
        the shape puts no mass there); an atom at a belongs to [a, b), one at b does not."""
        ga, gb = self.cdf_at(a), self.cdf_at(b)
        q = ga + u * (gb - ga)
        v = np.interp(q, self.cdf, self.grid)
        flat = gb - ga <= 1e-12
        v = np.where(flat, a + u * (b - a), v)
        return np.minimum(np.maximum(v, a), np.where(b > a, np.nextafter(b, a), a))


def _check_edges(edges, attributes):
    """``edges`` as a tuple of (name, tuple of inner edges), each numeric and strictly inside its range."""
    if edges is None:
        return ()
    items = edges.items() if isinstance(edges, dict) else edges
    by_name = {a.name: a for a in attributes}
    out = []
    for name, cuts in items:
        a = by_name.get(name)
        if a is None or isinstance(a, Categorical):
            raise ValueError(f"edges names {name!r}, which is not a numeric attribute; the numeric ones are "
                             f"{[b.name for b in attributes if not isinstance(b, Categorical)]}.")
        c = np.asarray(cuts, dtype=np.float64).ravel()
        if isinstance(a, Ordinal):
            c = np.rint(c)
        if not np.isfinite(c).all() or np.any(np.diff(c) <= 0) or (c.size and (c[0] <= a.lower or c[-1] > a.upper)):
            raise ValueError(f"edges of {name!r} must increase strictly inside ({a.lower}, {a.upper}], got "
                             f"{list(cuts)}.")
        out.append((name, tuple(int(v) if isinstance(a, Ordinal) else float(v) for v in c)))
    return tuple(out)


@dataclass(frozen=True)
class Discretization:
    """The public codes of a list of attributes.

    Parameters
    ----------
    attributes : sequence of Ordinal, Categorical or Continuous
    bins : int, default 10
        Number of equal public bins of a numeric attribute with a wide domain.
    edges : dict or None
        Inner bin edges of some numeric attributes, ``{name: increasing values}`` inside
        (lower, upper]: a bin is [edge_k, edge_{k+1}) (an Ordinal's edges are the first values of
        its bins). Public, or released by a DP mechanism (:mod:`dpknn.synth._bins`).
    """

    attributes: tuple
    bins: int = 10
    edges: object = None

    def __post_init__(self):
        object.__setattr__(self, "attributes", check_attributes(self.attributes))
        object.__setattr__(self, "bins", check_positive_int(self.bins, "bins"))
        object.__setattr__(self, "edges", _check_edges(self.edges, self.attributes))

    def inner_edges(self, a):
        """The given inner edges of attribute ``a`` (a tuple), or None when it has equal bins."""
        return dict(self.edges).get(a.name)

    def bounds(self, a):
        """(lower ends, upper ends) of the bins of the numeric attribute ``a``, as floats; an
        Ordinal's bin [first, last] spans [first, last + 1)."""
        if isinstance(a, Ordinal):
            first, last = self.ordinal_bins(a)
            return first.astype(np.float64), last.astype(np.float64) + 1.0
        cuts = self.inner_edges(a)
        if cuts is None:
            cuts = a.lower + (a.upper - a.lower) * np.arange(1, self.bins) / self.bins
        ends = np.r_[a.lower, cuts, a.upper].astype(np.float64)
        return ends[:-1], ends[1:]

    @property
    def names(self):
        """Names of the attributes, in order."""
        return [a.name for a in self.attributes]

    def ordinal_width(self, a):
        """Width of the equal bins of the Ordinal attribute ``a`` (its values per bin), before
        the universes' ends are added (:meth:`ordinal_bins`)."""
        if a.n_codes <= self.bins:
            return a.bin_width
        return -(-(a.upper - a.lower + 1) // self.bins)

    def universe_cuts(self, a):
        """The ends of the universes' ranges on the Ordinal ``a`` (first values of a range and
        first values after one) inside its domain: public bin edges, so that every universe is
        a union of whole bins and an out-of-universe cell is a whole code."""
        cuts = set()
        for b in self.attributes:
            for col, lo, hi, values in () if b.universe is None else b.universe.conditions:
                if col == a.name and values is None:
                    cuts.update(v for v in (lo, hi + 1) if a.lower < v <= a.upper)
        return sorted(cuts)

    def ordinal_bins(self, a):
        """(first, last) values of each bin of the Ordinal ``a``: equal bins of
        :meth:`ordinal_width`, split at :meth:`universe_cuts`."""
        cuts = self.inner_edges(a)
        base = np.arange(a.lower, a.upper + 1, self.ordinal_width(a)) if cuts is None else np.r_[a.lower, cuts]
        first = np.unique(np.r_[base, self.universe_cuts(a)]).astype(np.int64)
        return first, np.r_[first[1:] - 1, a.upper].astype(np.int64)

    def value_codes(self, a):
        """Number of codes of the values of attribute ``a`` (its bins or categories)."""
        if isinstance(a, Categorical):
            return a.n_codes
        if isinstance(a, Ordinal):
            return int(self.ordinal_bins(a)[0].size)
        cuts = self.inner_edges(a)
        return self.bins if cuts is None else len(cuts) + 1

    @property
    def sizes(self):
        """Number of codes of each attribute (missing not counted): its values, and one more,
        "not applicable" (the last code), for an attribute with a universe."""
        return np.asarray([self.value_codes(a) + (a.universe is not None) for a in self.attributes], dtype=np.int64)

    def encode(self, df):
        """Codes of ``df``'s attribute columns, shape (d, n), int16, −1 where missing; the last
        code of an attribute with a universe ("not applicable") outside it.

        Raises :class:`~dpknn.exceptions.DomainError` for a value outside its declared domain and
        ``ValueError`` for an absent column. ``df`` is not modified.
        """
        check_frame(df, self.names)
        if max(self.sizes) >= 2**15 - 1:
            raise ValueError(f"an attribute has {max(self.sizes)} codes; at most 32766 are supported.")
        out = np.empty((len(self.attributes), len(df)), dtype=np.int16)
        for j, a in enumerate(self.attributes):
            if isinstance(a, Categorical):
                codes, missing = a.read_column(df)
            else:
                values, missing = a.read_column(df)
                v = np.where(missing, a.lower, values)
                if isinstance(a, Ordinal):
                    codes = np.searchsorted(self.ordinal_bins(a)[0], v.astype(np.int64), side="right") - 1
                elif self.inner_edges(a) is not None:
                    codes = np.searchsorted(np.asarray(self.inner_edges(a)), v, side="right")
                else:
                    codes = np.minimum(np.floor((v - a.lower) / (a.upper - a.lower) * self.bins), self.bins - 1)
            out[j] = np.where(missing, MISSING, codes)
            if a.universe is not None:
                # Outside its universe an attribute is "not applicable", a known structural value,
                # not a gap: the models learn where it applies from every record.
                out[j][~a.universe.mask(df)] = self.value_codes(a)
        return out

    def positions(self, df, codes):
        """Where each value of ``df`` lies inside its bin, in [0, 1]: the inverse of
        :meth:`decode`'s ``positions``. A list with, for each attribute, None (a Categorical) or
        n floats, 0 where the cell is missing or not applicable; an Ordinal's value sits in the
        middle of its slot, so that :meth:`decode` gives it back exactly. ``codes`` are
        :meth:`encode`'s for ``df``."""
        out = []
        for a, c in zip(self.attributes, np.asarray(codes, dtype=np.int64)):
            if isinstance(a, Categorical):
                out.append(None)
                continue
            values, _ = a.read_column(df)
            inside = (c != MISSING) & (c < self.value_codes(a))
            lo, hi = self.bounds(a)
            k = c[inside]
            t = np.zeros(len(c))
            t[inside] = (slot_middles(a, values)[inside] - lo[k]) / (hi[k] - lo[k])
            out.append(t)
        return out

    def decode(self, codes, *, rng, masses=None, shapes=None, positions=None, ranks=None):
        """A DataFrame of domain-valid values from codes of shape (d, n), every attribute missing
        outside its universe (:func:`blank_outside_universes`).

        ``rng`` is a :class:`numpy.random.Generator` (synthetic values are post-processing of
        released tables). ``masses``: None, or for each attribute None or the masses of its value
        codes (a released or fitted one-way marginal); a numeric attribute with masses is drawn
        from the piecewise-linear density through them (:func:`bin_positions`),
        one without uniformly inside its bin. ``shapes``: None, or for each attribute None or a
        :class:`ValueShape` (say from DP quantiles), which then gives the law inside every bin and
        takes precedence over ``masses``. ``positions``: None, or for each attribute None or the
        n positions in [0, 1] of the values inside their bins (a generator's output), which take
        precedence over both (an Ordinal's bin of w values is cut into w equal slots). ``ranks``: None, or
        for each attribute None or the n ranks in [0, 1] at which its shape is read inside each row's bin (in
        place of uniform ones: :mod:`dpknn.synth._ranks`). Code −1 and
        the "not applicable" code decode to a missing value: NaN, ``<NA>`` for an Ordinal
        (``Int64``) and NaN in a categorical column.
        """
        codes = np.asarray(codes)
        n = codes.shape[1]
        cols = {}
        for j, a in enumerate(self.attributes):
            c = codes[j].astype(np.int64)
            miss = (c < 0) | (c >= self.value_codes(a))
            c = np.where(miss, 0, c)
            if isinstance(a, Categorical):
                cols[a.name] = pd.Categorical.from_codes(np.where(miss, -1, c),
                                                         categories=pd.Index(a.categories, dtype=object))
                continue
            lo, hi = self.bounds(a)
            m = None if masses is None else masses[j]
            shape = None if shapes is None else shapes[j]
            given = None if positions is None else positions[j]
            if given is not None:
                t = np.clip(np.asarray(given, dtype=np.float64), 0.0, 1.0)
                v = lo[c] + t * (hi[c] - lo[c])
            elif shape is not None:
                r = None if ranks is None else ranks[j]
                u = rng.random(n) if r is None else np.where(np.isnan(r), rng.random(n), r)
                v = shape.draw_between(lo[c], hi[c], u)
            else:
                u = rng.random(n)
                t = u if m is None else bin_positions(lo, hi, m, c, u)
                v = lo[c] + t * (hi[c] - lo[c])
            if isinstance(a, Ordinal):
                v = np.minimum(np.floor(v).astype(np.int64), hi[c].astype(np.int64) - 1)
                col = pd.array(v, dtype="Int64") if miss.any() else v
                if miss.any():
                    col[miss] = pd.NA
            else:
                col = np.clip(v, a.lower, a.upper)
                col[miss] = np.nan
            cols[a.name] = col
        return blank_outside_universes(pd.DataFrame(cols, columns=self.names), self.attributes, copy=False)



def read_attributes(path, *, allow_draft=False):
    """The attributes listed in a TOML file (:func:`read_attributes_file`'s ``attributes``).

    Parameters
    ----------
    path : str or Path
        The attributes or schema file (TOML).
    allow_draft : bool, default False
        Load a file marked ``draft = true`` anyway (:func:`dpknn.schema.check_draft`).
    """
    return read_attributes_file(path, allow_draft=allow_draft).attributes


@dataclass(frozen=True)
class AttributesFile:
    """What an attributes file declares: the attributes, the public inner bin edges some
    numeric ones give for synthesis (``{name: edges}``, checked against the domains), and the
    attributes complete by declaration (a schema's known attributes: never missing)."""

    attributes: tuple
    bin_edges: dict
    never_missing: tuple = ()


def read_attributes_file(path, *, allow_draft=False):
    """The attributes listed in a TOML file, and their public bin edges.

    Either ``[[attribute]]`` tables (``name``, ``type`` and the type's keys, as in a schema; see
    ``docs/synthesis.md``), or a schema file, whose known then imputed attributes are taken in
    order (an imputed attribute keeps its universe: synthetic values are missing outside it; a known
    attribute is complete by declaration, so ``never_missing`` lists it). An
    ``[[attribute]]`` table may give a ``universe`` too, and a numeric one ``bin_edges``: public
    inner edges of its bins in synthesis (say at the cuts of a derived column, or geometric for
    money), strictly increasing inside its range. A file with ``draft = true`` is refused unless
    ``allow_draft`` (:func:`dpknn.schema.check_draft`).

    Returns
    -------
    AttributesFile
    """
    from dpknn.schema._attributes import DRAFT_KEY, Schema, attribute_from_dict, check_draft
    from dpknn.utils._io import read_toml

    spec = read_toml(path, "attributes file")
    check_draft(spec, f"attributes file {str(path)!r}", allow_draft=allow_draft)
    spec = {k: v for k, v in spec.items() if k != DRAFT_KEY}
    if "attribute" in spec:
        check_keys(spec, {"attribute"}, f"attributes file {str(path)!r}", hint="it lists [[attribute]] tables only")
        if not isinstance(spec["attribute"], list):
            raise ValueError(f"attributes file {str(path)!r}: 'attribute' must be a list of [[attribute]] tables.")
        tables = spec["attribute"]
        edges = {e.get("name"): e["bin_edges"] for e in tables if isinstance(e, dict) and "bin_edges" in e}
        attrs = check_attributes(attribute_from_dict({k: v for k, v in e.items() if k != "bin_edges"}
                                                     if isinstance(e, dict) else e, "attribute") for e in tables)
        for name, given in edges.items():
            if not isinstance(given, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                      for v in given):
                raise ValueError(f"attributes file {str(path)!r}: bin_edges of {name!r} must be a list of numbers, "
                                 f"got {given!r}.")
        _check_edges(edges, attrs)
        return AttributesFile(attrs, {name: list(v) for name, v in edges.items()})
    if "known" in spec or "imputed" in spec:
        schema = Schema.from_dict(spec)
        # Known attributes are complete for every record (a schema refuses a gap in one): never missing.
        return AttributesFile(check_attributes([*schema.known, *schema.imputed]), {}, schema.known_names)
    raise ValueError(f"attributes file {str(path)!r} lists no [[attribute]] tables (nor [[known]]/[[imputed]]).")
