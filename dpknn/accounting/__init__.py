"""Privacy accounting: budgets, Rényi DP of the sampled Gaussian, MCAR amplification.

- :class:`BudgetAccountant` (sequential composition, amplified spends, an RDP part for sampled-Gaussian
  steps) and its ledger's :class:`LedgerEntry`. Every estimator charges it by one rule (``_budget.charge``:
  a fit whose cost its parameters fix charges the caller's accountant or a new one holding exactly that cost).
- :func:`rdp_epsilon` (:class:`RdpResult`) and :func:`sgm_sigma`: Rényi DP of the sampled Gaussian.
- :func:`zcdp_rho`, :func:`zcdp_delta`, :func:`zcdp_epsilon`: zero-concentrated DP conversions.
- :func:`amplify_mcar`, :func:`mcar_cost` (:class:`McarCost`): amplification by MCAR missingness.
"""

from dpknn.utils._lazy import lazy_exports

__all__ = [
    "BudgetAccountant",
    "LedgerEntry",
    "McarCost",
    "RdpResult",
    "amplify_mcar",
    "mcar_cost",
    "rdp_epsilon",
    "sgm_sigma",
    "zcdp_delta",
    "zcdp_epsilon",
    "zcdp_rho",
]

# Each public name loads its module on first use (dpknn.utils._lazy): importing the package stays cheap.
# Names that left the public list still load, with a DeprecationWarning.
__getattr__, __dir__ = lazy_exports(__name__, {
    "BudgetAccountant": "dpknn.accounting._budget",
    "LedgerEntry": "dpknn.accounting._budget",
    "McarCost": "dpknn.accounting._mcar",
    "amplify_mcar": "dpknn.accounting._mcar",
    "mcar_cost": "dpknn.accounting._mcar",
    "RdpResult": "dpknn.accounting._rdp",
    "rdp_epsilon": "dpknn.accounting._rdp",
    "sgm_sigma": "dpknn.accounting._rdp",
    "zcdp_delta": "dpknn.accounting._zcdp",
    "zcdp_epsilon": "dpknn.accounting._zcdp",
    "zcdp_rho": "dpknn.accounting._zcdp",
}, internal={
    "charge": "dpknn.accounting._budget",
    "check_accountant": "dpknn.accounting._budget",
    "child_bound": "dpknn.accounting._mcar",
    "observed_probability": "dpknn.accounting._mcar",
    "tree_bound": "dpknn.accounting._mcar",
    "DEFAULT_ORDERS": "dpknn.accounting._rdp",
    "rdp_rho": "dpknn.accounting._rdp",
    "sgm_rdp": "dpknn.accounting._rdp",
    "exponential_epsilon": "dpknn.accounting._zcdp",
    "exponential_rho": "dpknn.accounting._zcdp",
})
