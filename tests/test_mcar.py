import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_mcar import best_partition_by_enumeration, exact_by_masks

from dpknn import BudgetAccountant, BudgetExceededError
from dpknn.accounting import amplify_mcar, mcar_cost, rdp_epsilon
from dpknn.accounting._mcar import child_bound
from dpknn.experiments._amplification import EXAMPLE_RATES, examples, table

ALL = {"State", "Occupation", "Gender", "Income"}
EX58 = ([0.25] * 4, [{"State"}, {"Occupation"}, {"Gender"}, {"Gender", "Income"}])


@pytest.mark.parametrize(("eps", "sets", "paper", "partition", "exact"), [
    ([0.25] * 4, [ALL] * 4, 0.421875, 0.5452, 0.5452),                                       # Example 5.5
    ([1 / 3] * 3, [{"State"}, {"Occupation"}, {"Gender", "Income"}], 0.7708, 0.7941, 0.7941),  # Example 5.7
    (*EX58, 0.8125, 0.8293, 0.7925),                                                        # Example 5.8
    ([0.25] * 4, [{a} for a in sorted(ALL)], 0.8125, 0.8293, 0.8293),                          # Example 5.13
])
def test_the_papers_examples(eps, sets, paper, partition, exact):
    got = {m: mcar_cost(eps, sets, EXAMPLE_RATES, method=m) for m in ("paper", "partition", "exact")}
    assert got["paper"].epsilon == pytest.approx(paper, abs=1e-4) and not got["paper"].valid
    assert got["partition"].epsilon == pytest.approx(partition, abs=1e-4) and got["partition"].valid
    assert got["exact"].epsilon == pytest.approx(exact, abs=1e-4)
    assert got["exact"].raw_epsilon == pytest.approx(sum(eps))


def test_example_5_8_grouping_on_gender_is_valid_but_not_best():
    on_gender = amplify_mcar(0.25, 0.75)[0] + 0.25 + amplify_mcar(0.5, 0.75)[0]
    assert on_gender == pytest.approx(0.8396, abs=1e-4)
    best = mcar_cost(*EX58, EXAMPLE_RATES, method="partition")
    assert best.epsilon < on_gender
    assert (frozenset({"Income"}), (3,)) in best.groups


def small_instances():
    attrs = ["a", "b", "c", "d", "e", "f"]
    rates = st.fixed_dictionaries({a: st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.9, 1.0]) for a in attrs})
    sets = st.lists(st.sets(st.sampled_from(attrs), max_size=3), min_size=1, max_size=4)
    return st.tuples(rates, sets).flatmap(
        lambda t: st.tuples(st.just(t[0]), st.just(t[1]),
                            st.lists(st.floats(0.0, 2.0), min_size=len(t[1]), max_size=len(t[1]))))


@settings(max_examples=300, deadline=None)
@given(small_instances())
def test_exact_and_partition_against_brute_force(instance):
    rates, sets, eps = instance
    exact = mcar_cost(eps, sets, rates, method="exact").epsilon
    part = mcar_cost(eps, sets, rates, method="partition").epsilon
    assert exact == pytest.approx(exact_by_masks(eps, sets, rates), abs=1e-9)
    assert part == pytest.approx(best_partition_by_enumeration(eps, sets, rates), abs=1e-9)
    assert exact <= part + 1e-9 <= sum(eps) + 2e-9


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0, 1.5), min_size=1, max_size=6), st.floats(0.0, 0.9), st.data())
def test_child_bound_covers_every_structure(eps, rate, data):
    children = [f"x{i}" for i in range(len(eps))]
    rates = {c: rate for c in children}
    sets = [{c, *data.draw(st.sets(st.sampled_from(children[:i]), max_size=2))} if i else {c}
            for i, c in enumerate(children)]
    assert mcar_cost(eps, sets, rates).epsilon <= child_bound(eps, children, rates) + 1e-12


def test_randomized_response_attains_the_exact_bound_and_beats_the_paper():
    # Mechanism j: randomized response on "the differing row is present and observed on S_j".
    # With outputs all 1, the likelihood ratio of D + x over D is E_O[exp(Σ ε_j 1{S_j ⊆ O})].
    rng = np.random.default_rng(0)
    n = 1_000_000
    measured = {}
    for name, (eps, sets) in {"5.5": ([0.25] * 4, [ALL] * 4), "5.8": EX58}.items():
        attrs = sorted(ALL)
        observed = {a: rng.random(n) >= EXAMPLE_RATES[a] for a in attrs}
        all_ones = np.ones(n, dtype=bool)
        p_without = 1.0
        for e, s in zip(eps, sets):
            bit = np.logical_and.reduce([observed[a] for a in s])
            p1 = np.where(bit, math.exp(e), 1.0) / (1 + math.exp(e))
            all_ones &= rng.random(n) < p1
            p_without *= 1 / (1 + math.exp(e))
        est = all_ones.mean()
        log_ratio = math.log(est / p_without)
        se = math.sqrt((1 - est) / (est * n))
        exact = mcar_cost(eps, sets, EXAMPLE_RATES).epsilon
        assert abs(log_ratio - exact) < 4 * se
        measured[name] = (log_ratio, se)
    # Example 5.5: the paper's linear 0.421 is below the privacy loss that actually occurs (0.545).
    log_ratio, se = measured["5.5"]
    assert mcar_cost([0.25] * 4, [ALL] * 4, EXAMPLE_RATES, method="paper").epsilon < log_ratio - 10 * se


def test_amplify_mcar_and_validation():
    assert amplify_mcar(1.0, 0.5) == (pytest.approx(math.log(1 + 0.5 * (math.e - 1))), 0.0)
    assert amplify_mcar(1.0, 0.5, 1e-6)[1] == 5e-7
    assert amplify_mcar(800.0, 0.5)[0] == pytest.approx(800 + math.log(0.5))
    assert amplify_mcar(2.0, 0.0) == (0.0, 0.0) and amplify_mcar(2.0, 1.0)[0] == pytest.approx(2.0)
    with pytest.raises(ValueError, match="p must be"):
        amplify_mcar(1.0, 1.5)
    with pytest.raises(ValueError, match="no public rate"):
        mcar_cost([1.0], [{"a"}], {})
    with pytest.raises(ValueError, match="method"):
        mcar_cost([1.0], [{"a"}], {"a": 0.1}, method="greedy")
    with pytest.raises(ValueError, match="limited to 10 attributes"):
        mcar_cost([0.1], [{f"a{i}" for i in range(11)}], {f"a{i}": 0.1 for i in range(11)}, method="partition")
    with pytest.raises(ValueError, match="distinct"):
        child_bound([0.1, 0.1], ["a", "a"], {"a": 0.1})
    # Twenty attributes are fine for the exact bound.
    rates = {f"a{i}": 0.2 for i in range(20)}
    big = mcar_cost([0.05] * 40, [{f"a{i % 20}", f"a{(i + 1) % 20}"} for i in range(40)], rates)
    assert 0 < big.epsilon < 2.0


def test_accountant_records_raw_and_amplified_and_composes_rdp():
    acc = BudgetAccountant(3.0, 1e-5)
    cost = acc.spend_mcar(*EX58, EXAMPLE_RATES, label="marginals")
    entry = acc.ledger[-1]
    assert entry.kind == "mcar" and entry.raw_epsilon == 1.0 and entry.epsilon == pytest.approx(0.7925, abs=1e-4)
    assert cost.epsilon == entry.epsilon
    with pytest.raises(ValueError, match="not a valid DP bound"):
        acc.spend_mcar(*EX58, EXAMPLE_RATES, method="paper")
    for _ in range(10):
        acc.spend_sgm(q=0.01, sigma=1.1, steps=100, label="critic")
    rdp_part = rdp_epsilon(q=0.01, sigma=1.1, steps=1000, delta=1e-5).epsilon
    assert acc.spent()[0] == pytest.approx(cost.epsilon + rdp_part, rel=1e-12)
    assert acc.spent()[1] == 1e-5
    before = acc.ledger
    with pytest.raises(BudgetExceededError):
        acc.spend_sgm(q=0.5, sigma=0.5, steps=100)
    with pytest.raises(BudgetExceededError):
        acc.spend(0.6)
    assert acc.ledger == before
    assert BudgetAccountant(1.0).spend_sgm.__doc__
    # A zCDP part spent with the steps adds ρα to the same curve (DP-MisGAN's tables).
    acc = BudgetAccountant(3.0, 1e-5)
    acc.spend_sgm(q=0.01, sigma=1.1, steps=1000, rho=0.05, label="critic and tables")
    assert acc.spent()[0] == pytest.approx(rdp_epsilon(q=0.01, sigma=1.1, steps=1000, delta=1e-5, rho=0.05).epsilon,
                                           rel=1e-12)
    with pytest.raises(ValueError, match="rho"):
        acc.spend_sgm(q=0.01, sigma=1.1, rho=-1.0)


def test_experiment_tables():
    ex = examples()
    assert ex.loc["5.13", "one_model_valid"] == pytest.approx(0.9431, abs=1e-4)
    tab = table((0.1, 0.5))
    assert (tab["exact"] <= tab["partition"] + 1e-12).all() and (tab["partition"] <= tab["raw"]).all()
    assert (tab["exact"] <= tab["child_bound"]).all() and tab.loc[0.5, "exact"] < tab.loc[0.1, "exact"]
