"""Private releases on a fitted 10^7-row imputation (subpopulation evaluation + noise)."""

import math

from dpknn.datasets import census_schema, make_census
from dpknn.queries import PrivateImputation

EPS = 6 * math.log(2)


class Release:
    timeout = 900
    number = 1
    repeat = (3, 10, 60.0)

    def setup_cache(self):
        return PrivateImputation(make_census(10**7, rng=0), census_schema(), rng=1)

    def time_count_involving_imputed(self, p):
        p.count({"INCWAGE": (658, None), "AGE": (20, 29)}, epsilon=EPS)

    def time_proportion(self, p):
        p.proportion({"INCWAGE": (658, None)}, within={"AGE": (20, 29)}, epsilon=EPS)

    def time_mean(self, p):
        p.mean("INCWAGE", where={"AGE": (20, 59)}, epsilon=EPS, count_epsilon=EPS)

    def time_variance(self, p):
        p.variance("INCWAGE", where={"AGE": (20, 59)}, epsilon=EPS, mean_epsilon=EPS, count_epsilon=EPS)
