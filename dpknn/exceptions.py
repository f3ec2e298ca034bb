"""Warnings and errors shared by the whole package, and the default work limit."""

__all__ = ["DEFAULT_MAX_WORK", "BudgetExceededError", "DetachedAccountantError", "DomainError", "ImputedDataError",
           "PrivacyLeakWarning", "WorkLimitError"]


class PrivacyLeakWarning(RuntimeWarning):
    """A public input (domain, bound, category list) was read from the data.

    Differential privacy assumes that bounds and domains are fixed before the data are seen.
    When they are computed from the data themselves, the stated guarantee no longer holds.
    """


class BudgetExceededError(ValueError):
    """A privacy spend was refused because it would exceed the remaining budget.

    Raised before any computation on the data takes place.
    """


class DetachedAccountantError(BudgetExceededError):
    """A copy of a :class:`~dpknn.accounting.BudgetAccountant` made by pickling was asked to spend.

    Copies in other processes (joblib, multiprocessing) would each spend the same budget again,
    so a copy can be read but not spent from; see the accountant's docstring for what to do.
    """


class DomainError(ValueError):
    """Data do not fit the public domain that the schema declares."""


class ImputedDataError(ValueError):
    """Data carrying imputation flag columns (:mod:`dpknn.schema._flags`) reached a DP entry point.

    Imputed values would be taken as observed, and the noise calibrated to the wrong L1(D).
    """


#: The work (ball-box tests of the L1 search) a caller allows by default before :class:`WorkLimitError`:
#: about 5 s on this project's 2-core reference machine. Here, beside the error, so that the command line
#: can show it without loading the imputation.
DEFAULT_MAX_WORK = 500_000_000


class WorkLimitError(RuntimeError):
    """Certifying an exact result would take more work than the caller allowed.

    The message names the ordinal attribute the search had to split most often. ``splits``
    maps each known attribute to the number of times the search split it (empty when the
    raiser does not know); :func:`dpknn.impute.suggest_bin_widths` uses it to try coarser bins.

    Parameters
    ----------
    message : str
    splits : dict of str to int or None
        Splits per known attribute (None: not known).
    """

    def __init__(self, message, *, splits=None):
        super().__init__(message)
        self.splits = dict(splits or {})
