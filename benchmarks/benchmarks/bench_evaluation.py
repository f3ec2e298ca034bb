"""Evaluation measures and the course's mechanisms: pMSE, risk measures, the evaluation report,
randomized response, the exponential mechanism and DP k-means."""

import numpy as np

from dpknn.datasets import make_census
from dpknn.experiments._synthesis import census_attributes
from dpknn.mechanisms import ExponentialMechanism, RandomizedResponse
from dpknn.metrics import correct_attribution_probability, distance_to_closest_record, evaluate, linkage, pmse
from dpknn.models import DPKMeans

ATTRS = census_attributes()
NAMES = [a.name for a in ATTRS]


def pair(n):
    """A census table and a released copy with AGE and INCWAGE perturbed (labels kept)."""
    real = make_census(n, missing="none", rng=0)[NAMES]
    rel = real.copy()
    rng = np.random.default_rng(1)
    rel["AGE"] = np.clip(rel["AGE"] + rng.integers(-2, 3, n), 0, 99)
    rel["INCWAGE"] = np.clip(rel["INCWAGE"] + rng.normal(0, 50, n), 0, 5001)
    return real, rel


class PMSE:
    params = ([10**4, 10**5], ["logistic", "cart"])
    param_names = ["n", "model"]
    timeout = 900
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self, n, model):
        self.real, self.rel = pair(n)

    def time_pmse(self, n, model):
        pmse(self.real, self.rel, model=model, rng=0)


class Risk:
    params = [10**5, 10**6]
    param_names = ["n"]
    timeout = 900
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self, n):
        self.real, self.rel = pair(n)
        self.keys = ["AGE", "SEX", "RACE", "MARST", "INCWAGE"]

    def time_linkage(self, n):
        linkage(self.real, self.rel, columns=self.keys)

    def time_distance_to_closest_record(self, n):
        distance_to_closest_record(self.real, self.rel, columns=self.keys)

    def time_correct_attribution_probability(self, n):
        correct_attribution_probability(self.real, self.rel, keys=self.keys[:-1], target="INCWAGE",
                                        attributes=ATTRS)

    def peakmem_linkage(self, n):
        linkage(self.real, self.rel, columns=self.keys)


class Report:
    params = [10**5]
    param_names = ["n"]
    timeout = 1200
    number = 1
    repeat = (1, 2, 120.0)

    def setup(self, n):
        self.real, self.rel = pair(n)

    def time_evaluate(self, n):
        evaluate(self.real, self.rel, ATTRS, same_order=True, regressions=["INCWAGE ~ AGE + SEX"],
                 target="INCWAGE", rng=0)


class Mechanisms:
    params = [10**6, 10**7]
    param_names = ["n"]
    timeout = 900
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self, n):
        rng = np.random.default_rng(0)
        self.bits = (rng.random(n) < 0.3).astype(np.int8)
        self.points = rng.normal(size=(n, 4))
        self.scores = rng.normal(size=1000)

    def time_randomized_response(self, n):
        RandomizedResponse(epsilon=1.0).randomize(self.bits)

    def time_dp_kmeans_8_clusters_5_iterations(self, n):
        DPKMeans(8, epsilon=1.0, bounds=([-4] * 4, [4] * 4), max_iter=5).fit(self.points)

    def time_exponential_mechanism_1000_candidates(self, n):
        ExponentialMechanism(epsilon=1.0, sensitivity=1.0).select(self.scores)
