"""One meaning of a universe in every command and in Python (issue 47, finding 1).

An income declared for workers only, with incomes also observed outside (as in the General Social
Survey: 5,474 of them). Outside its universe the attribute is *not applicable*: `impute` leaves it
missing there, a `release` condition on it never holds there (the count and the mean agree on the
records they read), `synth` draws no value there and its missing share matches the real one under
the rule, `evaluate` compares both tables under the rule; the curator is told how many values lay
outside (diagnostics, notes, warnings), and no published file holds that number.
"""

import json
import logging

import numpy as np
import pandas as pd

from dpknn import Categorical, Continuous, KNNImputer, Ordinal, PrivateImputation, Schema
from dpknn.accounting import BudgetAccountant
from dpknn.cli._main import main
from dpknn.metrics._evaluation import evaluate
from dpknn.schema._attributes import blank_outside_universes, observed_outside_universes
from dpknn.synth import MSTSynthesizer

WORKERS = ["full", "part"]


def wage_table(n=3000, seed=0):
    """Work status known for everyone, income inside the workers' universe with gaps, and observed
    for some records outside it (retired people reporting a pension as income)."""
    rng = np.random.default_rng(seed)
    status = rng.choice(["full", "part", "retired", "school"], n, p=[0.5, 0.15, 0.25, 0.1])
    age = rng.integers(18, 80, n)
    income = np.round(rng.lognormal(10, 0.6, n)).clip(0, 500_000)
    income[rng.random(n) < 0.2] = np.nan
    outside = ~np.isin(status, WORKERS)
    income[outside & (rng.random(n) < 0.7)] = np.nan          # most outside have no income...
    df = pd.DataFrame({"id": np.arange(n), "age": age, "status": status, "income": income})
    assert (outside & df.income.notna()).sum() > 100           # ...but many report one
    return df


def schema():
    return Schema(known=[Ordinal("age", 18, 80, bin_width=10), Categorical("status", ["full", "part", "retired",
                                                                                        "school"])],
                  imputed=[Continuous("income", 0, 500_000, universe={"status": WORKERS})], label="id")


def _outside(df):
    return ~df.status.isin(WORKERS)


def test_the_shared_rule_blanks_and_counts_without_touching_its_input():
    df = wage_table()
    before = df.copy()
    attrs = schema().imputed
    counts = observed_outside_universes(df, attrs)
    assert counts == {"income": int((_outside(df) & df.income.notna()).sum())}
    out = blank_outside_universes(df, attrs)
    pd.testing.assert_frame_equal(df, before)                       # the input is not changed
    assert out.loc[_outside(df), "income"].isna().all()
    pd.testing.assert_series_equal(out.loc[~_outside(df), "income"], df.loc[~_outside(df), "income"])
    assert observed_outside_universes(out, attrs) == {}


def test_impute_leaves_the_attribute_missing_outside_and_tells_the_curator(caplog):
    df = wage_table()
    with caplog.at_level(logging.WARNING, logger="dpknn.impute._knn"):
        imp = KNNImputer(schema()).fit(df)
    n_out = int((_outside(df) & df.income.notna()).sum())
    assert imp.n_outside_universe_ == {"income": n_out}
    assert imp.curator_dict()["observed_outside_universe"] == {"income": n_out}
    assert any(f"{n_out} observed value(s) lie outside its universe" in r.message for r in caplog.records)
    out = imp.transform(df)
    assert out.loc[_outside(df), "income"].isna().all()
    assert out.loc[~_outside(df), "income"].notna().all()


def test_a_count_and_a_mean_of_the_attribute_read_the_same_records():
    df = wage_table()
    private = PrivateImputation(df, schema(), accountant=BudgetAccountant(100.0), rng=0)
    stats = private.statistics
    inside = ~_outside(df)
    # A condition on the attribute never holds outside its universe, observed value or not.
    big = {"income": (50_000, None)}
    imputed = private.imputer.transform(df)
    assert stats.count(big) == int(((imputed.income >= 50_000) & inside).sum())
    assert stats.count(big) < int((imputed.income >= 50_000).sum() + (df.income[~inside] >= 50_000).sum())
    # ignore_missing reads the same rule on the original data: observed incomes inside the universe.
    assert stats.count(big, observed_only=True) == int(((df.income >= 50_000) & inside).sum())
    universe = schema().attribute("income").universe
    m = stats.moments("income", {}, (0.0, 500_000.0), observed_only=True, universe=universe)
    assert m.n == int((df.income.notna() & inside).sum())


def test_synthetic_gaps_match_the_real_ones_under_the_rule():
    df = wage_table(6000)
    attrs = [Categorical("status", ["full", "part", "retired", "school"]),
             Continuous("income", 0, 500_000, universe={"status": WORKERS})]
    model = MSTSynthesizer(attrs, epsilon=20.0, rng=1).fit(df[["status", "income"]])
    n_out = int((_outside(df) & df.income.notna()).sum())
    assert model.n_outside_universe_ == {"income": n_out}
    assert "n_outside_universe" not in json.dumps(model.public_params())
    syn = model.sample(6000, rng=2)
    assert syn.loc[_outside(syn), "income"].isna().all()
    real_missing = blank_outside_universes(df, attrs).income.isna().mean()
    assert abs(syn.income.isna().mean() - real_missing) < 0.03


def test_evaluate_compares_under_the_rule_and_says_how_many_values_lay_outside():
    df = wage_table()
    attrs = [Categorical("status", ["full", "part", "retired", "school"]),
             Continuous("income", 0, 500_000, universe={"status": WORKERS})]
    blanked = blank_outside_universes(df, attrs)
    rep = evaluate(df, blanked, attrs, rng=0)
    n_out = int((_outside(df) & df.income.notna()).sum())
    assert any(f"{n_out:,} observed value(s) of income in the real table" in n for n in rep.notes)
    # Under the rule the blanked copy is the real table: nothing differs.
    assert rep.marginal_tvd.loc["income", "tvd"] == 0.0


def test_commands_apply_the_rule_and_publish_no_count(tmp_path, caplog):
    df = wage_table()
    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.toml").write_text(schema().to_toml())
    (tmp_path / "q.toml").write_text('[[query]]\nname = "rich"\ntype = "count"\nwhere = { income = { low = 50000 } }'
                                     '\nepsilon = 2.0\n')
    n_out = int((_outside(df) & df.income.notna()).sum())
    assert main(["impute", "--schema", str(tmp_path / "s.toml"), "--input", str(tmp_path / "d.csv"), "--output",
                 str(tmp_path / "i.csv"), "--diagnostics", str(tmp_path / "diag.json")]) == 0
    imputed = pd.read_csv(tmp_path / "i.csv")
    assert imputed.loc[_outside(imputed), "income"].isna().all()
    assert json.loads((tmp_path / "diag.json").read_text())["observed_outside_universe"] == {"income": n_out}
    assert main(["release", "--schema", str(tmp_path / "s.toml"), "--queries", str(tmp_path / "q.toml"),
                 "--input", str(tmp_path / "d.csv"), "--output", str(tmp_path / "r.json"), "--epsilon", "2",
                 "--seed", "1", "--diagnostics", str(tmp_path / "rd.json")]) == 0
    published = (tmp_path / "r.json").read_text()
    assert str(n_out) not in published and "outside" not in published
    assert any(f"{n_out} observed value(s) lie outside its universe" in r.message for r in caplog.records)


def test_a_mean_over_a_universe_says_so_in_its_ledger_label():
    """A new user read "mean of INCTOT over all records" in a published ledger of a mean over INCTOT's universe."""
    acc = BudgetAccountant(10.0)
    private = PrivateImputation(wage_table(), schema(), accountant=acc, rng=0)
    private.mean("income", bounds=(0.0, 500_000.0), epsilon=1.0, count_epsilon=1.0)
    private.count({}, epsilon=1.0)
    labels = [entry["label"] if isinstance(entry, dict) else entry.label for entry in acc.ledger]
    assert labels[0].startswith("count for mean of income over the records inside its universe (")
    assert labels[1].startswith("mean of income over the records inside its universe (")
    assert labels[2] == "count over all records"      # negative control: no attribute, no universe
