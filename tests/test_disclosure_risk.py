"""Disclosure-risk measures against brute-force references on many random small tables."""

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpknn.metrics import (
    correct_attribution_probability,
    distance_to_closest_record,
    linkage,
    risk_space,
    sample_uniques,
)
from dpknn.schema._attributes import Categorical, Continuous


def _random_pair(seed, n, m, perturb):
    """Small tables with many ties (integer values), a category and gaps; released rows keep labels."""
    rng = np.random.default_rng(seed)
    orig = pd.DataFrame({"a": rng.integers(0, 3, n).astype(float), "b": rng.integers(0, 2, n).astype(float),
                         "c": rng.choice(["x", "y"], n)}, index=pd.Index(rng.permutation(1000)[:n], name="id"))
    orig.loc[orig.index[rng.random(n) < 0.2], "a"] = np.nan
    rel = orig.iloc[rng.choice(n, m, replace=False)].copy()
    rel["b"] = rel["b"] + perturb * rng.integers(-1, 2, m)
    return orig, rel


def _brute_distance(orig, rel, cols):
    """Pairwise distances by the documented coding, computed entry by entry."""
    mean = {c: orig[c].mean() for c in cols if orig[c].dtype.kind == "f"}
    sd = {c: (orig[c].std(ddof=0) or 1.0) for c in mean}
    has_gap = {c: orig[c].isna().any() or rel[c].isna().any() for c in mean}

    def dist(r, o):
        s = 0.0
        for c in cols:
            if c in mean:
                zr = 0.0 if pd.isna(r[c]) else (r[c] - mean[c]) / sd[c]
                zo = 0.0 if pd.isna(o[c]) else (o[c] - mean[c]) / sd[c]
                s += (zr - zo) ** 2 + (has_gap[c] and (pd.isna(r[c]) != pd.isna(o[c])))
            else:
                s += float(r[c] != o[c])   # one-hot / √2: a mismatch costs 1
        return np.sqrt(s)

    return np.array([[dist(r, o) for _, o in orig.iterrows()] for _, r in rel.iterrows()])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 12), perturb=st.sampled_from([0, 1]))
def test_linkage_and_dcr_equal_brute_force(seed, n, perturb):
    orig, rel = _random_pair(seed, n, max(1, n // 2), perturb)
    cols = ["a", "b", "c"]
    d = _brute_distance(orig, rel, cols)
    res = linkage(orig, rel)
    for i, label in enumerate(rel.index):
        nearest = np.isclose(d[i], d[i].min(), rtol=1e-9, atol=1e-12)
        own = list(orig.index).index(label)
        expected = 1.0 / nearest.sum() if nearest[own] else 0.0
        assert res.probabilities.loc[label] == pytest.approx(expected)
    assert res.chance == 1 / n and res.rate == pytest.approx(res.probabilities.mean())
    dcr = distance_to_closest_record(orig, rel)
    assert dcr.released.to_numpy() == pytest.approx(d.min(axis=1), abs=1e-9)
    within = _brute_distance(orig, orig, cols) + np.diag(np.full(n, np.inf))
    assert dcr.original.to_numpy() == pytest.approx(within.min(axis=1), abs=1e-9)


def _brute_keys(df, keys):
    return [tuple("<NA>" if pd.isna(v) else v for v in row) for row in df[keys].itertuples(index=False)]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 15), m=st.integers(1, 15))
def test_cap_and_uniques_equal_brute_force(seed, n, m):
    rng = np.random.default_rng(seed)

    def table(k):
        return pd.DataFrame({"k1": rng.integers(0, 2, k), "k2": rng.choice(["p", "q", None], k),
                             "t": rng.choice(["s", "u", None], k, p=[0.5, 0.3, 0.2])})

    orig, rel = table(n), table(m)
    keys = ["k1", "k2"]
    ko, kr = _brute_keys(orig, keys), _brute_keys(rel, keys)
    res = correct_attribution_probability(orig, rel, keys=keys, target="t")
    expected = []
    for i in range(n):
        target = orig["t"].iloc[i]
        cls = [j for j in range(m) if kr[j] == ko[i] and not pd.isna(rel["t"].iloc[j])]
        if pd.isna(target) or not cls:
            expected.append(np.nan)
        else:
            expected.append(sum(rel["t"].iloc[j] == target for j in cls) / len(cls))
    np.testing.assert_allclose(res.probabilities.to_numpy(), expected)
    known = orig["t"].dropna()
    assert res.baseline == pytest.approx(sum((c / len(known)) ** 2 for c in Counter(known).values()) if len(known)
                                         else 0.0)
    co, cr = Counter(ko), Counter(kr)
    u = sample_uniques(orig, rel, keys=keys)
    assert u.original == sum(co[k] == 1 for k in ko)
    assert u.released == sum(cr[k] == 1 for k in kr)
    assert u.replicated == sum(cr[k] == 1 and co[k] == 1 for k in kr)


def test_linkage_is_certain_for_copies_and_at_chance_for_shuffled_labels():
    rng = np.random.default_rng(0)
    orig = pd.DataFrame({"x": rng.normal(size=2000), "y": rng.normal(size=2000)})
    assert linkage(orig, orig.copy()).rate == 1.0
    shuffled = orig.copy()
    shuffled.index = rng.permutation(orig.index)
    res = linkage(orig, shuffled)
    assert res.rate < 10 * res.chance   # 2000 records: chance is 0.0005
    assert res.lift < 10


def test_linkage_uses_a_label_column_and_refuses_synthetic_rows():
    orig = pd.DataFrame({"id": [10, 11, 12], "x": [0.0, 1.0, 5.0]})
    rel = pd.DataFrame({"id": [12, 10], "x": [4.9, 0.2]})
    res = linkage(orig, rel, label="id")
    assert res.rate == 1.0 and list(res.probabilities.index) == [12, 10]
    with pytest.raises(ValueError, match="no label of an original record"):
        linkage(orig, pd.DataFrame({"id": [99], "x": [0.0]}), label="id")


def test_public_bins_code_numeric_keys():
    attrs = [Continuous("inc", lower=0, upper=100), Categorical("sex", categories=["f", "m"])]
    orig = pd.DataFrame({"inc": [1.0, 2.0, 55.0, 56.0], "sex": ["f", "f", "m", "m"], "t": ["a", "b", "a", "a"]})
    rel = pd.DataFrame({"inc": [3.0, 57.0], "sex": ["f", "m"], "t": ["a", "a"]})
    by_value = sample_uniques(orig, rel, keys=["inc", "sex"])
    assert by_value.original == 4
    binned = sample_uniques(orig, rel, keys=["inc", "sex"], attributes=attrs, bins=10)
    assert binned.original == 0 and binned.released == 2 and binned.replicated == 0
    cap = correct_attribution_probability(orig, rel, keys=["inc", "sex"], target="t", attributes=attrs)
    assert cap.probabilities.tolist() == [1.0, 0.0, 1.0, 1.0]
    assert cap.cap == pytest.approx(0.75) and cap.baseline == pytest.approx(0.75**2 + 0.25**2)


def test_risk_space_puts_a_category_mismatch_at_distance_one():
    orig = pd.DataFrame({"x": [0.0, 2.0], "g": ["a", "b"]})
    a, _ = risk_space(orig, orig)
    assert np.linalg.norm(a[0] - a[1]) == pytest.approx(np.sqrt(5.0))   # 2 SD apart (SD 1) and 1 category
    for cols in (["x"], ["g"]):
        a, _ = risk_space(orig, orig, columns=cols)
        assert np.linalg.norm(a[0] - a[1]) == pytest.approx(1.0 if cols == ["g"] else 2.0)
    with pytest.raises(ValueError, match="both tables must hold"):
        risk_space(orig, orig[["x"]], columns=["g"])


def test_unmatched_keys_count_zero_in_cap_zero():
    orig = pd.DataFrame({"k": [1, 2], "t": ["a", "a"]})
    rel = pd.DataFrame({"k": [1], "t": ["a"]})
    res = correct_attribution_probability(orig, rel, keys=["k"], target="t")
    assert (res.cap, res.cap_zero, res.matched_share) == (1.0, 0.5, 0.5)
    with pytest.raises(ValueError, match="also a key"):
        correct_attribution_probability(orig, rel, keys=["k", "t"], target="t")


def test_inputs_are_not_mutated():
    orig, rel = _random_pair(1, 10, 5, 1)
    before = (orig.copy(), rel.copy())
    linkage(orig, rel)
    distance_to_closest_record(orig, rel)
    sample_uniques(orig, rel, keys=["a", "c"])
    pd.testing.assert_frame_equal(orig, before[0])
    pd.testing.assert_frame_equal(rel, before[1])
