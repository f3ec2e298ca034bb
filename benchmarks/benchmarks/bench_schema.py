"""Schema.encode on synthetic census data."""

from dpknn.datasets import census_schema, make_census


class Encode:
    params = [10**6, 10**7]
    param_names = ["n"]
    timeout = 600

    def setup(self, n):
        self.df = make_census(n, rng=0)
        self.schema = census_schema()

    def time_encode(self, n):
        self.schema.encode(self.df)

    def peakmem_encode(self, n):
        self.schema.encode(self.df)


class MakeCensus:
    params = [10**6, 10**7]
    param_names = ["n"]
    timeout = 600

    def time_make_census(self, n):
        make_census(n, rng=0)
