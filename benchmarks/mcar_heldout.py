"""MST with public MCAR rates against MST with missingness as a category, scored on held-out rows.

Synthetic census rows (``dpknn.datasets.make_census``, no gaps of its own), 30 % of the cells of
AGE, SCHOOL and MARST deleted completely at random (``make_missing``, a public rate), split into
training and held-out halves. For each size and ε, 3 seeds of each method: the mean 2-way TVD
(a gap as a category) against the training rows and against the held-out rows.

    python benchmarks/mcar_heldout.py
"""

import sys
import warnings

import numpy as np

from dpknn import Categorical, Ordinal
from dpknn.datasets import make_census, make_missing
from dpknn.metrics import tvd
from dpknn.synth import MSTSynthesizer

GAPS = ["AGE", "SCHOOL", "MARST"]
RATE = 0.3


def attributes():
    """Public domains: the census code book's ranges and categories."""
    cats = make_census(1_000, missing="none", rng=0)
    return [Ordinal("AGE", 0, 99), Ordinal("SCHOOL", 0, 17),
            Categorical("MARST", sorted(cats["MARST"].unique().tolist())), Categorical("SEX", [1, 2]),
            *[Categorical(c, sorted(cats[c].unique().tolist())) for c in ("RACE", "URBAN")]]


def main():
    warnings.simplefilter("ignore")
    attrs = attributes()
    names = [a.name for a in attrs]
    for n in (2_000, 20_000):
        full = make_missing(make_census(2 * n, missing="none", rng=0)[names], mechanism="mcar", rate=RATE,
                            columns=GAPS, rng=1)
        train, test = full.iloc[:n].reset_index(drop=True), full.iloc[n:].reset_index(drop=True)
        for eps in (0.25, 1.0):
            for label, rates in (("category", None), ("mcar_rates", dict.fromkeys(GAPS, RATE))):
                on_train, on_test = [], []
                for seed in range(3):
                    model = MSTSynthesizer(attrs, epsilon=eps, noise="laplace", mcar_rates=rates, rng=seed)
                    syn = model.fit(train).sample(n, rng=seed)
                    on_train.append(tvd(train, syn, attrs))
                    on_test.append(tvd(test, syn, attrs))
                print(f"n={n:>6} eps={eps:<5g} {label:<11} train {np.mean(on_train):.4f}  held-out "
                      f"{np.mean(on_test):.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
