"""Disclosure-risk measures of released data against the original.

- Perturbed data (Perry et al. 2022, §8): the largest Cook's and Mahalanobis distances and each
  record's distance to its closest other record, before and after.
- Any released table: :func:`linkage` (released records linked to their own source by nearest
  neighbour, against chance), :func:`distance_to_closest_record` (DCR, against the original's
  own nearest-neighbour distances), :func:`correct_attribution_probability` (CAP of a sensitive
  attribute given quasi-identifiers, against the marginal baseline) and :func:`sample_uniques`.

All read the original data: they are evaluations for the curator, not releases.

References
----------
.. [1] Perry et al. (2022). "RWN: a novel neighborhood-based method for statistical disclosure
   control", §8.2-8.3 (Cook's distance, Mahalanobis distance, distance to the closest record,
   Figures 6-8).
.. [2] Taub, Elliot, Pampaka, Smith (2018). "Differential correct attribution probability for
   synthetic data: an exploration", PSD 2018, LNCS 11126 (CAP).
.. [3] Domingo-Ferrer, Torra (2004). "Disclosure risk assessment in statistical data protection"
   (distance-based record linkage).
.. [4] Nowok, Raab, Dibben (2016). "synthpop: bespoke creation of synthetic data in R", Journal
   of Statistical Software 74(11); the package's ``replicated.uniques``.
.. [5] Jiang (2025). Short course on data privacy (matching risk 1/s over tied candidates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from dpknn.metrics._tables import check_tables, is_numeric, shared_columns

__all__ = [
    "AttributionRisk",
    "ClosestRecords",
    "Linkage",
    "SampleUniques",
    "closest_distances",
    "correct_attribution_probability",
    "distance_to_closest_record",
    "linkage",
    "max_cooks_distance",
    "max_mahalanobis",
    "risk_space",
    "sample_uniques",
]


def max_cooks_distance(df, *, y, X):
    """Largest Cook's distance of an OLS fit of ``y`` on ``X``, and the row label that has it.

    Parameters
    ----------
    df : pandas.DataFrame
        The data.
    y : str
        The response column.
    X : sequence of str
        The predictor columns (an intercept is added).
    """
    Xm = np.column_stack([np.ones(len(df)), df[list(X)].to_numpy(dtype=float)])
    yv = df[y].to_numpy(dtype=float)
    coef, *_ = np.linalg.lstsq(Xm, yv, rcond=None)
    resid = yv - Xm @ coef
    p = Xm.shape[1]
    q, _ = np.linalg.qr(Xm)
    lev = (q**2).sum(axis=1)
    s2 = resid @ resid / max(len(yv) - p, 1)
    cooks = resid**2 / (p * s2) * lev / (1 - lev) ** 2
    i = int(np.argmax(cooks))
    return float(cooks[i]), df.index[i]


def max_mahalanobis(df, *, columns=None):
    """Largest Mahalanobis distance from the mean, and the row label that has it.

    Parameters
    ----------
    df : pandas.DataFrame
        The data.
    columns : sequence of str or None
        The columns of the distance; None: every numeric column of ``df``.
    """
    cols = list(df.select_dtypes("number").columns) if columns is None else list(columns)
    a = df[cols].to_numpy(dtype=float)
    d = a - a.mean(axis=0)
    inv = np.linalg.pinv(np.cov(a, rowvar=False))
    m = np.sqrt(np.einsum("ij,jk,ik->i", d, inv, d))
    i = int(np.argmax(m))
    return float(m[i]), df.index[i]


def closest_distances(original, perturbed, *, columns=None, standardize=True):
    """Each record's Euclidean distance to its closest other record, before and after.

    Small distances mark inliers that are easy to single out. Returns a DataFrame with columns
    ``before`` and ``after``, indexed like the data; :func:`dpknn.utils._plotting.closest_distances_figure`
    draws it as box plots in the style of the paper's Figure 8.

    Parameters
    ----------
    original, perturbed : pandas.DataFrame
        The data before and after perturbation, row for row.
    columns : sequence of str or None
        The columns of the distance; None: every numeric column of ``original``.
    standardize : bool, default True
        Scale both tables by the original's mean and standard deviation of each column first.
    """
    cols = list(original.select_dtypes("number").columns) if columns is None else list(columns)
    a = original[cols].to_numpy(dtype=float)
    mean, sd = a.mean(axis=0), a.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0) if standardize else np.ones_like(sd)
    out = {}
    for name, df in (("before", original), ("after", perturbed)):
        x = (df[cols].to_numpy(dtype=float) - (mean if standardize else 0)) / sd
        d, _ = cKDTree(x).query(x, k=2, workers=-1)
        out[name] = d[:, 1]
    return pd.DataFrame(out, index=original.index)


# --- risk of released data against the original: linkage, closest records, attribution, uniques -----------------
def risk_space(original, released, *, columns=None):
    """Both tables as points of one Euclidean space, for nearest-record measures.

    Numeric columns are standardised by the original's mean and SD; a missing numeric cell sits
    at the mean with a 0/1 missing indicator. Other columns are one-hot with missing as its own
    level, scaled by 1/√2 so that two records differing on one category are at distance 1, like
    two numeric values one SD apart.

    Parameters
    ----------
    original, released : pandas.DataFrame
        The original and the released table, each with at least one row.
    columns : str, sequence of str or None
        The columns to use, which both tables must hold; None: every column of ``original``.

    Returns
    -------
    (ndarray, ndarray)
        The original's and the released table's points.
    """
    check_tables(original=original, released=released)
    cols = shared_columns(original, released, columns)
    a_parts, b_parts = [], []
    for c in cols:
        a, b = original[c], released[c]
        if is_numeric(a) and is_numeric(b):
            av = a.to_numpy(dtype=np.float64, na_value=np.nan)
            bv = b.to_numpy(dtype=np.float64, na_value=np.nan)
            mean = np.nanmean(av) if np.isfinite(av).any() else 0.0
            sd = np.nanstd(av) if np.isfinite(av).any() else 0.0
            sd = sd if sd > 0 else 1.0
            for part, v in ((a_parts, av), (b_parts, bv)):
                part.append(np.where(np.isnan(v), 0.0, (v - mean) / sd))
            if np.isnan(av).any() or np.isnan(bv).any():
                a_parts.append(np.isnan(av).astype(np.float64))
                b_parts.append(np.isnan(bv).astype(np.float64))
        else:
            codes, _ = pd.factorize(pd.concat([a, b], ignore_index=True).astype(object), use_na_sentinel=False)
            for j in np.unique(codes):
                hot = (codes == j) / np.sqrt(2.0)
                a_parts.append(hot[: len(a)])
                b_parts.append(hot[len(a):])
    return np.column_stack(a_parts), np.column_stack(b_parts)


def _distinct(a):
    """Distinct rows of ``a``, each row's index among them, and their multiplicities.

    Coded census keys repeat a lot; a k-d tree on the distinct points is an order of magnitude
    faster than on the rows, and ties are counted by multiplicity.
    """
    points, inverse, counts = np.unique(a, axis=0, return_inverse=True, return_counts=True)
    return points, inverse.reshape(-1), counts


def _labels(original, released, label):
    if label is None:
        return original.index, released.index
    for df, name in ((original, "original"), (released, "released")):
        if label not in df.columns:
            raise ValueError(f"label={label!r} is not a column of {name}.")
    return pd.Index(original[label]), pd.Index(released[label])


@dataclass(frozen=True)
class Linkage:
    """Result of :func:`linkage`.

    Attributes
    ----------
    rate : float
        Mean over released records of the probability that an intruder matching it to its
        nearest original record(s) picks its own source (1/s with s records tied nearest and
        the source among them, else 0).
    chance : float
        1 / n_original: the same for a match drawn at random.
    lift : float
        rate / chance.
    probabilities : pandas.Series
        The per-record probability, indexed by the released records' labels.
    n_released, n_original : int
    """

    rate: float
    chance: float
    lift: float
    probabilities: pd.Series
    n_released: int
    n_original: int


def linkage(original, released, *, columns=None, label=None):
    """Share of released records whose nearest original record is their own source.

    For data released record by record (RWN output, imputed data), where every released row
    keeps the label of the original record it came from: an intruder who knows the original
    values of ``columns`` links each released record to its nearest original record in
    :func:`risk_space`. Ties count 1/s (the course's matching rule). Not defined for synthetic
    data, whose rows have no source.

    Parameters
    ----------
    original, released : pandas.DataFrame
    columns : sequence of str or None
        The intruder's quasi-identifiers; None: all of the original's columns except ``label``.
    label : str or None
        Column of record labels in both tables; None: the DataFrame index.

    Returns
    -------
    Linkage
    """
    check_tables(original=original, released=released)
    src, rel = _labels(original, released, label)
    if not src.is_unique:
        raise ValueError("the original's record labels must be unique.")
    where = src.get_indexer(rel)
    if (where < 0).any():
        raise ValueError(f"{int((where < 0).sum())} released records carry no label of an original record; linkage "
                         "applies to data released record by record (perturbed or imputed), not to synthetic data.")
    if columns is None:
        columns = [c for c in original.columns if c != label]
    a, b = risk_space(original, released, columns=columns)
    points, _, counts = _distinct(a)
    tree = cKDTree(points)
    k = min(2, len(points))
    d, nearest = tree.query(b, k=k, workers=-1)
    d, nearest = d.reshape(len(b), k), nearest.reshape(len(b), k)
    own = np.sqrt(((b - a[where]) ** 2).sum(axis=1))
    radius = d[:, 0] * (1 + 1e-9) + 1e-12
    # Records tied nearest: the nearest distinct point's multiplicity, plus the other distinct
    # points at the same distance. The second-nearest distinct point shows which rows have any
    # (rare: rows equidistant from several distinct points); only those need a ball query.
    tied = counts[nearest[:, 0]].astype(np.float64)
    several = np.flatnonzero(d[:, -1] <= radius) if k == 2 else np.empty(0, dtype=np.int64)
    if several.size:
        for i, near in zip(several, tree.query_ball_point(b[several], radius[several], workers=-1)):
            tied[i] = counts[near].sum()
    prob = np.where(own <= radius, 1.0 / tied, 0.0)
    rate = float(prob.mean())
    chance = 1.0 / len(original)
    return Linkage(rate=rate, chance=chance, lift=rate / chance, probabilities=pd.Series(prob, index=rel),
                   n_released=len(released), n_original=len(original))


@dataclass(frozen=True)
class ClosestRecords:
    """Result of :func:`distance_to_closest_record`.

    Attributes
    ----------
    released : pandas.Series
        Each released record's distance to its closest original record (indexed like the
        released table).
    original : pandas.Series
        Each original record's distance to its closest *other* original record: the baseline
        a release should not undercut.
    exact_share : float
        Share of released records at distance 0 from an original record (exact copies on the
        compared columns).
    original_exact_share : float
        Share of original records with an exact twin among the others: the baseline of
        ``exact_share`` (discrete quasi-identifiers make twins common).
    """

    released: pd.Series
    original: pd.Series
    exact_share: float
    original_exact_share: float

    @property
    def median_ratio(self):
        """Median released distance over the median baseline distance (below 1: closer than real neighbours)."""
        base = float(self.original.median())
        return float(self.released.median()) / base if base > 0 else math.inf


def distance_to_closest_record(original, released, *, columns=None):
    """Distance from each released record to the closest original record (DCR), and the baseline.

    Distances are Euclidean in :func:`risk_space`. A released table whose records sit much
    closer to original records than original records sit to each other copies them.

    Parameters
    ----------
    original, released : pandas.DataFrame
    columns : sequence of str or None

    Returns
    -------
    ClosestRecords
    """
    a, b = risk_space(original, released, columns=columns)
    points, inverse, counts = _distinct(a)
    tree = cKDTree(points)
    d, _ = tree.query(b, k=1, workers=-1)
    if len(points) > 1:
        second = tree.query(points, k=2, workers=-1)[0][:, 1]
        base = np.where(counts > 1, 0.0, second)[inverse]
    else:
        base = np.where(counts > 1, 0.0, np.nan)[inverse]
    return ClosestRecords(released=pd.Series(d, index=released.index),
                          original=pd.Series(base, index=original.index), exact_share=float(np.mean(d == 0)),
                          original_exact_share=float(np.mean(base == 0)))


def _keys(original, released, keys, attributes, bins):
    """One integer key per row of each table from the ``keys`` columns (missing is a value).

    Numeric keys named among ``attributes`` are coded by their public bins
    (:class:`~dpknn.schema.Discretization`); other keys by their values.
    """
    keys = shared_columns(original, released, keys, "keys")
    coded = {}
    if attributes is not None:
        from dpknn.schema._discretization import Discretization

        known = [a for a in attributes if a.name in keys]
        if known:
            disc = Discretization(known, bins)
            for name, a, r in zip(disc.names, disc.encode(original), disc.encode(released)):
                coded[name] = (a, r)
    parts = []
    for k in keys:
        if k in coded:
            a, r = coded[k]
            v = pd.Series(np.r_[a, r])
        else:
            v = pd.concat([original[k], released[k]], ignore_index=True).astype(object)
        parts.append(pd.factorize(v, use_na_sentinel=False)[0])
    codes = pd.DataFrame(np.column_stack(parts))
    joint = codes.groupby(list(codes.columns), sort=False, dropna=False).ngroup().to_numpy()
    return joint[: len(original)], joint[len(original):]


@dataclass(frozen=True)
class AttributionRisk:
    """Result of :func:`correct_attribution_probability`.

    Attributes
    ----------
    cap : float
        Mean CAP over the original records whose key occurs in the released data.
    cap_zero : float
        Mean CAP over all original records, an unmatched key counting 0.
    matched_share : float
        Share of original records whose key occurs in the released data.
    baseline : float
        The CAP of an intruder who guesses from the original's marginal distribution of the
        target alone, Σ_v p_v²: a release adds risk when ``cap`` exceeds it.
    probabilities : pandas.Series
        Per original record (NaN: key not in the released data or target missing).
    """

    cap: float
    cap_zero: float
    matched_share: float
    baseline: float
    probabilities: pd.Series


def correct_attribution_probability(original, released, *, keys, target, attributes=None, bins=10):
    """Correct attribution probability of a sensitive ``target`` given the ``keys`` (Taub et al. 2018).

    For each original record, the released records with the same key (equivalence class on
    ``keys``) are found; its CAP is the share of them whose ``target`` equals the record's own.
    An intruder who knows a person's keys and reads the released class's target distribution
    attributes the right value with that probability.

    Parameters
    ----------
    original, released : pandas.DataFrame
    keys : sequence of str
        Quasi-identifiers the intruder knows.
    target : str
        The sensitive attribute; numeric targets are compared on their public bins when in
        ``attributes``, else by value.
    attributes : sequence of Ordinal, Categorical or Continuous, or None
        Public domains: numeric keys and target are compared on their bins.
    bins : int, default 10

    Returns
    -------
    AttributionRisk
    """
    check_tables(original=original, released=released)
    key_cols = shared_columns(original, released, keys, "keys")
    if target in key_cols:
        raise ValueError(f"target={target!r} is also a key.")
    ko, kr = _keys(original, released, key_cols, attributes, bins)
    to, tr = _keys(original, released, [target], attributes, bins)
    known = original[target].notna().to_numpy()
    rel_known = released[target].notna().to_numpy()
    pairs = pd.DataFrame({"k": kr[rel_known], "t": tr[rel_known]})
    class_size = pairs.groupby("k").size()
    same = pairs.groupby(["k", "t"]).size()
    n_class = class_size.reindex(ko).to_numpy(dtype=np.float64)
    n_same = same.reindex(pd.MultiIndex.from_arrays([ko, to])).fillna(0).to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        prob = np.where(known & (n_class > 0), n_same / n_class, np.nan)
    matched = np.isfinite(prob)
    p = pd.Series(to[known]).value_counts(normalize=True).to_numpy()
    return AttributionRisk(cap=float(prob[matched].mean()) if matched.any() else math.nan,
                           cap_zero=float(np.where(matched, prob, 0.0)[known].mean()) if known.any() else math.nan,
                           matched_share=float(matched[known].mean()) if known.any() else math.nan,
                           baseline=float((p**2).sum()), probabilities=pd.Series(prob, index=original.index))


@dataclass(frozen=True)
class SampleUniques:
    """Result of :func:`sample_uniques`.

    Attributes
    ----------
    original : int
        Original records unique on the keys (sample uniques).
    released : int
        Released records unique on the keys.
    replicated : int
        Released records unique on the keys whose key is also unique in the original: each
        reproduces a sample unique's key combination (synthpop's replicated uniques).
    original_share, released_share, replicated_share : float
        The counts over the rows of their table (replicated over the released rows).
    """

    original: int
    released: int
    replicated: int
    original_share: float
    released_share: float
    replicated_share: float


def sample_uniques(original, released, *, keys, attributes=None, bins=10):
    """Sample uniques on the ``keys`` and released records that replicate them.

    Parameters
    ----------
    original, released : pandas.DataFrame
    keys : sequence of str
    attributes : sequence of Ordinal, Categorical or Continuous, or None
        Public domains: numeric keys are compared on their bins (a numeric key compared by
        value makes almost every record unique).
    bins : int, default 10

    Returns
    -------
    SampleUniques
    """
    check_tables(original=original, released=released)
    ko, kr = _keys(original, released, keys, attributes, bins)
    co = np.bincount(ko, minlength=max(ko.max(), kr.max()) + 1)
    cr = np.bincount(kr, minlength=co.size)
    uo, ur = co[ko] == 1, cr[kr] == 1
    rep = ur & (co[kr] == 1)
    return SampleUniques(original=int(uo.sum()), released=int(ur.sum()), replicated=int(rep.sum()),
                         original_share=float(uo.mean()), released_share=float(ur.mean()),
                         replicated_share=float(rep.mean()))
