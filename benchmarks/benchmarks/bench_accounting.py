"""Accounting: RDP of the sampled Gaussian over all default orders, sigma search, MCAR costs."""

from dpknn.accounting import mcar_cost, rdp_epsilon, sgm_sigma
from dpknn.experiments._amplification import CENSUS_NETWORK


class Rdp:
    def time_rdp_epsilon_all_orders(self):
        rdp_epsilon(q=0.01, sigma=1.1, steps=1000, delta=1e-5)

    def time_sgm_sigma(self):
        sgm_sigma(q=0.01, steps=1000, epsilon=1.0, delta=1e-5)


class Mcar:
    params = ([10, 16, 20],)
    param_names = ["attributes"]

    def setup(self, d):
        self.rates = {f"a{i}": 0.2 for i in range(d)}
        self.sets = [{f"a{i}", f"a{(i + 1) % d}", f"a{(i + 3) % d}"} for i in range(d)]

    def time_exact(self, d):
        mcar_cost([0.1] * d, self.sets, self.rates, method="exact")


class McarCensusNetwork:
    def setup(self):
        self.children = list(CENSUS_NETWORK)
        self.sets = [{c, *CENSUS_NETWORK[c]} for c in self.children]
        self.rates = {c: 0.3 for c in self.children}

    def time_partition_search_10_attributes(self):
        mcar_cost([0.1] * 10, self.sets, self.rates, method="partition")

    def time_paper_alg4_10_attributes(self):
        mcar_cost([0.1] * 10, self.sets, self.rates, method="paper")
