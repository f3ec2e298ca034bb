"""What analysts estimate from a released table, against the real one: the measures to read first.

A 2-way TVD on coarse public bins can look excellent while the regressions an analyst fits on the file
collapse (a wage survey: TVD 0.001-0.02, income's OLS R² 0.15 -> 0.03). :func:`analysis_measures` compares
what is estimated:

- **regressions**: those the user names and, by default, each amount (a numeric attribute with more than
  :data:`AMOUNT_VALUES` distinct real values) on every other attribute: OLS by statsmodels on both tables,
  the mean CI overlap (Karr et al. 2006), the largest standardised coefficient difference, and the ratio
  of the released R² to the real one;
- **correlations** of the numeric attributes, Pearson and Spearman (pairwise-complete), the largest
  absolute change of each;
- **quantiles** p10, p25, p50, p75, p90 of each amount, overall and within each category of each
  categorical attribute, as relative errors (|released − real| / the real interquartile range, so a
  quantile at 0 is not divided by 0);
- **point masses**: the shares of the real data's most frequent exact values of each amount in both
  tables (44 % of an income at exactly 0 must stay 44 %);
- **range queries**: a workload of random 1-3-way conjunctions of ranges on the original scale (numeric
  attributes: an interval between two real values, not a public bin; categoricals: a subset of
  categories), each answered as the share of rows satisfying it; the mean absolute error.

Every number reads the real data: for the curator, not for publication.

References
----------
.. [1] Karr, Kohnen, Oganian, Reiter, Sanil (2006). "A framework for evaluating the utility of data
   altered to protect confidentiality", The American Statistician 60(3).
.. [2] Snoke, Raab, Nowok, Dibben, Slavkovic (2018). "General and specific utility measures for synthetic
   data", JRSS A 181(3).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpknn.metrics._formulas import formula_variables, names_its_variables
from dpknn.metrics._inference import regression_comparison
from dpknn.metrics._tables import check_tables
from dpknn.schema._attributes import Categorical
from dpknn.utils._validation import check_positive_int, check_rng

__all__ = ["AMOUNT_VALUES", "QUANTILES", "AnalysisMeasures", "amount_names", "analysis_measures",
           "default_regressions", "parse_regression"]

#: A numeric attribute is an amount (a default regression's response, quantiles and point masses measured)
#: when the real data hold more than this many distinct values: not a score, a count of days or a year.
AMOUNT_VALUES = 20
#: The quantiles compared.
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


def parse_regression(text, names=None):
    """The response and the covariates a regression reads, ``(y, [x1, x2, ...])``.

    ``"y ~ x1 + x2"`` names them; a term that is not one of ``names`` (the attributes, when given) and holds a
    formula's syntax makes it a formula in Formulaic's grammar, the one statsmodels' formulas use
    (``"np.log(wage) ~ educ + exper + I(exper ** 2) + C(region)"``: transforms, interactions, ``C()``), whose
    variables are returned (:func:`~dpknn.metrics._formulas.formula_variables`). A response is one variable.
    """
    if not isinstance(text, str) or text.count("~") != 1:
        raise ValueError(f"a regression must read 'y ~ x1 + x2', got {text!r}.")
    left, right = (s.strip() for s in text.split("~"))
    xs = [s.strip() for s in right.split("+") if s.strip()]
    if not left or not xs:
        raise ValueError(f"a regression must read 'y ~ x1 + x2', got {text!r}.")
    return (left, xs) if names_its_variables(text, names) else formula_variables(text, names)


def amount_names(real, attributes):
    """The attributes that are amounts in ``real`` (:data:`AMOUNT_VALUES`), in declared order."""
    return [a.name for a in attributes
            if not isinstance(a, Categorical) and real[a.name].dropna().nunique() > AMOUNT_VALUES]


def default_regressions(real, attributes):
    """Each amount on every other attribute, ``"y ~ x1 + ..."``: the regressions measured by default."""
    names = [a.name for a in attributes]
    return [f"{y} ~ " + " + ".join(n for n in names if n != y) for y in amount_names(real, attributes)]


@dataclass(frozen=True)
class AnalysisMeasures:
    """CONFIDENTIAL: what analysts estimate, real against released (:func:`analysis_measures`).

    Attributes
    ----------
    regressions : pandas.DataFrame
        One row per regression: ``formula``, ``mean_ci_overlap``, ``max_standardized_difference``,
        ``r2_real``, ``r2_released``, ``r2_ratio``, ``default`` (True: measured by default), ``uncompared``
        (coefficients one table does not identify, left out of the means:
        :attr:`~dpknn.metrics.RegressionComparison.n_uncompared`).
    comparisons : list of RegressionComparison
        Their coefficient tables.
    correlations : pandas.DataFrame or None
        Per pair of numeric attributes: Pearson and Spearman in both tables.
    quantiles : pandas.DataFrame
        Per amount and group (``"all"`` or ``"attribute = category"``) and level: real, released and the
        relative error (by the real interquartile range).
    point_masses : pandas.DataFrame
        Per amount: the real data's most frequent values and their shares in both tables.
    range_queries : pandas.DataFrame
        The workload: each query as text, its real and released answers (shares of rows).
    notes : list of str
    """

    regressions: pd.DataFrame
    comparisons: list
    correlations: pd.DataFrame | None
    quantiles: pd.DataFrame
    point_masses: pd.DataFrame
    range_queries: pd.DataFrame
    notes: list = field(default_factory=list)

    def summary(self):
        """The headline numbers (a dict): mean CI overlap and R² ratio over the regressions, the largest
        change of a Pearson and of a Spearman correlation, the mean quantile error, the largest point-mass
        error (in shares), the range queries' mean absolute error."""
        r = self.regressions
        out = {"mean_ci_overlap": float(r["mean_ci_overlap"].mean()) if len(r) else None,
               "r2_ratio": float(r["r2_ratio"].mean()) if len(r) else None}
        if self.correlations is not None and len(self.correlations):
            c = self.correlations
            out["max_pearson_change"] = float((c["pearson_released"] - c["pearson_real"]).abs().max())
            out["max_spearman_change"] = float((c["spearman_released"] - c["spearman_real"]).abs().max())
        q = self.quantiles
        out["mean_quantile_error"] = float(q["relative_error"].mean()) if len(q) else None
        m = self.point_masses
        out["max_point_mass_error"] = float((m["share_released"] - m["share_real"]).abs().max()) if len(m) else None
        w = self.range_queries
        out["range_query_mae"] = float((w["released"] - w["real"]).abs().mean()) if len(w) else None
        return out


def _regressions(real, released, attributes, named, notes):
    categorical = {a.name for a in attributes if isinstance(a, Categorical)}
    defaults = default_regressions(real, attributes)
    rows, comparisons = [], []
    names = [a.name for a in attributes]
    for text in [*named, *(d for d in defaults if d not in named)]:
        y, xs = parse_regression(text, names)
        try:
            with warnings.catch_warnings():
                # A released table may hold a constant column: statsmodels fits by pseudo-inverse and warns.
                warnings.simplefilter("ignore")
                comp = regression_comparison(real, released, y=y, X=xs,
                                             categorical=[x for x in xs if x in categorical]) \
                    if names_its_variables(text, names) else regression_comparison(real, released, formula=text)
                r2_real, r2_released = comp.r2_real, comp.r2_released
        except (ValueError, np.linalg.LinAlgError) as err:
            notes.append(f"regression {text!r} not fitted: {err}")
            continue
        comparisons.append(comp)
        rows.append({"formula": text, "mean_ci_overlap": comp.mean_ci_overlap,
                     "max_standardized_difference": float(comp.table["standardized_difference"].max()),
                     "r2_real": r2_real, "r2_released": r2_released,
                     "r2_ratio": r2_released / r2_real if r2_real else np.nan, "default": text not in named,
                     "uncompared": comp.n_uncompared})
    cols = ["formula", "mean_ci_overlap", "max_standardized_difference", "r2_real", "r2_released", "r2_ratio",
            "default", "uncompared"]
    return pd.DataFrame(rows, columns=cols), comparisons


def _correlations(real, released, numeric):
    if len(numeric) < 2:
        return None
    rows = []
    methods = {"pearson": "pearson", "spearman": "spearman"}
    mats = {(m, w): df[numeric].astype(float).corr(method=m) for m in methods for w, df in
            (("real", real), ("released", released))}
    for i, a in enumerate(numeric):
        for b in numeric[i + 1:]:
            rows.append({"pair": f"{a} ~ {b}", **{f"{m}_{w}": float(mats[(m, w)].loc[a, b]) for m in methods
                                                    for w in ("real", "released")}})
    return pd.DataFrame(rows)


def _quantiles(real, released, amounts, categorical):
    rows = []
    for y in amounts:
        r_all, s_all = real[y].astype(float), released[y].astype(float)
        iqr = float(r_all.quantile(0.75) - r_all.quantile(0.25)) or float(r_all.std()) or 1.0
        groups = [("all", np.ones(len(real), bool), np.ones(len(released), bool))]
        for c in categorical:
            for level in pd.unique(real[c].dropna()):
                groups.append((f"{c} = {level}", (real[c] == level).to_numpy(), (released[c] == level).to_numpy()))
        for name, mr, ms in groups:
            r, s = r_all[mr].dropna(), s_all[ms].dropna()
            if len(r) < 20 or len(s) < 20:
                continue
            for q in QUANTILES:
                a, b = float(r.quantile(q)), float(s.quantile(q))
                rows.append({"amount": y, "group": name, "quantile": q, "real": a, "released": b,
                             "relative_error": abs(b - a) / iqr})
    return pd.DataFrame(rows, columns=["amount", "group", "quantile", "real", "released", "relative_error"])


def _point_masses(real, released, amounts, top=3):
    rows = []
    for y in amounts:
        r, s = real[y].dropna(), released[y].dropna()
        if not len(r):
            continue
        for value, share in r.value_counts(normalize=True).head(top).items():
            rows.append({"amount": y, "value": value, "share_real": float(share),
                         "share_released": float((s == value).mean()) if len(s) else 0.0})
    return pd.DataFrame(rows, columns=["amount", "value", "share_real", "share_released"])


def _range_queries(real, released, attributes, n, gen):
    rows = []
    names = [a.name for a in attributes]
    for _ in range(n):
        k = int(gen.integers(1, min(3, len(names)) + 1))
        chosen = gen.choice(len(names), size=k, replace=False)
        mr, ms, text = np.ones(len(real), bool), np.ones(len(released), bool), []
        for j in chosen:
            a = attributes[int(j)]
            col_r, col_s = real[a.name], released[a.name]
            if isinstance(a, Categorical):
                cats = list(a.categories)
                take = [c for c in cats if gen.random() < 0.5] or [cats[int(gen.integers(len(cats)))]]
                mr &= col_r.isin(take).to_numpy()
                ms &= col_s.isin(take).to_numpy()
                text.append(f"{a.name} in {take}")
            else:
                obs = col_r.dropna().to_numpy(dtype=float)
                if not obs.size:
                    continue
                lo, hi = np.sort(gen.choice(obs, size=2))
                vr, vs = col_r.to_numpy(dtype=float, na_value=np.nan), col_s.to_numpy(dtype=float, na_value=np.nan)
                with np.errstate(invalid="ignore"):
                    mr &= (vr >= lo) & (vr <= hi)
                    ms &= (vs >= lo) & (vs <= hi)
                text.append(f"{lo:g} <= {a.name} <= {hi:g}")
        rows.append({"query": " and ".join(text), "real": float(mr.mean()) if len(real) else 0.0,
                     "released": float(ms.mean()) if len(released) else 0.0})
    return pd.DataFrame(rows, columns=["query", "real", "released"])


def analysis_measures(real, released, attributes, *, regressions=(), queries=200, rng=None):
    """Compare what analysts estimate on ``released`` with the same on ``real`` (module docstring).

    Parameters
    ----------
    real, released : pandas.DataFrame
        Both hold the attribute columns.
    attributes : sequence of Ordinal, Categorical or Continuous
    regressions : sequence of str
        ``"y ~ x1 + x2"`` models, or formulas as statsmodels writes them (:func:`parse_regression`), to compare
        besides the default ones (each amount on every other attribute).
    queries : int, default 200
        Random range queries in the workload.
    rng : numpy.random.Generator, int or None
        Draws the workload.

    Returns
    -------
    AnalysisMeasures
    """
    check_tables(real=real, released=released)
    queries = check_positive_int(queries, "queries", minimum=0)
    gen = check_rng(rng)
    names = [a.name for a in attributes]
    for df, which in ((real, "real"), (released, "released")):
        absent = [n for n in names if n not in df.columns]
        if absent:
            raise ValueError(f"the {which} table lacks the attribute columns {absent}.")
    named = list(regressions)
    for text in named:
        y, xs = parse_regression(text, names)
        unknown = [c for c in [y, *xs] if c not in names]
        if unknown:
            raise ValueError(f"regression {text!r} names {unknown}, which are not attributes ({names}).")
    notes = []
    categorical = [a.name for a in attributes if isinstance(a, Categorical)]
    numeric = [a.name for a in attributes if not isinstance(a, Categorical)]
    amounts = amount_names(real, attributes)
    table, comparisons = _regressions(real, released, attributes, named, notes)
    return AnalysisMeasures(regressions=table, comparisons=comparisons,
                            correlations=_correlations(real, released, numeric),
                            quantiles=_quantiles(real, released, amounts, categorical),
                            point_masses=_point_masses(real, released, amounts),
                            range_queries=_range_queries(real, released, list(attributes), queries, gen),
                            notes=notes)
