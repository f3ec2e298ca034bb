"""Universes: imputed attributes that apply to some records only ("not applicable" elsewhere)."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_knn import l1_with_universes

from dpknn import Categorical, Continuous, KNNImputer, Ordinal, Schema
from dpknn.accounting import BudgetAccountant
from dpknn.impute import _scheme as imputation
from dpknn.releases._queries import PrivateImputation


@st.composite
def universe_problems(draw, max_n=9):
    """Small data, one or two groups of imputed attributes, each with an optional universe."""
    known = []
    for j in range(draw(st.integers(1, 2))):
        if draw(st.booleans()):
            bw = draw(st.sampled_from([1, 2]))
            known.append(Ordinal(f"o{j}", 0, draw(st.integers(0, 2)) * bw + bw - 1, bin_width=bw,
                                 weight=draw(st.integers(1, 2))))
        else:
            known.append(Categorical(f"c{j}", list(range(draw(st.integers(1, 3)))), weight=draw(st.integers(1, 2))))
    k = draw(st.integers(1, 2))
    n = draw(st.integers(1, max_n))
    cols = {}
    for a in known:
        top = a.upper if isinstance(a, Ordinal) else a.n_codes - 1
        cols[a.name] = draw(st.lists(st.integers(0, top), min_size=n, max_size=n))
    imputed = []
    for g in range(draw(st.integers(1, 2))):
        universe = None
        if draw(st.booleans()):
            a = draw(st.sampled_from(known))
            if isinstance(a, Ordinal):
                lo = draw(st.integers(0, a.n_codes - 1))
                hi = draw(st.integers(lo, a.n_codes - 1))
                universe = {a.name: (lo * a.bin_width, hi * a.bin_width + a.bin_width - 1)}
            else:
                universe = {a.name: draw(st.lists(st.sampled_from(a.categories), min_size=1, unique=True))}
        values = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        cols[f"y{g}"] = [float(i) if v else np.nan for i, v in enumerate(values)]
        imputed.append(Continuous(f"y{g}", 0, 100, universe=universe))
    cols["id"] = draw(st.lists(st.integers(0, 30), min_size=n, max_size=n, unique=True))
    schema = Schema(known=known, imputed=imputed, label="id")
    return schema, pd.DataFrame(cols), k


def inside_predicate(schema, universe):
    if universe is None:
        return lambda cell: True
    where = universe.where

    def inside(cell):
        for j, a in enumerate(schema.known):
            if a.name in where:
                value = a.decode([cell[j]])[0]
                spec = where[a.name]
                if isinstance(spec, tuple) and not spec[0] <= value <= spec[1]:
                    return False
                if isinstance(spec, list) and value not in spec:
                    return False
        return True
    return inside


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(universe_problems())
def test_l1_and_donors_per_universe_match_brute_force(problem):
    schema, df, k = problem
    enc = schema.encode(df)
    groups = schema.universe_groups()
    inside = [inside_predicate(schema, u) for u, _ in groups]
    in_rows = [np.array([inside[g](tuple(c)) for c in enc.cells], dtype=bool) for g in range(len(groups))]
    complete = [df[list(names)].notna().all(axis=1).to_numpy() | ~in_rows[g] for g, (_, names) in enumerate(groups)]
    usable = all((complete[g] & in_rows[g]).any() or not in_rows[g].any() for g in range(len(groups)))
    if not usable:
        with pytest.raises(ValueError, match="no complete records"):
            KNNImputer(schema, k=k).fit(df)
        return
    l1, add_complete, base = l1_with_universes(enc.cells, enc.labels, complete, inside, k, schema.n_codes,
                                               schema.weights, schema.is_categorical)
    imp = KNNImputer(schema, k=k).fit(df)
    assert [g.l1 for g in imp.groups_] == l1
    assert imp.l1_ == sum(l1)
    # Without the floor from the deletions the worst addition itself is exact: an added record in a
    # cell outside the universe must not count (it would if the domain were not cut to the universe).
    unfloored = KNNImputer(schema, k=k, search=imputation.SearchOptions(use_floor=False)).fit(df)
    assert [g.l1_cases["add_complete"].value for g in unfloored.groups_] == add_complete
    labels = enc.labels
    for g, fit in enumerate(imp.groups_):
        got = {int(labels[x]): tuple(int(labels[d]) for d in row) for x, row in zip(fit.incomplete_index, fit.donors)}
        assert got == base[g]
        assert imp.l1_for([fit.attributes[0]]) == l1[g]
    out = imp.transform(df)
    for g, (_, names) in enumerate(groups):
        for name in names:
            # Outside the universe the attribute is not applicable: missing, an observed value there too (the one
            # meaning of a universe, issue 47); inside, nothing is missing.
            assert out.loc[~in_rows[g], name].isna().all()
            assert out.loc[in_rows[g], name].notna().all()
            outside_observed = int(df.loc[~in_rows[g], name].notna().sum())
            assert imp.n_outside_universe_.get(name, 0) == outside_observed


def children_and_adults(n=3000, seed=0):
    """Income applies from age 16: under-16s have no income (not applicable, missing)."""
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 100, n)
    sex = rng.choice([1, 2], n)
    inc = np.where(age >= 16, rng.uniform(0, 5000, n) + 40 * np.minimum(age, 60), np.nan)
    inc[(age >= 16) & (rng.random(n) < 0.2)] = np.nan
    return pd.DataFrame({"AGE": age, "SEX": sex, "INCWAGE": inc})


KNOWN = [Ordinal("AGE", 0, 99), Categorical("SEX", [1, 2])]


def test_not_applicable_is_not_imputed_and_l1_falls():
    """The issue's finding: without a universe, children got incomes and L1 was huge."""
    df = children_and_adults()
    plain = Schema(known=KNOWN, imputed=[Continuous("INCWAGE", 0, 8000)])
    scoped = Schema(known=KNOWN, imputed=[Continuous("INCWAGE", 0, 8000, universe={"AGE": (16, None)})])
    before, after = KNNImputer(plain).fit(df), KNNImputer(scoped).fit(df)
    out = after.transform(df)
    children = df.AGE < 16
    assert out.loc[children, "INCWAGE"].isna().all() and out.loc[~children, "INCWAGE"].notna().all()
    assert KNNImputer(plain).fit_transform(df).loc[children, "INCWAGE"].notna().all()
    assert after.l1_ * 10 < before.l1_
    # Releases on INCWAGE are over its universe: the mean is the adults' mean, not a mix with children.
    private = PrivateImputation(df, scoped, rng=1, accountant=BudgetAccountant(math.inf))
    rel = private.mean("INCWAGE", epsilon=50.0, count_epsilon=50.0)
    truth = out.loc[~children, "INCWAGE"].mean()
    assert abs(rel.value - truth) < 0.02 * truth
    assert rel.params["universe"] == {"AGE": {"low": 16, "high": 99}}
    assert rel.diagnostics.values["l1"] == after.l1_
    ignore = private.mean("INCWAGE", epsilon=50.0, count_epsilon=50.0, method="ignore_missing")
    assert np.isfinite(ignore.value)


def test_universe_in_toml_and_errors(tmp_path):
    text = """
[[known]]
name = "AGE"
type = "ordinal"
lower = 0
upper = 99
bin_width = 5

[[imputed]]
name = "INCWAGE"
type = "continuous"
lower = 0
upper = 5001
universe = {AGE = {low = 15}}
"""
    (tmp_path / "s.toml").write_text(text)
    schema = Schema.from_file(tmp_path / "s.toml")
    assert schema.imputed[0].universe.where == {"AGE": (15, 99)}
    assert Schema.from_file(tmp_path / "s.toml") == Schema.from_dict(
        __import__("tomllib").loads(schema.to_toml()))
    (tmp_path / "b.toml").write_text(text.replace("low = 15", "low = 16"))
    with pytest.raises(ValueError, match="cuts a bin of 'AGE'"):
        Schema.from_file(tmp_path / "b.toml")
    with pytest.raises(ValueError, match="only imputed attributes have one"):
        Schema(known=[Ordinal("AGE", 0, 9, universe={"AGE": (1, 2)})], imputed=[Continuous("y", 0, 1)])
    with pytest.raises(ValueError, match="not a known attribute"):
        Schema(known=KNOWN, imputed=[Continuous("y", 0, 1, universe={"y": (0, 1)})])
    with pytest.raises(TypeError, match="non-empty dict"):
        Continuous("y", 0, 1, universe=[("AGE", 1)])
