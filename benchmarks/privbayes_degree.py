"""PrivBayes's degree="auto" (θ-usefulness) against every fixed degree on synthetic census rows.

Prints, per (rows, ε), the mean 2-way TVD between the census rows and as many synthetic rows
for degrees 1, 2, 3 and "auto" (with the degree it chose), missingness as a value.
Not run by CI (about a minute on 2 cores)::

    python benchmarks/privbayes_degree.py --rows 20000,200000 --epsilons 0.5,2,8,32 --seeds 0,1
"""

import argparse

import numpy as np

from dpknn import Categorical, Ordinal
from dpknn.datasets import make_census
from dpknn.metrics import tvd
from dpknn.synth import PrivBayes

ATTRS = [Ordinal("AGE", 0, 99), Ordinal("SCHOOL", 0, 17), Categorical("SEX", [1, 2]),
         Categorical("RACE", [1, 2, 3, 4, 5, 6]), Categorical("URBAN", [1, 2]), Categorical("EMPSTAT", [0, 1, 2, 3]),
         Ordinal("INCWAGE", 0, 5001)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="20000,200000")
    ap.add_argument("--epsilons", default="0.5,2,8,32")
    ap.add_argument("--seeds", default="0,1")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    print("rows epsilon " + " ".join(f"k={k:<10}" for k in (1, 2, 3, "auto")))
    for n in (int(r) for r in args.rows.split(",")):
        df = make_census(n, rng=0)[[a.name for a in ATTRS]]
        for eps in (float(e) for e in args.epsilons.split(",")):
            cells = []
            for k in (1, 2, 3, "auto"):
                fits = [PrivBayes(ATTRS, epsilon=eps, degree=k, missing="value", rng=s).fit(df) for s in seeds]
                score = np.mean([tvd(df, m.sample(n, rng=s + 1), ATTRS) for m, s in zip(fits, seeds)])
                chosen = f" ({fits[0].degree_})" if k == "auto" else ""
                cells.append(f"{score:.4f}{chosen:<6}")
            print(f"{n} {eps:g} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
