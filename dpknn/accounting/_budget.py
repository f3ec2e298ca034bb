"""Privacy budget accounting.

:class:`BudgetAccountant` implements basic sequential composition (Dwork and Roth 2014,
Theorem 3.16): releases with costs (ε_i, δ_i) on the same data are together
(Σ ε_i, Σ δ_i)-DP under add/remove-one neighbours. Spends amplified by MCAR missingness record
both their raw and their amplified ε (:meth:`BudgetAccountant.spend_mcar`). Sampled-Gaussian
steps (DP-SGD) are composed in Rényi DP (:meth:`BudgetAccountant.spend_sgm`) and the RDP part as a
whole is converted to (ε_R, δ_R) at the accountant's ``rdp_delta``, then composed sequentially with
the rest. Every query checks the whole cost it will
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
from fractions import Fraction

import numpy as np

from dpknn.accounting._mcar import mcar_cost
from dpknn.accounting._rdp import DEFAULT_ORDERS, convert, sgm_rdp, zcdp_curve
from dpknn.exceptions import BudgetExceededError, DetachedAccountantError
from dpknn.utils._validation import DELTA, EPSILON, NON_NEGATIVE

__all__ = ["BudgetAccountant", "LedgerEntry", "charge", "check_accountant", "float_down"]

def float_down(x):
    """The largest float not above the rational ``x``: a budget share never rounds up."""
    f = float(x)
    return math.nextafter(f, -math.inf) if Fraction(f) > x else f


# Budgets split into equal parts (ε/3 + ε/3 + ε/3) must fit exactly despite rounding.
_REL_TOL = 1e-12


@dataclass(frozen=True)
class LedgerEntry:
    """One spend: what it was for and its (ε, δ).

    ``raw_epsilon`` is the cost before MCAR amplification (None when not amplified). For an RDP
    spend (``kind == "rdp"``) ``epsilon`` is the increase of the converted ε of the RDP part.

    Attributes
    ----------
    label : str
        What the spend was for, as given to the spending method (``""`` when none was given).
    epsilon : float
        The ε charged: as given for a ``"pure"`` spend, the amplified ε for ``"mcar"``, the increase
        of the RDP part's converted ε for ``"rdp"``.
    delta : float
        The δ charged; 0 for ``"mcar"`` and ``"rdp"`` spends (the RDP part's δ, ``rdp_delta`` of the
        accountant, is counted in its totals once, not per entry).
    raw_epsilon : float or None, default None
        Σ ε_j of an ``"mcar"`` spend before amplification; None for the other kinds.
    kind : {"pure", "mcar", "rdp"}, default "pure"
        Which method recorded it: ``spend``, ``spend_mcar`` or ``spend_sgm``.
    """

    label: str
    epsilon: float
    delta: float
    raw_epsilon: float | None = None
    kind: str = "pure"


def _check_cost(epsilon, delta, *, allow_zero=False):
    return (NON_NEGATIVE if allow_zero else EPSILON).check(epsilon, "epsilon"), DELTA.check(delta, "delta")


def _to_float(x, direction=0):
    """A total as a float; totals beyond the float range are infinite, not an OverflowError.

    ``direction`` +1 rounds up (what was spent is never understated), -1 down (nor what remains
    overstated), 0 to nearest.
    """
    try:
        f = float(x)
    except OverflowError:
        return math.inf
    if direction and math.isfinite(f) and not isinstance(x, float) and Fraction(f) != x:
        if (Fraction(f) < x) == (direction > 0):
            f = math.nextafter(f, direction * math.inf)
    return f


class BudgetAccountant:
    """A total privacy budget (ε, δ) and the ledger of what was spent on it.

    Parameters
    ----------
    epsilon : float
        Total ε, > 0 (may be ``math.inf`` for no limit).
    delta : float, default 0.0
        Total δ in [0, 1).
    rdp_delta : float or None
        δ at which the RDP part (sampled-Gaussian steps) is converted; it is charged in full once
        any RDP spend is made. None: all of ``delta``.

    Notes
    -----
    An accountant can be pickled (so objects holding one can go to joblib or multiprocessing
    workers), but the copy is *detached*: ``remaining()``, ``spent()``, ``ledger`` and ``repr``
    work, while ``spend``, ``check``, ``spend_mcar`` and ``spend_sgm`` raise
    :class:`~dpknn.exceptions.DetachedAccountantError`. Otherwise every copy would spend the same
    budget again. To release in parallel, either release in the parent process with the original
    accountant, or charge the parent first and give each worker its own accountant for that
    share: ``parent.spend(eps_worker, label="worker 1")`` then ``BudgetAccountant(eps_worker)``.

    Examples
    --------
    >>> acc = BudgetAccountant(1.0)
    >>> acc.spend(0.4, label="count")
    >>> acc.remaining()
    (0.6, 0.0)
    """

    def __init__(self, epsilon, delta=0.0, *, rdp_delta=None):
        if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) or not epsilon > 0:
            raise ValueError(f"epsilon must be a number > 0 (math.inf for no limit), got {epsilon!r}.")
        self.epsilon = float(epsilon)
        self.delta = DELTA.check(delta, "delta")
        rdp_delta = self.delta if rdp_delta is None else rdp_delta
        if not (isinstance(rdp_delta, numbers.Real) and 0 <= rdp_delta <= self.delta):
            raise ValueError(f"rdp_delta must be in [0, delta={self.delta:g}], got {rdp_delta!r}.")
        self.rdp_delta = float(rdp_delta)
        self._rdp = np.zeros(len(DEFAULT_ORDERS))
        self._rdp_used = False
        self._ledger = []
        self._lock = threading.RLock()
        self._detached = False
        # Exact running totals: O(1) per spend, no rounding, and no overflow into inf - inf = NaN
        # when spends of the unlimited accountant together exceed the largest float.
        self._sums = [Fraction(0), Fraction(0)]

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_lock"]   # a lock cannot be pickled; the copy gets its own
        state["_detached"] = True
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.RLock()

    @property
    def detached(self):
        """True for a copy made by pickling: it can be read but refuses every spend and check."""
        return self._detached

    def _refuse_if_detached(self):
        if self._detached:
            raise DetachedAccountantError(
                "this BudgetAccountant is a copy made by pickling (for example sent to a joblib or "
                "multiprocessing worker); it cannot spend from the original's budget, because every "
                "copy would spend the same budget again. Release in the parent process with the original "
                "accountant, or give each worker its own BudgetAccountant(eps_worker) after charging the "
                "parent first with parent.spend(eps_worker, label=...). A PrivateImputation that was "
                "pickled takes an accountant with private.with_accountant(accountant).")

    @property
    def ledger(self):
        """The spends so far, oldest first (a tuple of :class:`LedgerEntry`)."""
        with self._lock:
            return tuple(self._ledger)

    def _add(self, i, x):
        self._sums[i] += Fraction(x)

    def _rdp_part(self, curve, used):
        if not used:
            return 0.0, 0.0
        if self.rdp_delta <= 0:
            return math.inf, 0.0
        orders = np.asarray(DEFAULT_ORDERS)
        return convert(curve, orders, self.rdp_delta, "improved").epsilon, self.rdp_delta

    def spent(self):
        """(ε, δ) spent so far (the RDP part converted at ``rdp_delta``)."""
        e, d = self._exact_spent()
        return _to_float(e, +1), _to_float(d, +1)

    def _exact_spent(self):
        """(ε, δ) spent, exact (ε is inf when the RDP part converts to inf)."""
        with self._lock:
            e, d = self._rdp_part(self._rdp, self._rdp_used)
            eps = math.inf if math.isinf(e) else self._sums[0] + Fraction(e)
            return eps, self._sums[1] + Fraction(d)

    def remaining(self):
        """(ε, δ) still available (ε is inf for an unlimited accountant, whatever was spent)."""
        eps, delta = self._exact_spent()
        rem_e = math.inf if math.isinf(self.epsilon) else max(_to_float(Fraction(self.epsilon) - eps, -1), 0.0)
        return rem_e, max(_to_float(Fraction(self.delta) - delta, -1), 0.0)

    def check(self, epsilon, delta=0.0):
        """Raise :class:`~dpknn.exceptions.BudgetExceededError` if (ε, δ) does not fit.

        Nothing is recorded; call before any computation on the data.
        """
        epsilon, delta = _check_cost(epsilon, delta, allow_zero=True)
        self._refuse_if_detached()
        with self._lock:
            return self._check(epsilon, delta)

    def _fits(self, eps_total, delta_total):
        """Whether exact totals (ε, δ) fit the budget (to rounding, so that ε/3 + ε/3 + ε/3 fits)."""
        if math.isinf(self.epsilon):
            eps_ok = True
        else:
            tol = _REL_TOL * max(1.0, self.epsilon)
            eps_ok = eps_total <= Fraction(self.epsilon) + Fraction(tol)
        # Relative, so that a budget with delta = 0 admits no delta at all.
        return eps_ok and delta_total <= Fraction(self.delta) * (1 + Fraction(_REL_TOL))

    def _check(self, epsilon, delta):
        eps_spent, delta_spent = self._exact_spent()
        if not self._fits(eps_spent + Fraction(epsilon), delta_spent + Fraction(delta)):
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
        self._refuse_if_detached()
        with self._lock:
            self._check(epsilon, delta)
            self._ledger.append(LedgerEntry(label=str(label), epsilon=epsilon, delta=delta))
            self._add(0, epsilon)
            self._add(1, delta)

    def spend_mcar(self, epsilons, attribute_sets, missing_rates, *, method="exact", label=""):
        """Check and record pure-DP mechanisms amplified by MCAR missingness, as one spend.

        The cost is :func:`dpknn.accounting.mcar_cost` (``"exact"`` or ``"partition"``; the
        paper's linear ``"paper"`` cost is not a valid bound and is refused). The ledger keeps
        both Σ ε_j (``raw_epsilon``) and the amplified ε. Missing rates are public inputs.
        Returns the :class:`~dpknn.accounting.McarCost`.
        """
        if method == "paper":
            raise ValueError("method='paper' is the paper's linear cost, which is not a valid DP bound; the "
                             "accountant records only 'exact' or 'partition'.")
        self._refuse_if_detached()
        cost = mcar_cost(epsilons, attribute_sets, missing_rates, method=method)
        with self._lock:
            self._check(cost.epsilon, 0.0)
            self._ledger.append(LedgerEntry(label=str(label), epsilon=cost.epsilon, delta=0.0,
                                            raw_epsilon=cost.raw_epsilon, kind="mcar"))
            self._add(0, cost.epsilon)
        return cost

    def spend_sgm(self, *, q, sigma, steps=1, rho=0.0, label=""):
        """Check and record ``steps`` sampled-Gaussian steps (rate q, noise multiplier σ) in RDP,
        with a ``rho``-zCDP part beside them (RDP ρα at every order α), as one spend.

        The RDP curve of all such spends is composed (summed over orders) and converted to
        (ε, δ) at ``rdp_delta`` with the improved conversion (:func:`dpknn.accounting.rdp_epsilon`).
        Refused, with nothing recorded, when the converted total would exceed the budget.
        """
        self._refuse_if_detached()
        rho = NON_NEGATIVE.check(rho, "rho")
        add = steps * sgm_rdp(q=q, sigma=sigma) + zcdp_curve(rho, DEFAULT_ORDERS)
        with self._lock:
            before, _ = self._rdp_part(self._rdp, self._rdp_used)
            after, d = self._rdp_part(self._rdp + add, True)
            total_e = math.inf if math.isinf(after) else self._sums[0] + Fraction(after)
            total_d = self._sums[1] + Fraction(d)
            if not self._fits(total_e, total_d):
                raise BudgetExceededError(
                    f"privacy budget exceeded: {steps} sampled-Gaussian steps (q={q:g}, sigma={sigma:g}) would bring "
                    f"the total to epsilon={_to_float(total_e):g}, delta={_to_float(total_d):g}; the budget is "
                    f"epsilon={self.epsilon:g}, delta={self.delta:g}.")
            self._rdp = self._rdp + add
            self._rdp_used = True
            self._ledger.append(LedgerEntry(label=str(label), epsilon=after - before, delta=0.0, kind="rdp"))
        return after

    def __repr__(self):
        e, d = self.spent()
        detached = ", detached" if self._detached else ""
        return f"BudgetAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, spent=({e:g}, {d:g}){detached})"


def check_accountant(accountant):
    """``accountant`` if it is a :class:`BudgetAccountant`, else a TypeError naming what was given.

    Parameters
    ----------
    accountant : object
        The value to check (None included: it is refused).
    """
    if not isinstance(accountant, BudgetAccountant):
        raise TypeError(f"accountant must be a BudgetAccountant (BudgetAccountant(epsilon) for a total budget), "
                        f"got {accountant!r}.")
    return accountant


def charge(accountant, epsilon, delta=0.0, *, label, spend=None):
    """The one accountant rule of a DP fit whose cost its parameters fix (every synthesiser, DP k-means).

    The fit's cost (``epsilon``, ``delta``) is charged before any record is read: on ``accountant``, or,
    with None, on a new ``BudgetAccountant(epsilon, delta)`` that holds exactly that cost. Either way the
    fitted object keeps the accountant charged as ``accountant_``, whose ledger is what the fit spent, and a
    fit that would spend more than its budget is refused here, with nothing read. An object whose cost its
    parameters do not fix (:class:`~dpknn.releases.PrivateImputation` releases on demand) has no budget of
    its own to fall back on and takes the caller's accountant, required (:func:`check_accountant`).

    Parameters
    ----------
    accountant : BudgetAccountant or None
    epsilon, delta : float
        The fit's whole cost (for ``spend``, the budget of the accountant None creates).
    label : str
        The ledger's label (with ``spend``, ignored: ``spend`` labels its own entry).
    spend : callable or None
        ``spend(accountant)`` records a cost that is not one sequential (ε, δ) spend (an RDP spend,
        :meth:`BudgetAccountant.spend_sgm`); None: ``accountant.spend(epsilon, delta, label=label)``.

    Returns
    -------
    BudgetAccountant
        The accountant charged.

    Raises
    ------
    TypeError
        ``accountant`` is neither None nor a BudgetAccountant.
    BudgetExceededError
        The cost does not fit the accountant's budget.
    """
    accountant = BudgetAccountant(epsilon, delta) if accountant is None else check_accountant(accountant)
    if spend is None:
        accountant.spend(epsilon, delta, label=label)
    else:
        spend(accountant)
    return accountant
