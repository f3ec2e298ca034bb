"""One published record type and one privacy unit for every DP output (issue 49, finding 3).

Every output states its neighbouring relation under the one key ``privacy_unit``, as the value of
:class:`~dpknn.mechanisms.PrivacyUnit`, and no other spelling of it (``neighbours``, ``neighbouring_relation``,
``neighboring``) is published; released values, synthesisers and DP k-means publish a
:class:`~dpknn.mechanisms.PublishedRecord`; what is published goes through the one strict serialiser.
"""

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpknn import Categorical, DPKMeans, Ordinal, PrivateImputation, Schema
from dpknn.accounting import BudgetAccountant
from dpknn.mechanisms import PrivacyUnit, PublishedRecord, Release
from dpknn.mechanisms._base import to_json
from dpknn.processing import resize
from dpknn.processing._pipeline import ProcessingPlan, run_plan
from dpknn.releases import release_queries
from dpknn.synth import AIMSynthesizer, ColumnwiseSynthesizer, MSTSynthesizer, PrivBayes

OLD_KEYS = {"neighbours", "neighbouring_relation", "neighboring"}
ATTRS = [Categorical("a", [0, 1, 2]), Categorical("b", [0, 1]), Ordinal("c", 0, 9)]


def _table(n=600, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n), "c": rng.integers(0, 10, n)})
    df = df.astype(float)
    df.loc[rng.random(n) < 0.1, "c"] = np.nan
    return df


def _keys(obj):
    """Every mapping key anywhere in ``obj``."""
    if isinstance(obj, dict):
        return set(obj) | {k for v in obj.values() for k in _keys(v)}
    if isinstance(obj, list):
        return {k for v in obj for k in _keys(v)}
    return set()


def _units(obj):
    """Every value published under ``privacy_unit`` anywhere in ``obj``."""
    if isinstance(obj, dict):
        own = [obj["privacy_unit"]] if "privacy_unit" in obj else []
        return own + [u for v in obj.values() for u in _units(v)]
    if isinstance(obj, list):
        return [u for v in obj for u in _units(v)]
    return []


def _states_one_unit(published):
    """``published`` (JSON text) names the relation by the one key, as add/remove one record, and by no other."""
    data = json.loads(published)
    assert not _keys(data) & OLD_KEYS
    units = _units(data)
    assert units and set(units) == {PrivacyUnit.ADD_REMOVE.value}
    return data


@pytest.mark.parametrize("make", [
    lambda: PrivBayes(ATTRS, epsilon=1.0, rng=0),
    lambda: ColumnwiseSynthesizer(ATTRS, epsilon=1.0, rng=0),
    lambda: AIMSynthesizer(ATTRS, epsilon=1.0, rng=0),
    lambda: MSTSynthesizer(ATTRS, epsilon=1.0, rng=0),
], ids=["privbayes", "columnwise", "aim", "mst"])
def test_synthesisers_publish_the_record(make):
    model = make().fit(_table())
    record = model.public_record()
    assert isinstance(record, PublishedRecord) and record.unit is PrivacyUnit.ADD_REMOVE
    assert (record.epsilon, record.delta) == model.published_budget()
    data = _states_one_unit(to_json(record))
    assert list(data)[:4] == ["epsilon", "delta", "privacy_unit", "attributes"]


def test_releases_and_the_release_file_publish_the_record():
    schema = Schema(known=[Categorical("a", [0, 1, 2]), Categorical("b", [0, 1])], imputed=[Ordinal("c", 0, 9)])
    acc = BudgetAccountant(3.0)
    private = PrivateImputation(_table(), schema, k=1, accountant=acc, rng=0)
    mean = private.mean("c", epsilon=1.0, count_epsilon=1.0)
    assert isinstance(mean, PublishedRecord) and all(p.unit is PrivacyUnit.ADD_REMOVE for p in mean.parts.values())
    # the value's own record and each part's state the unit
    assert _units(json.loads(to_json(mean))) == [PrivacyUnit.ADD_REMOVE.value] * (1 + len(mean.parts))
    made = release_queries(private.with_accountant(BudgetAccountant(1.0)),
                           [{"name": "n", "type": "count", "where": {"a": [1]}, "epsilon": 1.0}])
    _states_one_unit(to_json(made.published(acc, k=1, epsilon_budget=3.0)))


def test_dp_kmeans_publishes_released_values_and_keeps_the_true_sizes():
    x = np.random.default_rng(7).normal(size=(800, 2))
    km = DPKMeans(3, epsilon=2.0, bounds=([-4, -4], [4, 4]), max_iter=2, rng=8).fit(x)
    record = km.public_record()
    data = _states_one_unit(to_json(record))
    assert data["epsilon"] == 2.0 and data["delta"] == 0.0
    assert np.allclose(data["cluster_centers"], km.cluster_centers_)
    assert data["counts"] == list(km.counts_)
    # The true cluster sizes and the clamped rows are the curator's; they are not in the record (negative
    # control: they are in curator_).
    assert not _keys(data) & set(km.curator_.values) and {"cluster_sizes", "rows"} <= set(km.curator_.values)
    # The record states the inputs the fit used, whatever set_params says afterwards.
    km.set_params(n_clusters=5, bounds=([0, 0], [100, 100]))
    assert km.public_record() == record and record.params["n_clusters"] == 3
    assert record.params["bounds"] == [[-4.0, -4.0], [4.0, 4.0]]


def test_the_resize_sidecar_and_plan_name_the_unit(caplog):
    x = pd.DataFrame({"v": np.arange(50.0)})
    pad = {"lower": {"v": 0.0}, "upper": {"v": 49.0}}
    a = resize(x, 60, p=0.5, unit="replace", impute_kwargs=pad, rng=1)
    with pytest.warns(DeprecationWarning, match="neighboring"):
        b = resize(x, 60, p=0.5, neighboring="replace", impute_kwargs=pad, rng=1)
    assert a.unit is b.unit is PrivacyUnit.REPLACE and a.data.equals(b.data)
    assert resize(x, 60, p=0.5, impute_kwargs=pad, rng=1).unit is PrivacyUnit.ADD_REMOVE
    with pytest.raises(ValueError, match="unit only"):
        resize(x, 60, unit="add_remove", neighboring="replace", impute_kwargs=pad, rng=1)
    with pytest.warns(DeprecationWarning, match="Resized.unit"):
        assert a.neighboring == "replace"
    with pytest.raises(ValueError, match="privacy unit"):
        resize(x, 60, unit="swap", impute_kwargs=pad, rng=1)
    plan = ProcessingPlan.from_dict({"impute": {"v": {"lower": 0.0, "upper": 49.0}},
                                     "resize": {"n": 60, "p": 0.5, "privacy_unit": "replace"}})
    # The plan's old key is read with a FutureWarning (shown on the command line), and checked when read.
    with pytest.warns(FutureWarning, match="write privacy_unit = 'replace'"):
        old = ProcessingPlan.from_dict({"impute": {"v": {"lower": 0.0, "upper": 49.0}},
                                        "resize": {"n": 60, "p": 0.5, "neighboring": "replace"}})
    for wrong in ("swap", ["replace"]):
        with pytest.raises(ValueError, match="privacy_unit"):
            ProcessingPlan.from_dict({"resize": {"n": 60, "privacy_unit": wrong}})
    new_result = run_plan(x, plan, rng=3)
    old_result = run_plan(x, old, rng=3)
    assert new_result.resized.unit is old_result.resized.unit is PrivacyUnit.REPLACE
    assert new_result.data.equals(old_result.data)


def test_the_unit_parses_its_names_only():
    assert PrivacyUnit.parse("add_remove") is PrivacyUnit.parse("add/remove one record") is PrivacyUnit.ADD_REMOVE
    assert PrivacyUnit.parse(PrivacyUnit.REPLACE) is PrivacyUnit.REPLACE
    for wrong in ("swap", "add or remove one record", None):
        with pytest.raises(ValueError, match="privacy unit"):
            PrivacyUnit.parse(wrong)
    with pytest.raises(ValueError, match="privacy unit"):
        PublishedRecord(epsilon=1.0, delta=0.0, unit="bounded")
    assert str(PrivacyUnit.ADD_REMOVE) == f"{PrivacyUnit.ADD_REMOVE}" == "add/remove one record"
    # A parameter cannot take the header's place.
    for key in ("epsilon", "privacy_unit", "parts"):
        with pytest.raises(ValueError, match="may not be named"):
            PublishedRecord(epsilon=1.0, delta=0.0, params={key: 99})


def test_the_serialiser_is_strict():
    record = PublishedRecord(epsilon=1.0, delta=0.0, params={"x": np.int64(3), "share": np.float64(0.5)})
    assert json.loads(to_json(record)) == {"epsilon": 1.0, "delta": 0.0, "privacy_unit": "add/remove one record",
                                           "x": 3, "share": 0.5}
    # Negative controls: what json.dumps(default=str) would have written as text is refused.
    with pytest.raises(ValueError):
        to_json(PublishedRecord(epsilon=1.0, delta=0.0, params={"bad": math.nan}))
    with pytest.raises(TypeError):
        to_json(PublishedRecord(epsilon=1.0, delta=0.0, params={"frame": pd.DataFrame({"v": [1]})}))
    assert isinstance(Release(value=1, epsilon=1.0, delta=0.0, mechanism="geometric"), PublishedRecord)


def test_a_release_is_built_as_before():
    """Release keeps its order of arguments (value, epsilon, delta, mechanism, params, parts, diagnostics,
    clamped), positional or by name; the unit is keyword-only and add/remove one record by default."""
    by_position = Release(2.0, 0.5, 0.0, "laplace", {"grid": 1.0})
    by_name = Release(value=2.0, epsilon=0.5, delta=0.0, mechanism="laplace", params={"grid": 1.0})
    assert by_position == by_name and by_position.unit is PrivacyUnit.ADD_REMOVE
    assert by_position.clamp(0.0, 1.0).clamped == "high" and by_position.to_dict()["privacy_unit"] == str(
        PrivacyUnit.ADD_REMOVE)
