"""KNNImputer.fit (donors, donee counts and exact L1) on synthetic census data, 20% incomplete."""

import time

import numpy as np

from dpknn.datasets import census_schema, make_census
from dpknn.impute import KNNImputer


class Fit:
    params = ([10**5, 10**6, 10**7], [1, 5])
    param_names = ["n", "k"]
    timeout = 900
    number = 1
    repeat = (1, 3, 60.0)

    def setup_cache(self):
        return {n: make_census(n, rng=0) for n in self.params[0]}

    def time_fit(self, data, n, k):
        KNNImputer(census_schema(), k=k).fit(data[n])

    def peakmem_fit(self, data, n, k):
        KNNImputer(census_schema(), k=k).fit(data[n])

    def track_l1(self, data, n, k):
        return KNNImputer(census_schema(), k=k).fit(data[n]).l1_


class FitVsArgsort:
    """The census fit (k = 1) over a stable argsort of as many random int64 keys, best of 3 each,
    measured in the same process (goal: <= 2.0 at 10^7; benchmarks/fit_vs_argsort.py)."""

    params = [10**7]
    param_names = ["n"]
    timeout = 900
    unit = "ratio"

    def setup(self, n):
        rng = np.random.default_rng(0)
        self.df = make_census(n, rng=rng)
        self.keys = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=n, dtype=np.int64)

    def track_ratio(self, n):
        def best(fn):
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            return min(times)

        t_sort = best(lambda: np.argsort(self.keys, kind="stable"))
        return best(lambda: KNNImputer(census_schema(), k=1).fit(self.df)) / t_sort


class Transform:
    params = [1, 5]
    param_names = ["k"]

    def setup(self, k):
        self.df = make_census(10**6, rng=0)
        self.imp = KNNImputer(census_schema(), k=k).fit(self.df)

    def time_transform(self, k):
        self.imp.transform(self.df)


class FitFineSchemas:
    """Exact L1 on fine-grained schemas (AGE in years, HRSWORK 0-98, RENT 0-999); k = 1."""

    params = (["census", "age_years", "hours", "rent"], [10**5, 10**6, 10**7])
    param_names = ["schema", "n"]
    timeout = 1800
    number = 1
    repeat = (1, 2, 60.0)

    def setup(self, schema, n):
        from .fine_schemas import fine_case

        self.schema, self.df = fine_case(schema, n)

    def time_fit(self, schema, n):
        KNNImputer(self.schema).fit(self.df)

    def peakmem_fit(self, schema, n):
        KNNImputer(self.schema).fit(self.df)

    def track_l1_work(self, schema, n):
        return KNNImputer(self.schema).fit(self.df).l1_work_


class FitWideDomain:
    """A domain of 2·10^28 cells (no int64 cell keys): grouping by sorted rows, KD-tree donors.

    Only 10^4 rows: at 10^5 this schema passes the default max_work (docs/imputation.md).
    """

    params = [10**4]
    param_names = ["n"]
    timeout = 900
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self, n):
        from .fine_schemas import wide_case

        self.schema, self.df = wide_case(n)

    def time_fit(self, n):
        KNNImputer(self.schema).fit(self.df)

    def peakmem_fit(self, n):
        KNNImputer(self.schema).fit(self.df)

    def track_l1_work(self, n):
        return KNNImputer(self.schema).fit(self.df).l1_work_
