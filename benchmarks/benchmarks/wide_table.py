"""A 15-attribute categorical table with domains 2-16 and chained dependence, for synthesis benchmarks.

Attribute j copies a function of attribute j-1 with probability 0.6 and is uniform otherwise, so
the network search has real structure to find. Optional MCAR gaps at a public rate.
"""

import numpy as np
import pandas as pd

from dpknn import Categorical
from dpknn.datasets import make_missing


def wide_table(n, *, d=15, missing_rate=0.2, seed=0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 17, d)
    cols = {"A0": rng.integers(0, sizes[0], n)}
    prev = cols["A0"]
    for j in range(1, d):
        prev = np.where(rng.random(n) < 0.6, prev % sizes[j], rng.integers(0, sizes[j], n))
        cols[f"A{j}"] = prev
    df = pd.DataFrame(cols)
    if missing_rate > 0:
        df = make_missing(df, mechanism="mcar", rate=missing_rate, rng=seed + 1)
    attrs = [Categorical(f"A{j}", list(range(int(sizes[j])))) for j in range(d)]
    return df, attrs
