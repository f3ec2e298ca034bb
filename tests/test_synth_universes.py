"""Universes in synthesis: an attribute's synthetic values are missing outside its universe
(structural gaps, never drawn), the universes' ends are public bin edges, and the published
record names the universes."""

import json

import numpy as np
import pandas as pd
import pytest

from dpknn import Categorical, Continuous, Ordinal
from dpknn.schema._discretization import Discretization, read_attributes
from dpknn.synth import ColumnwiseSynthesizer, PrivBayes

AGE = Ordinal("AGE", 0, 99)
WORK = Categorical("WORK", [0, 1])
INCOME = Continuous("INCOME", 0, 100_000, universe={"AGE": (15, None)})
CHILD_ONLY = Categorical("SCHOOLKID", [0, 1], universe={"AGE": (5, 17), "WORK": [0]})
ATTRS = [AGE, WORK, INCOME, CHILD_ONLY]


def _table(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 100, n)
    work = np.where(age >= 15, rng.integers(0, 2, n), 0)
    income = np.where(age >= 15, rng.lognormal(10, 0.6, n).clip(0, 100_000), np.nan)
    kid = np.where((age >= 5) & (age <= 17) & (work == 0), rng.integers(0, 2, n), np.nan)
    return pd.DataFrame({"AGE": age, "WORK": work, "INCOME": income, "SCHOOLKID": kid})


def _outside(df, attr):
    return int((~attr.universe.mask(df) & df[attr.name].notna()).sum())


def test_universe_ends_are_bin_edges():
    disc = Discretization(ATTRS, bins=10)
    first, last = disc.ordinal_bins(AGE)
    assert disc.universe_cuts(AGE) == [5, 15, 18]
    assert {5, 15, 18} <= set(first.tolist()) and first[0] == 0 and last[-1] == 99
    assert np.array_equal(first[1:], last[:-1] + 1)
    # Every bin lies wholly inside or wholly outside each universe.
    codes = disc.encode(pd.DataFrame({"AGE": np.arange(100), "WORK": 0, "INCOME": 1.0, "SCHOOLKID": 0}))
    inside = np.arange(100) >= 15
    for c in np.unique(codes[0]):
        assert len(set(inside[codes[0] == c])) == 1
    assert disc.sizes[0] == first.size


def test_no_universe_keeps_the_equal_bins():
    disc = Discretization([AGE, WORK], bins=10)
    first, last = disc.ordinal_bins(AGE)
    assert first.tolist() == list(range(0, 100, 10)) and last.tolist() == list(range(9, 100, 10))


@pytest.mark.parametrize("make", [
    lambda: PrivBayes(ATTRS, epsilon=1.0, max_rows=10_000, rng=0),
    lambda: PrivBayes(ATTRS, epsilon=1.0, missing="value", max_rows=10_000, rng=0),
    lambda: ColumnwiseSynthesizer(ATTRS, epsilon=1.0, rng=0),
])
def test_no_synthetic_value_outside_its_universe(make):
    model = make().fit(_table())
    out = model.sample(5000, rng=1)
    assert _outside(out, INCOME) == 0 and _outside(out, CHILD_ONLY) == 0
    # Inside the universes values are still drawn.
    assert out.loc[out["AGE"] >= 15, "INCOME"].notna().mean() > 0.5
    params = model.public_params()
    json.dumps(params)
    assert params["attributes"][2]["universe"] == {"AGE": {"low": 15, "high": 99}}


def test_the_check_can_fail_without_universes():
    # Negative control: the same attributes without universes draw incomes for children.
    plain = [AGE, WORK, Continuous("INCOME", 0, 100_000), Categorical("SCHOOLKID", [0, 1])]
    out = PrivBayes(plain, epsilon=1.0, missing="value", max_rows=10_000, rng=0).fit(_table()).sample(5000, rng=1)
    assert _outside(out, INCOME) > 0


def test_universe_errors_name_the_fix():
    with pytest.raises(ValueError, match="itself"):
        Discretization([AGE, Ordinal("X", 0, 9, universe={"X": (1, None)})])
    with pytest.raises(ValueError, match="continuous 'C'"):
        Discretization([Continuous("C", 0, 1), Ordinal("X", 0, 9, universe={"C": (0.5, None)})])
    with pytest.raises(ValueError, match="universe of its own"):
        Discretization([AGE, WORK, CHILD_ONLY, Categorical("Y", [0, 1], universe={"SCHOOLKID": [1]})])
    with pytest.raises(ValueError, match="not a known attribute"):
        Discretization([WORK, Ordinal("X", 0, 9, universe={"AGE": (15, None)})])


def test_attribute_files_and_schemas_carry_universes(tmp_path):
    f = tmp_path / "attrs.toml"
    f.write_text('[[attribute]]\nname = "AGE"\ntype = "ordinal"\nlower = 0\nupper = 99\n\n'
                 '[[attribute]]\nname = "INCOME"\ntype = "continuous"\nlower = 0\nupper = 100000\n'
                 'universe = {AGE = {low = 15}}\n')
    attrs = read_attributes(f)
    assert attrs[1].universe.where == {"AGE": (15, 99)}
    s = tmp_path / "schema.toml"
    s.write_text('[[known]]\nname = "AGE"\ntype = "ordinal"\nlower = 0\nupper = 99\nbin_width = 5\n\n'
                 '[[imputed]]\nname = "INCOME"\ntype = "continuous"\nlower = 0\nupper = 100000\n'
                 'universe = {AGE = {low = 15}}\n')
    assert read_attributes(s)[1].universe.where == {"AGE": (15, 99)}


def test_out_of_universe_records_are_learnt_from_every_record():
    # "Not applicable" is a code of its own, not a gap: PrivBayesE, which measures each table on
    # the rows observed on it, would otherwise learn AGE from the rows with an income only and
    # lose the children.
    real = _table(8000)
    model = PrivBayes(ATTRS, epsilon=2.0, max_rows=10_000, rng=0).fit(real)
    out = model.sample(8000, rng=1)
    assert abs((out["AGE"] < 15).mean() - (real["AGE"] < 15).mean()) < 0.04
    # And no gap is invented inside the universe (the real data have none there).
    assert out.loc[out["AGE"] >= 15, "INCOME"].isna().mean() < 0.03


def test_not_applicable_is_the_last_code_and_decodes_to_missing():
    disc = Discretization(ATTRS, bins=10)
    real = _table(500)
    codes = disc.encode(real)
    j = disc.names.index("INCOME")
    assert disc.sizes[j] == disc.value_codes(INCOME) + 1
    assert np.array_equal(codes[j] == disc.value_codes(INCOME), (real["AGE"] < 15).to_numpy())
    back = disc.decode(codes, rng=np.random.default_rng(0))
    assert back.loc[real["AGE"] < 15, "INCOME"].isna().all()


def test_evaluation_reads_universe_attributes(tmp_path):
    from dpknn.metrics._evaluation import evaluate

    real = _table(1000)
    synth = PrivBayes(ATTRS, epsilon=1.0, max_rows=2000, rng=0).fit(real).sample(1000, rng=1)
    report = evaluate(real, synth, ATTRS, rng=0)
    table = report.marginals["INCOME"]
    assert list(table.index[-2:]) == ["not applicable", "missing"]
    assert table.loc["not applicable", "real"] == pytest.approx((real["AGE"] < 15).mean())
    assert table.loc["missing", "real"] == 0.0
    report.write(tmp_path)
