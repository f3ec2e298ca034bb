"""``dpknn demo`` and ``dpknn experiment census``: run, print, and write report files.

This module is the command line's presentation layer: it prints tables to standard output
(allowed here, unlike the library) and writes its files all or nothing (:mod:`dpknn.utils._io`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from pathlib import Path

import numpy as np

from dpknn.accounting import BudgetAccountant
from dpknn.datasets._census import census_schema, make_census
from dpknn.experiments._census import (
    COUNT_EPSILON,
    EPSILON,
    METHOD_LABELS,
    METHODS,
    PAPER_METHODS,
    QUERIES,
    mse_table,
    release_by_method,
    run_experiment,
    truth,
)
from dpknn.mechanisms._base import PrivacyUnit, to_json
from dpknn.mechanisms._smooth import LN2, CauchyCalibration, choose_gamma, choose_polyplace
from dpknn.releases._queries import PrivateImputation
from dpknn.utils._io import text_writer, write_with_figures
from dpknn.utils._progress import progress_bar

__all__ = ["budget_text", "paper_gap_notes", "run_census_experiment", "run_demo"]

logger = logging.getLogger(__name__)

_UNITS = {"mean": "mean wage income (dollars)", "proportion": "share of persons (0 to 1)"}


def budget_text(epsilon, count_epsilon):
    """The demo's one statement of its budget: ε per query, a mean's (or proportion's) part plus
    its count's (or denominator's), as the report and the figure both print it."""
    return (f"epsilon per query {epsilon + count_epsilon:.4f} = {epsilon:.4f} (mean or numerator) + "
            f"{count_epsilon:.4f} (count or denominator)")


def _fmt(v, kind):
    return f"{v:.4f}" if kind == "proportion" else f"{v:,.1f}"


def run_demo(*, n=200_000, k=1, epsilon=EPSILON, count_epsilon=COUNT_EPSILON, seed=None,
             out="dpknn-demo", diagnostics=None, progress=True):
    """The main job on built-in data; returns 0. See ``dpknn demo --help``.

    ``results.json`` holds only what may be published (released values, budgets, public
    parameters). ``report.md`` and ``demo.png`` are the curator's evaluation on synthetic data:
    they show L1(D), the true values and the non-private baseline, and are marked so. Curator
    diagnostics (L1 cases, noise scales) go to ``diagnostics`` only when a path is given.

    Parameters
    ----------
    n : int
        Records of the synthetic census.
    k : int
        Donors per incomplete record.
    epsilon : float
        The epsilon of the mean mechanism (add/remove one record).
    count_epsilon : float
        The epsilon of the subpopulation's size.
    seed : int or None
        The seed of the data and the noise (None: a cryptographic source).
    out : str or Path
        The output folder.
    diagnostics : str or Path or None
        Where to write the curator's diagnostics (confidential), or None for none.
    progress : bool
        Show a progress bar.

    Returns
    -------
    int
        0, the command's exit status.
    """
    t0 = time.perf_counter()
    bar = progress_bar(total=4, progress=progress, desc="dpknn demo", unit="step")
    rng = np.random.default_rng(seed)
    bar.set_postfix_str("synthetic census")
    df = make_census(n, rng=rng)
    bar.update(1)
    bar.set_postfix_str("exact k-NN imputation and L1(D)")
    # Without a seed the noise comes from the OS CSPRNG; a seed makes the whole run reproducible.
    # The methods are compared side by side, each an alternative release of the same queries: the
    # ledger records them all without a limit, and the report states each method's own budget.
    private = PrivateImputation(df, census_schema(), k=k, accountant=BudgetAccountant(math.inf),
                                rng=None if seed is None else rng)
    imp = private.imputer
    bar.update(1)
    bar.set_postfix_str("releases")
    rows = release_by_method(private, epsilon=epsilon, count_epsilon=count_epsilon)
    truths = truth(df)
    bar.update(1)
    stats = imp.curator_dict()
    stats.update(n=n, k=k)
    published = [{"query": r["query"], "method": r["method"], **r["release"].to_dict()}
                 for r in rows if r["differentially_private"]]
    curator = {"confidential": True, "imputation": stats,
               "releases": [{"query": r["query"], "method": r["method"], **r["release"].curator_dict()}
                            for r in rows if r["differentially_private"]]}
    for r in rows:
        r.pop("release", None)
        r["truth"] = truths[r["query"]]
        r["error"] = r["value"] - r["truth"]

    budget = budget_text(epsilon, count_epsilon)
    report = _demo_report(rows, truths, stats, budget=budget, epsilon=epsilon, count_epsilon=count_epsilon,
                          seconds=time.perf_counter() - t0, seed=seed)

    bar.set_postfix_str("writing files")
    out = Path(out)
    files = [(out / "report.md", text_writer(report)),
             (out / "results.json", text_writer(to_json(
                 {"differentially_private": True, "privacy_unit": PrivacyUnit.ADD_REMOVE.value,
                  "epsilon_per_query": epsilon + count_epsilon, "releases": published})))]
    if diagnostics is not None:
        files.append((Path(diagnostics), text_writer(to_json(curator))))

    def figures():
        from dpknn.utils._plotting import demo_figure
        return [(out / "demo.png", demo_figure(
            rows, truths, labels={k_: q.label for k_, q in QUERIES.items()}, method_labels=METHOD_LABELS,
            units={k_: _UNITS[q.kind] for k_, q in QUERIES.items()},
            title=f"CONFIDENTIAL curator view: n={n:,}, L1(D)={stats['l1']}, {budget}"))]

    write_with_figures(files, figures)
    bar.update(1)
    bar.close()
    print(report)
    print(f"Wrote {Path(out) / 'report.md'}, {Path(out) / 'results.json'} and {Path(out) / 'demo.png'}")
    return 0


def _demo_report(rows, truths, stats, *, budget, epsilon, count_epsilon, seconds, seed):
    """The demo's CONFIDENTIAL curator report (Markdown): L1(D), true values, every method."""
    lines = ["# dpknn demo: DP releases on k-NN-imputed synthetic census data", "",
             "**CONFIDENTIAL curator evaluation** (synthetic data): this report shows L1(D), true values and "
             "a non-private baseline, none of which may be published. What may be published is in "
             "`results.json`.", "",
             f"{stats['n']:,} synthetic 1940-style census records, {stats['n_incomplete']:,} with INCWAGE missing "
             f"(MAR: more often for groups that earn more). Exact {stats['k']}-NN imputation on 9 known attributes "
             f"(AGE by decade).", "",
             f"- equivalence classes: {stats['n_classes']:,}, of which {stats['n_donorless_classes']:,} hold "
             "incomplete records and no donor",
             f"- largest number of records one donor imputes: {stats['max_donee_count']}",
             f"- **L1(D) = {stats['l1']}** (the most records whose donors one added or deleted record can change)",
             "",
             f"Budgets per query: {epsilon:.4f} (= {epsilon / math.log(2):.3g} ln 2) for the mean or the "
             f"proportion's numerator and {count_epsilon:.4f} (= {count_epsilon / math.log(2):.3g} ln 2) for the "
             "subpopulation count or the proportion's denominator (an age group, not imputed: geometric "
             f"mechanism). In all: **{budget}**.", "",
             "| query | true value | " + " | ".join(METHOD_LABELS[m] for m in METHODS) + " |",
             "|---|---:|" + "---:|" * len(METHODS)]
    for name, q in QUERIES.items():
        vals = {r["method"]: r["value"] for r in rows if r["query"] == name}
        lines.append(f"| {q.label} | {_fmt(truths[name], q.kind)} | "
                     + " | ".join(_fmt(vals[m], q.kind) for m in METHODS) + " |")
    lines += ["", "Smooth sensitivity: the paper's mechanism, noise calibrated to 1 + L1(D), with the package's "
              "default PolyPlace noise (docs/privacy.md, Theorem P) and with the paper's generalized Cauchy noise "
              "(exact admissibility constants), side by side: the same query, the same budget. Ignore missing "
              "data: the records whose values of the query's attributes are observed, ordinary mechanisms. "
              "Global sensitivity: the paper's comparison with "
              "Laplace noise at 1 + (number of "
              "missing records); that sensitivity depends on the data, so it is **not** differentially "
              "private and is shown for comparison only.", "",
              f"Run time: {seconds:.1f} s. "
              + ("Noise from the OS CSPRNG." if seed is None else
                 f"Seed {seed}: reproducible, not secure (never publish seeded releases)."), ""]
    return "\n".join(lines)


def paper_gap_notes(results, *, n, epsilon):
    """Markdown lines on why the experiment's MSEs differ from the paper's, computed from
    ``results`` (as from :func:`dpknn.experiments._census.run_experiment`) and the public budget."""
    lines = ["## Why these MSEs differ from the paper's", ""]
    err = results["value"] - results["truth"]
    by = err.groupby([results["query"], results["method"]])
    mse = by.apply(lambda e: float((e ** 2).mean()))
    bias_share = (by.mean() ** 2 / mse.where(mse > 0)).dropna()
    missing = results["n_missing"].mean() / n
    low, high = int(results["l1"].min()), int(results["l1"].max())
    text = ("- **Different data.** The population is synthetic (`dpknn.datasets.make_census`), not the paper's "
            "1940 IPUMS extract, which cannot be shipped: its wages, its missing rate (here "
            f"{missing:.1%} of INCWAGE) and how strongly missingness depends on earnings are not the paper's. The "
            f"smooth mechanism's noise grows with 1 + L1(D) (here {low if low == high else f'{low} to {high}'}), "
            "which depends on the data too.")
    # With one run the squared bias is the whole error: the split means nothing.
    methods = set(bias_share.index.get_level_values("method")) if results["run"].nunique() > 1 else set()

    def share_range(method):
        s = bias_share.xs(method, level="method")
        return f"{s.min():.1%} to {s.max():.1%}"

    if "ignore_missing" in methods:
        text += (" Wages are missing more often in the groups that earn more (MAR), so ignoring missing data is "
                 f"biased: squared bias is {share_range('ignore_missing')} of that method's MSE here, which measures "
                 "this synthetic missingness, not noise.")
    if "smooth" in methods:
        text += (f" For the smooth mechanism squared bias is {share_range('smooth')} of the MSE; the rest is noise, "
                 "sampling and imputation error.")
    lines.append(text)
    # The paper's Corollary 3.9 takes γ = 1 + ε/(2 ln 2) and its Theorem 3.8 α = ε / (2(γ - 1)); the code
    # uses the exact constants (and keeps γ a multiple of 1/4 inside a floating-point margin).
    if epsilon < 2 * LN2:
        return lines
    paper = CauchyCalibration(epsilon=epsilon, gamma=1 + epsilon / (2 * LN2), alpha=1.0, beta=LN2, rule="paper")
    paper_alpha = epsilon / (2 * (paper.gamma - 1))
    paper_spread = dataclasses.replace(paper, alpha=paper_alpha).spread()
    draws = []
    for mechanism in dict.fromkeys(results.loc[results["method"].isin(["smooth", "smooth_cauchy"]), "mechanism"]):
        if mechanism == "smooth_cauchy":
            ours = choose_gamma(epsilon)
            what = (f"generalized Cauchy noise with γ = {ours.gamma:g} and α = {ours.alpha:.3f} (the exact constants "
                    "of docs/privacy.md)")
        elif mechanism == "smooth_polyplace":
            ours = choose_polyplace(epsilon)
            what = f"PolyPlace noise with a = {float(ours.a):g}, c = {float(ours.c):.4g} (the default)"
        else:
            continue
        ratio = paper_spread / ours.spread()
        draws.append((f"{what}, which the paper's is {ratio:.2f} times as wide as", ratio))
    if not draws:
        return lines
    narrower = all(r > 1 for _, r in draws)
    lines.append(f"- **Not the noise constants.** At epsilon {epsilon:.4f} the paper's Theorem 3.8 gives generalized "
                 f"Cauchy noise with α = ε/(2(γ - 1)) = {paper_alpha:.3f} at its γ = {paper.gamma:g}. The smooth "
                 f"releases here draw {'; and '.join(d for d, _ in draws)}. So this code's smooth noise is "
                 + ("narrower than the paper's: the noise does not explain larger MSEs." if narrower
                    else "wider than the paper's in part."))
    return lines


def run_census_experiment(*, runs=200, n=200_000, population=1_000_000, k=1, epsilon=EPSILON,
                          count_epsilon=COUNT_EPSILON, queries=None, jobs=1, seed=None,
                          out="dpknn-census-experiment", progress=True):
    """``dpknn experiment census``: the paper's census experiment, written to ``out``.

    Parameters
    ----------
    runs : int
        Repetitions; each draws a survey sample, a missingness realisation and noise.
    n : int
        The survey sample's size.
    population : int
        The synthetic population's size.
    k : int
        Donors per incomplete record.
    epsilon : float
        The epsilon of the mean mechanism (add/remove one record).
    count_epsilon : float
        The epsilon of the subpopulation's size or the proportion's denominator.
    queries : sequence of str or None
        The queries to run (None: all).
    jobs : int
        Parallel joblib workers (-1: all cores).
    seed : int or None
        The seed (None: a cryptographic source).
    out : str or Path
        The output folder.
    progress : bool
        Show a progress bar.

    Returns
    -------
    int
        0, the command's exit status.
    """
    t0 = time.perf_counter()
    results, _ = run_experiment(runs=runs, n=n, population=population, k=k, epsilon=epsilon,
                                     count_epsilon=count_epsilon, queries=queries, jobs=jobs, seed=seed,
                                     progress=progress)
    table = mse_table(results)
    labels = {name: q.label for name, q in QUERIES.items()}
    lines = ["# Census experiment (Clifton et al. 2022, §6) on synthetic data", "",
             f"{runs} runs; each draws a survey sample of {n:,} from a synthetic population of {population:,}, "
             f"a new MAR missingness realisation of INCWAGE and new noise. k={k}; budgets {epsilon:.4f} "
             f"(mean / numerator) and {count_epsilon:.4f} (count / denominator). Truth: the population value.",
             "", "## MSE", "",
             "| query | " + " | ".join(METHOD_LABELS[m] for m in METHODS) + " | "
             + " | ".join(f"paper: {METHOD_LABELS[m]}" for m in PAPER_METHODS) + " |",
             "|---|" + "---:|" * (len(METHODS) + len(PAPER_METHODS))]
    for q, row in table.iterrows():
        cells = [row.get(m, np.nan) for m in METHODS] + [row[f"paper_{m}"] for m in PAPER_METHODS]
        lines.append(f"| {labels[q]} | " + " | ".join("" if np.isnan(v) else f"{v:.4g}" for v in cells) + " |")
    lines.append("")
    for q in table.index:
        ours = table.loc[q, "ignore_missing"] / table.loc[q, "smooth_cauchy"]
        paper = table.loc[q, "paper_ignore_missing"] / table.loc[q, "paper_smooth_cauchy"]
        light = table.loc[q, "smooth_cauchy"] / table.loc[q, "smooth"]
        lines.append(f"- {q}: MSE ratio ignore / smooth (Cauchy) {ours:.3g} (paper: {paper:.3g}); "
                     f"MSE of the Cauchy over the PolyPlace release {light:.3g}")
    lines += ["", *paper_gap_notes(results, n=n, epsilon=epsilon)]
    lines += ["", f"Run time: {time.perf_counter() - t0:.1f} s with {jobs} job(s).", ""]
    report = "\n".join(lines)
    out = Path(out)
    files = [(out / "results.csv", lambda tmp: results.to_csv(tmp, index=False)),
             (out / "mse.csv", lambda tmp: table.to_csv(tmp)),
             (out / "report.md", text_writer(report))]

    def figures():
        from dpknn.utils._plotting import census_boxplots
        dp = results[results["method"] != "global"]
        first = results[results["query"] == results["query"].iloc[0]]
        return [(out / "boxplots.png", census_boxplots(
                    dp, labels=labels, method_labels=METHOD_LABELS,
                    title="Smooth sensitivity (PolyPlace and the paper's Cauchy noise) vs ignoring missing data "
                          "(Figures 5-6 style)")),
                (out / "boxplot_global.png", census_boxplots(
                    first, labels=labels, method_labels=METHOD_LABELS, title="All four methods (Figure 4 style)"))]

    write_with_figures(files, figures)
    print(report)
    print(f"Wrote results.csv, mse.csv, report.md and box plots to {out}")
    return 0
