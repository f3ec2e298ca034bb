"""MST with public MCAR rates: the a-priori tree bound, its scaled costs, and the fit around them."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from people import ATTRS, people

from dpknn import Categorical, Ordinal
from dpknn.accounting import amplify_mcar, mcar_cost
from dpknn.accounting._mcar import tree_bound
from dpknn.schema._discretization import Discretization
from dpknn.synth import MSTSynthesizer
from dpknn.synth._graphical_model import Measurement
from dpknn.synth._marginal import blank_at_rates, rescaled
from dpknn.synth._mst import amplified_costs, edge_scores, mst_budget


def spanning_trees(d):
    """Every labelled spanning tree on d vertices (Prüfer sequences), as lists of edges."""
    if d == 1:
        yield []
        return
    for seq in itertools.product(range(d), repeat=d - 2):
        degree = [1] * d
        for v in seq:
            degree[v] += 1
        edges = []
        for v in seq:
            leaf = min(u for u in range(d) if degree[u] == 1)
            edges.append((leaf, v))
            degree[leaf] -= 1
            degree[v] -= 1
        u, w = (x for x in range(d) if degree[x] == 1)
        edges.append((u, w))
        yield edges


def exact_tree_cost(one_way, edge, rates, edges):
    """The exact MCAR cost (accounting.mcar, enumerating observed sets) of this tree's tables."""
    d = len(rates)
    sets = [{a} for a in range(d)] + [set(e) for e in edges]
    eps = [one_way] * d + [edge] * len(edges)
    return mcar_cost(eps, sets, dict(enumerate(rates))).epsilon


def test_spanning_trees_enumerates_cayley():
    for d in range(1, 6):
        trees = list(spanning_trees(d))
        assert len(trees) == d ** (d - 2) if d > 1 else len(trees) == 1
        assert len({frozenset(map(frozenset, t)) for t in trees}) == len(trees)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 5), st.floats(0.01, 2.0), st.floats(0.01, 2.0),
       st.lists(st.sampled_from([0.0, 0.05, 0.2, 0.5, 0.8]), min_size=5, max_size=5))
def test_tree_bound_covers_every_spanning_tree(d, one_way, edge, pool):
    """The certificate: the a-priori bound is at least the exact cost of every tree the data could choose."""
    rates = pool[:d]
    bound = tree_bound(one_way, edge, rates)
    worst = max(exact_tree_cost(one_way, edge, rates, t) for t in spanning_trees(d))
    assert worst <= bound + 1e-9
    assert bound <= d * one_way + (d - 1) * edge + 1e-12


def test_tree_bound_is_attained_and_is_plain_composition_without_gaps():
    # A star centred on an always-observed attribute: every edge is seen iff its leaf is, so the
    # exact cost of that tree equals the bound.
    rates = [0.0, 0.3, 0.5, 0.2]
    star = [(0, a) for a in range(1, 4)]
    assert exact_tree_cost(0.4, 0.9, rates, star) == pytest.approx(tree_bound(0.4, 0.9, rates), abs=1e-12)
    assert tree_bound(0.4, 0.9, [0.0] * 4) == pytest.approx(4 * 0.4 + 3 * 0.9, abs=1e-12)


def test_negative_control_per_table_amplification_fails_the_certificate():
    """Amplifying each table alone (as if its rows were a fresh sample) is below the exact cost of
    some tree, so the certificate above can fail."""
    rates = [0.3, 0.3, 0.3, 0.3]

    def naive(edges):
        return (sum(amplify_mcar(0.5, 1 - rates[a])[0] for a in range(4))
                + sum(amplify_mcar(1.0, (1 - rates[a]) * (1 - rates[b]))[0] for a, b in edges))

    assert any(naive(t) < exact_tree_cost(0.5, 1.0, rates, t) - 1e-6 for t in spanning_trees(4))


def test_tree_bound_refuses_bad_rates():
    with pytest.raises(ValueError, match="below 1"):
        tree_bound(0.1, 0.1, [0.2, 1.0])
    with pytest.raises(ValueError, match="probability"):
        tree_bound(0.1, 0.1, [0.2, -0.1])
    with pytest.raises(ValueError, match="at least one"):
        tree_bound(0.1, 0.1, [])


@pytest.mark.parametrize("rates", [[0.2, 0.0, 0.0, 0.0], [0.3, 0.3, 0.1], [0.5, 0.5]])
def test_amplified_costs_spend_the_tables_part_and_no_more(rates):
    d = len(rates)
    one, edges = Fraction(1, 5), Fraction(7, 10)
    c1, c3 = amplified_costs(one, edges, d, np.array(rates))
    assert c1 > one / d and c3 > edges / (d - 1)
    target = float(one + edges)
    assert tree_bound(float(c1), float(c3), rates) <= target
    # Tight: a millionth more on every table would pass the tables' part.
    assert tree_bound(float(c1) * (1 + 1e-6), float(c3) * (1 + 1e-6), rates) > target * (1 - 1e-12)


ATTRS4 = [Ordinal("AGE", 0, 9), Ordinal("SCHOOL", 0, 4), Categorical("SEX", [1, 2]),
          Categorical("TOWN", ["a", "b", "c"])]


def mcar_table(n, seed=0, rate=0.3):
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 10, n)
    school = np.clip(age // 2 + rng.integers(-1, 2, n), 0, 4)
    df = pd.DataFrame({"AGE": age.astype(float), "SCHOOL": school.astype(float), "SEX": rng.integers(1, 3, n),
                       "TOWN": rng.choice(["a", "b", "c"], n)})
    for c in ("AGE", "SCHOOL"):
        df.loc[rng.random(n) < rate, c] = np.nan
    return df


def test_fit_spends_epsilon_with_amplified_tables_and_pure_dp():
    df = mcar_table(3000)
    rates = {"AGE": 0.3, "SCHOOL": 0.3}
    model = MSTSynthesizer(ATTRS4, epsilon=1.0, mcar_rates=rates, rng=0).fit(df)
    assert model.noise_ == "laplace" and model.delta_ == 0.0 and model.epsilon_ == 1.0
    disc = Discretization(ATTRS4, 10)
    phi = [rates.get(n, 0.0) for n in disc.names]
    # Every attribute here is narrow (one code per value): no quantiles; ε = ε1 + ε2 + ε3.
    e1, e2, e3 = mst_budget(Fraction(1), 0.2, 0.1)
    c1, c3 = model.table_epsilons_
    assert c1 > float(e1) / 4 and c3 > float(e3) / 3
    spent = float(e2) + tree_bound(c1, c3, phi)
    assert 0.999 <= spent <= 1.0
    side = model.released_params()
    assert side["mcar_rates"] == rates and side["table_epsilons"] == [c1, c3]


def test_tables_count_observed_rows_and_the_model_has_no_gap_code():
    df = mcar_table(2000, seed=1)
    model = MSTSynthesizer(ATTRS4, epsilon=500.0, mcar_rates={"AGE": 0.3, "SCHOOL": 0.3}, rng=0).fit(df)
    disc = model.discretization_
    age = model.measurements_[0]
    assert age.attributes == (0,) and age.counts.size == disc.sizes[0]     # no gap cell
    observed = df["AGE"].dropna().astype(int).value_counts().reindex(range(10), fill_value=0).to_numpy()
    np.testing.assert_array_equal(age.counts, observed)                   # noise of scale e^-30: none drawn
    assert model.model_.sizes[0] == disc.sizes[0] and model.model_.sizes[2] == disc.sizes[2] + 1
    syn = model.sample(5000, rng=0)
    for c in ("AGE", "SCHOOL"):
        assert abs(syn[c].isna().mean() - 0.3) <= 12 / 5000   # controlled rounding within each code
    assert syn["AGE"].dropna().between(0, 9).all()


def test_auto_takes_laplace_gaussian_and_bad_rates_are_refused():
    df = mcar_table(500)
    assert MSTSynthesizer(ATTRS4, epsilon=1.0, noise="auto", mcar_rates={"AGE": 0.3}, rng=0).fit(df).noise_ == "laplace"
    bad = [({"AGE": 0.3}, {"noise": "gaussian"}, "pure-DP"),
           ({"AGE": 1.0}, {}, r"in \(0, 1\)"), ({"AGE": 0}, {}, r"in \(0, 1\)"), ({"AGE": True}, {}, r"in \(0, 1\)"),
           ({"AGE": "0.2"}, {}, r"in \(0, 1\)"), ({"HEIGHT": 0.2}, {}, "not an attribute"),
           ({"SEX": 0.2}, {"never_missing": ["SEX"]}, "both never_missing and mcar_rates")]
    for rates, extra, message in bad:
        with pytest.raises(ValueError, match=message):
            MSTSynthesizer(ATTRS4, epsilon=1.0, mcar_rates=rates, rng=0, **extra).fit(df)
    with pytest.raises(TypeError, match="dict"):
        MSTSynthesizer(ATTRS4, epsilon=1.0, mcar_rates=[("AGE", 0.3)], rng=0).fit(df)
    with pytest.raises(ValueError, match="has a universe"):
        MSTSynthesizer(ATTRS, epsilon=1.0, mcar_rates={"INCOME": 0.2}, rng=0).fit(people(300))


def test_refused_before_the_noise_source_moves():
    gen = np.random.default_rng(5)
    state = gen.bit_generator.state
    with pytest.raises(ValueError):
        MSTSynthesizer(ATTRS4, epsilon=1.0, mcar_rates={"AGE": 2.0}, rng=gen).fit(mcar_table(100))
    assert gen.bit_generator.state == state


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 60), st.floats(0.05, 0.95), st.integers(0, 2**32 - 1))
def test_blank_at_rates_matches_the_rate_within_every_code(n, phi, seed):
    rng = np.random.default_rng(seed)
    codes = np.vstack([rng.integers(0, 3, n), rng.integers(0, 2, n)])
    before = codes.copy()
    out = blank_at_rates(codes.copy(), np.array([phi, 0.0]), rng)
    assert (out[1] == before[1]).all()
    for v in range(3):
        rows = before[0] == v
        k = int((out[0][rows] == -1).sum())
        assert math.floor(phi * rows.sum()) <= k <= math.ceil(phi * rows.sum())
        assert (out[0][rows & (out[0] != -1)] == v).all()


def test_blank_at_rates_blanks_each_row_with_probability_phi():
    rng = np.random.default_rng(0)
    codes = np.array([[0, 0, 1, 1, 1, 2, 0]])
    reps, phi = 4000, 0.3
    hits = sum((blank_at_rates(codes.copy(), np.array([phi]), rng)[0] == -1) for _ in range(reps))
    # Every row, whatever its code, is blanked with probability φ (4 standard errors).
    assert np.all(np.abs(hits / reps - phi) < 4 * math.sqrt(phi * (1 - phi) / reps))


def test_rescaled_divides_counts_and_sigma_by_the_observation_probability():
    m = Measurement((0, 2), np.array([[7, 3], [0, 4]]), 2.0)
    r = rescaled(m, np.array([0.3, 0.9, 0.5]))
    np.testing.assert_allclose(r.counts, m.counts / 0.35)
    assert r.attributes == (0, 2) and r.sigma == pytest.approx(2.0 / 0.35)
    assert rescaled(m, np.array([0.0, 0.4, 0.0])) is m   # no MCAR attribute in the table


def test_edge_scores_scale_the_independence_model_by_the_pair_observation_probability():
    one_way = [Measurement((0,), np.array([60, 40]), 1.0), Measurement((1,), np.array([50, 50]), 1.0)]
    x = np.array([[20, 10], [5, 15]])   # 50 rows observed on the pair
    plain = edge_scores({(0, 1): x}, one_way)[(0, 1)]
    scaled = edge_scores({(0, 1): x}, one_way, observed={(0, 1): 0.5})[(0, 1)]
    # n̂ = 100, μ = (0.6, 0.4) ⊗ (0.5, 0.5): the model is [[30, 30], [20, 20]], halved [[15, 15], [10, 10]].
    assert plain == 10 + 20 + 15 + 5 and scaled == 5 + 5 + 5 + 5


def test_model_total_and_marginals_are_those_of_all_rows():
    df = mcar_table(4000, seed=2, rate=0.4)
    model = MSTSynthesizer(ATTRS4, epsilon=500.0, mcar_rates={"AGE": 0.4, "SCHOOL": 0.4}, rng=0).fit(df)
    assert model.model_.total == pytest.approx(4000, rel=0.03)          # not 0.6 n
    age = model.model_.attribute_marginals()[0]
    observed = df["AGE"].dropna().astype(int).value_counts(normalize=True).reindex(range(10)).to_numpy()
    np.testing.assert_allclose(age, observed, atol=0.02)


def test_blank_at_rates_matches_the_joint_pattern_of_two_attributes():
    rng = np.random.default_rng(3)
    codes = np.vstack([rng.integers(0, 3, 6000), rng.integers(0, 4, 6000)])
    out = blank_at_rates(codes.copy(), np.array([0.3, 0.5]), rng)
    gaps = out == -1
    # Controlled rounding within the first attribute's pattern: the joint shares hold to rounding.
    assert abs(gaps[0].mean() - 0.3) < 4 / 6000 and abs(gaps[1].mean() - 0.5) < 20 / 6000
    assert abs((gaps[0] & gaps[1]).mean() - 0.15) < 20 / 6000


def test_mcar_refusals_of_universe_conditions_empty_rates_and_tiny_rates():
    with pytest.raises(ValueError, match="states another attribute's universe"):
        MSTSynthesizer(ATTRS, epsilon=1.0, mcar_rates={"AGE": 0.2}, rng=0).fit(people(300))
    with pytest.raises(ValueError, match="mcar_rates is empty"):
        MSTSynthesizer(ATTRS4, epsilon=1.0, mcar_rates={}, rng=0).fit(mcar_table(100))
    # A gain below the floating-point margin: plain composition, exactly the unamplified costs.
    assert amplified_costs(Fraction(1, 5), Fraction(7, 10), 4, np.array([1e-14, 0, 0, 0])) == (
        Fraction(1, 20), Fraction(7, 30))
