"""MST on incomplete data: the tree estimator against brute force, the selection's sensitivity,
the budget, never_missing, universes, the sidecar and the command line."""

import itertools
import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from dpknn import Categorical, Continuous, Ordinal
from dpknn.accounting import BudgetAccountant, exponential_epsilon, exponential_rho, zcdp_rho
from dpknn.exceptions import BudgetExceededError
from dpknn.metrics.fidelity import tvd
from dpknn.schema.discretization import Discretization
from dpknn.schema.marginals import count_tables, extended_codes
from dpknn.synth import MSTSynthesizer
from dpknn.synth.mst import edge_scores
from dpknn.synth.tree_model import Measurement, TreeModel, fit_tree, project_simplex, round_counts, tree_order


def _random_tree(draw_rng, d):
    return [(int(draw_rng.integers(0, v)), v) for v in range(1, d)]


def _brute_joint(model):
    d = len(model.sizes)
    joint = np.zeros(model.sizes)
    for x in itertools.product(*[range(s) for s in model.sizes]):
        e = sum(model.node_log[v][x[v]] for v in range(d))
        e += sum(model.edge_log[v][x[model.parent[v]], x[v]] for v in range(d) if model.parent[v] >= 0)
        joint[x] = np.exp(e)
    return joint


def _brute_marginal(joint, axes):
    out = joint.sum(axis=tuple(a for a in range(joint.ndim) if a not in axes))
    return out.T if len(axes) == 2 and axes[0] > axes[1] else out


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 5))
def test_belief_propagation_equals_brute_force(seed, d):
    rng = np.random.default_rng(seed)
    sizes = tuple(int(s) for s in rng.integers(1, 4, d))
    edges = _random_tree(rng, d)
    order, parent = tree_order(d, edges, root=int(rng.integers(0, d)))
    model = TreeModel(sizes, order, parent, tuple(rng.normal(size=s) for s in sizes),
                      tuple(None if parent[v] < 0 else 2 * rng.normal(size=(sizes[parent[v]], sizes[v]))
                            for v in range(d)), 1.0)
    nodes, pairs, log_z = model.marginals()
    joint = _brute_joint(model)
    assert log_z == pytest.approx(np.log(joint.sum()), abs=1e-9)
    joint /= joint.sum()
    for v in range(d):
        np.testing.assert_allclose(nodes[v], _brute_marginal(joint, (v,)), atol=1e-12)
        if parent[v] >= 0:
            np.testing.assert_allclose(pairs[v], _brute_marginal(joint, (parent[v], v)), atol=1e-12)


def test_tree_order_refuses_what_is_not_a_spanning_tree():
    with pytest.raises(ValueError, match="has 2 edges"):
        tree_order(3, [(0, 1)])
    with pytest.raises(ValueError, match="do not connect"):
        tree_order(4, [(0, 1), (1, 0), (2, 3)])


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 6))
def test_simplex_projection_is_the_euclidean_projection(seed, k):
    v = np.random.default_rng(seed).normal(size=k) * 2
    p = project_simplex(v)
    assert p.min() >= 0 and p.sum() == pytest.approx(1.0)
    ref = optimize.minimize(lambda x: ((x - v) ** 2).sum(), np.full(k, 1 / k), method="SLSQP",
                            bounds=[(0, 1)] * k, constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
                            options={"ftol": 1e-14, "maxiter": 500})
    assert ((p - v) ** 2).sum() <= ((ref.x - v) ** 2).sum() + 1e-9


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(0, 500), k=st.integers(1, 8))
def test_controlled_rounding_keeps_the_total_and_stays_between_floor_and_ceiling(seed, m, k):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k))
    c = round_counts(p, m, rng)
    assert c.sum() == m
    e = m * p / p.sum()
    assert (c >= np.floor(e) - 1e-9).all() and (c <= np.ceil(e) + 1e-9).all()


def test_controlled_rounding_is_unbiased():
    rng = np.random.default_rng(0)
    p = np.array([0.13, 0.37, 0.05, 0.45])
    mean = np.mean([round_counts(p, 7, rng) for _ in range(20_000)], axis=0)
    np.testing.assert_allclose(mean, 7 * p, atol=0.03)


def test_estimator_recovers_consistent_marginals_and_pools_noisy_ones():
    rng = np.random.default_rng(3)
    sizes, edges = (3, 4, 2, 3), [(0, 1), (1, 2), (1, 3)]
    order, parent = tree_order(4, edges)
    truth = TreeModel(sizes, order, parent, tuple(rng.normal(size=s) for s in sizes),
                      tuple(None if parent[v] < 0 else rng.normal(size=(sizes[parent[v]], sizes[v])) for v in range(4)),
                      1.0)
    nodes, pairs, _ = truth.marginals()
    n = 5000
    exact = [Measurement((v,), n * nodes[v], 1.0) for v in range(4)]
    exact += [Measurement((parent[v], v), n * pairs[v], 1.0) for v in range(4) if parent[v] >= 0]
    fitted_nodes, fitted_pairs, _ = fit_tree(sizes, edges, exact).marginals()
    for v in range(4):
        np.testing.assert_allclose(fitted_nodes[v], nodes[v], atol=1e-4)
        if parent[v] >= 0:
            np.testing.assert_allclose(fitted_pairs[v], pairs[v], atol=1e-4)
    # The edge table given transposed (child first) is the same evidence.
    flipped = [Measurement(m.attributes[::-1], m.counts.T, 1.0) if len(m.attributes) == 2 else m for m in exact]
    np.testing.assert_allclose(fit_tree(sizes, edges, flipped).marginals()[1][1], pairs[1], atol=1e-4)
    # Noisy tables: the fit's one-way marginal pools the node table and the edge tables, so it is
    # closer to the truth than the node table alone (averaged over draws).
    err_fit, err_raw = [], []
    for _ in range(20):
        noisy = [Measurement(m.attributes, m.counts + rng.normal(0, 40, m.counts.shape), 40.0) for m in exact]
        fn = fit_tree(sizes, edges, noisy).marginals()[0][1]
        err_fit.append(np.abs(fn - nodes[1]).sum())
        raw = project_simplex(noisy[1].counts / n)
        err_raw.append(np.abs(raw - nodes[1]).sum())
    assert np.mean(err_fit) < np.mean(err_raw)


def test_sample_codes_follow_the_model():
    sizes, edges = (2, 3), [(0, 1)]
    order, parent = tree_order(2, edges)
    pair = np.array([[0.1, 0.2, 0.1], [0.3, 0.0, 0.3]])
    with np.errstate(divide="ignore"):
        model = TreeModel(sizes, order, parent, (np.log(pair.sum(axis=1)), np.zeros(3)),
                          (None, np.log(pair / pair.sum(axis=1, keepdims=True))), 1.0)
    codes = model.sample_codes(1000, np.random.default_rng(0))
    counts = np.zeros((2, 3))
    np.add.at(counts, (codes[0], codes[1]), 1)
    assert counts[1, 1] == 0
    np.testing.assert_allclose(counts / 1000, pair, atol=0.002)   # controlled rounding: within a row or two


# --- the synthesiser -----------------------------------------------------------------------------

ATTRS = [Ordinal("AGE", 0, 99), Categorical("SEX", [1, 2]), Categorical("WORK", ["yes", "no"]),
         Continuous("INCOME", 0, 100_000, universe={"AGE": {"low": 15}})]


def _people(n, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 100, n)
    work = np.where(rng.random(n) < np.clip((age - 15) / 30, 0, 0.8), "yes", "no")
    income = np.where(work == "yes", rng.gamma(2, 15_000, n), rng.gamma(1, 3_000, n)).clip(0, 100_000)
    income[age < 15] = np.nan
    df = pd.DataFrame({"AGE": age, "SEX": rng.integers(1, 3, n), "WORK": work, "INCOME": income})
    df.loc[(rng.random(n) < 0.2) & (age >= 15), "INCOME"] = np.nan
    return df


def test_pair_scores_have_sensitivity_one_on_neighbours():
    disc = Discretization(ATTRS, 10)
    ext_sizes = disc.sizes + 1
    df = _people(400, seed=1)
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
            assert rounds * Fraction(exponential_rho(e)) <= rho / 3
            assert rounds * exponential_rho(e * (1 + 1e-9)) > float(rho / 3) * (1 - 1e-6)


def test_fit_sample_universes_and_public_record():
    df = _people(4000)
    before = df.copy()
    model = MSTSynthesizer(ATTRS, epsilon=1.0, never_missing=["AGE", "SEX", "WORK"], rng=0).fit(df)
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
    assert pub["quantile_share"] == 0.1 and set(pub["released_bin_edges"]) == {"AGE", "INCOME"}
    assert pub["sigma_one_way"] == pytest.approx((d / (2 * rest * 0.2)) ** 0.5)
    assert pub["sigma_two_way"] == pytest.approx(((d - 1) / (2 * rest * 0.7)) ** 0.5)
    assert "4000" not in json.dumps({k: v for k, v in pub.items() if k != "released_bin_edges"})
    assert model.sample(0).shape == (0, 4)


def test_accuracy_with_a_large_budget():
    # ε = 1000: the noise is negligible, so the synthetic two-way marginals of the tree's edges
    # match the real ones up to rounding.
    df = _people(5000, seed=2)
    model = MSTSynthesizer(ATTRS, epsilon=1000.0, rng=0).fit(df)
    out = model.sample(5000, rng=0)
    disc = Discretization(ATTRS, 10)
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
    df = _people(300)
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
    a = MSTSynthesizer(ATTRS, epsilon=1.0, rng=5).fit(_people(500)).sample(50, rng=1)
    b = MSTSynthesizer(ATTRS, epsilon=1.0, rng=5).fit(_people(500)).sample(50, rng=1)
    pd.testing.assert_frame_equal(a, b)
