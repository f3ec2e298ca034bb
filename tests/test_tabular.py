"""dpknn.synth.tabular: the public one-hot / scaled encoding of the GAN (no torch needed)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpknn import Categorical, Continuous, Ordinal
from dpknn.exceptions import DomainError
from dpknn.synth.tabular import TabularEncoding

ATTRS = [Ordinal("AGE", 0, 99), Categorical("SEX", [1, 2]), Categorical("RACE", ["a", "b", "c"]),
         Continuous("WAGE", 0.0, 5000.0), Ordinal("ONE", 3, 3)]


def _frame(rng, n, p_missing):
    df = pd.DataFrame({"AGE": rng.integers(0, 100, n).astype(float), "SEX": rng.choice([1, 2], n),
                       "RACE": rng.choice(["a", "b", "c"], n).astype(object), "WAGE": rng.uniform(0, 5000, n),
                       "ONE": np.full(n, 3.0)})
    for c in df.columns:
        df.loc[rng.random(n) < p_missing, c] = None
    return df


def test_layout():
    enc = TabularEncoding(ATTRS)
    assert enc.spans == ((0, 1), (1, 3), (3, 6), (6, 7), (7, 8))
    assert enc.n_columns == 8
    assert enc.categorical == (False, True, True, False, False)
    np.testing.assert_array_equal(enc.column_attribute, [0, 1, 1, 2, 2, 2, 3, 4])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 60), p=st.sampled_from([0.0, 0.3, 1.0]))
def test_round_trip_against_a_direct_encoding(seed, n, p):
    rng = np.random.default_rng(seed)
    df = _frame(rng, n, p)
    before = df.copy()
    enc = TabularEncoding(ATTRS)
    x, m = enc.encode(df)
    pd.testing.assert_frame_equal(df, before)
    assert x.dtype == np.float32 and x.shape == (n, 8) and m.shape == (n, 5)
    # Reference, cell by cell from the definitions.
    for i in range(n):
        for j, a in enumerate(ATTRS):
            v = df.iloc[i][a.name]
            lo, hi = enc.spans[j]
            if pd.isna(v):
                assert m[i, j] == 0 and not x[i, lo:hi].any()
            elif isinstance(a, Categorical):
                want = np.zeros(hi - lo)
                want[list(a.categories).index(v)] = 1
                assert m[i, j] == 1
                np.testing.assert_array_equal(x[i, lo:hi], want)
            else:
                assert m[i, j] == 1
                assert x[i, lo] == pytest.approx((v - a.lower) / max(a.upper - a.lower, 1), abs=1e-6)
    out = enc.decode(x, m)
    for a in ATTRS:
        miss = df[a.name].isna().to_numpy()
        np.testing.assert_array_equal(out[a.name].isna().to_numpy(), miss)
        got, want = out[a.name][~miss], df[a.name][~miss]
        if isinstance(a, Continuous):
            np.testing.assert_allclose(got.astype(float), want.astype(float), atol=5000 * 1e-6)
        else:
            assert list(got.astype(object)) == list(want.astype(object)) or \
                np.array_equal(got.astype(float), want.astype(float))


def test_decode_is_domain_valid_and_draws_categories_by_score():
    enc = TabularEncoding(ATTRS)
    rng = np.random.default_rng(0)
    x = rng.normal(0, 3, size=(20_000, 8))
    out = enc.decode(np.abs(x))
    assert out["AGE"].between(0, 99).all() and (out["AGE"] == np.floor(out["AGE"])).all()
    assert out["WAGE"].between(0, 5000).all() and (out["ONE"] == 3).all()
    assert set(out["RACE"]) <= {"a", "b", "c"}
    scores = np.zeros((20_000, 8))
    scores[:, 3:6] = [0.2, 0.5, 0.3]
    drawn = enc.decode(scores, rng=np.random.default_rng(1))["RACE"].value_counts(normalize=True)
    np.testing.assert_allclose(drawn[["a", "b", "c"]], [0.2, 0.5, 0.3], atol=0.015)
    assert (enc.decode(scores)["RACE"] == "b").all()


def test_bad_input():
    enc = TabularEncoding(ATTRS)
    with pytest.raises(TypeError, match="DataFrame"):
        enc.encode(np.zeros((2, 5)))
    with pytest.raises(ValueError, match="lacks the attribute columns"):
        enc.encode(pd.DataFrame({"AGE": [1]}))
    bad = _frame(np.random.default_rng(0), 5, 0.0)
    bad.loc[0, "AGE"] = 120
    with pytest.raises(DomainError, match="AGE"):
        enc.encode(bad)
    with pytest.raises(ValueError, match="shape"):
        enc.decode(np.zeros((2, 3)))
