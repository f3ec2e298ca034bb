"""RWN: exact on tied census-like data, sampled pairs on continuous data, the pair mapping."""

import numpy as np
import pandas as pd

from dpknn.datasets import make_census
from dpknn.sdc import RWN
from dpknn.sdc._neighbourhoods import pairs_from_indices

KNOWN = ["AGE", "SCHOOL", "SEX", "RACE", "RELATE", "MARST", "EMPSTAT", "CLASSWKR", "URBAN"]
CATEGORICAL = ["SEX", "RACE", "RELATE", "MARST", "EMPSTAT", "CLASSWKR", "URBAN"]


def census_known(n):
    df = make_census(n, rng=0)[KNOWN]
    df[CATEGORICAL] = df[CATEGORICAL].astype(str)
    return df


class ExactCensus:
    params = [10**5, 10**6]
    param_names = ["n"]
    timeout = 900
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self, n):
        self.df = census_known(n)

    def time_exact_k5(self, n):
        RWN(k=5, rng=1).fit_transform(self.df)

    def peakmem_exact_k5(self, n):
        RWN(k=5, rng=1).fit_transform(self.df)


class SampledPairs:
    params = [10**6, 10**7]
    param_names = ["n"]
    timeout = 1200
    number = 1
    repeat = (1, 2, 60.0)

    def setup(self, n):
        self.df = pd.DataFrame(np.random.default_rng(0).normal(size=(n, 10)), columns=[f"x{i}" for i in range(10)])

    def time_sampled_pairs_m20(self, n):
        RWN(k=5, method="sampled_pairs", m=20, rng=1).fit_transform(self.df)

    def peakmem_sampled_pairs_m20(self, n):
        RWN(k=5, method="sampled_pairs", m=20, rng=1).fit_transform(self.df)


class PairMapping:
    def setup(self):
        n = 10**7
        self.n = n
        self.r = np.random.default_rng(0).integers(0, n * (n - 1) // 2, size=10**7)

    def time_pairs_from_indices_1e7(self):
        pairs_from_indices(self.r, self.n)
