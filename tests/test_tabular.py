"""dpknn.synth._tabular: the public one-hot codes / positions encoding of the GAN (no torch needed)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpknn import Categorical, Continuous, Ordinal
from dpknn.exceptions import DomainError
from dpknn.schema._discretization import Discretization
from dpknn.synth._tabular import CODES, POSITION, Segment, TabularEncoding

ATTRS = [Ordinal("AGE", 0, 99), Categorical("SEX", [1, 2]), Categorical("RACE", ["a", "b", "c"]),
         Continuous("WAGE", 0.0, 5000.0), Ordinal("ONE", 3, 3), Ordinal("KIDS", 0, 5)]


def _frame(rng, n, p_missing):
    df = pd.DataFrame({"AGE": rng.integers(0, 100, n).astype(float), "SEX": rng.choice([1, 2], n),
                       "RACE": rng.choice(["a", "b", "c"], n).astype(object), "WAGE": rng.uniform(0, 5000, n),
                       "ONE": np.full(n, 3.0), "KIDS": rng.integers(0, 6, n).astype(float)})
    for c in df.columns:
        df.loc[rng.random(n) < p_missing, c] = None
    return df


def test_layout():
    enc = TabularEncoding(ATTRS)
    # AGE: 20 bins of 5 years and a position; WAGE: 20 bins and a position; ONE and KIDS: one value
    # per code, so no position.
    assert enc.segments == (Segment(0, 20, 0, CODES), Segment(20, 21, 0, POSITION), Segment(21, 23, 1, CODES),
                            Segment(23, 26, 2, CODES), Segment(26, 46, 3, CODES), Segment(46, 47, 3, POSITION),
                            Segment(47, 48, 4, CODES), Segment(48, 54, 5, CODES))
    assert enc.n_columns == 54
    np.testing.assert_array_equal(enc.column_attribute, [0] * 21 + [1] * 2 + [2] * 3 + [3] * 21 + [4] + [5] * 6)
    assert TabularEncoding(ATTRS, bins=10).n_columns == 10 + 1 + 2 + 3 + 10 + 1 + 1 + 6


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 60), p=st.sampled_from([0.0, 0.3, 1.0]),
       bins=st.sampled_from([3, 10, 20]))
def test_round_trip_against_a_direct_encoding(seed, n, p, bins):
    rng = np.random.default_rng(seed)
    df = _frame(rng, n, p)
    before = df.copy()
    enc = TabularEncoding(ATTRS, bins=bins)
    x, m = enc.encode(df)
    pd.testing.assert_frame_equal(df, before)
    assert x.dtype == np.float32 and x.shape == (n, enc.n_columns) and m.shape == (n, len(ATTRS))
    disc = Discretization(ATTRS, bins)
    # Reference, cell by cell from the definitions.
    for i in range(n):
        for j, a in enumerate(ATTRS):
            v = df.iloc[i][a.name]
            segs = [s for s in enc.segments if s.attribute == j]
            cols = x[i, segs[0].start:segs[-1].stop]
            if pd.isna(v):
                assert m[i, j] == 0 and not cols.any()
                continue
            assert m[i, j] == 1
            if isinstance(a, Categorical):
                code = list(a.categories).index(v)
            else:
                lo, hi = disc.bounds(a)
                code = int(np.searchsorted(lo, v, side="right") - 1)
            want = np.zeros(segs[0].stop - segs[0].start)
            want[code] = 1
            np.testing.assert_array_equal(x[i, segs[0].start:segs[0].stop], want)
            if len(segs) == 2:
                lo, hi = disc.bounds(a)
                slot = 0.5 if isinstance(a, Ordinal) else 0.0
                assert x[i, segs[1].start] == pytest.approx((v + slot - lo[code]) / (hi[code] - lo[code]), abs=1e-6)
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


def test_not_applicable_is_a_code_and_never_decodes_to_a_value():
    attrs = [Ordinal("AGE", 0, 99), Continuous("INCOME", 0, 1000, universe={"AGE": (15, None)})]
    enc = TabularEncoding(attrs, bins=10)
    df = pd.DataFrame({"AGE": [10, 40, 60], "INCOME": [np.nan, 250.0, np.nan]})
    x, m = enc.encode(df)
    codes = enc.segments[2]
    assert codes.kind == CODES and codes.stop - codes.start == 11          # 10 bins + "not applicable"
    np.testing.assert_array_equal(m[:, 1], [1, 1, 0])                       # structural value vs gap
    assert x[0, codes.stop - 1] == 1 and x[1, codes.start + 2] == 1 and not x[2, codes.start:codes.stop].any()
    out = enc.decode(x, m)
    assert out["INCOME"].isna().tolist() == [True, False, True] and out["INCOME"][1] == pytest.approx(250.0)
    # A generator that puts "not applicable" or values anywhere: nothing is drawn outside the universe.
    rng = np.random.default_rng(0)
    scores = rng.random((5_000, enc.n_columns))
    syn = enc.decode(scores, rng=rng)
    young = syn["AGE"] < 15
    assert young.any() and syn.loc[young, "INCOME"].isna().all()
    # ... and inside it "not applicable" is never drawn: every adult has an income (no mask: no gaps),
    # drawn among the value codes in proportion to their scores.
    assert syn.loc[~young, "INCOME"].notna().all()
    heavy = np.zeros_like(scores)
    heavy[:, enc.segments[0].start:enc.segments[0].stop] = 1.0          # AGE uniform over its codes
    heavy[:, codes.stop - 1] = 0.9                                       # "not applicable" 90 %
    heavy[:, codes.start + 3] = 0.1                                      # else the bin [300, 400)
    both = enc.decode(heavy, rng=np.random.default_rng(1))
    adult = both["AGE"] >= 15
    assert both.loc[adult, "INCOME"].between(300, 400).all() and both.loc[~adult, "INCOME"].isna().all()
    assert enc.decode(heavy).loc[lambda f: f["AGE"] >= 15, "INCOME"].notna().all()   # argmax too
    # The negative control: the block's own draw, before the universe step, is mostly "not applicable".
    from dpknn.synth._tabular import draw_codes
    assert (draw_codes(heavy[:, codes.start:codes.stop], np.random.default_rng(2)) == 10).mean() > 0.85


def test_decode_is_domain_valid_and_draws_codes_by_score():
    enc = TabularEncoding(ATTRS)
    rng = np.random.default_rng(0)
    x = np.abs(rng.normal(0, 3, size=(20_000, enc.n_columns)))
    out = enc.decode(x)
    assert out["AGE"].between(0, 99).all() and (out["AGE"] == np.floor(out["AGE"])).all()
    assert out["WAGE"].between(0, 5000).all() and (out["ONE"] == 3).all() and out["KIDS"].between(0, 5).all()
    assert set(out["RACE"]) <= {"a", "b", "c"}
    scores = np.zeros((20_000, enc.n_columns))
    scores[:, 23:26] = [0.2, 0.5, 0.3]
    scores[:, 46] = 0.5                                                     # middle of the WAGE bin
    drawn = enc.decode(scores, rng=np.random.default_rng(1))
    np.testing.assert_allclose(drawn["RACE"].value_counts(normalize=True)[["a", "b", "c"]], [0.2, 0.5, 0.3],
                               atol=0.015)
    assert (enc.decode(scores)["RACE"] == "b").all()
    # All-zero WAGE scores: the code is uniform over the 20 bins, the value at the middle of its bin.
    assert np.allclose(drawn["WAGE"] % 250, 125)
    assert drawn["WAGE"].nunique() == 20


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
    with pytest.raises(ValueError, match="bins"):
        TabularEncoding(ATTRS, bins=0)
