"""MST on incomplete data: the selection's sensitivity, the budget, never_missing, universes,
the sidecar and the command line (the estimator: test_graphical_model.py)."""

import itertools
import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from people import ATTRS, people

from dpknn import Categorical
from dpknn.accounting import BudgetAccountant, zcdp_rho
from dpknn.accounting._zcdp import exponential_epsilon, exponential_rho
from dpknn.exceptions import BudgetExceededError
from dpknn.metrics._fidelity import tvd
from dpknn.schema._discretization import Discretization
from dpknn.schema._marginals import count_tables, extended_codes
from dpknn.synth import MSTSynthesizer
from dpknn.synth._graphical_model import Measurement
from dpknn.synth._mst import edge_scores

# --- the synthesiser -----------------------------------------------------------------------------



def test_pair_scores_have_sensitivity_one_on_neighbours():
    disc = Discretization(ATTRS, 10)
    ext_sizes = disc.sizes + 1
    df = people(400, seed=1)
    one_way = [Measurement((a,), np.random.default_rng(a).integers(0, 60, s), 5.0) for a, s in enumerate(ext_sizes)]
    pairs = list(itertools.combinations(range(4), 2))

    def scores(frame):
        ext = extended_codes(disc.encode(frame), disc.sizes)
        tables = count_tables(ext, disc.sizes, pairs)
        return edge_scores({p: t.astype(np.int64) for p, t in zip(pairs, tables)}, one_way)

    base = scores(df)
    assert all(float(s).is_integer() for s in base.values())
    for i in range(0, 400, 37):
        removed = scores(df.drop(index=i))
        assert max(abs(base[p] - removed[p]) for p in pairs) <= 1


def test_budget_composes_to_rho():
    for eps in (0.5, 1.0, 4.0):
        rho = Fraction(zcdp_rho(eps, 1e-9))
        for rounds in (1, 4, 9):
            e = exponential_epsilon(rho / 3, rounds)
            assert rounds * Fraction(e) ** 2 / 8 <= rho / 3   # exact, not the rounded float ε²/8
            assert rounds * exponential_rho(e * (1 + 1e-9)) > float(rho / 3) * (1 - 1e-6)


def test_fit_sample_universes_and_public_record():
    df = people(4000)
    before = df.copy()
    model = MSTSynthesizer(ATTRS, epsilon=1.0, noise="gaussian", never_missing=["AGE", "SEX", "WORK"], rng=0).fit(df)
    pd.testing.assert_frame_equal(df, before)
    out = model.sample(3000, rng=1)
    assert list(out.columns) == [a.name for a in ATTRS] and len(out) == 3000
    assert out[["AGE", "SEX", "WORK"]].notna().all().all()           # no invented gaps
    assert out.loc[out["AGE"] < 15, "INCOME"].isna().all()            # universe honoured
    assert out["INCOME"].dropna().between(0, 100_000).all()
    share = out.loc[out["AGE"] >= 15, "INCOME"].isna().mean()
    assert 0.1 < share < 0.3                                           # 20% gaps reproduced
    # The universe's edge is public and comes first; the tree spans the attributes.
    assert model.tree_[0] == ("AGE", "INCOME") and len(model.tree_) == 3
    pub = model.public_params()
    assert pub["epsilon"] == 1.0 and pub["never_missing"] == ["AGE", "SEX", "WORK"]
    d, rest = 4, pub["rho"] * (1 - pub["quantile_share"])     # bins="auto": the quantiles first
    # The quantile share 0.1 (INCOME's histogram and levels, 7 parts) and one part more for AGE's point-mass
    # histogram (a narrow Ordinal), from the model's part.
    assert pub["quantile_share"] == pytest.approx(0.1 * 8 / 7) and set(pub["released_bin_edges"]) == {"INCOME"}
    assert pub["sigma_one_way"] == pytest.approx((d / (2 * rest * 0.2)) ** 0.5)
    assert pub["sigma_two_way"] == pytest.approx(((d - 1) / (2 * rest * 0.7)) ** 0.5)
    assert "4000" not in json.dumps({k: v for k, v in pub.items() if k != "released_bin_edges"})
    assert model.sample(0).shape == (0, 4)


def test_universes_that_fix_the_tree_give_its_edges_the_selection_share():
    """Every edge is a universe edge: nothing is chosen, so the edges get ρ₂ + ρ₃ and the public
    record says no selection was paid for; with a free edge left, the split is as declared."""
    from dpknn import Continuous

    fixed = [ATTRS[0], Categorical("WORK", ["yes", "no"], universe={"AGE": {"low": 15}}),
             Continuous("INCOME", 0, 100_000, universe={"AGE": {"low": 15}})]
    df = people(3000)
    df.loc[df["AGE"] < 15, "WORK"] = None
    m = MSTSynthesizer(fixed, epsilon=1.0, noise="gaussian", bins=10, never_missing=["AGE"], rng=0).fit(df)
    pub = m.public_params()
    assert pub["selection_share"] == 0.0 and m.tree_ == (("AGE", "WORK"), ("AGE", "INCOME"))
    rho = zcdp_rho(1.0, 1e-9)
    assert pub["sigma_two_way"] == pytest.approx((2 / (2 * rho * 0.8)) ** 0.5)   # ρ₃ + ρ₂ over 2 edges
    free = MSTSynthesizer([*fixed, Categorical("SEX", [1, 2])], epsilon=1.0, noise="gaussian", bins=10,
                          never_missing=["AGE", "SEX"], rng=0).fit(df)
    assert free.public_params()["selection_share"] == 0.1
    assert free.public_params()["sigma_two_way"] == pytest.approx((3 / (2 * rho * 0.7)) ** 0.5)


def test_edge_costs_weigh_the_fixed_analysis_tables_and_add_up_exactly():
    """An analysis' tables (fixed before anything is read) weigh ANALYSIS_WEIGHT, every other table 1, a chosen
    edge 1 even when it joins two analysis attributes: the weights are public before the choice, and the costs
    add up to the step's budget exactly. Without analyses every table gets an equal share."""
    from dpknn.mechanisms import Geometric
    from dpknn.synth._marginal import ANALYSIS_WEIGHT, edge_costs, edge_weights

    total = Fraction(7, 1000)
    # fixed (0, 1), (0, 2), (3, 4) (a universe's edge), the covariate pair (1, 2); two chosen edges, weight 1 whatever
    # they join
    weights = edge_weights([(0, 1), (0, 2), (3, 4), (1, 2)], [(0, 1), (0, 2), (1, 2)], chosen=2)
    assert weights == [ANALYSIS_WEIGHT, ANALYSIS_WEIGHT, 1, ANALYSIS_WEIGHT, 1, 1]
    costs = edge_costs(total, weights)
    assert sum(costs) == total and all(isinstance(c, Fraction) for c in costs)
    w = 3 * ANALYSIS_WEIGHT + 3
    assert costs == [total * ANALYSIS_WEIGHT / w] * 2 + [total / w] + [total * ANALYSIS_WEIGHT / w] + [total / w] * 2
    assert edge_costs(total, edge_weights([], [], chosen=5)) == [total / 5] * 5
    # the released σ of each table is the one its weight gives
    df = people(3000)
    m = MSTSynthesizer(ATTRS, epsilon=1.0, noise="gaussian", bins=10, never_missing=["AGE", "SEX", "WORK"],
                       analyses=["INCOME ~ AGE + SEX"], rng=0).fit(df)
    pub, rho = m.public_params(), zcdp_rho(1.0, 1e-9)
    rho3 = rho * 0.7   # bins=10: no quantiles; no rank sums without quantile bins
    # tables: INCOME with AGE and with SEX, the pair AGE, SEX (analysis, weight 3), one chosen edge (weight 1)
    assert pub["sigma_analysis_tables"] == pytest.approx((10 / (3 * 2 * rho3)) ** 0.5)
    assert pub["sigma_two_way"] == pytest.approx((10 / (2 * rho3)) ** 0.5)
    assert [ms.sigma for ms in m.measurements_[4:]] == pytest.approx(
        [(10 / (3 * 2 * rho3)) ** 0.5] * 3 + [(10 / (2 * rho3)) ** 0.5])
    # pure DP: the edges' ε is split the same way, exactly
    lap = MSTSynthesizer(ATTRS, epsilon=1.0, noise="laplace", bins=10, never_missing=["AGE", "SEX", "WORK"],
                         analyses=["INCOME ~ AGE + SEX"], rng=0).fit(df)
    eps3 = 0.7
    assert [ms.sigma for ms in lap.measurements_[4:]] == pytest.approx(
        [Geometric(epsilon=eps3 * 3 / 10).variance() ** 0.5] * 3 + [Geometric(epsilon=eps3 / 10).variance() ** 0.5])
    # every table an analysis table (three attributes: the tree's two edges and the covariate pair): the record
    # names their σ as the analysis tables' and has no table of weight 1
    three = MSTSynthesizer(ATTRS[:3], epsilon=1.0, noise="gaussian", bins=10, never_missing=["AGE", "SEX", "WORK"],
                           analyses=["AGE ~ SEX + WORK"], rng=0).fit(df[[a.name for a in ATTRS[:3]]])
    pub3 = three.public_params()
    assert pub3["sigma_two_way"] is None
    assert pub3["sigma_analysis_tables"] == pytest.approx((3 / (2 * rho * 0.8)) ** 0.5)


def test_accuracy_with_a_large_budget():
    # ε = 1000: the noise is negligible, so the synthetic two-way marginals of the tree's edges
    # match the real ones up to rounding, on the model's bins (those at the released quantiles).
    df = people(5000, seed=2)
    model = MSTSynthesizer(ATTRS, epsilon=1000.0, rng=0).fit(df)
    out = model.sample(5000, rng=0)
    disc = model.discretization_
    names = disc.names
    real, synth = disc.encode(df).astype(np.int64) + 1, disc.encode(out).astype(np.int64) + 1
    for a, b in model.tree_:
        i, j = names.index(a), names.index(b)
        shape = (disc.sizes[i] + 1, disc.sizes[j] + 1)
        p = np.bincount(np.ravel_multi_index((real[i], real[j]), shape), minlength=shape[0] * shape[1]) / 5000
        q = np.bincount(np.ravel_multi_index((synth[i], synth[j]), shape), minlength=shape[0] * shape[1]) / 5000
        assert 0.5 * np.abs(p - q).sum() < 0.02
    assert tvd(df, out, ATTRS) < 0.1


def test_refusals():
    df = people(300)
    bad = df.copy()
    bad.loc[3, "SEX"] = np.nan
    with pytest.raises(ValueError, match=r"never_missing have gaps: \['SEX'\]"):
        MSTSynthesizer(ATTRS, epsilon=1.0, never_missing=["SEX"], rng=0).fit(bad)
    with pytest.raises(ValueError, match="not attributes"):
        MSTSynthesizer(ATTRS, epsilon=1.0, never_missing=["sex"]).fit(df)
    with pytest.raises(ValueError, match="selection_share"):
        MSTSynthesizer(ATTRS, epsilon=1.0, one_way_share=0.5, selection_share=0.5).fit(df)
    with pytest.raises(ValueError, match="delta"):
        MSTSynthesizer(ATTRS, epsilon=1.0, delta=0).fit(df)
    acc = BudgetAccountant(epsilon=0.5, delta=1e-6)
    with pytest.raises(BudgetExceededError):
        MSTSynthesizer(ATTRS, epsilon=1.0, rng=0).fit(df.drop(columns="AGE"), accountant=acc)  # refused first


def test_one_attribute_and_seeds():
    attrs = [Categorical("SEX", [1, 2])]
    df = pd.DataFrame({"SEX": [1, 2] * 50})
    out = MSTSynthesizer(attrs, epsilon=1.0, rng=0).fit(df).sample(10, rng=0)
    assert out.shape == (10, 1)
    a = MSTSynthesizer(ATTRS, epsilon=1.0, rng=5).fit(people(500)).sample(50, rng=1)
    b = MSTSynthesizer(ATTRS, epsilon=1.0, rng=5).fit(people(500)).sample(50, rng=1)
    pd.testing.assert_frame_equal(a, b)


def _one_way_noise(noise, fits=40):
    """Released minus true one-way counts of MST's step 1 over ``fits`` seeds (bins=10: no quantiles)."""
    df = people(300)
    disc = Discretization(ATTRS, 10)
    ext = extended_codes(disc.encode(df), disc.sizes)
    true = [t.astype(np.int64) for t in count_tables(ext, disc.sizes, [(a,) for a in range(4)])]
    out = []
    for seed in range(fits):
        # One model iteration: the measured tables are what is tested, and the fit after them costs 95 % of
        # the time (80 full fits took 28 s, issue 47 finding 13).
        model = MSTSynthesizer(ATTRS, epsilon=2.0, noise=noise, bins=10, iterations=1, rng=seed).fit(df)
        out += [m.counts - t for m, t in zip(model.measurements_[:4], true)]
    return np.concatenate(out)


def test_pure_dp_tables_carry_discrete_laplace_noise_of_the_stated_scale_and_the_control_fails():
    from scipy import stats

    # ε = 2 in pure DP: one-way share 0.2 split over d = 4 tables, ε = 0.1 each: scale 10.
    a = np.exp(-0.1)

    def pmf(z):
        return (1 - a) / (1 + a) * a ** np.abs(z)

    edges = [-np.inf, -20, -10, -3, 3, 10, 20, np.inf]   # bins [lo, hi) of integers

    def chi2_p(z):
        ks = np.arange(-400, 401)
        expected = [pmf(ks[(ks >= lo) & (ks < hi)]).sum() for lo, hi in itertools.pairwise(edges)]
        observed = np.histogram(z, bins=np.array(edges, dtype=float) - 0.5)[0]
        return stats.chisquare(observed, np.array(expected) / sum(expected) * len(z)).pvalue

    assert chi2_p(_one_way_noise("laplace")) > 1e-3
    # Negative control: the zCDP tables' discrete Gaussian noise fails the same test.
    assert chi2_p(_one_way_noise("gaussian")) < 1e-3


def test_pure_dp_spends_epsilon_with_no_delta_and_says_so():
    df = people(2000)
    model = MSTSynthesizer(ATTRS, epsilon=1.0, noise="laplace", rng=0).fit(df)
    pub = model.public_params()
    assert (model.epsilon_, model.delta_, model.rho_) == (1.0, 0.0, None) and pub["noise"] == "laplace"
    # Shares of ε: quantiles 0.1 and AGE's point-mass histogram (a narrow Ordinal) one part of 7 of it more, then
    # one-way 0.2 over d tables and edges 0.7 over d − 1.
    rest, d = 1 - Fraction(1, 10) * 8 / 7, 4
    from dpknn.mechanisms import Geometric

    assert pub["sigma_one_way"] == pytest.approx(Geometric(epsilon=rest / 5 / d).variance() ** 0.5)
    assert pub["sigma_two_way"] == pytest.approx(Geometric(epsilon=rest * 7 / 10 / (d - 1)).variance() ** 0.5)
    acc = BudgetAccountant(epsilon=1.0, delta=0.0)
    MSTSynthesizer(ATTRS, epsilon=1.0, noise="laplace", rng=0).fit(df, accountant=acc)   # fits a pure budget
    assert acc.spent() == pytest.approx((1.0, 0.0))
    with pytest.raises(ValueError, match="noise must be one of"):
        MSTSynthesizer(ATTRS, epsilon=1.0, noise="normal").fit(df)


def test_auto_noise_takes_the_smaller_planned_error_of_mst():
    from dpknn.synth._marginal import PureBudget, ZCDPBudget, planned_error

    for eps, delta, d in itertools.product([0.2, 1.0, 8.0], [1e-9, 1e-3], [2, 4]):
        attrs = ATTRS[:d] if d == 4 else [Categorical("SEX", [1, 2]), Categorical("WORK", ["yes", "no"])]
        pick = MSTSynthesizer(attrs, epsilon=eps, delta=delta, bins=10).plan()
        sizes = pick.disc.sizes + 1
        # The plan by hand: d one-way tables at 0.2/d, d − 1 edges at 0.7/(d − 1) of the mean pair size.
        pairs = [sizes[i] * sizes[j] for i, j in itertools.combinations(range(d), 2)]
        plan = [(Fraction(1, 5) / d, int(c)) for c in sizes] + [(Fraction(7, 10) / (d - 1), np.mean(pairs))] * (d - 1)
        errors = {b.noise: planned_error(b, 1, plan) for b in (ZCDPBudget(Fraction(zcdp_rho(eps, delta))),
                                                               PureBudget(Fraction(eps)))}
        assert pick.budget.noise == min(errors, key=errors.get)
