import math
import pickle

import pytest

from dpknn.accounting import BudgetAccountant
from dpknn.exceptions import BudgetExceededError, DetachedAccountantError


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
    # The exact sum, rounded up: never below it, and at most one unit in the last place above fsum's nearest.
    from fractions import Fraction

    exact = sum(Fraction(c) for c in costs)
    spent = acc.spent()[0]
    assert Fraction(spent) >= exact and spent in (math.fsum(costs), math.nextafter(math.fsum(costs), math.inf))


def test_unlimited_accountant_keeps_working_after_spends_beyond_the_float_range():
    acc = BudgetAccountant(math.inf)
    acc.spend(1e308, label="a")
    acc.spend(1e308, label="b")   # the total, 2e308, is beyond the largest float
    acc.spend(1.0, label="c")
    acc.check(1e308)
    assert acc.spent() == (math.inf, 0.0) and acc.remaining() == (math.inf, 0.0)
    assert [e.label for e in acc.ledger] == ["a", "b", "c"] and "nan" not in repr(acc)


def test_finite_accountant_refuses_spends_beyond_the_float_range():
    acc = BudgetAccountant(1.7e308)
    acc.spend(1e308)
    with pytest.raises(BudgetExceededError, match="remaining epsilon=7e\\+307"):
        acc.spend(1e308)
    assert acc.spent() == (1e308, 0.0) and acc.remaining() == (pytest.approx(7e307), 0.0)


def test_thirds_still_fit_exactly_and_nothing_more():
    acc = BudgetAccountant(1.0)
    for _ in range(3):
        acc.spend(1 / 3)
    with pytest.raises(BudgetExceededError):
        acc.spend(1e-9)


def test_pickled_accountant_is_a_detached_read_only_copy():
    acc = BudgetAccountant(1.0, 1e-6)
    acc.spend(0.25, 1e-7, label="count")
    copy = pickle.loads(pickle.dumps(acc))
    assert copy.detached and not acc.detached
    assert copy.remaining() == acc.remaining() and copy.spent() == acc.spent() and copy.ledger == acc.ledger
    assert "detached" in repr(copy)
    for spend in (lambda: copy.spend(0.1), lambda: copy.check(0.1),
                  lambda: copy.spend_mcar([0.1], [["a"]], {"a": 0.5}),
                  lambda: copy.spend_sgm(q=0.01, sigma=2.0)):
        with pytest.raises(DetachedAccountantError, match=r"copy made by pickling.*parent\.spend\(eps_worker"):
            spend()
    assert copy.ledger == acc.ledger   # nothing was recorded
    acc.spend(0.5, label="the original still spends")
    assert acc.remaining()[0] == pytest.approx(0.25)
    with pytest.raises(BudgetExceededError):   # the refusal is a budget refusal, which callers handle
        copy.spend(0.1)


def test_published_totals_round_the_safe_way():
    # What was spent is never understated, what remains never overstated (0.1 + 0.2 + 0.3 > 0.6 exactly).
    from fractions import Fraction

    acc = BudgetAccountant(10.0)
    for e in (0.1, 0.2, 0.3):
        acc.spend(e)
    exact = sum(Fraction(e) for e in (0.1, 0.2, 0.3))
    assert Fraction(acc.spent()[0]) >= exact and Fraction(acc.remaining()[0]) <= 10 - exact


def test_a_budget_without_delta_admits_no_delta():
    acc = BudgetAccountant(1.0, delta=0.0)
    with pytest.raises(BudgetExceededError):
        acc.spend(0.5, delta=5e-13)
    thirds = BudgetAccountant(1.0, delta=3e-6)
    for _ in range(3):
        thirds.spend(1 / 3, delta=1e-6)   # exact thirds still fit
