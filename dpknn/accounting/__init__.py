"""Privacy accounting: budgets, Rényi DP of the sampled Gaussian, MCAR amplification.

- :mod:`.budget`: :class:`BudgetAccountant` (sequential composition, amplified spends, an RDP
  part for sampled-Gaussian steps).
- :mod:`.rdp`: :func:`rdp_epsilon`, :func:`rdp_rho`, :func:`sgm_sigma`.
- :mod:`.zcdp`: :func:`zcdp_rho`, :func:`zcdp_delta`, :func:`zcdp_epsilon`, :func:`exponential_rho`,
  :func:`exponential_epsilon`.
- :mod:`.mcar`: :func:`amplify_mcar`, :func:`mcar_cost`, :func:`child_bound`, :func:`tree_bound`.
"""

from dpknn.accounting.budget import BudgetAccountant, LedgerEntry
from dpknn.accounting.mcar import McarCost, amplify_mcar, child_bound, mcar_cost, observed_probability, tree_bound
from dpknn.accounting.rdp import DEFAULT_ORDERS, RdpResult, rdp_epsilon, rdp_rho, sgm_rdp, sgm_sigma
from dpknn.accounting.zcdp import exponential_epsilon, exponential_rho, zcdp_delta, zcdp_epsilon, zcdp_rho

__all__ = [
    "DEFAULT_ORDERS",
    "BudgetAccountant",
    "LedgerEntry",
    "McarCost",
    "RdpResult",
    "amplify_mcar",
    "child_bound",
    "exponential_epsilon",
    "exponential_rho",
    "mcar_cost",
    "observed_probability",
    "rdp_epsilon",
    "rdp_rho",
    "sgm_rdp",
    "sgm_sigma",
    "tree_bound",
    "zcdp_delta",
    "zcdp_epsilon",
    "zcdp_rho",
]
