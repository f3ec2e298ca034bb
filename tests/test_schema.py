import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpknn import Categorical, Continuous, DomainError, Ordinal, Schema


def small_schema(label=None):
    return Schema(
        known=[Ordinal("AGE", 0, 99, bin_width=10), Categorical("SEX", [1, 2]),
               Categorical("REGION", ["north", "south", "east"], weight=3)],
        imputed=[Continuous("WAGE", 0, 5000), Categorical("EMP", [0, 1])],
        label=label,
    )


def small_frame():
    return pd.DataFrame({
        "AGE": [5, 23, 99, 40], "SEX": [1, 2, 2, 1], "REGION": ["north", "east", "south", "east"],
        "WAGE": [0.0, np.nan, 1200.5, 300.0], "EMP": [0, 1, np.nan, 1], "ID": [10, 11, 12, 13],
    })


# --- encoding ---------------------------------------------------------------------------------
def test_encode_codes_labels_mask():
    enc = small_schema(label="ID").encode(small_frame())
    np.testing.assert_array_equal(enc.cells, [[0, 0, 0], [2, 1, 2], [9, 1, 1], [4, 0, 2]])
    assert enc.cells.dtype == np.int8
    np.testing.assert_array_equal(enc.labels, [10, 11, 12, 13])
    assert enc.labels.dtype == np.int64
    np.testing.assert_array_equal(enc.incomplete, [False, True, True, False])


def test_encode_default_labels_are_row_positions():
    enc = small_schema().encode(small_frame())
    np.testing.assert_array_equal(enc.labels, np.arange(4))


def test_encode_does_not_modify_input():
    df = small_frame()
    before = df.copy(deep=True)
    small_schema(label="ID").encode(df)
    pd.testing.assert_frame_equal(df, before)


@pytest.mark.parametrize(("n_codes", "dtype"), [(2, np.int8), (128, np.int8), (129, np.int16),
                                                (40_000, np.int32)])
def test_smallest_sufficient_dtype(n_codes, dtype):
    schema = Schema(known=[Ordinal("X", 0, n_codes - 1)], imputed=[Continuous("Y", 0, 1)])
    df = pd.DataFrame({"X": [0, n_codes - 1], "Y": [0.5, np.nan]})
    enc = schema.encode(df)
    assert enc.cells.dtype == dtype
    assert enc.cells[1, 0] == n_codes - 1


def test_pandas_categorical_and_string_columns():
    schema = small_schema()
    df = small_frame()
    df["REGION"] = df["REGION"].astype("category")
    df["SEX"] = df["SEX"].astype(object)
    enc = schema.encode(df)
    np.testing.assert_array_equal(enc.cells[:, 2], [0, 2, 1, 2])
    np.testing.assert_array_equal(enc.cells[:, 1], [0, 1, 1, 0])


def test_squared_distance_matches_definition():
    schema = small_schema()
    a, b = np.array([0, 0, 0]), np.array([3, 1, 2])
    # ordinal 1*(3)^2 + categorical 2*1 + categorical 2*3
    assert schema.squared_distance(a, b) == 9 + 2 + 6
    assert schema.squared_distance(a, a) == 0


@st.composite
def schemas_and_frames(draw):
    attrs, columns = [], {}
    n = draw(st.integers(0, 30))
    for j in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            lower = draw(st.integers(-50, 50))
            upper = lower + draw(st.integers(0, 300))
            bw = draw(st.integers(1, 12))
            a = Ordinal(f"o{j}", lower, upper, bin_width=bw, weight=draw(st.integers(1, 5)))
            columns[a.name] = draw(st.lists(st.integers(lower, upper), min_size=n, max_size=n))
        else:
            cats = draw(st.lists(st.one_of(st.integers(-5, 400), st.text("abc", min_size=1, max_size=3)),
                                 min_size=1, max_size=8, unique_by=lambda x: (type(x), x)))
            cats = list(dict.fromkeys(cats))
            a = Categorical(f"c{j}", cats)
            columns[a.name] = draw(st.lists(st.sampled_from(cats), min_size=n, max_size=n))
        attrs.append(a)
    wage = draw(st.lists(st.one_of(st.none(), st.floats(0, 10)), min_size=n, max_size=n))
    columns["y"] = [np.nan if w is None else w for w in wage]
    labels = draw(st.lists(st.integers(-10**12, 10**12), min_size=n, max_size=n, unique=True))
    columns["id"] = labels
    schema = Schema(known=attrs, imputed=[Continuous("y", 0, 10)], label="id")
    return schema, pd.DataFrame(columns)


@settings(max_examples=200, deadline=None)
@given(schemas_and_frames())
def test_encode_round_trip(case):
    schema, df = case
    enc = schema.encode(df)
    assert enc.cells.shape == (len(df), len(schema.known))
    decoded = schema.decode(enc.cells)
    for a in schema.known:
        if isinstance(a, Ordinal):
            values = np.asarray(df[a.name], dtype=np.int64)
            expected = a.lower + (values - a.lower) // a.bin_width * a.bin_width
            np.testing.assert_array_equal(decoded[a.name].to_numpy(dtype=np.int64), expected)
        else:
            assert list(decoded[a.name]) == list(df[a.name])
    assert (enc.cells >= 0).all()
    assert (enc.cells < schema.n_codes).all()
    np.testing.assert_array_equal(enc.labels, df["id"].to_numpy(dtype=np.int64))
    np.testing.assert_array_equal(enc.incomplete, df["y"].isna().to_numpy())


# --- errors -----------------------------------------------------------------------------------
def test_value_outside_ordinal_range_names_column_and_shows_at_most_five():
    df = small_frame()
    df = pd.concat([df] * 3, ignore_index=True)
    df["ID"] = np.arange(len(df))
    df.loc[:7, "AGE"] = [100, 101, 102, 103, 104, 105, 106, -1]
    with pytest.raises(DomainError, match="'AGE'") as info:
        small_schema().encode(df)
    msg = str(info.value)
    assert "100" in msg and "104" in msg and "105" not in msg and "3 more distinct" in msg


def test_non_integer_ordinal_value():
    df = small_frame().astype({"AGE": float})
    df.loc[0, "AGE"] = 5.5
    with pytest.raises(DomainError, match=r"'AGE'.*5\.5"):
        small_schema().encode(df)


def test_value_outside_categories():
    df = small_frame()
    df.loc[1, "REGION"] = "west"
    with pytest.raises(DomainError, match="'REGION'.*'west'"):
        small_schema().encode(df)
    df = small_frame()
    df.loc[1, "SEX"] = 3
    with pytest.raises(DomainError, match="'SEX'.*3"):
        small_schema().encode(df)


def test_imputed_values_are_checked_against_their_domain():
    df = small_frame()
    df.loc[0, "WAGE"] = 6000.0
    with pytest.raises(DomainError, match="'WAGE'.*6000"):
        small_schema().encode(df)
    df = small_frame()
    df["EMP"] = [0, 1, 2, np.nan]
    with pytest.raises(DomainError, match="'EMP'"):
        small_schema().encode(df)


def test_missing_known_value_points_to_processing_impute():
    df = small_frame().astype({"AGE": float})
    df.loc[2, "AGE"] = np.nan
    with pytest.raises(DomainError, match=r"'AGE'.*dpknn\.processing\.impute"):
        small_schema().encode(df)
    df = small_frame()
    df.loc[2, "REGION"] = None
    with pytest.raises(DomainError, match=r"'REGION'.*dpknn\.processing\.impute"):
        small_schema().encode(df)


def test_duplicate_labels():
    df = small_frame()
    df["ID"] = [1, 2, 2, 1]
    with pytest.raises(DomainError, match=r"'ID' has duplicate labels: 2 value\(s\), e.g. 2, 1"):
        small_schema(label="ID").encode(df)


def test_missing_and_non_integer_labels():
    df = small_frame().astype({"ID": float})
    df.loc[0, "ID"] = np.nan
    with pytest.raises(DomainError, match="'ID'.*missing"):
        small_schema(label="ID").encode(df)
    df = small_frame().astype({"ID": float})
    df.loc[0, "ID"] = 1.5
    with pytest.raises(DomainError, match="'ID'.*integers"):
        small_schema(label="ID").encode(df)


def test_absent_column_and_non_frame():
    with pytest.raises(DomainError, match="REGION"):
        small_schema().encode(small_frame().drop(columns="REGION"))
    with pytest.raises(TypeError, match="DataFrame"):
        small_schema().encode(np.zeros((3, 3)))


@pytest.mark.parametrize("weight", [1.5, "2", None, 2.0])
def test_non_integer_weights(weight):
    with pytest.raises(TypeError, match="weight"):
        Ordinal("A", 0, 3, weight=weight)
    with pytest.raises(TypeError, match="weight"):
        Categorical("B", [1, 2], weight=weight)


def test_non_positive_weight_and_bin_width():
    with pytest.raises(ValueError, match="weight of attribute 'A'"):
        Ordinal("A", 0, 3, weight=0)
    with pytest.raises(ValueError, match="bin_width of attribute 'A'"):
        Ordinal("A", 0, 3, bin_width=0)


def test_empty_domains():
    with pytest.raises(ValueError, match="'A' has an empty domain"):
        Ordinal("A", 5, 4)
    with pytest.raises(ValueError, match="'B' has an empty domain"):
        Categorical("B", [])
    with pytest.raises(ValueError, match="'C' has an empty domain"):
        Continuous("C", 1.0, 1.0)


def test_a_continuous_range_too_wide_for_float64_is_refused_at_declaration():
    # Synthesis read the width off upper - lower (bins, round values) and failed deep inside with an OverflowError
    # at +-1e308; at +-8e307 it drew no value with 8 bins.
    for lo, hi in [(-1e308, 1e308), (-8e307, 8e307), (0, 2e300)]:
        with pytest.raises(ValueError, match="'C' has a range too wide"):
            Continuous("C", lo, hi)
    import warnings

    from dpknn.synth import MSTSynthesizer

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"C": np.abs(rng.normal(0, 1e298, 2000)), "g": rng.choice(["a", "b"], 2000)})
    attrs = [Continuous("C", 0, 1e300), Categorical("g", ["a", "b"])]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)   # the widest range declarable synthesises without overflow
        for bins in (8, "auto"):
            drawn = MSTSynthesizer(attrs, epsilon=2, bins=bins, never_missing=["C", "g"], rng=0).fit(df).sample(
                500, rng=1).C
            assert drawn.notna().all() and (drawn <= 1e300).all()


def test_duplicate_categories_and_bad_schema_structure():
    with pytest.raises(ValueError, match="duplicates"):
        Categorical("B", [1, 2, 1])
    with pytest.raises(ValueError, match="both known and imputed"):
        Schema(known=[Ordinal("A", 0, 1)], imputed=[Ordinal("A", 0, 1)])
    with pytest.raises(TypeError, match="Continuous"):
        Schema(known=[Continuous("A", 0, 1)], imputed=[Ordinal("B", 0, 1)])
    with pytest.raises(ValueError, match="more than once"):
        Schema(known=[Ordinal("A", 0, 1), Ordinal("A", 0, 2)], imputed=[Ordinal("B", 0, 1)])
    with pytest.raises(ValueError, match="imputed"):
        Schema(known=[Ordinal("A", 0, 1)], imputed=[])


# --- description files ------------------------------------------------------------------------
def test_toml_round_trip(tmp_path):
    schema = small_schema(label="ID")
    path = tmp_path / "schema.toml"
    path.write_text(schema.to_toml())
    assert Schema.from_file(path) == schema


def test_from_file_errors(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[[known]]\nname = 'A'\ntype = 'interval'\n")
    with pytest.raises(ValueError, match="unknown type 'interval'"):
        Schema.from_file(path)
    path.write_text("[[known]]\nname = 'A'\ntype = 'ordinal'\nlower = 0\n")
    with pytest.raises(ValueError, match="lacks 'upper'"):
        Schema.from_file(path)
    path.write_text("known = [\n")
    with pytest.raises(ValueError, match="not valid TOML"):
        Schema.from_file(path)


def test_non_integer_ordinal_values_get_a_hint_that_can_work():
    # Issue 28 (a new user): "13.2 ... Clamp them first or widen the range" cannot fix a fraction.
    schema = Schema(known=[Ordinal("e", 0, 25)], imputed=[Continuous("w", 0, 1)])
    with pytest.raises(DomainError, match="not whole numbers: round or bin them"):
        schema.encode(pd.DataFrame({"e": [1.0, 13.2], "w": [0.5, None]}))
    with pytest.raises(DomainError, match="Clamp them first"):
        schema.encode(pd.DataFrame({"e": [1, 30], "w": [0.5, None]}))


def test_float32_values_read_as_their_shortest_decimals():
    """float32_as_decimals against the reference: numpy's shortest round-trip repr of each float32, parsed (Dragon4,
    correctly rounded), over every magnitude from the subnormals to 3e38; and a float32 column is read through it."""
    from dpknn.schema._attributes import float32_as_decimals

    rng = np.random.default_rng(0)
    y = (rng.standard_normal(100_000).astype(np.float32)
         * np.float32(10.0) ** rng.integers(-44, 38, 100_000).astype(np.float32))
    y = np.r_[y[np.isfinite(y)], np.float32(0.1), np.float32(-2.2), np.float32(1e-45), np.float32(3.4028235e38),
              np.float32(0), np.float32(np.nan), np.float32(np.inf)]
    got = float32_as_decimals(y)
    exact = y.astype(np.float64)
    whole = np.isfinite(exact) & (exact == np.floor(exact))   # whole numbers are kept as stored
    ref = np.where(whole, exact, y.astype(str).astype(np.float64))
    assert np.array_equal(got, ref, equal_nan=True) and whole.sum() > 1000
    assert (got.astype(np.float32)[np.isfinite(y)] == y[np.isfinite(y)]).all()
    assert float32_as_decimals(np.float32([123456792.0]))[0] == 123456792.0   # prints as 1.2345679e8
    col = pd.DataFrame({"h": np.array([0.1, 2.2, np.nan], dtype=np.float32)})
    values, missing = Continuous("h", 0, 2.2).read_column(col)
    assert values[:2].tolist() == [0.1, 2.2] and missing.tolist() == [False, False, True]
    # A range read off the stored values (0.30000001 for 0.3) still holds them: a value on a bound's float32 is
    # the bound.
    stored = pd.DataFrame({"x": np.array([0.3, 0.5, 0.7], dtype=np.float32)})
    lo, hi = float(stored.x.min()), float(stored.x.max())
    assert Continuous("x", lo, hi).read_column(stored)[0].tolist() == [lo, 0.5, hi]
    for column in [pd.array([0.1, None], dtype="Float32"), pd.Series([0.1, None], dtype="float32[pyarrow]"),
                   np.array([0.1, np.nan], dtype=np.float16)]:
        assert Continuous("x", 0, 1).read_column(pd.DataFrame({"x": column}))[0][0] == 0.1
