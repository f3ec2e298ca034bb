import math

import pytest

from dpknn.accounting import BudgetAccountant
from dpknn.exceptions import BudgetExceededError


def test_spend_check_remaining_and_ledger():
    acc = BudgetAccountant(1.0, 1e-6)
    acc.spend(0.25, label="a")
    acc.spend(0.5, 5e-7, label="b")
    assert acc.remaining() == pytest.approx((0.25, 5e-7))
    assert [e.label for e in acc.ledger] == ["a", "b"]
    with pytest.raises(BudgetExceededError, match="remaining epsilon=0.25"):
        acc.check(0.3)
    with pytest.raises(BudgetExceededError):
        acc.spend(0.1, 6e-7)
    assert len(acc.ledger) == 2  # refused spends are not recorded


def test_equal_splits_fit_exactly():
    acc = BudgetAccountant(1.0)
    for _ in range(3):
        acc.spend(1 / 3)
    for _ in range(10):
        BudgetAccountant(0.3).check(0.1 + 0.2)
    with pytest.raises(BudgetExceededError):
        acc.spend(1e-9)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), "1"])
def test_rejects_bad_budgets(bad):
    with pytest.raises((ValueError, TypeError)):
        BudgetAccountant(bad)
    with pytest.raises((ValueError, TypeError)):
        BudgetAccountant(1.0).spend(bad)


def test_unlimited():
    acc = BudgetAccountant(math.inf)
    acc.spend(1e6)
    assert acc.remaining()[0] == math.inf


def test_running_total_matches_exact_sum():
    acc = BudgetAccountant(math.inf)
    costs = [0.1, 1e-9, 3.3, 1 / 7] * 2500
    for c in costs:
        acc.spend(c)
    assert acc.spent()[0] == math.fsum(costs)
