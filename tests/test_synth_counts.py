"""The counting kernel and the public discretisation of synthesis, against brute force."""

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpknn import Categorical, Continuous, DomainError, Ordinal
from dpknn.schema._discretization import Discretization
from dpknn.schema._marginals import count_tables, extended_codes, observed_block


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_count_tables_match_brute_force(data):
    d = data.draw(st.integers(1, 5))
    n = data.draw(st.integers(0, 60))
    sizes = np.array(data.draw(st.lists(st.integers(1, 4), min_size=d, max_size=d)))
    codes = np.array([data.draw(st.lists(st.integers(-1, int(s) - 1), min_size=n, max_size=n)) for s in sizes],
                     dtype=np.int16).reshape(d, n)
    width = data.draw(st.integers(1, min(d, 4)))
    sets = [tuple(data.draw(st.permutations(range(d)))[:width]) for _ in range(data.draw(st.integers(1, 4)))]
    ext = extended_codes(codes, sizes)
    for s, table in zip(sets, count_tables(ext, sizes, sets, n_jobs=data.draw(st.integers(1, 2)))):
        ref = np.zeros(tuple(sizes[list(s)] + 1), dtype=np.int64)
        for i in range(n):
            ref[tuple(int(codes[a, i]) if codes[a, i] >= 0 else sizes[a] for a in s)] += 1
        np.testing.assert_array_equal(table, ref)
        keep = data.draw(st.permutations(range(len(s))))[: data.draw(st.integers(1, len(s)))]
        obs = np.zeros(tuple(sizes[[s[j] for j in keep]]), dtype=np.int64)
        for i in range(n):
            if all(codes[s[j], i] >= 0 for j in keep):
                obs[tuple(int(codes[s[j], i]) for j in keep)] += 1
        np.testing.assert_array_equal(observed_block(table, keep), obs)


def test_two_threads_count_the_same_as_one():
    rng = np.random.default_rng(0)
    sizes = np.array([3, 5, 2, 7, 4])
    codes = np.stack([rng.integers(-1, s, 300_000) for s in sizes]).astype(np.int16)
    ext = extended_codes(codes, sizes)
    sets = list(itertools.combinations(range(5), 3))
    for a, b in zip(count_tables(ext, sizes, sets, n_jobs=1), count_tables(ext, sizes, sets, n_jobs=2)):
        np.testing.assert_array_equal(a, b)


def test_encode_public_bins_and_missing():
    attrs = [Ordinal("age", 0, 99), Ordinal("kids", 0, 5), Continuous("w", 0.0, 10.0), Categorical("s", ["m", "f"])]
    disc = Discretization(attrs, bins=10)
    np.testing.assert_array_equal(disc.sizes, [10, 6, 10, 2])
    df = pd.DataFrame({"age": [0, 9, 10, 99, None], "kids": [0, 5, None, 2, 3], "w": [0.0, 0.99, 1.0, 10.0, None],
                       "s": ["m", "f", None, "f", "m"]})
    before = df.copy()
    codes = disc.encode(df)
    np.testing.assert_array_equal(codes, [[0, 0, 1, 9, -1], [0, 5, -1, 2, 3], [0, 0, 1, 9, -1], [0, 1, -1, 1, 0]])
    pd.testing.assert_frame_equal(df, before)
    with pytest.raises(DomainError, match="age"):
        disc.encode(df.assign(age=[0, 1, 2, 100, 4]))
    with pytest.raises(ValueError, match="lacks"):
        disc.encode(df.drop(columns="w"))


def test_decode_is_uniform_inside_bins_and_domain_valid():
    attrs = [Ordinal("age", 0, 99), Continuous("w", 0.0, 10.0), Ordinal("small", 3, 5), Categorical("c", [7, 8])]
    disc = Discretization(attrs, bins=10)
    rng = np.random.default_rng(1)
    codes = np.array([[4] * 20000, [9] * 20000, [2] * 20000, [1] * 20000])
    out = disc.decode(codes, rng=rng)
    assert list(out.columns) == ["age", "w", "small", "c"]
    assert set(out["age"]) == set(range(40, 50)) and set(out["small"]) == {5} and set(out["c"]) == {8}
    assert stats.chisquare(np.bincount(out["age"] - 40)).pvalue > 1e-4
    assert stats.kstest((out["w"] - 9.0) / 1.0, "uniform").pvalue > 1e-4
    np.testing.assert_array_equal(disc.encode(out), codes)
    miss = disc.decode(np.array([[-1, 0], [-1, 0], [-1, 0], [-1, 0]]), rng=rng)
    assert miss.iloc[0].isna().all() and miss.iloc[1].notna().all()


def test_discretization_validates():
    with pytest.raises(ValueError, match="distinct"):
        Discretization([Ordinal("a", 0, 1), Ordinal("a", 0, 2)])
    with pytest.raises(TypeError, match="attributes"):
        Discretization(["a"])
    with pytest.raises(ValueError, match="bins"):
        Discretization([Ordinal("a", 0, 1)], bins=0)
