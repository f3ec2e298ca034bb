"""The census experiment of Clifton et al. (2022, §6), on synthetic census data.

Queries (Figures 4-6 of the paper): mean wage income for ages 20-59, 20-29 and 40-49, and the
proportion of persons aged 20-29 and 40-49 earning at least 658 dollars (the poverty line for a
family of four used in the paper). Each is released four ways: smooth sensitivity on the
k-NN-imputed data with the package's PolyPlace noise (``"smooth"``) and with the paper's generalized
Cauchy noise (``"smooth_cauchy"``, the mechanism the paper's figures show), ignoring missing data,
and the paper's "global sensitivity" comparison
(:func:`dpknn.releases._baseline.global_baseline`). The last one is **not** differentially private: its sensitivity,
1 + (number of missing records), depends on the data. It is here only to reproduce the paper's
figures and is never offered by :mod:`dpknn.releases._queries` or ``dpknn release``.

Budgets: a mean spends ``epsilon`` on the mean and ``count_epsilon`` on the size of its
subpopulation; a proportion spends ``epsilon`` on the numerator (which involves the imputed
wage) and ``count_epsilon`` on the denominator (an age group, not imputed). The paper states
(6 ln 2)-DP for the mean mechanism; that is the default ``epsilon``.

References
----------
.. [1] Clifton, Hanson, Kifer, Shamis, et al. (2022), §6.3 and Figures 4-6.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpknn.accounting import BudgetAccountant
from dpknn.datasets._census import add_missingness, census_schema, make_census
from dpknn.releases._baseline import global_baseline
from dpknn.releases._queries import PrivateImputation
from dpknn.utils._progress import progress_bar
from dpknn.utils._validation import check_positive_int

__all__ = ["METHODS", "QUERIES", "CensusQuery", "mse_table", "release_by_method", "run_experiment", "truth"]

logger = logging.getLogger(__name__)

POVERTY_LINE = 658
EPSILON = 6 * math.log(2)      # the paper's budget for the mean mechanism (§6.3)
COUNT_EPSILON = math.log(2)    # for the subpopulation size / the proportion's denominator
METHODS = ("smooth", "smooth_cauchy", "ignore_missing", "global")
METHOD_LABELS = {"smooth": "Smooth, PolyPlace noise", "smooth_cauchy": "Smooth, paper's Cauchy noise",
                 "ignore_missing": "Ignore Missing Data", "global": "Global (not DP)"}
#: The methods the paper reports MSEs for.
PAPER_METHODS = ("smooth_cauchy", "ignore_missing", "global")
#: The paper's MSE figures (§6.3) for the queries it reports (its smooth releases use Cauchy noise).
PAPER_MSE = {
    ("mean_20_59", "global"): 389899.14, ("mean_20_59", "ignore_missing"): 397.25,
    ("mean_20_59", "smooth_cauchy"): 1.3,
    ("mean_20_29", "ignore_missing"): 116.9, ("mean_20_29", "smooth_cauchy"): 7.3,
    ("mean_40_49", "ignore_missing"): 1180.3, ("mean_40_49", "smooth_cauchy"): 11.1,
    ("prop_20_29", "ignore_missing"): 33e-6, ("prop_20_29", "smooth_cauchy"): 1.4e-6,
    ("prop_40_49", "ignore_missing"): 4.6e-4, ("prop_40_49", "smooth_cauchy"): 7.5e-7,
}


@dataclass(frozen=True)
class CensusQuery:
    """One query of the experiment: a mean of INCWAGE or a proportion above the poverty line."""

    name: str
    label: str
    kind: str
    ages: tuple

    def run(self, private, *, method, epsilon, count_epsilon):
        """Release this query with ``private`` by ``method`` (``"global"``: the paper's NOT-DP baseline)."""
        age = {"AGE": self.ages}
        if method == "global":
            if self.kind == "mean":
                return global_baseline(private, "mean", column="INCWAGE", where=age, epsilon=epsilon,
                                       count_epsilon=count_epsilon)
            return global_baseline(private, "proportion", where={"INCWAGE": (POVERTY_LINE, None)}, within=age,
                                   epsilon=epsilon, denominator_epsilon=count_epsilon)
        noise = {"noise": "cauchy"} if method == "smooth_cauchy" else {}
        method = "smooth" if method == "smooth_cauchy" else method
        if self.kind == "mean":
            return private.mean("INCWAGE", where=age, epsilon=epsilon, count_epsilon=count_epsilon,
                                method=method, **noise)
        return private.proportion({"INCWAGE": (POVERTY_LINE, None)}, within=age, epsilon=epsilon,
                                  denominator_epsilon=count_epsilon, method=method, **noise)

    def truth(self, df):
        """The query on the true (complete) wages."""
        sub = df.loc[df["AGE"].between(*self.ages), "INCWAGE_TRUE"]
        if self.kind == "mean":
            return float(sub.mean())
        return float((sub >= POVERTY_LINE).mean())


QUERIES = {q.name: q for q in (
    CensusQuery("mean_20_59", "Mean wage income, ages 20-59", "mean", (20, 59)),
    CensusQuery("mean_20_29", "Mean wage income, ages 20-29", "mean", (20, 29)),
    CensusQuery("mean_40_49", "Mean wage income, ages 40-49", "mean", (40, 49)),
    CensusQuery("prop_20_29", f"Share earning >= {POVERTY_LINE}, ages 20-29", "proportion", (20, 29)),
    CensusQuery("prop_40_49", f"Share earning >= {POVERTY_LINE}, ages 40-49", "proportion", (40, 49)),
)}


def _queries(names):
    names = list(QUERIES) if names is None else list(names)
    unknown = [n for n in names if n not in QUERIES]
    if unknown:
        raise ValueError(f"unknown queries {unknown}; choose from {list(QUERIES)}.")
    return [QUERIES[n] for n in names]


def truth(df, queries=None):
    """{query name: true value} on the complete wages of ``df``."""
    return {q.name: q.truth(df) for q in _queries(queries)}


def release_by_method(private, *, queries=None, methods=METHODS, epsilon=EPSILON, count_epsilon=COUNT_EPSILON):
    """Release every query by every method; a list of dicts (query, method, value, epsilon, ...)."""
    rows = []
    for q in _queries(queries):
        for method in methods:
            rel = q.run(private, method=method, epsilon=epsilon, count_epsilon=count_epsilon)
            if method == "global":
                rows.append({"query": q.name, "method": method, "value": float(rel), "epsilon": None,
                             "mechanism": "laplace at 1 + missing records", "differentially_private": False,
                             "gamma": None, "a": None})
                continue
            rows.append({"query": q.name, "method": method, "value": float(rel.value),
                         "epsilon": rel.epsilon, "mechanism": rel.mechanism, "differentially_private": True,
                         "gamma": rel.params.get("gamma"), "a": rel.params.get("a"), "release": rel})
    return rows


def _one_run(run, population, n, k, missing, epsilon, count_epsilon, queries, seed):
    rng = np.random.default_rng(seed)
    pop = pd.DataFrame(population)
    sample = pop.iloc[np.sort(rng.choice(len(pop), size=n, replace=False))].reset_index(drop=True)
    sample = add_missingness(sample, missing=missing, rng=rng, copy=False)
    # Each run measures the error of one draw per query and method: nothing is published, so the
    # ledger is kept without a limit.
    private = PrivateImputation(sample, census_schema(), k=k, accountant=BudgetAccountant(math.inf), rng=rng)
    rows = release_by_method(private, queries=queries, epsilon=epsilon, count_epsilon=count_epsilon)
    for r in rows:
        r.pop("release", None)
        r.update(run=run, l1=private.l1, n_missing=int(private.imputer.incomplete_index_.size))
    return rows


def run_experiment(*, runs=200, n=200_000, population=1_000_000, k=1, epsilon=EPSILON,
                   count_epsilon=COUNT_EPSILON, queries=None, missing="mar", jobs=1, seed=None,
                   progress=False):
    """Repeat the census experiment: new survey sample, new missingness, all three methods.

    The population (``population`` persons, true wages known) is drawn once; each run draws a
    simple random sample of ``n`` persons, a new missingness realisation and new noise, in
    parallel over ``jobs`` joblib workers. Truth is the population value.

    Returns
    -------
    results : pandas.DataFrame
        One row per run, query and method.
    truths : dict
        Population value of each query.
    """
    from joblib import Parallel, delayed

    # Checked before the population is drawn: with no run the tables below would be empty.
    for value, name in ((runs, "runs"), (n, "n"), (population, "population"), (k, "k")):
        check_positive_int(value, name)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs == 0:
        raise ValueError(f"jobs must be a non-zero integer (-1: all cores), got {jobs!r}.")
    if n > population:
        raise ValueError(f"n={n} is larger than the population ({population}).")
    queries = [q.name for q in _queries(queries)]
    root = np.random.SeedSequence(seed)
    pop_seed, *run_seeds = root.spawn(runs + 1)
    pop = make_census(population, missing="none", rng=np.random.default_rng(pop_seed))
    truths = truth(pop, queries)
    columns = {c: pop[c].to_numpy() for c in pop.columns}
    tasks = (delayed(_one_run)(i, columns, n, k, missing, epsilon, count_epsilon, queries, s)
             for i, s in enumerate(run_seeds))
    out = []
    bar = progress_bar(total=runs, progress=progress, desc="census experiment", unit="run")
    for rows in Parallel(n_jobs=jobs, return_as="generator")(tasks):
        out.extend(rows)
        bar.update(1)
    bar.close()
    results = pd.DataFrame(out)
    results["truth"] = results["query"].map(truths)
    logger.info("census experiment: %d runs, n=%d, k=%d", runs, n, k)
    return results, truths


def mse_table(results):
    """MSE of each method on each query, with the paper's figure where it reports one."""
    err = (results["value"] - results["truth"]) ** 2
    table = err.groupby([results["query"], results["method"]]).mean().unstack("method")
    table = table.reindex(columns=[m for m in METHODS if m in table.columns])
    for m in PAPER_METHODS:
        table[f"paper_{m}"] = [PAPER_MSE.get((q, m), np.nan) for q in table.index]
    return table
