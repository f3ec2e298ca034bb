"""The amounts an analysis names, drawn together inside their bins: a Gaussian copula of the fitted model.

A marginal model knows an amount only by its bin; inside the bin the sampler reads the released shape at a
rank, and where two amounts are drawn at independent ranks, the part of their association that lives inside the
bins is lost. A regression of one on the other then loses it twice: the covariate's spread inside its bin acts as
measurement error and flattens the slope, and a category that goes with the covariate takes up what the slope
lost (the youth survey's weight on height, gender and age at ε = 1, five seeds: height 66.6 against 76.5,
gender 2.2 against 1.1, ``benchmarks/within_bin_loss.py``). Rank sums by the other amount's bin
(:mod:`dpknn.synth._ranks`) pay for that association with budget, table by table, and at ε = 1 their noise
drowns it.

**The law.** Let J be the amounts with released quantile shapes that the analyses name (at least two; public: the
analyses and the plan). Their normal scores follow a Gaussian copula: z ~ N(0, R), and amount j lies in its bin b
iff z_j ∈ [t_j,b, t_j,b+1), t_j the standard normal quantiles of the cumulative masses of j's bins in the fitted
model (value codes only). R_jk is the polychoric correlation of the model's two-way table of (j, k): the ρ under
which the bivariate normal, cut at t_j and t_k, gives that table the highest likelihood (Olsson 1979, the two-step
estimator: thresholds from the margins, then ρ alone). A row's normal scores are then drawn from N(0, R) restricted
to the rectangle of its bins (Gibbs sweeps of one-dimensional truncated normals, as many as the largest correlation
needs, :func:`sweeps_for`; an amount the row lacks is integrated out), and each amount's rank inside its bin is
(Φ(z_j) − Φ(t_j,b)) / (Φ(t_j,b+1) − Φ(t_j,b)), at which its released shape is read. A rank is uniform inside its bin
when nothing else is known, so the one-way shapes stay as released as far as the model's cells are the copula's;
what the copula adds is where inside the bins the amounts of one row lie given each other's bins, read from the
association the model already holds across the bins.

**Why a copula of the model, and when** (``within_bin="copula"``, or the default ``"auto"`` where the rank sums
would be noise: :func:`~dpknn.synth._marginal.useful_rank_sums`). It costs no
budget, and the association across the bins, which the model fits with all of its tables, is measured far better
than anything a share of the budget could buy inside them (the youth survey at ε = 1: noise of 32.9 ranks a cell
against 150 records a cell, ``benchmarks/within_bin_loss.py``). But how two amounts go together inside their bins is
then the copula's assumption, not the data's, and no released statistic checks it: fitting the correlation to the
released rank sums of the response by the other amount's bin instead left most of the overshoot
(``benchmarks/copula_calibration.py``: the GSS wage table's prestige slope at ε = 4, seeds 0-2, 675 fitted to the
noisy table and 638 even to the real one, against 671 with the polychoric correlation and 594 in the data). Measured
over ten seeds (``benchmarks/README.md``, "Synthesis for inference"), the CI overlap of each table's regression: the
youth survey's weight and height, close to jointly normal, keep their regression at ε = 1 (-0.06 → 0.46) and come
out a little steep at ε = 4 (0.53 → 0.50); London pupils' two exam scores gain at both ε (-0.38 → -0.12, 0.44 →
0.68); the GSS wage table's heavy-tailed income against heaped prestige scores comes out far too steep at ε = 4
(0.70 → 0.30). There, and only there among these cells, the released rank sums can be read (θ-useful): they hold
the data's own within-bin association, and the copula's assumption is not needed. Where they cannot, the choice is
between the copula and amounts drawn nearly independently inside their bins, which flattens the slopes; so the
default takes the copula exactly where the rank sums fail θ-usefulness, and ``"ranks"`` or ``"copula"`` fix either.

**Privacy.** Post-processing of the fitted model's one- and two-way marginals and of the released shapes: no
record is read (Dwork and Roth 2014, Proposition 2.1). The released rank sums of the analyses' responses
(:mod:`dpknn.synth._ranks`) are then kept for the partners outside J only (J's are the copula's), and read as
before with the copula's rank in place of a uniform one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import ndtr, ndtri

__all__ = ["COPULA_SWEEPS", "WithinBinCopula", "copula_ranks", "fit_copula", "polychoric", "rectangle_masses",
           "sweeps_for", "thresholds"]

#: The fewest Gibbs sweeps of a row's normal scores inside its rectangle (:func:`sweeps_for`).
COPULA_SWEEPS = 6
# The weight of the start left after the sweeps: a bivariate normal's Gibbs chain forgets its start at ρ² a sweep
# (Roberts and Sahu 1997), so ρ = 0.98 needs about 115 sweeps where ρ = 0.7 needs 7.
START_WEIGHT = 0.01
# |ρ| stays below this: a correlation of one leaves the conditional normals degenerate.
MAX_CORRELATION = 0.98
# Gauss-Legendre nodes of a rectangle's integral over x, on each bin of x cut at ±_REACH.
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(48)
_REACH = 9.0


@dataclass(frozen=True)
class WithinBinCopula:
    """The Gaussian copula of the amounts ``amounts`` (attribute indices) inside their bins: their
    ``correlation`` (k × k) and, for each, the ``thresholds`` of its bins on the normal scale (−inf, …, inf)."""

    amounts: tuple
    correlation: np.ndarray
    thresholds: tuple


def thresholds(masses):
    """The normal-scale edges of bins with ``masses``: −inf, Φ⁻¹ of the cumulative shares, inf."""
    p = np.clip(np.asarray(masses, dtype=np.float64), 0.0, None)
    p = p / p.sum() if p.sum() > 0 else np.full(p.size, 1.0 / p.size)
    inner = ndtri(np.clip(np.cumsum(p)[:-1], 1e-12, 1 - 1e-12))
    return np.r_[-np.inf, inner, np.inf]


def rectangle_masses(ta, tb, rho):
    """The mass of each rectangle (bin i of ``ta``, bin j of ``tb``) under the standard bivariate normal with
    correlation ``rho``: ∫ φ(x) [Φ((t_b,j+1 − ρx)/s) − Φ((t_b,j − ρx)/s)] dx over bin i, s = √(1 − ρ²), by
    Gauss-Legendre quadrature on each bin of x (cut at ±9, where φ is below 1e-17)."""
    s = np.sqrt(1.0 - rho * rho)
    lo = np.clip(np.asarray(ta, dtype=np.float64)[:-1], -_REACH, _REACH)
    hi = np.clip(np.asarray(ta, dtype=np.float64)[1:], -_REACH, _REACH)
    half = (hi - lo) / 2
    x = (lo + hi)[:, None] / 2 + half[:, None] * _NODES[None, :]        # bins x nodes
    w = half[:, None] * _WEIGHTS[None, :] * np.exp(-x * x / 2) / np.sqrt(2 * np.pi)
    cdf = ndtr((np.asarray(tb, dtype=np.float64)[None, None, :] - rho * x[:, :, None]) / s)
    return np.einsum("in,inj->ij", w, np.diff(cdf, axis=2))


def polychoric(table, ta, tb):
    """ρ maximising Σ table · log(rectangle mass) with the thresholds ``ta``, ``tb`` fixed (module docstring)."""
    t = np.clip(np.asarray(table, dtype=np.float64), 0.0, None)

    def minus_log_likelihood(rho):
        return -float((t * np.log(np.clip(rectangle_masses(ta, tb, rho), 1e-300, None))).sum())

    return float(minimize_scalar(minus_log_likelihood, bounds=(-MAX_CORRELATION, MAX_CORRELATION),
                                 method="bounded", options={"xatol": 1e-5}).x)


def fit_copula(model, amounts, value_codes):
    """The :class:`WithinBinCopula` of ``amounts`` (attribute indices, at least two) from the fitted ``model``
    (a :class:`~dpknn.synth._graphical_model.GraphicalModel`): post-processing (module docstring).
    ``value_codes[j]``: how many of attribute j's codes are values."""
    cliques = model.clique_marginals()
    nodes = model.attribute_marginals(cliques)
    ts = tuple(thresholds(np.asarray(nodes[a])[:value_codes[a]]) for a in amounts)
    k = len(amounts)
    corr = np.eye(k)
    for i in range(k):
        for j in range(i + 1, k):
            a, b = amounts[i], amounts[j]
            table = np.asarray(model.marginal((a, b), cliques))[:value_codes[a], :value_codes[b]]
            corr[i, j] = corr[j, i] = polychoric(table, ts[i], ts[j])
    # Pairwise estimates need not make a correlation matrix: eigenvalues clipped at 1e-3, then the unit diagonal
    # restored (positive definite, near the pairwise one; not the nearest correlation matrix, which needs iterating).
    w, v = np.linalg.eigh(corr)
    corr = (v * np.maximum(w, 1e-3)) @ v.T
    d = np.sqrt(np.diag(corr))
    return WithinBinCopula(tuple(int(a) for a in amounts), corr / d[:, None] / d[None, :], ts)


def _truncated_normal(mu, s, lo, hi, u):
    """N(mu, s²) restricted to [lo, hi] at the quantile u ∈ (0, 1), by inversion; an interval in the upper tail
    is drawn as the mirror image of one in the lower tail, where Φ keeps its digits (an interval beyond about 37
    deviations, where Φ underflows, gives its near end)."""
    a, b = (lo - mu) / s, (hi - mu) / s
    flip = a > 0
    a, b = np.where(flip, -b, a), np.where(flip, -a, b)
    pa, pb = ndtr(a), ndtr(b)
    x = np.clip(ndtri(np.clip(pa + u * (pb - pa), 1e-300, 1 - 1e-16)), a, b)
    return mu + s * np.where(flip, -x, x)


def _rank_inside(z, lo, hi):
    """(Φ(z) − Φ(lo)) / (Φ(hi) − Φ(lo)), through the upper tail's Φ(−·) where lo > 0."""
    flip = lo > 0
    fz, flo, fhi = (np.where(flip, ndtr(-v), ndtr(v)) for v in (z, lo, hi))
    width = np.where(flip, flo - fhi, fhi - flo)
    r = np.where(flip, flo - fz, fz - flo) / np.where(width > 0, width, 1.0)
    return np.clip(np.where(width > 0, r, 0.5), 0.0, 1.0)


def _conditional(r, j, given):
    """(coefficients, sd) of score j given the scores ``given`` under N(0, r)."""
    if not given:
        return np.zeros(0), 1.0
    b = np.linalg.solve(r[np.ix_(given, given)], r[given, j])
    return b, float(np.sqrt(max(1.0 - r[j, given] @ b, 1e-6)))


def sweeps_for(r):
    """Gibbs sweeps for correlation matrix ``r``: enough for the start to weigh under :data:`START_WEIGHT` at the
    largest |ρ| (the rate of a bivariate chain), and at least :data:`COPULA_SWEEPS`."""
    rho = float(np.max(np.abs(r - np.eye(len(r))))) if len(r) > 1 else 0.0
    if rho <= 0.0:
        return COPULA_SWEEPS
    return max(COPULA_SWEEPS, math.ceil(math.log(START_WEIGHT) / math.log(rho * rho)))


def _gibbs(r, lo, hi, gen, sweeps):
    """Normal scores z ~ N(0, r) restricted to [lo, hi] (k × m each), by ``sweeps`` Gibbs sweeps from a start where
    each score is drawn given those before it."""
    k, m = lo.shape
    z = np.zeros((k, m))
    for j in range(k):
        b, s = _conditional(r, j, list(range(j)))
        z[j] = _truncated_normal(b @ z[:j] if j else 0.0, s, lo[j], hi[j], gen.random(m))
    rest = [[i for i in range(k) if i != j] for j in range(k)]
    conditional = [_conditional(r, j, rest[j]) for j in range(k)]
    for _ in range(sweeps):
        for j, (b, s) in enumerate(conditional):
            z[j] = _truncated_normal(b @ z[rest[j]] if rest[j] else 0.0, s, lo[j], hi[j], gen.random(m))
    return z


def copula_ranks(copula, codes, gen, *, sweeps=None):
    """{amount: the rows' ranks inside their bins} drawn from ``copula`` given the rows' ``codes`` (d × n): module
    docstring. A row without a value code of an amount (missing, not applicable) gets NaN for it. ``gen`` draws;
    ``sweeps``: None for :func:`sweeps_for` of the correlation.

    Rows are drawn by the set of amounts they hold: the scores of the amounts a row lacks are integrated out
    (the copula of the others is N(0, R) on their rows and columns), which is exact and spares the sweeps a
    free score that would slow them (at ρ = 0.9 a free score's chain forgets its start at 0.81 a sweep)."""
    k = len(copula.amounts)
    n = codes.shape[1]
    lo, hi, seen = np.empty((k, n)), np.empty((k, n)), np.zeros((k, n), dtype=bool)
    for j, (a, t) in enumerate(zip(copula.amounts, copula.thresholds)):
        c = np.asarray(codes[a], dtype=np.int64)
        seen[j] = (c >= 0) & (c < t.size - 1)
        cc = np.where(seen[j], c, 0)
        lo[j], hi[j] = t[cc], t[cc + 1]
    out = np.full((k, n), np.nan)
    pattern = (seen * (1 << np.arange(k))[:, None]).sum(axis=0)
    for p in np.unique(pattern):
        held = np.flatnonzero((int(p) >> np.arange(k)) & 1)
        if held.size == 0:
            continue
        cells = np.ix_(held, np.flatnonzero(pattern == p))
        r = copula.correlation[np.ix_(held, held)]
        z = _gibbs(r, lo[cells], hi[cells], gen, sweeps_for(r) if sweeps is None else sweeps)
        out[cells] = _rank_inside(z, lo[cells], hi[cells])
    return {a: out[j] for j, a in enumerate(copula.amounts)}
