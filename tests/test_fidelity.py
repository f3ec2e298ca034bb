"""k-way TVD (with the ½) and ML efficacy of synthetic data."""

import itertools

import numpy as np
import pandas as pd
import pytest

from dpknn import Categorical, Continuous, Ordinal
from dpknn.datasets._census import make_census
from dpknn.metrics._fidelity import MODELS, MlEfficacy, ml_efficacy, tvd


def _ref_tvd(p_df, q_df, cols, way):
    out = []
    for s in itertools.combinations(cols, way):
        p = p_df.groupby(list(s), dropna=False).size() / len(p_df)
        q = q_df.groupby(list(s), dropna=False).size() / len(q_df)
        p, q = p.align(q, fill_value=0)
        out.append(0.5 * (p - q).abs().sum())
    return float(np.mean(out))


def test_tvd_matches_definition_with_the_half():
    rng = np.random.default_rng(0)
    attrs = [Categorical("a", [0, 1, 2]), Categorical("b", ["x", "y"]), Ordinal("c", 0, 3)]
    p = pd.DataFrame({"a": rng.integers(0, 3, 300), "b": rng.choice(["x", "y"], 300), "c": rng.integers(0, 4, 300)})
    q = pd.DataFrame({"a": rng.integers(0, 2, 200), "b": rng.choice(["x", "y"], 200), "c": rng.integers(0, 4, 200)})
    q.loc[:20, "b"] = None
    for way in (1, 2, 3):
        assert tvd(p, q, attrs, way=way) == pytest.approx(_ref_tvd(p, q, ["a", "b", "c"], way))
    assert tvd(p, p, attrs) == 0.0
    far = pd.DataFrame({"a": [2] * 5, "b": ["y"] * 5, "c": [3] * 5})
    near = pd.DataFrame({"a": [0] * 5, "b": ["x"] * 5, "c": [0] * 5})
    assert tvd(near, far, attrs, way=1) == 1.0


def test_tvd_bins_numeric_and_observed_mode():
    attrs = [Continuous("w", 0.0, 10.0)]
    p = pd.DataFrame({"w": [0.5, 0.6, 9.5, np.nan]})
    q = pd.DataFrame({"w": [0.1, 0.2, 9.9, 9.8]})
    assert tvd(p, q, attrs, way=1, missing="observed") == pytest.approx(0.5 * (abs(2 / 3 - 0.5) + abs(1 / 3 - 0.5)))
    assert tvd(p, q, attrs, way=1) == pytest.approx(0.5 * (0.0 + abs(0.25 - 0.5) + 0.25))
    with pytest.raises(ValueError, match="way"):
        tvd(p, q, attrs, way=2)
    with pytest.raises(ValueError, match="missing"):
        tvd(p, q, attrs, way=1, missing="drop")


def test_ml_efficacy_orders_real_above_noise():
    attrs = [Ordinal("AGE", 0, 99), Ordinal("SCHOOL", 0, 17), Categorical("SEX", [1, 2]),
             Categorical("EMPSTAT", [0, 1, 2, 3]), Categorical("CLASSWKR", [0, 1, 2])]
    df = make_census(6000, missing="none", rng=1)[[a.name for a in attrs]]
    train, test = df.iloc[:4000], df.iloc[4000:]
    rng = np.random.default_rng(2)
    noise = pd.DataFrame({c: rng.permutation(train[c].to_numpy()) for c in train.columns})
    real = ml_efficacy(train, test, attrs, models=("logistic_regression", "decision_tree"), rng=0)
    shuffled = ml_efficacy(noise, test, attrs, models=("logistic_regression", "decision_tree"), rng=0)
    assert isinstance(real, MlEfficacy) and real.scores.shape == (5, 2)
    assert real.f1 > shuffled.f1 + 0.1
    assert real.scores.loc["EMPSTAT"].min() > 0.8
    with pytest.raises(ValueError, match="models"):
        ml_efficacy(train, test, attrs, models=("xgboost",))
    assert "xgboost" not in MODELS
    with pytest.raises(ValueError, match="targets"):
        ml_efficacy(train, test, attrs, targets=["nope"])
