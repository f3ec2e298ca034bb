"""CI overlap and standardised difference against the course's tables, and the regression
comparison against independent fits (numpy least squares, scikit-learn's unpenalised logit)."""

import numpy as np
import pandas as pd
import pytest

from dpknn.metrics._inference import ci_overlap, regression_comparison, standardized_difference


def test_ci_overlap_hand_cases():
    assert ci_overlap((0, 1), (0, 1)) == pytest.approx(1.0)
    assert ci_overlap((0, 4), (1, 2)) == pytest.approx(0.5 * (1 / 4 + 1 / 1))   # nested
    assert ci_overlap((0, 1), (2, 4)) == pytest.approx(0.5 * (-1 / 1 + -1 / 2))  # disjoint: negative
    assert ci_overlap((0, 1), (1, 2)) == pytest.approx(0.0)


@pytest.mark.parametrize("orig, syn, overlap", [
    # Jiang (2025), "Utility of synthetic datasets: predict work disability" (rounded to 3 places there)
    ((0.071, 0.564), (0.065, 0.556), 0.986),     # Diffuse, risk-based DA-MI
    ((0.071, 0.564), (-0.138, 0.33), 0.539),     # Diffuse, CART
    ((-2.457, -0.138), (-2.449, -0.15), 0.996),  # FVC, DA-MI
    ((-2.457, -0.138), (-0.895, 1.244), 0.34),   # FVC, CART
    ((0.965, 1.684), (-0.255, 0.313), -1.026),   # HAQ, CART: disjoint
])
def test_ci_overlap_reproduces_the_course_table(orig, syn, overlap):
    # The table's intervals are themselves rounded, so 3e-3 is the agreement to expect.
    assert ci_overlap(orig, syn) == pytest.approx(overlap, abs=3e-3)


def test_standardized_difference_reproduces_the_course_table():
    se = (0.564 - 0.071) / (2 * 1.959964)   # SE recovered from the original 95% interval
    assert standardized_difference(0.318, 0.096, se) == pytest.approx(1.762, abs=5e-3)   # Diffuse, CART
    assert standardized_difference([1.0, 2.0], [1.5, 1.0], [0.5, 2.0]) == pytest.approx([1.0, 0.5])
    with pytest.raises(ValueError, match="real_standard_error"):
        standardized_difference(1.0, 2.0, 0.0)


def test_ci_overlap_validates():
    with pytest.raises(ValueError, match="lower < upper"):
        ci_overlap((1, 0), (0, 1))
    with pytest.raises(ValueError, match="same shape"):
        ci_overlap([(0, 1), (0, 1)], (0, 1))


def _frame(rng, n):
    x = rng.normal(size=n)
    g = rng.choice(["a", "b", "c"], size=n)
    y = 1 + 2 * x + (g == "b") * 0.5 + rng.normal(size=n)
    z = (rng.random(n) < 1 / (1 + np.exp(-(0.5 * x - (g == "c"))))).astype(int)
    return pd.DataFrame({"y": y, "x": x, "g": g, "z": z})


def test_ols_matches_least_squares():
    rng = np.random.default_rng(0)
    real, rel = _frame(rng, 400), _frame(rng, 300)
    real.loc[:9, "x"] = np.nan   # complete cases only
    res = regression_comparison(real, rel, y="y", X=["x", "g"])
    assert res.family == "ols" and (res.n_real, res.n_released) == (390, 300)
    for name, df in (("real", real.dropna()), ("released", rel)):
        design = np.column_stack([np.ones(len(df)), df["x"], df["g"] == "b", df["g"] == "c"]).astype(float)
        coef, *_ = np.linalg.lstsq(design, df["y"].to_numpy(), rcond=None)
        resid = df["y"].to_numpy() - design @ coef
        cov = resid @ resid / (len(df) - 4) * np.linalg.inv(design.T @ design)
        assert res.table[f"coef_{name}"].to_numpy() == pytest.approx(coef, rel=1e-8)
        assert res.table[f"se_{name}"].to_numpy() == pytest.approx(np.sqrt(np.diag(cov)), rel=1e-8)
    assert list(res.table.index) == ["intercept", "x", "g[b]", "g[c]"]
    row = res.table.loc["x"]
    assert row["ci_overlap"] == pytest.approx(ci_overlap((row["lower_real"], row["upper_real"]),
                                                         (row["lower_released"], row["upper_released"])))


def test_logit_matches_unpenalised_sklearn():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    real, rel = _frame(rng, 2000), _frame(rng, 1500)
    res = regression_comparison(real, rel, y="z", X=["x", "g"])
    assert res.family == "logit"
    for name, df in (("real", real), ("released", rel)):
        design = np.column_stack([df["x"], df["g"] == "b", df["g"] == "c"]).astype(float)
        fit = LogisticRegression(C=np.inf, max_iter=1000, tol=1e-10).fit(design, df["z"])
        assert res.table[f"coef_{name}"].to_numpy() == pytest.approx(np.r_[fit.intercept_, fit.coef_[0]], abs=1e-4)


def test_identical_tables_agree_perfectly():
    df = _frame(np.random.default_rng(2), 300)
    before = df.copy()
    res = regression_comparison(df, df.copy(), y="y", X=["x", "g"])
    assert res.table["ci_overlap"].to_numpy() == pytest.approx(1.0)
    assert res.table["standardized_difference"].to_numpy() == pytest.approx(0.0)
    pd.testing.assert_frame_equal(df, before)


def test_regression_validation_names_the_problem():
    df = _frame(np.random.default_rng(3), 50)
    with pytest.raises(ValueError, match="also a predictor"):
        regression_comparison(df, df, y="y", X=["y"])
    with pytest.raises(ValueError, match="lacks the columns"):
        regression_comparison(df, df, y="y", X=["nope"])
    with pytest.raises(ValueError, match="binary"):
        regression_comparison(df, df, y="y", X=["x"], family="logit")
    with pytest.raises(ValueError, match="family"):
        regression_comparison(df, df, y="y", X=["x"], family="probit")


def _wages(rng, n):
    educ = rng.integers(8, 19, n).astype(float)
    exper = rng.integers(0, 35, n).astype(float)
    sex = rng.choice(["F", "M"], n)
    wage = np.exp(0.5 + 0.09 * educ + 0.04 * exper - 0.0007 * exper**2 + 0.2 * (sex == "M") + rng.normal(0, 0.4, n))
    wage[rng.random(n) < 0.1] = 0.0   # out of work: the log is not finite there
    return pd.DataFrame({"wage": wage, "educ": educ, "exper": exper, "sex": sex})


def test_a_formula_is_fitted_as_statsmodels_fits_it():
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(4)
    real, rel = _wages(rng, 600), _wages(rng, 500)
    real.loc[:9, "educ"] = np.nan
    before = real.copy()
    formula = "np.log(wage) ~ educ + exper + I(exper ** 2) + C(sex)"
    res = regression_comparison(real, rel, formula=formula)
    assert res.family == "ols" and res.formula == formula
    pd.testing.assert_frame_equal(real, before)   # the log's rows are left out of the fit, not out of the table
    for name, df in (("real", real), ("released", rel)):
        used = df.dropna()
        used = used[used["wage"] > 0]
        ref = smf.ols(formula, used).fit()   # statsmodels' own formula fit is the reference
        assert (res.n_real if name == "real" else res.n_released) == len(used)
        assert res.table[f"coef_{name}"].to_numpy() == pytest.approx(ref.params[res.table.index].to_numpy(), rel=1e-9)
        assert res.table[f"se_{name}"].to_numpy() == pytest.approx(ref.bse[res.table.index].to_numpy(), rel=1e-9)
        assert getattr(res, f"r2_{name}") == pytest.approx(ref.rsquared, rel=1e-12)
    assert (res.n_real, res.n_released) == (len(real.dropna().query("wage > 0")), len(rel.query("wage > 0")))
    assert set(res.table.index) == {"Intercept", "educ", "exper", "I(exper ** 2)", "C(sex)[T.M]"}


def test_a_formula_has_the_same_columns_in_both_tables():
    rng = np.random.default_rng(5)
    real, rel = _wages(rng, 400), _wages(rng, 400)
    real["region"] = rng.choice([1, 2, 3], 400)
    rel["region"] = rng.choice([1, 2, 3, 4], 400)   # a category the real sample lacks
    res = regression_comparison(real, rel, formula="np.log1p(wage) ~ educ * C(sex) + C(region)")
    assert {"C(region)[T.4]", "educ:C(sex)[T.M]"} <= set(res.table.index)
    assert res.table["coef_released"].notna().all()
    # Region 4 has no coefficient in the real table: NaN there and in its measures, the others compared.
    four = res.table.loc["C(region)[T.4]"]
    assert np.isnan(four["coef_real"]) and np.isnan(four["ci_overlap"])
    assert res.table.drop(index="C(region)[T.4]")["ci_overlap"].notna().all()
    assert np.isfinite(res.mean_ci_overlap)


def test_a_category_one_table_lacks_leaves_the_others_compared():
    rng = np.random.default_rng(8)
    real, rel = _frame(rng, 400), _frame(rng, 400)
    real = real[real["g"] != "c"]   # the released table holds a category the real one lacks
    res = regression_comparison(real, rel, y="y", X=["x", "g"])
    assert np.isnan(res.table.loc["g[c]", "coef_real"]) and np.isfinite(res.table.loc["g[c]", "coef_released"])
    assert res.table.drop(index="g[c]")["ci_overlap"].notna().all()
    # The real fit without the empty column is the fit of the real table alone.
    alone = regression_comparison(real, rel[rel["g"] != "c"], y="y", X=["x", "g"])
    assert res.table.loc[["intercept", "x", "g[b]"], "coef_real"].to_numpy() == \
        pytest.approx(alone.table["coef_real"].to_numpy(), rel=1e-12)


def test_a_formula_with_a_binary_response_is_a_logit_and_errors_name_the_problem():
    rng = np.random.default_rng(6)
    real = _wages(rng, 1500)
    real["works"] = (real["wage"] > 0).astype(int)
    res = regression_comparison(real, real.copy(), formula="works ~ educ + I(exper ** 2)")
    assert res.family == "logit" and np.isnan(res.r2_real)
    assert res.table["ci_overlap"].to_numpy() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="not both"):
        regression_comparison(real, real, y="wage", X=["educ"], formula="wage ~ educ")
    with pytest.raises(ValueError, match="y and X, or a formula"):
        regression_comparison(real, real, y="wage")
    with pytest.raises(ValueError, match="lacks the columns"):
        regression_comparison(real, real, formula="np.log(wage) ~ height")
    with pytest.raises(ValueError, match="one response variable"):
        regression_comparison(real, real, formula="wage + educ ~ exper")


def test_the_r2_of_named_columns_is_statsmodels_formula_r2():
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(7)
    real, rel = _frame(rng, 400), _frame(rng, 300)
    res = regression_comparison(real, rel, y="y", X=["x", "g"])
    assert res.r2_real == pytest.approx(smf.ols("y ~ x + C(g)", real).fit().rsquared, rel=1e-12)
    assert res.r2_released == pytest.approx(smf.ols("y ~ x + C(g)", rel).fit().rsquared, rel=1e-12)


def test_a_reference_category_one_table_lacks_leaves_its_coefficients_unidentified_and_the_slope_compared():
    """The released table lacks the real table's reference category: its intercept and category coefficients are
    not identified there (any value fits as well), so they are NaN, not a minimum-norm solution's arbitrary numbers;
    the slope of x is identified and equals a fit of the released table by itself."""
    rng = np.random.default_rng(9)
    real, rel = _frame(rng, 500), _frame(rng, 500)
    rel = rel[rel["g"] != "a"].reset_index(drop=True)
    res = regression_comparison(real, rel, y="y", X=["x", "g"])
    assert res.table.loc[["intercept", "g[b]", "g[c]"], "coef_released"].isna().all()
    assert res.n_uncompared == 3 and np.isfinite(res.mean_ci_overlap)
    design = np.column_stack([np.ones(len(rel)), rel["x"], rel["g"] == "c"]).astype(float)
    coef, *_ = np.linalg.lstsq(design, rel["y"].to_numpy(), rcond=None)
    assert res.table.loc["x", "coef_released"] == pytest.approx(coef[1], rel=1e-9)


def test_a_formula_of_stateful_transforms_and_bad_formulas():
    rng = np.random.default_rng(10)
    real = _wages(rng, 800)
    res = regression_comparison(real, real.copy(), formula="np.log1p(wage) ~ scale(educ) + poly(exper, 2)")
    assert res.table["ci_overlap"].to_numpy() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="could not evaluate"):
        regression_comparison(real, real, formula="wage ~ np.log(sex)")
    with pytest.raises(ValueError, match="I\\(sex == 'level'\\)"):
        regression_comparison(real, real, formula="sex ~ educ")
