"""Exact samplers: time per release-sized draw (one value), seeded and from the OS CSPRNG."""

from fractions import Fraction

from dpknn.mechanisms import Gaussian, Laplace, SmoothCauchy, SmoothPolyPlace
from dpknn.mechanisms import _noise as noise
from dpknn.mechanisms._base import public_grid
from dpknn.mechanisms._randomness import as_source


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

    def time_rounded_polyplace_count_1000_draws(self, source):
        # The count noise at ε = 6 ln 2: a = 111/16, width c·S with S = 1 + L1 = 33.
        for _ in range(1000):
            noise.rounded_polyplace(Fraction(111, 16), Fraction(40.2), center=12345, rng=self.src)

    def time_rounded_polyplace_mean_1000_draws(self, source):
        # A mean's noise on its 2^-60 grid: widths of 2^50 steps and an exact fractional centre.
        for _ in range(1000):
            noise.rounded_polyplace(Fraction(111, 16), 2**50 + Fraction(1, 3), center=Fraction(2**62, 7),
                                    rng=self.src)


class Mechanisms:
    def setup(self):
        self.src = as_source(2)
        self.laplace = Laplace(epsilon=1.0, sensitivity=1.0)
        self.gaussian = Gaussian(epsilon=1.0, delta=1e-6, sensitivity=1.0)
        self.cauchy = SmoothCauchy(epsilon=4.16, smooth_bound=0.3, grid=2.0**-50)
        self.polyplace_count = SmoothPolyPlace(epsilon=4.16, smooth_bound=33.0, grid=1)
        self.polyplace_mean = SmoothPolyPlace(epsilon=4.16, smooth_bound=0.3, grid=public_grid(5001.0, bits=60))
        self.center = Fraction(123456789, 70001)

    def time_laplace_release(self):
        self.laplace.release(0.37, rng=self.src)

    def time_gaussian_release(self):
        self.gaussian.release(0.37, rng=self.src)

    def time_smooth_cauchy_release(self):
        self.cauchy.release(0.37, rng=self.src)

    def time_smooth_polyplace_count_release(self):
        self.polyplace_count.release(12345, rng=self.src)

    def time_smooth_polyplace_mean_release(self):
        self.polyplace_mean.release(self.center, rng=self.src)

    def time_gaussian_calibration(self):
        Gaussian(epsilon=1.0, delta=1e-6, sensitivity=1.0)
