"""What the command line publishes comes from the library: the synthesisers' public_params(),
the imputer's curator summary, and a query file's ReleaseSet."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from dpknn import Categorical, Ordinal, Schema
from dpknn.accounting import BudgetAccountant
from dpknn.impute import KNNImputer
from dpknn.mechanisms import PrivacyUnit
from dpknn.releases import PrivateImputation, release_queries
from dpknn.releases._baseline import NOT_DP
from dpknn.releases._queryfile import ReleaseSet
from dpknn.synth import ColumnwiseSynthesizer, PrivBayes, Synthesizer

ATTRS = [Categorical("a", [0, 1, 2]), Categorical("b", [0, 1]), Ordinal("c", 0, 9)]


def _table(n=600, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n),
                       "c": rng.integers(0, 10, n)}).astype(float)
    df.loc[rng.random(n) < 0.2, "c"] = np.nan
    return df


@pytest.mark.parametrize("make", [
    lambda: PrivBayes(ATTRS, epsilon=1.0, max_rows=1000, rng=0),
    lambda: PrivBayes(ATTRS, epsilon=1.0, rng=0),
    lambda: ColumnwiseSynthesizer(ATTRS, epsilon=1.0, rng=0),
])
def test_public_params_hold_the_budget_domains_and_released_structure(make):
    model = make()
    assert isinstance(model, Synthesizer)
    with pytest.raises(NotFittedError):
        model.public_params()
    params = model.fit(_table()).public_params()
    json.dumps(params)  # JSON-ready
    assert list(params)[:4] == ["epsilon", "delta", "privacy_unit", "attributes"]
    assert params["epsilon"] == model.epsilon_ <= 1.0
    assert params["privacy_unit"] == "add/remove one record" == PrivacyUnit.ADD_REMOVE.value
    assert model.public_record().unit is PrivacyUnit.ADD_REMOVE and model.public_record().to_dict() == params
    assert params["attributes"] == [a.to_dict() for a in ATTRS]
    if isinstance(model, PrivBayes):
        assert params["network"] == [[c, list(p)] for c, p in model.network_]
        assert params["max_rows_is"] == ("public input" if model.max_rows is not None
                                         else "released (noisy count + margin)")
    else:
        assert params["order"] == list(model.order_)


def test_public_params_are_the_same_for_the_same_released_model():
    # Nothing data-dependent beyond the released structure: two data sets that release the same
    # network give the same record.
    a = PrivBayes(ATTRS, epsilon=1.0, max_rows=1000, rng=0).fit(_table(seed=1)).public_params()
    b = PrivBayes(ATTRS, epsilon=1.0, max_rows=1000, rng=0).fit(_table(seed=1)).public_params()
    assert a == b


def test_curator_dict_of_the_imputer():
    schema = Schema(known=[Categorical("a", [0, 1, 2]), Categorical("b", [0, 1])], imputed=[Ordinal("c", 0, 9)])
    imp = KNNImputer(schema, k=2)
    with pytest.raises(NotFittedError):
        imp.curator_dict()
    imp.fit(_table())
    got = imp.curator_dict()
    assert got["confidential"] is True
    assert got["l1"] == imp.l1_ and got["n_incomplete"] == imp.incomplete_index_.size
    assert set(got["l1_cases"]) == set(imp.l1_cases_)
    json.dumps(got)


def test_release_set_publishes_released_values_and_marks_non_dp():
    schema = Schema(known=[Categorical("a", [0, 1, 2]), Categorical("b", [0, 1])], imputed=[Ordinal("c", 0, 9)])
    acc = BudgetAccountant(3.0)
    private = PrivateImputation(_table(), schema, k=1, accountant=acc, rng=0)
    queries = [{"name": "n", "type": "count", "where": {"a": [1]}, "epsilon": 1.0},
               {"name": "m", "type": "mean", "column": "c", "epsilon": 1.0, "count_epsilon": 1.0}]
    made = release_queries(private, queries)
    assert isinstance(made, ReleaseSet) and made.differentially_private
    assert [r["name"] for r in made.releases] == ["n", "m"] == [c["name"] for c in made.curator]
    out = made.published(acc, k=1, epsilon_budget=3.0)
    assert "WARNING" not in out and out["epsilon_spent"] == pytest.approx(3.0)
    assert out["releases"] == list(made.releases)
    # The curator's diagnostics hold data-dependent numbers; the published file does not.
    assert all(set(c) - {"name"} for c in made.curator)
    assert not any(set(c) - {"name"} <= set(r) for c, r in zip(made.curator, made.releases))

    non_dp = release_queries(private.with_accountant(BudgetAccountant(1.0)),
                             [{"name": "g", "type": "count", "where": None, "epsilon": 1.0, "method": "global"}])
    assert not non_dp.differentially_private
    assert non_dp.releases[0]["note"] == NOT_DP and non_dp.curator == ()
    assert non_dp.published(acc, k=1, epsilon_budget=3.0)["WARNING"].startswith("NOT DIFFERENTIALLY PRIVATE")
