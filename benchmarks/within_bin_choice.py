"""Which way ``within_bin="auto"`` draws an analysis' amounts inside their bins, table by table: the rank sums'
readability (a cell's records times a uniform rank's spread, over the noise of its table) against θ.

For each table of ``compare_synthesis.py`` with an analysis and each ε, the plan of the synthesiser that
``AutoSynthesizer`` would run, given the training rows (the released count ñ is within a few records of them), and
the ratio ``dpknn.synth._marginal.useful_rank_sums`` compares with θ = 2.5: at or above it the rank sums, below it
the copula. Public values only: nothing is fitted.

    python benchmarks/within_bin_choice.py --tables gss-wages,yrbss,exam,slid,acs,mroz --epsilons 1,2,4
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from compare_synthesis import ANALYSIS, table

import dpknn.synth._marginal as marginal
from dpknn.synth import MSTSynthesizer


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="gss-wages,yrbss,exam,slid,acs,mroz")
    ap.add_argument("--epsilons", default="1,2,4")
    args = ap.parse_args()
    seen = []
    useful = marginal.useful_rank_sums

    def spy(rows, cells, sigma, **kwargs):   # the test's inputs, as the plan calls it
        seen.append((rows, cells, sigma))
        return useful(rows, cells, sigma, **kwargs)
    marginal.useful_rank_sums = spy
    print("| table, ε | rows | cells | noise (ranks a cell) | records · spread / noise | drawn by |")
    print("|---|---|---|---|---|---|")
    for name in args.tables.split(","):
        df, attrs, _, _ = table(name)
        rows = int((np.random.default_rng(0).random(len(df)) < 0.8).sum())   # compare_synthesis.py's training split
        for eps in (float(e) for e in args.epsilons.split(",")):
            seen.clear()
            # AutoSynthesizer runs its synthesiser with 99 % of ε (count_share 0.01); AIM and MST plan alike here.
            plan = MSTSynthesizer(attrs, epsilon=0.99 * eps, analyses=[ANALYSIS[name]], n_rows=rows).plan()
            drawn = "copula" if plan.joint else "rank sums"
            if seen:
                r, c, s = seen[-1]
                print(f"| {name}, {eps:g} | {r} | {c} | {s:.2f} | {r / c * marginal.RANK_SD / s:.2f} | {drawn} |")
            else:
                print(f"| {name}, {eps:g} | {rows} | | | (one amount with quantiles, or none bought) | {drawn} |")
    marginal.useful_rank_sums = useful


if __name__ == "__main__":
    main()
