"""AIM, MST, PrivBayes(E) and the column-wise synthesiser on 10^6 x 15 (domains 2-16, 20% MCAR); the counting kernel."""

import itertools

from dpknn.schema import Discretization
from dpknn.schema._marginals import count_tables, extended_codes
from dpknn.synth import AIMSynthesizer, ColumnwiseSynthesizer, MSTSynthesizer, PrivBayes

from .wide_table import wide_table


class PrivBayesFitSample:
    params = ([32_561, 10**6], [2, 3], ["observe", "complete_rows", "value"])
    param_names = ["n", "degree", "missing"]
    timeout = 600
    number = 1
    repeat = (1, 3, 120.0)

    def setup_cache(self):
        return {n: wide_table(n) for n in self.params[0]}

    def time_fit_sample(self, data, n, degree, missing):
        df, attrs = data[n]
        PrivBayes(attrs, epsilon=1.0, degree=degree, missing=missing, rng=0).fit(df).sample(n, rng=1)

    def peakmem_fit_sample(self, data, n, degree, missing):
        df, attrs = data[n]
        PrivBayes(attrs, epsilon=1.0, degree=degree, missing=missing, rng=0).fit(df).sample(n, rng=1)


class _FitSample:
    """Fit + sample of one synthesiser at ``params`` rows (asv skips names starting with "_")."""

    param_names = ["n"]
    timeout = 600
    number = 1
    repeat = (1, 3, 120.0)

    def setup_cache(self):
        return {n: wide_table(n) for n in self.params}

    def make(self, attrs):
        raise NotImplementedError

    def time_fit_sample(self, data, n):
        df, attrs = data[n]
        self.make(attrs).fit(df).sample(n, rng=1)

    def peakmem_fit_sample(self, data, n):
        df, attrs = data[n]
        self.make(attrs).fit(df).sample(n, rng=1)


class AIMFitSample(_FitSample):
    params = [20_000, 10**6]

    def make(self, attrs):
        return AIMSynthesizer(attrs, epsilon=1.0, rng=0)


class MSTFitSample(_FitSample):
    params = [20_000, 10**6]

    def make(self, attrs):
        return MSTSynthesizer(attrs, epsilon=1.0, rng=0)


class ColumnwiseFitSample(_FitSample):
    params = [32_561, 10**6]

    def make(self, attrs):
        return ColumnwiseSynthesizer(attrs, epsilon=1.0, rng=0)


class CountTables:
    """All C(15, 3) = 455 three-way (or 1365 four-way) tables of 10^6 rows in one kernel call."""

    params = ([3, 4], [1, 2])
    param_names = ["width", "threads"]
    timeout = 300
    number = 1
    repeat = (2, 5, 60.0)

    def setup_cache(self):
        df, attrs = wide_table(10**6)
        disc = Discretization(attrs)
        return extended_codes(disc.encode(df), disc.sizes), disc.sizes

    def time_count(self, data, width, threads):
        ext, sizes = data
        count_tables(ext, sizes, list(itertools.combinations(range(len(sizes)), width)), n_jobs=threads)


