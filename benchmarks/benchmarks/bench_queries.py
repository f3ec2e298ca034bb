"""Private releases on a fitted 10^7-row imputation (subpopulation evaluation + noise)."""

import math

from dpknn.accounting import BudgetAccountant
from dpknn.datasets import census_schema, make_census
from dpknn.releases import PrivateImputation

EPS = 6 * math.log(2)


class Release:
    timeout = 900
    number = 1
    repeat = (3, 10, 60.0)

    def setup_cache(self):
        return PrivateImputation(make_census(10**7, rng=0), census_schema(), rng=1,
                                 accountant=BudgetAccountant(math.inf))

    def time_count_involving_imputed(self, p):
        p.count({"INCWAGE": (658, None), "AGE": (20, 29)}, epsilon=EPS)

    def time_proportion(self, p):
        p.proportion({"INCWAGE": (658, None)}, within={"AGE": (20, 29)}, epsilon=EPS)

    def time_mean(self, p):
        p.mean("INCWAGE", where={"AGE": (20, 59)}, epsilon=EPS, count_epsilon=EPS)

    def time_variance(self, p):
        p.variance("INCWAGE", where={"AGE": (20, 59)}, epsilon=EPS, mean_epsilon=EPS, count_epsilon=EPS)


class CuratorReport:
    """The curator's report on a fitted 10^6-row imputation: summaries, and 1000 rehearsals of a
    mean (plus its ignore_missing twin)."""

    timeout = 900
    number = 1
    repeat = (2, 5, 120.0)

    def setup_cache(self):
        from dpknn import KNNImputer

        df = make_census(10**6, rng=0)
        return KNNImputer(census_schema()).fit(df), df

    def time_summaries(self, cache):
        from dpknn import curator_report

        curator_report(*cache, rng=1)

    def time_rehearse_a_mean(self, cache):
        from dpknn import curator_report

        curator_report(*cache, queries=[{"name": "mean", "type": "mean", "column": "INCWAGE",
                                         "where": {"AGE": (20, 59)}, "epsilon": EPS, "count_epsilon": 1.0}],
                       draws=1000, rng=1)
