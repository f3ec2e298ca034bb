"""Values inside an amount's bin drawn as the record's other attributes say: released within-bin rank sums.

A marginal model knows an amount only by its bin; inside the bin a value drawn from the amount's one-way
shape is independent of every other attribute, so a regression of the amount on them loses the part of
each slope that lives inside the bins (on a wage survey with 16 quantile bins of income: age 270 -> 244,
and more through the covariates' own bins). What is missing is small and cheap to release: for each amount
A and each other attribute X, the **sum of the within-bin ranks** of A over the records of each cell
(A's bin, X's code).

**The rank** of a record's value v in its bin [lo, hi) is r = (F(v) − F(lo)) / (F(hi) − F(lo)) ∈ [0, 1],
F the released one-way shape of A (:class:`~dpknn.schema._discretization.ValueShape`): a function of the
record and of released values. It is counted in :data:`RANK_STEPS` steps, round(RANK_STEPS·r), an
integer in [0, RANK_STEPS].

**Privacy** (add/remove one record, with its missingness pattern). In the table of (A, X) a record adds at
most RANK_STEPS to one cell and nothing elsewhere (a record whose A is missing or not applicable adds
nothing): integer L1 and L2 sensitivity RANK_STEPS. Each table gets the noise of the synthesiser's currency
at sensitivity RANK_STEPS (:class:`~dpknn.mechanisms.DiscreteGaussian`, ρ-zCDP with σ² = RANK_STEPS²/(2ρ),
Canonne, Kamath, Steinke 2020, Theorem 4; or :class:`~dpknn.mechanisms.Geometric`, ε-DP at scale
RANK_STEPS/ε), its cost a share of the part the synthesiser gives them, and the costs add up (Bun and
Steinke 2016, Lemma 2.3; Dwork and Roth 2014, Theorem 3.16). Which tables are released is public (the
attribute list).

**Sampling** is post-processing. The synthetic rows' codes come from the model first. Inside each bin b of
A, the mean rank is modelled as additive in the other attributes' codes, r̄ = Σ_X β_X[code of X], fitted by
ridge regression to the released sums: the normal equations need, besides the sums, only the cross-counts of
the other attributes' codes among the records in bin b, which the synthetic rows of b give (scaled to the
model's count of b). The ridge pulls β towards the constant 1/2 with weight :data:`RANK_RIDGE` noise
deviations, so a cell the noise drowns keeps the one-way shape. Each row then draws its rank as U^(1/r̄ − 1),
U uniform, whose mean is r̄, and its value as F's quantile at that rank inside its bin. With
``within_bin="copula"`` and two or more shaped amounts in the analyses, those are drawn together by the within-bin
copula (:mod:`dpknn.synth._copula`): their rank sums with each other are not released, and U is the copula's rank
instead of a uniform one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["MATCHED_GROUP", "RANK_RIDGE", "RANK_STEPS", "RankSums", "conditional_ranks", "matched_powers",
           "rank_tables", "release_ranks", "within_bin_ranks"]

#: Steps of a within-bin rank in a released sum: a record adds round(RANK_STEPS·r).
RANK_STEPS = 16
#: The ridge of the within-bin regression, in noise deviations of a released sum.
RANK_RIDGE = 10.0
# A drawn mean rank stays inside [RANK_CLIP, 1 - RANK_CLIP]: U^(1/r - 1) degenerates at the ends.
RANK_CLIP = 0.05
#: The fewest rows of one target mean rank whose copula ranks get an exponent matched to it (:func:`matched_powers`).
MATCHED_GROUP = 20


@dataclass(frozen=True)
class RankSums:
    """Released sums of amount ``amount``'s within-bin ranks by its bin (rows: its value codes) and the
    extended code of attribute ``partner`` (columns: its codes, then missing), in ranks, with the noise's
    standard deviation ``sigma`` in ranks."""

    amount: int
    partner: int
    sums: np.ndarray
    sigma: float


def within_bin_ranks(values, codes, lo, hi, shape):
    """r ∈ [0, 1]: where each value lies inside its bin [lo[c], hi[c]) by the shape's CDF (module
    docstring); NaN where ``codes`` is not a value code (missing, not applicable)."""
    values = np.asarray(values, dtype=np.float64)
    c = np.asarray(codes, dtype=np.int64)
    ok = (c >= 0) & (c < lo.size)
    out = np.full(values.shape, np.nan)
    cc = c[ok]
    fa, fb = shape.cdf_at(lo[cc]), shape.cdf_at(hi[cc])
    fv = shape.cdf_at(values[ok], "mid")
    width = fb - fa
    out[ok] = np.where(width > 1e-12, np.clip((fv - fa) / np.where(width > 1e-12, width, 1.0), 0.0, 1.0), 0.5)
    return out


def rank_tables(ranks, codes, ext, value_codes, ext_sizes, pairs):
    """The true tables of the rank sums (data, never released; :func:`release_ranks` releases them), by pair:
    sums of round(RANK_STEPS·r) by (amount's bin, partner's extended code), int64. Sums over records, so those
    of disjoint parts of the data (Parquet partitions) add up to the whole's."""
    out = {}
    for a, x in pairs:
        r = ranks[a]
        ok = ~np.isnan(r)
        steps = np.rint(RANK_STEPS * r[ok]).astype(np.int64)
        flat = np.bincount(codes[a][ok].astype(np.int64) * int(ext_sizes[x]) + ext[x][ok].astype(np.int64),
                           weights=steps, minlength=int(value_codes[a]) * int(ext_sizes[x]))
        out[(a, x)] = np.rint(flat).astype(np.int64).reshape(int(value_codes[a]), int(ext_sizes[x]))
    return out


def release_ranks(tables, pairs, mechanism, src):
    """The :class:`RankSums` of every (amount, partner) of ``pairs``, its true table ``tables[pair]``
    (:func:`rank_tables`) released by ``mechanism`` (sensitivity :data:`RANK_STEPS`, module docstring), in the
    order of ``pairs``."""
    sd = float(np.sqrt(mechanism.variance())) / RANK_STEPS
    return [RankSums(a, x, np.asarray(mechanism.release_array(tables[(a, x)], rng=src), dtype=np.float64)
                     / RANK_STEPS, sd) for a, x in pairs]


def conditional_ranks(codes, ext, sums, bin_counts, gen, *, uniforms=None):
    """Within-bin ranks of the synthetic rows, drawn from the ridge fit of the released ``sums`` (module
    docstring); a dict amount -> ranks (NaN where the row has no value code). ``codes`` and ``ext`` are the
    rows' codes and extended codes, ``bin_counts[a]`` the model's counts of amount a's bins. ``uniforms``: None,
    or {amount: ranks in [0, 1]} read in place of U (the within-bin copula's, :mod:`dpknn.synth._copula`), so that
    the mean shift composes with where the copula put the row; U is drawn where absent or NaN."""
    out = {}
    by_amount = {}
    for s in sums:
        by_amount.setdefault(s.amount, []).append(s)
    n = codes.shape[1]
    for a, tables in by_amount.items():
        mean = np.full(n, np.nan)
        widths = [t.sums.shape[1] for t in tables]
        starts = np.r_[0, np.cumsum(widths)[:-1]]
        p = int(sum(widths))
        # At least one record's weight: a code no synthetic row of the bin holds leaves the Gram singular.
        lam = max(RANK_RIDGE * max(t.sigma for t in tables), 1.0)
        prior = np.full(p, 0.5 / len(tables))   # Σ over the partners of one code each: 1/2
        for b in range(tables[0].sums.shape[0]):
            rows = np.flatnonzero(codes[a] == b)
            if rows.size == 0:
                continue
            cols = np.stack([ext[t.partner][rows].astype(np.int64) + s for t, s in zip(tables, starts)])
            design = np.zeros((rows.size, p))
            for c in cols:
                design[np.arange(rows.size), c] = 1.0
            gram = design.T @ design * (float(bin_counts[a][b]) / rows.size)
            target = np.concatenate([t.sums[b] for t in tables])
            beta = np.linalg.solve(gram + lam * np.eye(p), target + lam * prior)
            mean[rows] = design @ beta
        r = np.clip(mean, RANK_CLIP, 1 - RANK_CLIP)
        u = gen.random(n)
        power = 1.0 / np.where(np.isnan(r), 0.5, r) - 1.0
        given = None if uniforms is None else uniforms.get(a)
        if given is not None:
            held = ~np.isnan(given) & ~np.isnan(mean)
            u = np.where(held, given, u)
            power = np.where(held, matched_powers(given, r, held), power)
        out[a] = np.where(np.isnan(mean), np.nan, u ** power)
    return out


def matched_powers(u, target, rows):
    """Exponents k such that, among the ``rows`` that share a target mean rank, the mean of u^k is that target.

    U^(1/r̄ − 1) has mean r̄ only for a uniform U. The within-bin copula's ranks are uniform in a bin but not among
    the rows of one (bin, partner code) cell when the partner goes with the copula's other amount, so the plain
    exponent would count that association twice. Matching each group's mean keeps the copula's order inside the
    group and the released mean shift; a group of fewer than :data:`MATCHED_GROUP` rows keeps 1/r̄ − 1, since
    matching a handful of draws would fix them at their target. Bisection on log k, all groups at once."""
    k = 1.0 / np.where(rows, target, 0.5) - 1.0
    if not rows.any():
        return k
    values, group = np.unique(target[rows], return_inverse=True)
    size = np.bincount(group, minlength=values.size)
    lo, hi = np.full(values.size, np.log(1e-3)), np.full(values.size, np.log(1e3))
    x = u[rows]
    for _ in range(50):
        mid = (lo + hi) / 2
        mean = np.bincount(group, weights=x ** np.exp(mid[group]), minlength=values.size) / size
        above = mean > values          # the mean of u^k falls as k grows
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    matched = np.where(size >= MATCHED_GROUP, np.exp((lo + hi) / 2), 1.0 / values - 1.0)
    k[rows] = matched[group]
    return k
