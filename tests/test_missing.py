"""Missingness generators: MCAR is i.i.d. Bernoulli(rate) per cell; MAR reads only the predictors;
MNAR reads only the cell's own column; rates, dtypes and inputs as documented."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpknn.datasets._missingness import make_missing


def table(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(16, 90, n), "school": rng.integers(0, 18, n),
                         "wage": rng.gamma(2.0, 300.0, n), "sex": rng.choice(["F", "M"], n)})


def test_mcar_is_iid_bernoulli_per_cell():
    df = table()
    before = df.copy()
    out = make_missing(df, mechanism="mcar", rate=0.3, rng=1)
    pd.testing.assert_frame_equal(df, before)
    mask = out.isna().to_numpy()
    n_cells = mask.size
    # The number of deleted cells is Binomial(n_cells, 0.3): a two-sided exact test.
    assert stats.binomtest(int(mask.sum()), n_cells, 0.3).pvalue > 1e-3
    # Cells are independent: the four joint patterns of two columns follow the product law.
    a, b = mask[:, 0], mask[:, 2]
    observed = [np.sum(a & b), np.sum(a & ~b), np.sum(~a & b), np.sum(~a & ~b)]
    expected = np.array([0.09, 0.21, 0.21, 0.49]) * len(a)
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    # ... and independent of the values.
    assert stats.mannwhitneyu(df.wage[mask[:, 2]], df.wage[~mask[:, 2]]).pvalue > 1e-3
    # Negative control: the same tests reject a rate of 0.25.
    assert stats.binomtest(int(mask.sum()), n_cells, 0.25).pvalue < 1e-6


def test_mcar_keeps_rows_labels_gaps_and_integer_types():
    df = table(500).set_index(pd.Index(np.arange(500)[::-1] + 7))
    df.loc[df.index[:10], "wage"] = np.nan
    out = make_missing(df, mechanism="mcar", rate=0.2, columns=["age", "wage"], rng=2)
    assert out.index.equals(df.index) and list(out.columns) == list(df.columns)
    assert out.wage.iloc[:10].isna().all()                       # existing gaps stay
    assert str(out.age.dtype) == "Int64" and out.age.isna().any()  # integers stay integers
    pd.testing.assert_series_equal(out.school, df.school)          # other columns untouched
    kept = out.age.notna()
    assert (out.age[kept].astype(int) == df.age[kept]).all()
    assert make_missing(df, mechanism="mcar", rate=0.0, rng=3).wage.isna().sum() == 10


def test_mar_reads_only_the_predictors():
    df = table()
    out = make_missing(df, mechanism="mar", rate=0.25, columns=["wage"], rng=4)
    rate = out.wage.isna().mean()
    assert abs(rate - 0.25) < 0.02
    assert out[["age", "school"]].notna().all().all()
    other = df.assign(wage=df.wage[::-1].to_numpy())  # new target values, same predictors
    again = make_missing(other, mechanism="mar", rate=0.25, columns=["wage"], rng=4)
    np.testing.assert_array_equal(out.wage.isna(), again.wage.isna())
    # It is not MCAR: the mask depends on the predictors.
    moved = make_missing(df.assign(age=df.age[::-1].to_numpy()), mechanism="mar", rate=0.25,
                         columns=["wage"], rng=4)
    assert (moved.wage.isna() != out.wage.isna()).mean() > 0.05


def test_mnar_reads_only_its_own_column():
    df = table()
    out = make_missing(df, mechanism="mnar", rate=0.25, columns=["wage"], rng=5)
    assert abs(out.wage.isna().mean() - 0.25) < 0.02
    # Missingness depends on the value itself: observed and deleted wages differ in distribution.
    assert stats.mannwhitneyu(df.wage[out.wage.isna()], df.wage[out.wage.notna()]).pvalue < 1e-6
    again = make_missing(df.assign(age=0, school=0), mechanism="mnar", rate=0.25, columns=["wage"], rng=5)
    np.testing.assert_array_equal(out.wage.isna(), again.wage.isna())


def test_parameters_are_checked():
    df = table(100)
    for kwargs, message in (({"mechanism": "mcar", "rate": 1.0}, "rate"),
                            ({"mechanism": "x", "rate": 0.1}, "mechanism"),
                            ({"mechanism": "mcar", "rate": 0.1, "columns": ["nope"]}, "columns"),
                            ({"mechanism": "mar", "rate": 0.1}, "predictors"),
                            ({"mechanism": "mar", "rate": 0.1, "columns": ["age", "school", "wage", "sex"]},
                             "predictor"),
                            ({"mechanism": "mnar", "rate": 0.1, "columns": ["sex"]}, "numeric")):
        with pytest.raises(ValueError, match=message):
            make_missing(df, **kwargs)
    gappy = df.assign(sex=df.sex.where(df.index > 0))
    with pytest.raises(ValueError, match="complete"):
        make_missing(gappy, mechanism="mar", rate=0.1, columns=["wage"])
    with pytest.raises(TypeError, match="DataFrame"):
        make_missing(df.to_numpy(), rate=0.1)
