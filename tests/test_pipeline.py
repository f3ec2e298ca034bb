"""dpknn process / dpknn.processing._pipeline: known attributes with gaps filled from public parameters."""

import json

import numpy as np
import pandas as pd
import pytest
from cli_run import run

from dpknn import Categorical, Continuous, KNNImputer, Ordinal, Schema
from dpknn.processing._pipeline import ProcessingPlan, run_plan
from dpknn.processing._transforms import clamp, impute

STEPS = """
[clamp.AGE]
lower = 0
upper = 99

[clamp.SEX]
categories = [1, 2]
null_value = -1

[impute.AGE]
lower = 0
upper = 99
integer = true

[impute.SEX]
categories = [1, 2]
null_value = -1
"""


def raw_table(n=300, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"ID": np.arange(1000, 1000 + n), "AGE": rng.integers(0, 115, n).astype(float),
                       "SEX": rng.choice([1, 2, 9], n), "INC": rng.uniform(0, 9000, n)})
    df.loc[rng.random(n) < 0.1, "AGE"] = np.nan
    df.loc[rng.random(n) < 0.2, "INC"] = np.nan
    return df


SCHEMA = Schema(known=[Ordinal("AGE", 0, 99), Categorical("SEX", [1, 2])], imputed=[Continuous("INC", 0, 9000)],
                label="ID")


def test_plan_equals_the_steps_by_hand_and_leaves_input_alone(tmp_path):
    (tmp_path / "steps.toml").write_text(STEPS)
    plan = ProcessingPlan.from_file(tmp_path / "steps.toml")
    df = raw_table()
    before = df.copy()
    out = run_plan(df, plan, rng=5).data
    pd.testing.assert_frame_equal(df, before)
    rng = np.random.default_rng(5)
    by_hand = clamp(df, lower={"AGE": 0}, upper={"AGE": 99}, categories={"SEX": [1, 2]}, null_value={"SEX": -1})
    by_hand = by_hand.assign(AGE=impute(by_hand[["AGE"]], lower=0, upper=99, integer=True, rng=rng)["AGE"])
    by_hand = by_hand.assign(SEX=impute(by_hand[["SEX"]], categories=[1, 2], null_value=-1, rng=rng)["SEX"])
    pd.testing.assert_frame_equal(out, by_hand)
    assert list(out["ID"]) == list(df["ID"]) and out["INC"].equals(df["INC"])
    # Before `integer` draws, the filled AGE was fractional and Schema.encode refused it.
    KNNImputer(SCHEMA).fit(out)


@pytest.mark.parametrize("spec, message", [
    ({"clip": {}}, "unknown tables"),
    ({"clamp": {"AGE": {"low": 0}}}, r"\[clamp.AGE\] has unknown keys \['low'\]"),
    ({"impute": {"AGE": 3}}, r"\[impute.AGE\] must be a table"),
    ({"resize": {"p": 0.5}}, "needs n"),
    ({}, "is empty"),
])
def test_plan_errors_name_table_and_key(spec, message):
    with pytest.raises(ValueError, match=message):
        ProcessingPlan.from_dict(spec)


def test_missing_column_and_resize_with_source():
    df = raw_table(50)
    with pytest.raises(ValueError, match=r"\[impute\] names columns \['NOPE'\]"):
        run_plan(df, ProcessingPlan.from_dict({"impute": {"NOPE": {"lower": 0, "upper": 1}}}))
    plan = ProcessingPlan.from_dict({
        "impute": {"ID": {"lower": -1, "upper": -1}, "AGE": {"lower": 0, "upper": 99, "integer": True},
                   "SEX": {"categories": [1, 2, 9]}, "INC": {"lower": 0, "upper": 9000}},
        "resize": {"n": 80, "p": 1.0, "source_column": "ROW"}})
    res = run_plan(df, plan, rng=1)
    out = res.data
    assert len(out) == 80 and res.resized.c == 1
    real = out["ROW"].to_numpy() >= 0
    # Every real output row keeps its record label (ID) and values; padding has the public filler.
    pd.testing.assert_frame_equal(out.loc[real, ["ID", "SEX"]].reset_index(drop=True),
                                  df.iloc[out.loc[real, "ROW"]][["ID", "SEX"]].reset_index(drop=True))
    assert (out.loc[~real, "ID"] == -1).all()


def test_process_command_then_impute(tmp_path):
    df = raw_table()
    df.to_csv(tmp_path / "raw.csv", index=False)
    (tmp_path / "steps.toml").write_text(STEPS)
    (tmp_path / "schema.toml").write_text(SCHEMA.to_toml())
    res = run("process", "--input", str(tmp_path / "raw.csv"), "--steps", str(tmp_path / "steps.toml"),
              "--output", str(tmp_path / "p.csv"), "--seed", "3")
    assert res.returncode == 0, res.stderr
    text = (tmp_path / "p.csv").read_text()
    assert ".0," not in text.splitlines()[1].split(",", 2)[1]  # AGE written as integers
    out = pd.read_csv(tmp_path / "p.csv")
    assert out["AGE"].notna().all() and out["AGE"].between(0, 99).all() and out["SEX"].isin([1, 2]).all()
    res = run("impute", "--schema", str(tmp_path / "schema.toml"), "--input", str(tmp_path / "p.csv"),
              "--output", str(tmp_path / "i.csv"))
    assert res.returncode == 0, res.stderr
    (tmp_path / "bad.toml").write_text("[clamp.AGE]\nlower = 0\n")
    res = run("process", "--input", str(tmp_path / "raw.csv"), "--steps", str(tmp_path / "bad.toml"),
              "--output", str(tmp_path / "q.csv"))
    assert res.returncode == 2 and "needs both lower and upper" in res.stderr and not (tmp_path / "q.csv").exists()
    (tmp_path / "rs.toml").write_text(STEPS.replace("[clamp.SEX]", "[impute.ID]\nlower = 0\nupper = 0\n\n"
                                                    "[impute.INC]\nlower = 0\nupper = 9000\n\n[clamp.SEX]")
                                      + "\n[resize]\nn = 100\np = 0.5\n")
    res = run("process", "--input", str(tmp_path / "raw.csv"), "--steps", str(tmp_path / "rs.toml"),
              "--output", str(tmp_path / "r.csv"), "--seed", "3")
    assert res.returncode == 0, res.stderr
    side = json.loads((tmp_path / "r.csv.json").read_text())
    assert side["resize"] == {"n": 100, "p": 0.5, "c": 1, "s": 0.5, "privacy_unit": "add/remove one record"}
    assert len(pd.read_csv(tmp_path / "r.csv")) == 100


def test_imputed_ordinal_written_as_integers(tmp_path):
    df = raw_table()
    df = df.assign(AGE=df["AGE"].fillna(30).clip(0, 99), SEX=df["SEX"].replace(9, 1),
                   INC=np.where(df["INC"].isna(), np.nan, np.floor(df["INC"] / 1000)))
    schema = Schema(known=[Ordinal("AGE", 0, 99), Categorical("SEX", [1, 2])], imputed=[Ordinal("INC", 0, 9)])
    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.toml").write_text(schema.to_toml())
    res = run("impute", "--schema", str(tmp_path / "s.toml"), "--input", str(tmp_path / "d.csv"),
              "--output", str(tmp_path / "o.csv"), "--k", "3")
    assert res.returncode == 0, res.stderr
    inc = [line.split(",")[3] for line in (tmp_path / "o.csv").read_text().splitlines()[1:]]
    assert all(v.isdigit() for v in inc), inc[:5]
    mean = KNNImputer(schema, k=3, aggregate="mean").fit_transform(df)
    assert mean["INC"].dtype == np.float64  # averaged donors are not integers
