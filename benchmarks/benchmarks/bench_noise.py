"""Exact samplers: time per release-sized draw (one value), seeded and from the OS CSPRNG."""

from fractions import Fraction

from dpknn import noise
from dpknn.mechanisms import Gaussian, Laplace, SmoothCauchy
from dpknn.randomness import as_source


class Samplers:
    params = (["seeded", "csprng"],)
    param_names = ["source"]

    def setup(self, source):
        self.src = as_source(1 if source == "seeded" else None)

    def time_discrete_laplace_1000_draws(self, source):
        for _ in range(1000):
            noise.discrete_laplace(Fraction(2**20 + 1, 1), rng=self.src)

    def time_discrete_gaussian_1000_draws(self, source):
        for _ in range(1000):
            noise.discrete_gaussian(Fraction(2**20), rng=self.src)

    def time_rounded_cauchy_gamma4_1000_draws(self, source):
        for _ in range(1000):
            noise.rounded_generalized_cauchy(4, 2**50, center=12345, rng=self.src)

    def time_rounded_cauchy_gamma125_1000_draws(self, source):
        for _ in range(1000):
            noise.rounded_generalized_cauchy(1.25, 2**50, center=12345, rng=self.src)


class Mechanisms:
    def setup(self):
        self.src = as_source(2)
        self.laplace = Laplace(epsilon=1.0, sensitivity=1.0)
        self.gaussian = Gaussian(epsilon=1.0, delta=1e-6, sensitivity=1.0)
        self.cauchy = SmoothCauchy(epsilon=4.16, smooth_bound=0.3, grid=2.0**-50)

    def time_laplace_release(self):
        self.laplace.release(0.37, rng=self.src)

    def time_gaussian_release(self):
        self.gaussian.release(0.37, rng=self.src)

    def time_smooth_cauchy_release(self):
        self.cauchy.release(0.37, rng=self.src)

    def time_gaussian_calibration(self):
        Gaussian(epsilon=1.0, delta=1e-6, sensitivity=1.0)
