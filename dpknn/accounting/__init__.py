"""Privacy accounting: budgets, Rényi DP of the sampled Gaussian, MCAR amplification.

- :mod:`.budget`: :class:`BudgetAccountant` (sequential composition, amplified spends, an RDP
  part for sampled-Gaussian steps); :func:`charge`, the one accountant rule of a fit whose cost its
  parameters fix, and :func:`check_accountant`.
- :mod:`.rdp`: :func:`rdp_epsilon`, :func:`rdp_rho`, :func:`sgm_sigma`.
- :mod:`.zcdp`: :func:`zcdp_rho`, :func:`zcdp_delta`, :func:`zcdp_epsilon`, :func:`exponential_rho`,
  :func:`exponential_epsilon`.
- :mod:`.mcar`: :func:`amplify_mcar`, :func:`mcar_cost`, :func:`child_bound`, :func:`tree_bound`.
"""

from dpknn.utils.lazy import lazy_exports

__all__ = [
    "DEFAULT_ORDERS",
    "BudgetAccountant",
    "LedgerEntry",
    "McarCost",
    "RdpResult",
    "amplify_mcar",
    "charge",
    "check_accountant",
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

# Each public name loads its module on first use (dpknn.utils.lazy): importing the package stays cheap.
__getattr__, __dir__ = lazy_exports(__name__, {
    "BudgetAccountant": "dpknn.accounting.budget",
    "charge": "dpknn.accounting.budget",
    "check_accountant": "dpknn.accounting.budget",
    "LedgerEntry": "dpknn.accounting.budget",
    "McarCost": "dpknn.accounting.mcar",
    "amplify_mcar": "dpknn.accounting.mcar",
    "child_bound": "dpknn.accounting.mcar",
    "mcar_cost": "dpknn.accounting.mcar",
    "observed_probability": "dpknn.accounting.mcar",
    "tree_bound": "dpknn.accounting.mcar",
    "DEFAULT_ORDERS": "dpknn.accounting.rdp",
    "RdpResult": "dpknn.accounting.rdp",
    "rdp_epsilon": "dpknn.accounting.rdp",
    "rdp_rho": "dpknn.accounting.rdp",
    "sgm_rdp": "dpknn.accounting.rdp",
    "sgm_sigma": "dpknn.accounting.rdp",
    "exponential_epsilon": "dpknn.accounting.zcdp",
    "exponential_rho": "dpknn.accounting.zcdp",
    "zcdp_delta": "dpknn.accounting.zcdp",
    "zcdp_epsilon": "dpknn.accounting.zcdp",
    "zcdp_rho": "dpknn.accounting.zcdp",
})
