"""dpknn.metrics._analysis: what analysts estimate, measured the way they estimate it (issue 48, item 1)."""

import numpy as np
import pandas as pd
import pytest

from dpknn import Categorical, Continuous, Ordinal
from dpknn.metrics._analysis import AMOUNT_VALUES, analysis_measures, default_regressions, parse_regression
from dpknn.metrics._evaluation import evaluate

ATTRS = [Continuous("income", 0, 500_000), Ordinal("age", 18, 89), Categorical("sex", ["F", "M"]),
         Ordinal("days", 0, 7)]


def _table(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    sex = rng.choice(["F", "M"], n)
    income = np.round(np.maximum(0, 300 * age + 8000 * (sex == "M") + rng.normal(0, 9000, n)), 0)
    income[rng.random(n) < 0.3] = 0.0
    days = rng.integers(0, 8, n)
    return pd.DataFrame({"income": income, "age": age, "sex": sex, "days": days})


def test_a_copy_scores_perfectly_and_a_broken_one_does_not():
    real = _table()
    same = analysis_measures(real, real.copy(), ATTRS, regressions=["income ~ age + sex"], queries=100, rng=0)
    s = same.summary()
    assert s["mean_ci_overlap"] == pytest.approx(1.0) and s["r2_ratio"] == pytest.approx(1.0)
    assert s["max_pearson_change"] == 0 and s["max_spearman_change"] == 0
    assert s["mean_quantile_error"] == 0 and s["max_point_mass_error"] == 0 and s["range_query_mae"] == 0
    # Negative control: the marginals kept, the relation gone (income shuffled across rows).
    broken = real.assign(income=np.random.default_rng(1).permutation(real.income.to_numpy()))
    b = analysis_measures(real, broken, ATTRS, regressions=["income ~ age + sex"], queries=100, rng=0).summary()
    assert b["mean_ci_overlap"] < 0 and b["r2_ratio"] < 0.1
    assert b["mean_quantile_error"] > 0.02       # within the categories of sex the quantiles moved
    assert b["max_point_mass_error"] < 0.01      # but the overall point mass at 0 did not


def test_default_regressions_are_each_amount_on_the_others():
    real = _table()
    assert default_regressions(real, ATTRS) == ["income ~ age + sex + days", "age ~ income + sex + days"]
    assert real.days.nunique() <= AMOUNT_VALUES                   # 8 values: a count, not an amount
    m = analysis_measures(real, real, ATTRS, rng=0)
    assert list(m.regressions["formula"]) == default_regressions(real, ATTRS) and m.regressions["default"].all()


def test_point_masses_quantiles_and_range_queries_by_hand():
    real = _table(2000, 2)
    released = real.assign(income=np.where(real.income == 0, 1.0, real.income))   # the zeros moved to 1
    m = analysis_measures(real, released, ATTRS, queries=50, rng=3)
    zero = m.point_masses[(m.point_masses.amount == "income") & (m.point_masses.value == 0.0)].iloc[0]
    assert zero.share_real == pytest.approx((real.income == 0).mean()) and zero.share_released == 0
    q = m.quantiles
    row = q[(q.amount == "income") & (q.group == "sex = M") & (q["quantile"] == 0.5)].iloc[0]
    assert row.real == real.income[real.sex == "M"].median()
    for _, r in m.range_queries.iterrows():   # each answer recomputed from its own text
        assert 0 <= r.real <= 1 and 0 <= r.released <= 1
    text = m.range_queries["query"].iloc[0]
    assert text and (" <= " in text or " in " in text)


def test_regressions_name_attributes_only():
    with pytest.raises(ValueError, match="not attributes"):
        analysis_measures(_table(), _table(), ATTRS, regressions=["income ~ height"])
    with pytest.raises(ValueError, match="y ~ x1"):
        parse_regression("income = age")


def test_a_regression_may_be_a_formula_of_the_attributes():
    assert parse_regression(" income ~ age + sex ") == ("income", ["age", "sex"])
    assert parse_regression("np.log(income) ~ age + I(age ** 2) + C(sex) + days:age") == \
        ("income", ["age", "sex", "days"])
    # A name with a formula's syntax is still a name when it is an attribute; else a formula reads it.
    assert parse_regression("pay-rate ~ age", ["pay-rate", "age"]) == ("pay-rate", ["age"])
    assert parse_regression("pay-rate ~ age") == ("pay", ["age"])   # a formula's minus: pay without rate
    assert parse_regression("hours worked ~ age") == ("hours worked", ["age"])
    with pytest.raises(ValueError, match="one response variable"):
        parse_regression("np.log(income) + age ~ sex")
    with pytest.raises(ValueError, match="as a formula"):
        parse_regression("income ~ log(age")
    names = ["income (USD)", "age", "age-group", "hours.worked", "days"]
    assert parse_regression("income (USD) ~ age", names) == ("income (USD)", ["age"])
    # With the attributes known: the variables of stateful transforms (which Formulaic does not list) and dotted
    # names in backquotes; a name with a formula's syntax must be in backquotes, not read as an expression.
    assert parse_regression("`income (USD)` ~ scale(age) + poly(days, 2) + `hours.worked`", names) == \
        ("income (USD)", ["age", "days", "hours.worked"])
    assert parse_regression("np.log(`income (USD)`) ~ C(`age-group`)", names) == ("income (USD)", ["age-group"])
    with pytest.raises(ValueError, match="backquotes"):
        parse_regression("`income (USD)` ~ age-group + C(days)", names)


def test_a_formula_is_measured_as_written():
    real, released = _table(), _table(seed=1)
    formula = "np.log1p(income) ~ age + I(age ** 2) + C(sex) + days"
    m = analysis_measures(real, released, ATTRS, regressions=[formula], queries=0)
    row = m.regressions.set_index("formula").loc[formula]
    assert not row["default"] and row["r2_real"] > 0 and np.isfinite(row["mean_ci_overlap"])
    assert "I(age ** 2)" in m.comparisons[0].table.index
    with pytest.raises(ValueError, match="not attributes"):
        analysis_measures(real, released, ATTRS, regressions=["np.log(income) ~ height"])


def test_the_evaluation_report_leads_with_what_analysts_estimate(tmp_path):
    real = _table()
    rep = evaluate(real, real.sample(frac=1, random_state=0), ATTRS, regressions=["income ~ age + sex"], rng=0)
    text = rep.to_markdown()
    assert text.index("## What analysts estimate") < text.index("## Marginals")
    assert "income ~ age + sex" in text and rep.to_dict()["analysis"]["summary"]["mean_ci_overlap"] > 0.9
