"""The evaluation report: utility and disclosure risk of a released table against the real one.

:func:`evaluate` compares a released table (RWN output, imputed data or synthetic data) with
the real table it came from, attribute by attribute on the public domains:

- **marginals**: each attribute's distribution on its public bins (missing as a bin of its own)
  and its total variation distance; the mean 2-way TVD;
- **correlations** of the numeric attributes (pairwise-complete), and their difference;
- **pMSE** of a logistic model and of a tree, with their null ratios;
- **what analysts estimate** (first in the report, :mod:`dpknn.metrics._analysis`): regressions named
  by the user and each amount on the other attributes (CI overlap, standardised differences, R²),
  Pearson and Spearman correlations, quantiles overall and within categories, point masses, and a
  workload of random range queries on the original scale;
- **risk**: distance to the closest record against the real data's own nearest-neighbour
  distances, nearest-neighbour linkage when the released rows carry their records' labels,
  correct attribution probability of a sensitive attribute, and sample uniques.

:class:`EvaluationReport` writes it as ``evaluation.md``, ``evaluation.json`` and PNG figures.
**Every number in it is computed from the real data**: the report is for the curator and is
confidential like the data; it is not a release.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpknn.metrics._analysis import analysis_measures, parse_regression
from dpknn.metrics._disclosure import (
    correct_attribution_probability,
    distance_to_closest_record,
    linkage,
    sample_uniques,
)
from dpknn.metrics._fidelity import tvd
from dpknn.metrics._pmse import pmse
from dpknn.metrics._tables import check_tables
from dpknn.schema._attributes import Categorical, Continuous, blank_outside_universes, observed_outside_universes
from dpknn.schema._discretization import Discretization
from dpknn.utils._io import markdown_table
from dpknn.utils._progress import progress_bar
from dpknn.utils._report import Report, crowded
from dpknn.utils._validation import check_positive_int, check_rng

__all__ = ["EvaluationReport", "evaluate", "parse_regression"]

logger = logging.getLogger(__name__)

CONFIDENTIAL = "CONFIDENTIAL: computed from the real data; for the curator, not for publication"
FIGURES = {"marginals": "marginals.png", "correlation": "correlation.png", "risk": "risk.png",
           "regressions": "regressions.png"}


def _bin_labels(disc, j):
    a = disc.attributes[j]
    extra = ["not applicable"] if a.universe is not None else []
    if isinstance(a, Categorical):
        return [str(c) for c in a.categories] + extra
    if isinstance(a, Continuous):
        w = (a.upper - a.lower) / disc.bins
        return [f"{a.lower + i * w:.3g}–{a.lower + (i + 1) * w:.3g}" for i in range(disc.bins)] + extra
    first, last = disc.ordinal_bins(a)
    return [str(lo) if lo == hi else f"{lo}–{hi}" for lo, hi in zip(first.tolist(), last.tolist())] + extra


def _marginals(real, released, disc):
    codes_r, codes_s = disc.encode(real), disc.encode(released)
    out, rows = {}, []
    for j, name in enumerate(disc.names):
        size = int(disc.sizes[j])
        p = np.bincount(np.where(codes_r[j] < 0, size, codes_r[j]), minlength=size + 1) / len(real)
        q = np.bincount(np.where(codes_s[j] < 0, size, codes_s[j]), minlength=size + 1) / len(released)
        table = pd.DataFrame({"real": p, "released": q}, index=[*_bin_labels(disc, j), "missing"])
        table.index.name = name
        out[name] = table
        rows.append({"attribute": name, "tvd": 0.5 * float(np.abs(p - q).sum()), "missing_real": float(p[-1]),
                     "missing_released": float(q[-1])})
    return out, pd.DataFrame(rows).set_index("attribute")


def _decile_table(real, released, name):
    """Shares of real and released rows in the bins between the real observed values' deciles (released
    values beyond the real range fall in the end bins), and in "missing"; titled by its binning."""
    obs = pd.to_numeric(real[name], errors="coerce").dropna().to_numpy(dtype=np.float64)
    edges = np.unique(np.quantile(obs, np.linspace(0, 1, 11)))
    if edges.size < 3:
        return None
    inner = edges[1:-1]
    out = {}
    for which, table in (("real", real), ("released", released)):
        v = pd.to_numeric(table[name], errors="coerce").to_numpy(dtype=np.float64)
        seen = ~np.isnan(v)
        counts = np.bincount(np.searchsorted(inner, v[seen], side="right"), minlength=inner.size + 1)
        out[which] = np.r_[counts, (~seen).sum()] / max(len(table), 1)
    def num(v):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"

    labels = [f"{num(a)}–{num(b)}" for a, b in itertools.pairwise(edges)] + ["missing"]
    t = pd.DataFrame(out, index=labels)
    t.index.name = name
    t.attrs["binning"] = "bins at the real deciles"
    return t


def _correlations(real, released, names):
    if len(names) < 2:
        return None
    before = real[names].astype(float).corr()
    after = released[names].astype(float).corr()
    return {"before": before, "after": after, "difference": after - before}


def _changed_shares(real, released, names, label):
    """Per attribute, the share of released records whose value differs from their own real
    record's; the caller has checked that every released label is a unique real label."""
    src = pd.Index(real[label]) if label is not None else real.index
    rel = pd.Index(released[label]) if label is not None else released.index
    own = real.iloc[src.get_indexer(rel)]
    out = {}
    for c in names:
        a, b = own[c].to_numpy(dtype=object), released[c].to_numpy(dtype=object)
        miss_a, miss_b = pd.isna(a), pd.isna(b)
        same = miss_a & miss_b
        both = ~miss_a & ~miss_b
        # Compared only where both are present: pd.NA has no truth value.
        same[both] = np.asarray(a[both] == b[both], dtype=bool)
        out[c] = float(1.0 - same.mean()) if len(b) else 0.0
    return out


def _sample(df, rows, gen):
    return df if len(df) <= rows else df.iloc[np.sort(gen.choice(len(df), rows, replace=False))]


@dataclass(frozen=True)
class EvaluationReport(Report):
    """Utility and disclosure risk of a released table (see :func:`evaluate`). CONFIDENTIAL.

    Attributes
    ----------
    n_real, n_released : int
    record_level : bool
        True when the released rows carry the labels of real records (perturbed or imputed
        data): linkage is then measured.
    marginal_tvd : pandas.DataFrame
        Per attribute: 1-way TVD and the missing shares of both tables.
    marginals : dict of str to pandas.DataFrame
        Per attribute: the shares of each public bin (and "missing") in both tables; a numeric attribute
        whose real values crowd into a few public bins (:func:`dpknn.utils._report.crowded`), the shares
        between the real deciles instead (``attrs["binning"]`` says so), for the figure.
    tvd2 : float or None
        Mean 2-way TVD (missing as a value); None with one attribute.
    correlation : dict or None
        ``before`` (real), ``after`` (released) and ``difference`` correlation matrices of the
        numeric attributes.
    pmse : dict of str to PMSE
        "logistic" and "cart".
    regressions : list of RegressionComparison
    linkage : Linkage or None
    closest : ClosestRecords
    attribution : AttributionRisk or None
    uniques : SampleUniques
    keys : list of str
        The quasi-identifiers used by the risk measures.
    target : str or None
        The sensitive attribute of the attribution risk.
    notes : list of str
        What was skipped and why.
    changed_share : dict of str to float
        Record-level releases only (empty otherwise): per attribute, the share of released
        records whose value differs from their own real record's (two missing values count as
        equal). An attribute at 0 was released as it was.
    """

    stem = "evaluation"

    n_real: int
    n_released: int
    record_level: bool
    marginal_tvd: pd.DataFrame
    marginals: dict
    tvd2: float | None
    correlation: dict | None
    pmse: dict
    regressions: list
    linkage: object
    closest: object
    attribution: object
    uniques: object
    keys: list
    target: str | None
    notes: list = field(default_factory=list)
    changed_share: dict = field(default_factory=dict)
    analysis: object = None

    def to_dict(self):
        """The report's numbers as a JSON-ready dict (marked confidential)."""
        def pm(r):
            return {"pmse": r.pmse, "null_mean": r.null_mean, "ratio": r.ratio,
                    "standardized": None if math.isnan(r.standardized) else r.standardized, "null": r.null}

        out = {"confidential": CONFIDENTIAL, "n_real": self.n_real, "n_released": self.n_released,
               "record_level": self.record_level,
               "marginal_tvd": self.marginal_tvd.reset_index().to_dict(orient="records"),
               "tvd2": self.tvd2, "pmse": {k: pm(v) for k, v in self.pmse.items()},
               "regressions": [{"formula": r.formula, "family": r.family, "n_real": r.n_real,
                                "n_released": r.n_released,
                                "coefficients": r.table.reset_index().to_dict(orient="records")}
                               for r in self.regressions],
               "closest_record": {"median_released": float(self.closest.released.median()),
                                  "median_real": float(self.closest.original.median()),
                                  "exact_share": self.closest.exact_share,
                                  "real_exact_share": self.closest.original_exact_share},
               "uniques": vars(self.uniques), "keys": self.keys, "target": self.target, "notes": self.notes,
               "changed_share": self.changed_share}
        if self.analysis is not None:
            a = self.analysis
            out["analysis"] = {"summary": a.summary(), "regressions": a.regressions.to_dict(orient="records"),
                               "correlations": None if a.correlations is None else
                               a.correlations.to_dict(orient="records"),
                               "quantiles": a.quantiles.to_dict(orient="records"),
                               "point_masses": a.point_masses.to_dict(orient="records"),
                               "range_query_mae": a.summary()["range_query_mae"]}
        if self.linkage is not None:
            out["linkage"] = {"rate": self.linkage.rate, "chance": self.linkage.chance, "lift": self.linkage.lift}
        if self.attribution is not None:
            a = self.attribution
            out["attribution"] = {"cap": a.cap, "cap_zero": a.cap_zero, "matched_share": a.matched_share,
                                  "baseline": a.baseline}
        return json.loads(json.dumps(out, default=float))

    def to_markdown(self):
        """The report as Markdown (tables of the utility and risk measures)."""
        kind = ("record-level (released rows carry the real records' labels)" if self.record_level
                else "not record-level (synthetic, or no labels given)")
        lines = [f"# Evaluation of a released table\n\n**{CONFIDENTIAL}.**\n",
                 f"- real rows: {self.n_real}; released rows: {self.n_released}; {kind}",
                 f"- quasi-identifiers of the risk measures: {', '.join(self.keys)}"
                 + (f"; sensitive attribute: {self.target}" if self.target else ""), ""]
        if self.analysis is not None:
            lines += _analysis_markdown(self.analysis)
        if self.changed_share:
            table = pd.DataFrame({"share changed": pd.Series(self.changed_share)})
            table.index.name = "attribute"
            unchanged = [c for c, s in self.changed_share.items() if s == 0]
            lines += ["## Values changed", "", "Share of released records whose value differs from their own real "
                      "record's:", "", markdown_table(table), ""]
            if unchanged:
                lines += [f"Released exactly as they were: {', '.join(unchanged)} (for RWN output: every neighbour "
                          "shared the record's value; see docs/rwn.md).", ""]
        lines += ["## Marginals", "", "Total variation distance of each attribute on its public bins (missing is a "
                  "bin of its own; 0 = identical, 1 = disjoint):", "", markdown_table(self.marginal_tvd), ""]
        if self.tvd2 is not None:
            lines += [f"Mean 2-way TVD over all attribute pairs: **{self.tvd2:.4f}**.", ""]
        lines += [f"![marginals]({FIGURES['marginals']})", ""]
        if self.correlation is not None:
            diff = self.correlation["difference"].to_numpy()
            largest = float(np.nanmax(np.abs(diff))) if diff.size else 0.0
            lines += ["## Correlations", "", f"Largest absolute change of a correlation between numeric attributes: "
                      f"**{largest:.3f}**.", "", f"![correlations]({FIGURES['correlation']})", ""]
        lines += ["## Propensity score (pMSE)", "",
                  "A classifier tries to tell released rows from real ones. Ratio = pMSE / its null expectation; "
                  "two independent samples of one distribution score about 1/(1 − c), c the released share "
                  "(2 for tables of equal size).", "",
                  "| model | pMSE | null mean | ratio | standardised |", "|---|---|---|---|---|"]
        for name, r in self.pmse.items():
            std = "" if math.isnan(r.standardized) else f"{r.standardized:.2f}"
            lines.append(f"| {name} ({r.null} null) | {r.pmse:.3g} | {r.null_mean:.3g} | {r.ratio:.2f} | {std} |")
        lines.append("")
        if self.regressions:
            lines += ["## Regressions", "", "Coefficients fitted to both tables (complete cases); CI overlap "
                      "(1 = identical intervals, negative = disjoint) and standardised difference "
                      "|β_real − β_released| / SE_real.", ""]
            for r in self.regressions:
                t = r.table[["coef_real", "se_real", "coef_released", "se_released", "ci_overlap",
                             "standardized_difference"]]
                lines += [f"### {r.formula} ({r.family}; rows used: real {r.n_real}, released {r.n_released})", "",
                          # Significant digits: a coefficient per dollar of income is far below 1e-4.
                          markdown_table(t, fmt="{:.4g}"), "", f"Mean CI overlap: **{r.mean_ci_overlap:.3f}**.",
                          ""]
            lines += [f"![regressions]({FIGURES['regressions']})", ""]
        lines += ["## Disclosure risk", ""]
        c = self.closest
        lines += [f"- **Distance to the closest real record** (standardised units): median "
                  f"{c.released.median():.3g} for released rows, against {c.original.median():.3g} from each real "
                  f"record to its nearest other one. Released rows equal to a real record on the quasi-identifiers: "
                  f"{100 * c.exact_share:.2f} %; real records with an exact twin: "
                  f"{100 * c.original_exact_share:.2f} %."]
        if self.linkage is not None:
            lk = self.linkage
            lines.append(f"- **Linkage**: an intruder matching each released row to its nearest real record finds "
                         f"its own source with probability {lk.rate:.4f}, against {lk.chance:.2g} by chance "
                         f"(×{lk.lift:.0f}).")
        if self.attribution is not None:
            a = self.attribution
            lines.append(f"- **Correct attribution probability** of {self.target}: {a.cap:.4f} on the "
                         f"{100 * a.matched_share:.1f} % of real records whose key occurs in the release "
                         f"({a.cap_zero:.4f} counting unmatched as 0), against {a.baseline:.4f} from the marginal "
                         "distribution alone.")
        u = self.uniques
        lines.append(f"- **Sample uniques** on the quasi-identifiers: {u.original} real records "
                     f"({100 * u.original_share:.2f} %), {u.released} released records; {u.replicated} released "
                     f"records reproduce a real sample unique's key ({100 * u.replicated_share:.2f} %).")
        lines += ["", f"![risk]({FIGURES['risk']})", ""]
        if self.notes:
            lines += ["## Notes", "", *[f"- {n}" for n in self.notes], ""]
        return "\n".join(lines)

    def figures(self):
        """``[(file name, matplotlib Figure)]`` (needs matplotlib)."""
        from dpknn.utils._plotting import (
            correlation_figure,
            evaluation_risk_figure,
            marginals_figure,
            regression_intervals_figure,
        )

        out = [(FIGURES["marginals"], marginals_figure(self.marginals, title=f"Marginals\n{CONFIDENTIAL}"))]
        if self.correlation is not None:
            out.append((FIGURES["correlation"], correlation_figure(
                self.correlation, names=("real", "released"), title=f"Correlations\n{CONFIDENTIAL}")))
        out.append((FIGURES["risk"], evaluation_risk_figure(self, title=f"Disclosure risk\n{CONFIDENTIAL}")))
        if self.regressions:
            out.append((FIGURES["regressions"], regression_intervals_figure(
                self.regressions, title=f"Regression coefficients\n{CONFIDENTIAL}")))
        return out


def _analysis_markdown(a):
    """The report's first section: what analysts estimate (:class:`~dpknn.metrics._analysis.AnalysisMeasures`)."""
    s = a.summary()

    def f(v, fmt=".3f"):
        return "-" if v is None or (isinstance(v, float) and not np.isfinite(v)) else format(v, fmt)

    lines = ["## What analysts estimate", "",
             "Read these first: a table can score a small TVD on coarse bins while the regressions, quantiles and "
             "zeros an analyst uses are lost.", "",
             f"- mean CI overlap of the regressions: **{f(s['mean_ci_overlap'])}** (1 = identical intervals, "
             f"negative = disjoint); R² released / real: **{f(s['r2_ratio'], '.2f')}**",
             f"- largest change of a correlation: Pearson {f(s.get('max_pearson_change'))}, Spearman "
             f"{f(s.get('max_spearman_change'))}",
             f"- quantiles p10-p90 of the amounts, overall and within categories: mean error "
             f"{f(s['mean_quantile_error'])} interquartile ranges",
             f"- point masses (the most frequent exact values): largest error {f(s['max_point_mass_error'])} of "
             "the rows",
             f"- {len(a.range_queries)} random range queries on the original scale: mean absolute error "
             f"{f(s['range_query_mae'], '.4f')} of the rows", ""]
    if len(a.regressions):
        t = a.regressions.set_index("formula")[["mean_ci_overlap", "max_standardized_difference", "r2_real",
                                                 "r2_released", "default"]]
        lines += ["### Regressions", "", "Named by the user, then each amount on every other attribute (default). "
                  "Coefficient tables below.", "", markdown_table(t, fmt="{:.3g}"), ""]
    overall = a.quantiles[a.quantiles["group"] == "all"]
    if len(overall):
        t = overall.assign(quantile=[f"{y} p{100 * q:.0f}" for y, q in zip(overall["amount"], overall["quantile"])])
        lines += ["### Quantiles of the amounts", "", "Relative error: by the real interquartile range.", "",
                  markdown_table(t.set_index("quantile")[["real", "released", "relative_error"]], fmt="{:.4g}"), ""]
    if len(a.point_masses):
        t = a.point_masses.assign(value=[f"{y} = {v:g}" for y, v in zip(a.point_masses["amount"],
                                                                        a.point_masses["value"])])
        lines += ["### Point masses", "", "The real data's most frequent exact values of each amount: their shares.",
                  "", markdown_table(t.set_index("value")[["share_real", "share_released"]], fmt="{:.4g}"), ""]
    if a.notes:
        lines += [*[f"- {n}" for n in a.notes], ""]
    return lines


def evaluate(real, released, attributes, *, label=None, same_order=False, regressions=(), keys=None, target=None,
             bins=10, max_rows=100_000, progress=False, rng=None):
    """Compare a released table with the real one: utility and disclosure risk.

    Parameters
    ----------
    real, released : pandas.DataFrame
        Both hold the attribute columns (values inside the declared domains).
    attributes : sequence of Ordinal, Categorical or Continuous
        The public domains (as for synthesis): bins of the marginals, codes of the keys.
    label : str or None
        Column of record labels in both tables. When every released label is a real record's,
        the release is record-level and linkage is measured. A label that is not a column of
        both tables, or that repeats in the real table, is refused (ValueError).
    same_order : bool, default False
        Without ``label``: the DataFrame indexes are the record labels (for files read from
        disk, the row positions: ``dpknn rwn`` and ``dpknn impute`` keep the records' order).
        Neither: no linkage.
    regressions : sequence of str
        Models ``"y ~ x1 + x2"`` to compare (OLS, or logit for a two-category response).
    keys : sequence of str or None
        Quasi-identifiers for the risk measures; None: every attribute but ``target``.
    target : str or None
        Sensitive attribute for the correct attribution probability; None: not measured.
    bins : int, default 10
        Public bins of numeric attributes.
    max_rows : int, default 100000
        The pMSE fits use at most this many rows of each table (a uniform sample), to bound
        their time; the other measures use every row.
    progress : bool, default False
        A tqdm bar over the measures (the pMSE fits and the risk measures take longest).
    rng : numpy.random.Generator, int or None
        Seeds the pMSE samples, trees and permutations.

    Returns
    -------
    EvaluationReport
    """
    disc = Discretization(attributes, bins)
    names = disc.names
    max_rows = check_positive_int(max_rows, "max_rows")
    check_tables(real=real, released=released)
    if target is not None and target not in names:
        raise ValueError(f"target={target!r} is not an attribute; attributes are {names}.")
    keys = [n for n in names if n != target] if keys is None else list(keys)
    bad = [k for k in keys if k not in names]
    if bad or not keys:
        raise ValueError(f"keys must be a non-empty list of attribute names, got {keys!r}.")
    if label is not None and same_order:
        raise ValueError("give label (a column of record labels) or same_order=True, not both.")
    if label is not None:
        # Asked-for linkage that cannot run is an error, not a note: a typo must not pass as "no risk measured".
        for table, which in ((real, "real"), (released, "released")):
            if label not in table.columns:
                raise ValueError(f"label={label!r} is not a column of the {which} table (its columns: "
                                 f"{[str(c) for c in table.columns]}); check the spelling, or leave label out.")
        repeated = real[label][real[label].duplicated()].tolist()
        if repeated:
            raise ValueError(f"label={label!r}: the real table's record labels are not unique ({len(repeated)} repeat "
                             f"an earlier one, e.g. {repeated[0]!r}); linkage needs one label per record.")
    for r in regressions:   # a malformed model is refused before any work
        parse_regression(r, names)
    gen = check_rng(rng)
    notes = []
    # One meaning of a universe everywhere: outside it an attribute is not applicable, in both tables
    # (docs/schema.md). Values observed there are said, not compared.
    for table, which in ((real, "real"), (released, "released")):
        for name, n in observed_outside_universes(table, disc.attributes).items():
            notes.append(f"{n:,} observed value(s) of {name} in the {which} table lie outside its universe: not "
                         "applicable there, so read as missing.")
    real, released = (blank_outside_universes(t, disc.attributes) for t in (real, released))
    bar = progress_bar(total=6, progress=progress, desc="evaluate", unit="measure")

    def step(what):
        bar.set_postfix_str(what)
        logger.info("evaluate: %s", what)

    step("marginals")
    marginals, marginal_tvd = _marginals(real, released, disc)
    for a in disc.attributes:   # skewed amounts are drawn on deciles (the TVD stays on the public bins)
        values = marginals[a.name]["real"].iloc[:disc.value_codes(a)]   # not "not applicable" nor "missing"
        if not isinstance(a, Categorical) and crowded(values):
            table = _decile_table(real, released, a.name)
            if table is not None:
                marginals[a.name] = table
    bar.update()
    step("2-way TVD")
    tvd2 = tvd(real, released, attributes, way=2, bins=bins) if len(names) >= 2 else None
    bar.update()
    step("correlations")
    numeric = [a.name for a in disc.attributes if not isinstance(a, Categorical)]
    correlation = _correlations(real, released, numeric)
    if correlation is None:
        notes.append("correlations need two numeric attributes.")
    bar.update()
    step("pMSE")
    r_s, s_s = _sample(real[names], max_rows, gen), _sample(released[names], max_rows, gen)
    if len(r_s) < len(real) or len(s_s) < len(released):
        notes.append(f"pMSE on uniform samples of {len(r_s)} real and {len(s_s)} released rows (max_rows).")
    scores = {"logistic": pmse(r_s, s_s, model="logistic", rng=gen), "cart": pmse(r_s, s_s, model="cart", rng=gen)}
    bar.update()
    step("what analysts estimate")
    analysis = analysis_measures(real, released, disc.attributes, regressions=regressions, rng=gen)
    comparisons = analysis.comparisons
    bar.update()
    step("disclosure risk")
    record_level = False
    link = None
    changed_share = {}
    if label is None and not same_order:
        notes.append("no record labels given (label or same_order): linkage not measured.")
    else:
        try:
            link = linkage(real, released, columns=keys, label=label)
            record_level = True
            changed_share = _changed_shares(real, released, names, label)
        except ValueError as err:
            if label is not None:
                # Asked for by name: a label that matches no real record is a mistake, not a finding.
                raise ValueError(f"label {label!r}: linkage cannot be measured: {err}") from None
            notes.append(f"linkage not measured: {err}")
    closest = distance_to_closest_record(real, released, columns=keys)
    attribution = None
    if target is not None:
        attribution = correct_attribution_probability(real, released, keys=keys, target=target,
                                                      attributes=attributes, bins=bins)
    else:
        notes.append("no sensitive attribute given (target): attribution risk not measured.")
    uniques = sample_uniques(real, released, keys=keys, attributes=attributes, bins=bins)
    bar.update()
    bar.close()
    return EvaluationReport(n_real=len(real), n_released=len(released), record_level=record_level,
                            marginal_tvd=marginal_tvd, marginals=marginals, tvd2=tvd2, correlation=correlation,
                            pmse=scores, regressions=comparisons, linkage=link, closest=closest,
                            attribution=attribution, uniques=uniques, keys=keys, target=target, notes=notes,
                            changed_share=changed_share, analysis=analysis)

