import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpknn.processing._transforms import Resized, clamp, impute, resize
from dpknn.releases._queries import estimate_size

X100 = pd.DataFrame({"x": np.arange(100, dtype=float), "g": ["a", "b"] * 50})
PAD = {"lower": {"x": 0.0}, "upper": {"x": 1.0}, "categories": {"g": ["a", "b"]}}


# --- resize: the notes' examples (§4.5, n~ = 100) ---------------------------------------------
def test_example_1_pad_to_150():
    r = resize(X100, 150, p=1.0, impute_kwargs=PAD, rng=0)
    assert len(r.data) == 150 and (r.source >= 0).sum() == 100 and (r.source == -1).sum() == 50
    assert sorted(r.source[r.source >= 0]) == list(range(100))
    assert r.functional_privacy(1.0, 1e-6) == pytest.approx((1.0, 1e-6), rel=1e-12)
    assert r.privacy_on_original(1.0, 1e-6) == pytest.approx((1.0, 1e-6), rel=1e-12)  # c=1: δ' = s δ, not 0


def test_example_2_subsample_three_quarters():
    real = [int((resize(X100, 100, p=0.75, impute_kwargs=PAD, rng=i).source >= 0).sum()) for i in range(400)]
    assert abs(np.mean(real) - 75) < 0.6             # Binomial(100, 0.75) real records in expectation
    r = resize(X100, 100, p=0.75, unit="replace", impute_kwargs=PAD, rng=1)
    assert (r.source >= 0).sum() == 75 and (r.source == -1).sum() == 25
    eps_f, delta_f = r.functional_privacy(1.0, 1e-6)
    assert eps_f > 1.0 and delta_f > 1e-6             # amplification: less noise needed


def test_example_3_oversample_with_two_copies():
    r = resize(X100, 90, p=1.5, impute_kwargs=PAD, rng=2)
    assert r.c == 2 and r.s == 0.75 and len(r.data) == 90 and (r.source >= 0).all()
    assert np.bincount(r.source, minlength=100).max() <= 2
    eps_f, _ = r.functional_privacy(1.0, 1e-6)
    assert eps_f < 1.0                                 # c-stability 2 costs more than it saves


@pytest.mark.parametrize("p", [0.1, 0.5, 1.0, 1.5, 2.0, 3.7])
def test_functional_privacy_inverts_privacy_on_original(p):
    c = math.ceil(p)
    r = Resized(data=None, c=c, s=p / c, source=np.zeros(0), unit="add_remove")
    for eps in (0.05, 0.5, 1.0, 3.0):
        for delta in (0.0, 1e-9, 1e-5):
            e2, d2 = r.privacy_on_original(*r.functional_privacy(eps, delta))
            assert abs(e2 - eps) <= 1e-12 * max(1, eps) and abs(d2 - delta) <= 1e-12 * max(delta, 1e-300)


def test_amplification_against_monte_carlo():
    # Two-point output space: ε-randomized response on "is record t in the sample", the worst
    # case for Poisson subsampling. Its ratio is exactly 1 + s(e^ε - 1).
    eps, s, trials = 1.0, 0.3, 200_000
    rng = np.random.default_rng(5)
    keep = 1 / (1 + math.exp(-eps))
    data = pd.DataFrame({"x": np.arange(20, dtype=float)})
    r = resize(data, 20, p=s, impute_kwargs={"lower": {"x": 0.0}, "upper": {"x": 1.0}}, rng=rng)
    present = rng.random(trials) < r.s                   # Poisson sampling of record t
    says_present = np.where(present, rng.random(trials) < keep, rng.random(trials) >= keep)
    p_with = says_present.mean()
    p_without = 1 - keep                                 # t absent from D: RR answers "yes" w.p. 1-keep
    se = math.sqrt(p_with * (1 - p_with) / trials) / p_without
    assert abs(p_with / p_without - math.exp(r.privacy_on_original(eps)[0])) < 4 * se


def test_resize_errors_and_inputs_untouched():
    before = X100.copy()
    with pytest.raises(ValueError, match="leave columns"):
        resize(X100, 150, impute_kwargs={"lower": {"x": 0.0}, "upper": {"x": 1.0}}, rng=0)
    with pytest.raises(ValueError, match="privacy unit"):
        resize(X100, 10, unit="swap")
    with pytest.raises(ValueError, match="p must be"):
        resize(X100, 10, p=0)
    assert X100.equals(before)


def test_estimate_size_is_a_geometric_release():
    rel = estimate_size(X100, epsilon=1.0, rng=3)
    assert rel.mechanism == "geometric" and isinstance(rel.value, int) and abs(rel.value - 100) < 20


# --- clamp -------------------------------------------------------------------------------------
floats = st.lists(st.one_of(st.floats(-1e6, 1e6), st.just(float("nan"))), min_size=0, max_size=40)


@settings(max_examples=200, deadline=None)
@given(floats, st.floats(-100, 0), st.floats(0, 100))
def test_numeric_clamp_properties(values, lo, hi):
    x = np.array(values, dtype=float)
    x0 = x.copy()
    y = clamp(x, lower=lo, upper=hi)
    np.testing.assert_array_equal(x, x0)                       # input untouched
    assert y.shape == x.shape                                  # no row added or lost
    np.testing.assert_array_equal(np.isnan(y), np.isnan(x))    # NaN stays NaN
    ok = ~np.isnan(y)
    assert ((y[ok] >= lo) & (y[ok] <= hi)).all()
    inside = ok & (x >= lo) & (x <= hi)
    np.testing.assert_array_equal(y[inside], x[inside])
    np.testing.assert_array_equal(clamp(y, lower=lo, upper=hi), y)  # idempotent


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(["a", "b", "c", "zz"]), st.none()), max_size=40))
def test_categorical_clamp_properties(values):
    s = pd.Series(values, dtype=object)
    before = s.copy()
    out = clamp(s, categories=["a", "b"], null_value="NULL")
    assert s.equals(before) and len(out) == len(s)
    assert set(out.dropna()) <= {"a", "b", "NULL"}
    assert out.isna().equals(s.isna())                       # nulls stay nulls
    assert clamp(out, categories=["a", "b"], null_value="NULL").equals(out)


def test_clamp_frames_per_column_and_errors():
    df = pd.DataFrame({"age": [-3, 40, 130], "sex": [1, 2, 9], "w": [0.5, np.nan, 7.0], "id": [1, 2, 3]})
    out = clamp(df, lower={"age": 0, "w": 0.0}, upper={"age": 99, "w": 1.0},
                categories={"sex": [1, 2]}, null_value={"sex": 0})
    assert list(out["age"]) == [0, 40, 99] and list(out["sex"]) == [1, 2, 0]
    assert out["w"].isna().tolist() == [False, True, False] and out["w"].max() == 1.0
    assert out["id"].equals(df["id"]) and out["age"].dtype == df["age"].dtype
    with pytest.raises(ValueError, match="'age' has both"):
        clamp(df, lower={"age": 0}, upper={"age": 9}, categories={"age": [1]})
    with pytest.raises(ValueError, match="'sex'.*null_value"):
        clamp(df, categories={"sex": [1, 2]})
    with pytest.raises(ValueError, match="'age'.*integers"):
        clamp(df, lower={"age": 0.5}, upper={"age": 9})
    with pytest.raises(ValueError, match="greater than upper"):
        clamp(df, lower={"w": 2.0}, upper={"w": 1.0})
    with pytest.raises(ValueError, match="not in the data"):
        clamp(df, lower={"nope": 0}, upper={"nope": 1})


# --- impute ------------------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(floats, st.integers(0, 2**31))
def test_numeric_impute_properties(values, seed):
    x = np.array(values, dtype=float)
    x0 = x.copy()
    y = impute(x, lower=-1.0, upper=2.0, rng=seed)
    np.testing.assert_array_equal(x, x0)
    assert y.shape == x.shape and not np.isnan(y).any()
    obs = ~np.isnan(x)
    np.testing.assert_array_equal(y[obs], x[obs])
    assert ((y[~obs] >= -1) & (y[~obs] <= 2)).all()
    np.testing.assert_array_equal(impute(y, lower=-1.0, upper=2.0, rng=seed), y)  # nothing left to fill


def test_impute_distributions():
    x = np.full(50_000, np.nan)
    u = impute(x, lower=2.0, upper=5.0, rng=1)
    assert stats.kstest(u, stats.uniform(2.0, 3.0).cdf).pvalue > 1e-3
    g = impute(x, distribution="gaussian", shift=0.0, scale=1.0, lower=-1.0, upper=1.5, rng=2)
    assert (g >= -1).all() and (g <= 1.5).all()
    assert abs((g == -1.0).mean() - stats.norm.cdf(-1)) < 0.01      # clamped mass at the bounds
    inner = g[(g > -1) & (g < 1.5)]
    truncated = stats.truncnorm(-1, 1.5)
    assert stats.kstest(inner, truncated.cdf).pvalue > 1e-3
    cats = impute(pd.Series([None] * 30_000, dtype=object), categories=["a", "b", "c"], weights=[1, 2, 1], rng=3)
    freq = cats.value_counts(normalize=True)
    assert abs(freq["b"] - 0.5) < 0.01 and abs(freq["a"] - 0.25) < 0.01


def test_impute_categorical_with_null_value_and_errors():
    s = pd.Series([1, -1, 2, -1])
    out = impute(s, categories=[1, 2], null_value=-1, rng=0)
    assert out.dtype == s.dtype and set(out) <= {1, 2} and list(out[[0, 2]]) == [1, 2]
    plain = pd.DataFrame({"a": [1, 2]})
    pd.testing.assert_frame_equal(impute(plain, lower={"a": 0}, upper={"a": 5}, rng=0), plain)  # nothing to fill
    with pytest.raises(ValueError, match="bounds must be integers"):
        impute(pd.Series([1, None], dtype="Int64"), lower=0.5, upper=5)
    with pytest.raises(TypeError, match="integer must be true or false"):
        impute(np.array([np.nan]), lower=0, upper=1, integer="yes")
    with pytest.raises(ValueError, match="non-integer"):
        impute(np.array([np.nan, 0.5]), lower=0, upper=1, integer=True)
    with pytest.raises(ValueError, match="weights"):
        impute(s, categories=[1, 2], weights=[1, -1], null_value=-1)
    with pytest.raises(ValueError, match="shift and scale"):
        impute(np.array([np.nan]), distribution="gaussian", lower=0.0, upper=1.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-3, 12)), min_size=1, max_size=40), st.integers(0, 2**31),
       st.sampled_from(["uniform", "gaussian"]))
def test_integer_impute_properties(values, seed, distribution):
    """Nullable Int64 and float columns flagged ``integer`` get integer draws inside the bounds, so an
    Ordinal attribute filled by impute encodes (before, float draws made Schema.encode refuse it)."""
    from dpknn import Categorical, Ordinal, Schema

    df = pd.DataFrame({"n": pd.array(values, dtype="Int64"),
                       "f": pd.Series([np.nan if v is None else float(v) for v in values])})
    df = clamp(df, lower={"n": -3, "f": -3}, upper={"n": 12, "f": 12})
    before = df.copy()
    out = impute(df, lower={"n": -3, "f": -3}, upper={"n": 12, "f": 12}, integer={"f": True},
                 distribution=distribution, shift={"n": 4, "f": 4}, scale={"n": 6, "f": 6}, rng=seed)
    pd.testing.assert_frame_equal(df, before)
    assert str(out["n"].dtype) == "Int64" and str(out["f"].dtype) == "Int64"
    for c in ("n", "f"):
        v = out[c].to_numpy(dtype=float)
        assert not np.isnan(v).any() and (v == np.floor(v)).all() and ((v >= -3) & (v <= 12)).all()
        seen = df[c].notna().to_numpy()
        np.testing.assert_array_equal(v[seen], df[c].to_numpy(dtype=float)[seen])
    schema = Schema(known=[Ordinal("n", -3, 12), Ordinal("f", -3, 12)], imputed=[Categorical("y", [0])])
    schema.encode(out.assign(y=0))


def test_integer_impute_distribution():
    x = pd.Series([None] * 40_000, dtype="Int64")
    u = impute(x, lower=2, upper=6, rng=4).to_numpy(dtype=np.int64)
    counts = np.bincount(u - 2, minlength=5)
    assert stats.chisquare(counts).pvalue > 1e-3
    g = impute(pd.Series(np.full(40_000, np.nan)), lower=-2, upper=3, integer=True, distribution="gaussian",
               shift=0.3, scale=1.5, rng=5)
    edges = np.arange(-2, 4)
    dist = stats.norm(0.3, 1.5)
    p = np.diff(dist.cdf(np.concatenate([[-np.inf], edges[:-1] + 0.5, [np.inf]])))  # round, then clamp
    g = g.to_numpy(dtype=np.int64)
    observed = np.array([(g == e).sum() for e in edges])
    assert stats.chisquare(observed, p * len(g)).pvalue > 1e-3
    padded = resize(pd.DataFrame({"a": [1, 2, 3]}), 50, impute_kwargs={"lower": 0, "upper": 9}, rng=6).data
    assert padded["a"].dtype == np.int64 and padded["a"].between(0, 9).all()


def test_matches_opendp_semantics():
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    # OpenDP's clamp needs a NaN-free domain (it refuses NaN), while the notes and dpknn keep
    # NaN; on NaN-free data the two agree.
    values = [-1.0, 5.0, 12.0, 10.0, 0.0]
    no_nan = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance())
    clamp_t = dp.t.make_clamp(*no_nan, bounds=(0.0, 10.0))
    assert clamp_t.map(1) == 1
    np.testing.assert_array_equal(np.array(clamp_t(values)), clamp(np.array(values), lower=0.0, upper=10.0))
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=True)), dp.symmetric_distance())
    imp = dp.t.make_impute_uniform_float(*space, bounds=(0.0, 1.0))
    assert imp.map(1) == 1                                     # 1-stable, as ours
    theirs = np.array(imp([np.nan, 0.5] * 500))
    ours = impute(np.array([np.nan, 0.5] * 500), lower=0.0, upper=1.0, rng=0)
    np.testing.assert_array_equal(theirs[1::2], ours[1::2])   # observed values kept
    assert ((theirs[::2] >= 0) & (theirs[::2] <= 1)).all() and ((ours[::2] >= 0) & (ours[::2] <= 1)).all()


def test_impute_leaves_complete_small_integer_columns_alone():
    df = pd.DataFrame({"a": np.array([1, 2, 3], dtype=np.int16), "b": [1.0, np.nan, 3.0]})
    out = impute(df, lower={"a": 0, "b": 0}, upper={"a": 5, "b": 5}, integer={"b": True}, rng=0)
    assert out["a"].dtype == np.int16 and out["a"].tolist() == [1, 2, 3]
    assert out["b"].notna().all() and out["b"].dtype == "Int64"


# --- clear errors (issue 28, finding 5) -----------------------------------------------------------
@pytest.mark.parametrize("step", [
    lambda df: clamp(df, lower={"x": 0.0}, upper={"x": 1.0}),
    lambda df: impute(df, lower={"x": 0.0}, upper={"x": 1.0}),
    lambda df: resize(df, 3, impute_kwargs={"lower": {"x": 0.0}, "upper": {"x": 1.0}}, rng=0),
])
def test_duplicate_column_names_are_refused_by_name(step):
    df = pd.DataFrame([[0.5, 0.2, "a"], [np.nan, 0.4, "b"]], columns=["x", "x", "g"])
    with pytest.raises(ValueError, match=r"duplicate column names \['x'\].*distinct name"):
        step(df)


def test_resize_refuses_an_absurd_n_before_allocating():
    with pytest.raises(ValueError, match=r"n=4611686018427387904 records is more than resize builds in memory"):
        resize(X100, 2**62, impute_kwargs=PAD, rng=0)
