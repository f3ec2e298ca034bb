"""Privacy budget accounting.

:class:`BudgetAccountant` implements basic sequential composition (Dwork and Roth 2014,
Theorem 3.16): releases with costs (ε_i, δ_i) on the same data are together
(Σ ε_i, Σ δ_i)-DP under add/remove-one neighbours. Every query checks the whole cost it will
spend *before* touching the data and records each release in the ledger after it is made.
:meth:`BudgetAccountant.spend` checks and records under one lock, so concurrent threads can
never together spend more than the budget.

References
----------
.. [1] Dwork, Roth (2014). "The algorithmic foundations of differential privacy", Theorem 3.16.
"""

from __future__ import annotations

import math
import numbers
import threading
from dataclasses import dataclass

from .exceptions import BudgetExceededError

__all__ = ["BudgetAccountant", "LedgerEntry"]

# Budgets split into equal parts (ε/3 + ε/3 + ε/3) must fit exactly despite rounding.
_REL_TOL = 1e-12


@dataclass(frozen=True)
class LedgerEntry:
    """One spend: what it was for and its (ε, δ)."""

    label: str
    epsilon: float
    delta: float


def _check_cost(epsilon, delta, *, allow_zero=False):
    for name, v in (("epsilon", epsilon), ("delta", delta)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or math.isnan(v):
            raise TypeError(f"{name} must be a real number, got {v!r}.")
    if not math.isfinite(epsilon) or epsilon < 0 or (epsilon == 0 and not allow_zero):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}.")
    if not 0 <= delta < 1:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
    return float(epsilon), float(delta)


class BudgetAccountant:
    """A total privacy budget (ε, δ) and the ledger of what was spent on it.

    Parameters
    ----------
    epsilon : float
        Total ε, > 0 (may be ``math.inf`` for no limit).
    delta : float, default 0.0
        Total δ in [0, 1).

    Examples
    --------
    >>> acc = BudgetAccountant(1.0)
    >>> acc.spend(0.4, label="count")
    >>> acc.remaining()
    (0.6, 0.0)
    """

    def __init__(self, epsilon, delta=0.0):
        if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) or not epsilon > 0:
            raise ValueError(f"epsilon must be a number > 0 (math.inf for no limit), got {epsilon!r}.")
        if not (isinstance(delta, numbers.Real) and 0 <= delta < 1):
            raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self._ledger = []
        self._lock = threading.RLock()
        # Running totals with Neumaier compensation: O(1) per spend, exact to rounding.
        self._sums = [0.0, 0.0]
        self._comp = [0.0, 0.0]

    @property
    def ledger(self):
        """The spends so far, oldest first (a tuple of :class:`LedgerEntry`)."""
        with self._lock:
            return tuple(self._ledger)

    def _add(self, i, x):
        t = self._sums[i] + x
        if abs(self._sums[i]) >= abs(x):
            self._comp[i] += (self._sums[i] - t) + x
        else:
            self._comp[i] += (x - t) + self._sums[i]
        self._sums[i] = t

    def spent(self):
        """(ε, δ) spent so far."""
        with self._lock:
            return (self._sums[0] + self._comp[0], self._sums[1] + self._comp[1])

    def remaining(self):
        """(ε, δ) still available."""
        eps, delta = self.spent()
        return (max(self.epsilon - eps, 0.0), max(self.delta - delta, 0.0))

    def check(self, epsilon, delta=0.0):
        """Raise :class:`~dpknn.exceptions.BudgetExceededError` if (ε, δ) does not fit.

        Nothing is recorded; call before any computation on the data.
        """
        epsilon, delta = _check_cost(epsilon, delta, allow_zero=True)
        with self._lock:
            return self._check(epsilon, delta)

    def _check(self, epsilon, delta):
        eps_spent, delta_spent = self.spent()
        tol = _REL_TOL * max(1.0, self.epsilon if math.isfinite(self.epsilon) else 1.0)
        if eps_spent + epsilon > self.epsilon + tol or delta_spent + delta > self.delta + _REL_TOL:
            rem_e, rem_d = self.remaining()
            raise BudgetExceededError(
                f"privacy budget exceeded: asked for epsilon={epsilon:g}, delta={delta:g}; remaining "
                f"epsilon={rem_e:g}, delta={rem_d:g} of the total epsilon={self.epsilon:g}, "
                f"delta={self.delta:g}."
            )
        return True

    def spend(self, epsilon, delta=0.0, *, label=""):
        """Check and record a spend of (ε, δ) under ``label``, as one atomic step."""
        epsilon, delta = _check_cost(epsilon, delta)
        with self._lock:
            self._check(epsilon, delta)
            self._ledger.append(LedgerEntry(label=str(label), epsilon=epsilon, delta=delta))
            self._add(0, epsilon)
            self._add(1, delta)

    def __repr__(self):
        e, d = self.spent()
        return f"BudgetAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, spent=({e:g}, {d:g}))"
