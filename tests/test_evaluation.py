"""The evaluation report and ``dpknn evaluate``: what each kind of release gets measured, the
numbers against the measures they come from, and the files written."""

import json

import numpy as np
import pandas as pd
import pytest

from dpknn.metrics import linkage, pmse, tvd
from dpknn.metrics._evaluation import evaluate, parse_regression
from dpknn.schema._attributes import Categorical, Continuous, Ordinal

ATTRS = [Ordinal("age", 18, 90), Categorical("sex", categories=["f", "m"]), Continuous("income", lower=0, upper=200),
         Categorical("smoker", categories=[0, 1])]


def _real(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 91, n)
    sex = rng.choice(["f", "m"], n)
    income = np.clip(20 + age * 0.8 + (sex == "m") * 10 + rng.normal(0, 15, n), 0, 200)
    smoker = (rng.random(n) < 1 / (1 + np.exp(-(age - 50) / 15))).astype(int)
    df = pd.DataFrame({"age": age, "sex": sex, "income": income, "smoker": smoker})
    df.loc[rng.random(n) < 0.1, "income"] = np.nan
    return df


def test_record_level_release_is_linked_and_synthetic_is_not():
    real = _real()
    perturbed = real.copy()
    perturbed["income"] = np.clip(perturbed["income"] + np.random.default_rng(1).normal(0, 1, len(real)), 0, 200)
    rep = evaluate(real, perturbed, ATTRS, same_order=True, target="smoker", rng=0)
    assert rep.record_level and rep.linkage.rate == pytest.approx(
        linkage(real, perturbed, columns=["age", "sex", "income"]).rate)
    assert rep.keys == ["age", "sex", "income"] and rep.attribution is not None
    synthetic = _real(seed=9)
    synthetic.index = synthetic.index + 10**6   # rows of no real record
    rep = evaluate(real, synthetic, ATTRS, same_order=True, rng=0)
    assert not rep.record_level and rep.linkage is None
    assert any("linkage not measured" in n for n in rep.notes)
    assert rep.attribution is None and any("target" in n for n in rep.notes)


def test_numbers_come_from_the_measures():
    real, rel = _real(), _real(seed=3)
    rep = evaluate(real, rel, ATTRS, regressions=["income ~ age + sex", "smoker ~ age"], rng=4)
    assert rep.tvd2 == pytest.approx(tvd(real, rel, ATTRS, way=2))
    for name, t in rep.marginals.items():
        assert t["real"].sum() == pytest.approx(1.0) and t["released"].sum() == pytest.approx(1.0)
        assert rep.marginal_tvd.loc[name, "tvd"] == pytest.approx(tvd(real, rel, [a for a in ATTRS if a.name == name],
                                                                       way=1))
    assert rep.marginals["income"].loc["missing", "real"] == pytest.approx(real["income"].isna().mean())
    assert rep.pmse["logistic"].pmse == pytest.approx(pmse(real[["age", "sex", "income", "smoker"]],
                                                           rel[["age", "sex", "income", "smoker"]]).pmse)
    fams = [r.family for r in rep.regressions]
    assert fams[:2] == ["ols", "logit"]   # smoker is categorical with two categories; then the default ones
    assert all(f == "ols" for f in fams[2:])
    assert list(rep.regressions[0].table.index) == ["intercept", "age", "sex[m]"]
    assert set(rep.correlation["difference"].columns) == {"age", "income"}


def test_report_files_are_written_and_say_they_are_confidential(tmp_path):
    real = _real(600)
    rep = evaluate(real, _real(600, seed=5), ATTRS, regressions=["income ~ age"], target="smoker", rng=0)
    paths = rep.write(tmp_path / "out")
    names = sorted(p.name for p in paths)
    assert names == ["correlation.png", "evaluation.json", "evaluation.md", "marginals.png", "regressions.png",
                     "risk.png"]
    md = (tmp_path / "out" / "evaluation.md").read_text()
    assert "CONFIDENTIAL" in md and "## Disclosure risk" in md and "Correct attribution probability" in md
    data = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    assert data["confidential"].startswith("CONFIDENTIAL") and data["n_real"] == 600
    assert (tmp_path / "out" / "risk.png").stat().st_size > 10_000


def test_pmse_uses_at_most_max_rows_of_each_table():
    real = _real(900)
    rep = evaluate(real, _real(900, seed=2), ATTRS, max_rows=300, rng=0)
    assert (rep.pmse["cart"].n_real, rep.pmse["cart"].n_released) == (300, 300)
    assert any("max_rows" in n for n in rep.notes)


def test_bad_requests_name_the_problem():
    real = _real(200)
    with pytest.raises(ValueError, match="target"):
        evaluate(real, real, ATTRS, target="nope")
    with pytest.raises(ValueError, match="keys"):
        evaluate(real, real, ATTRS, keys=["nope"])
    with pytest.raises(ValueError, match="not both"):
        evaluate(real, real, ATTRS, label="age", same_order=True)
    with pytest.raises(ValueError, match="y ~ x1"):
        parse_regression("income = age")
    assert parse_regression(" income ~ age + sex ") == ("income", ["age", "sex"])


def test_evaluate_command(tmp_path):
    from cli_run import run

    real = _real(800)
    real.insert(0, "id", np.arange(1000, 1800))
    rel = real.sample(frac=1.0, random_state=0)   # shuffled rows, labels kept
    real.to_csv(tmp_path / "real.csv", index=False)
    rel.to_csv(tmp_path / "rel.csv", index=False)
    (tmp_path / "a.toml").write_text('''
[[attribute]]
name = "age"
type = "ordinal"
lower = 18
upper = 90

[[attribute]]
name = "sex"
type = "categorical"
categories = ["f", "m"]

[[attribute]]
name = "income"
type = "continuous"
lower = 0
upper = 200
''')
    res = run("evaluate", "--real", "real.csv", "--released", "rel.csv", "--attributes", "a.toml", "--out", "rep",
              "--label", "id", "--regression", "income ~ age + sex", "--target", "sex", "--seed", "1", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    data = json.loads((tmp_path / "rep" / "evaluation.json").read_text())
    assert data["record_level"] and data["linkage"]["rate"] > 0.9   # shuffled copies (ties: income missing)
    assert data["regressions"][0]["coefficients"][0]["ci_overlap"] == pytest.approx(1.0)
    res = run("evaluate", "--real", "real.csv", "--released", "real.csv", "--attributes", "a.toml", "--out", ".",
              "--label", "id", "--same-order", cwd=tmp_path)
    assert res.returncode == 2 and "not allowed with" in res.stderr


def test_record_level_report_gives_each_attributes_share_of_changed_values(tmp_path):
    # Issue 28, finding 9: an attribute RWN left as it was must show in the evaluation.
    real = _real(600)
    released = real.copy()
    first = released["age"].iloc[:150]
    released.loc[released.index[:150], "age"] = np.where(first < 90, first + 1, first - 1)
    released["income"] = released["income"].sample(frac=1.0, random_state=0).to_numpy()
    rep = evaluate(real, released, ATTRS, same_order=True, rng=0)
    assert rep.changed_share["age"] == pytest.approx(150 / 600)
    assert rep.changed_share["sex"] == 0.0 and rep.changed_share["smoker"] == 0.0
    missing_both = real["income"].isna() & released["income"].isna()
    expected = 1 - ((real["income"] == released["income"]) | missing_both).mean()
    assert rep.changed_share["income"] == pytest.approx(expected) and expected > 0.5
    md = rep.to_markdown()
    assert "## Values changed" in md and "Released exactly as they were: sex, smoker" in md
    assert rep.to_dict()["changed_share"]["age"] == pytest.approx(0.25)
    # Labels in a column, rows shuffled: shares follow the labels, not the positions.
    real2, rel2 = real.assign(id=np.arange(600)), released.assign(id=np.arange(600)).sample(frac=1.0, random_state=1)
    assert evaluate(real2, rel2, ATTRS, label="id", rng=0).changed_share == pytest.approx(rep.changed_share)
    # Synthetic data: no record of its own, no share.
    assert evaluate(real, _real(600, seed=4), ATTRS, rng=0).changed_share == {}


def test_small_regression_coefficients_keep_their_significant_digits():
    # Issue 28, finding 12: a coefficient per dollar printed as 0.0000.
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1e6, 500)
    real = pd.DataFrame({"x": x, "y": 5 + 3e-6 * x + rng.normal(0, 0.1, 500)})
    attrs = [Continuous("x", lower=0, upper=1e6), Continuous("y", lower=0, upper=20)]
    rep = evaluate(real, real.sample(frac=1.0, random_state=1), attrs, regressions=["y ~ x"], rng=0)
    coef = rep.regressions[0].table.loc["x", "coef_real"]
    section = rep.to_markdown().split("### y ~ x", 1)[1].split("Mean CI overlap", 1)[0]
    assert 1e-6 < coef < 1e-5 and f"{coef:.4g}" in section and "| 0.0000 |" not in section


def test_a_label_that_matches_no_real_record_is_an_error():
    # Issue 28 review: released labels absent from the real table turned into a note and exit 0.
    real = _real()
    released = real.copy()
    real = real.assign(id=np.arange(len(real)))
    released = released.assign(id=np.arange(len(released)) + 10**6)
    with pytest.raises(ValueError, match="label 'id'"):
        evaluate(real, released, ATTRS, label="id", rng=0)


def test_skewed_amounts_are_drawn_on_quantiles_and_every_axis_is_labelled():
    """Issue 47, finding 11: an amount on a wide public range (income on 0-500,000) put all its mass in the
    first bars of marginals.png and imputed_vs_observed.png; risk.png had no y-axis label."""
    pytest.importorskip("matplotlib")
    from dpknn import KNNImputer, Ordinal, Schema
    from dpknn.releases import curator_report
    from dpknn.utils._plotting import evaluation_risk_figure, marginals_figure

    rng = np.random.default_rng(3)
    n = 2000
    real = pd.DataFrame({"age": rng.integers(18, 80, n), "income": np.round(rng.lognormal(10, 0.7, n))})
    real.loc[rng.random(n) < 0.2, "income"] = np.nan
    released = real.assign(income=real.income * rng.uniform(0.8, 1.2, n))
    attrs = [Ordinal("age", 18, 80), Continuous("income", 0, 500_000)]
    rep = evaluate(real, released, attrs, rng=0)
    table = rep.marginals["income"]
    assert table.attrs["binning"] == "bins at the real deciles" and len(table) == 11
    assert np.allclose(table["real"].iloc[:-1], 0.08, atol=0.01)     # deciles of the observed 80 %
    assert "binning" not in rep.marginals["age"].attrs                 # spread over its public bins
    assert rep.marginal_tvd.loc["income", "tvd"] < 0.05                # the measure stays on the public bins
    fig = marginals_figure(rep.marginals)
    assert "bins at the real deciles" in fig.axes[1].get_title()
    for ax in evaluation_risk_figure(rep).axes:
        assert ax.get_ylabel() and ax.get_xlabel()
    schema = Schema(known=[Ordinal("age", 18, 80, bin_width=10)], imputed=[Continuous("income", 0, 500_000)])
    dist = curator_report(KNNImputer(schema).fit(real), real).distributions[0]
    assert dist.binning == "observed quantiles" and max(dist.observed) < 0.05 * sum(dist.observed)
