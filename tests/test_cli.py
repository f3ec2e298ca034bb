import json
import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd
import pytest


def run(*args, cwd=None):
    """Run the command line through dpknn/__main__.py (python -m dpknn)."""
    # Run from outside the source tree so that the installed (built) package is imported.
    cwd = cwd or tempfile.mkdtemp()
    return subprocess.run([sys.executable, "-m", "dpknn", *args], capture_output=True, text=True, cwd=cwd)


def test_census_command_writes_data_and_summary(tmp_path):
    out = tmp_path / "census.csv"
    res = run("census", "--n", "3000", "--seed", "1", "--output", str(out), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    df = pd.read_csv(out)
    assert summary["rows"] == len(df) == 3000
    assert summary["incomplete"] == int(df.INCWAGE.isna().sum())
    assert summary["mean_incwage_20_59_complete_cases"] < summary["mean_incwage_20_59_true"]


def test_errors_are_one_line_and_leave_no_file(tmp_path):
    out = tmp_path / "out" / "census.txt"
    res = run("census", "--n", "100", "--output", str(out))
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "error" in res.stderr
    assert not out.exists() and not (tmp_path / "out").exists()
    res = run("census", "--n", "100", "--missing-rate", "0.95")
    assert res.returncode == 2 and "missing_rate" in res.stderr


def test_help():
    assert run("--help").returncode == 0
    assert "--missing" in run("census", "--help").stdout


SCHEMA_TOML = """
[[known]]
name = "AGE"
type = "ordinal"
lower = 0
upper = 99
bin_width = 10

[[known]]
name = "SEX"
type = "categorical"
categories = [1, 2]

[[imputed]]
name = "INCWAGE"
type = "continuous"
lower = 0
upper = 5001
"""

QUERIES_TOML = """
[[query]]
name = "mean wage 20-59"
type = "mean"
column = "INCWAGE"
where = { AGE = { low = 20, high = 59 } }
epsilon = 4.2
count_epsilon = 0.7

[[query]]
name = "poor 20-29"
type = "proportion"
where = { INCWAGE = { low = 658 } }
within = { AGE = { low = 20, high = 29 }, SEX = [1, 2] }
epsilon = 4.2
denominator_epsilon = 0.7

[[query]]
name = "ignore"
type = "count"
where = { INCWAGE = { high = 100 } }
epsilon = 1.0
method = "ignore_missing"
"""


def census_files(tmp_path, n=4000):
    from dpknn.datasets import make_census

    df = make_census(n, rng=3)[["AGE", "SEX", "INCWAGE"]]
    (tmp_path / "schema.toml").write_text(SCHEMA_TOML)
    (tmp_path / "queries.toml").write_text(QUERIES_TOML)
    df.to_csv(tmp_path / "data.csv", index=False)
    return df


def test_demo_writes_report_results_and_figure(tmp_path):
    res = run("demo", "--n", "5000", "--seed", "2", "--out", str(tmp_path / "demo"), "--quiet",
              "--diagnostics", str(tmp_path / "curator.json"))
    assert res.returncode == 0, res.stderr
    out = tmp_path / "demo"
    results = json.loads((out / "results.json").read_text())
    # Published: the 10 DP releases only (the non-DP baseline is in the curator's report).
    assert results["differentially_private"] is True and len(results["releases"]) == 10
    assert {r["method"] for r in results["releases"]} == {"smooth", "ignore_missing"}
    text = (out / "results.json").read_text()
    assert "l1" not in text and "stats" not in text and "smooth_bound" not in text
    curator = json.loads((tmp_path / "curator.json").read_text())
    assert curator["confidential"] is True and curator["imputation"]["l1"] >= 1
    report = (out / "report.md").read_text()
    assert "L1(D) =" in report and "CONFIDENTIAL" in report and "L1(D) =" in res.stdout
    assert (out / "demo.png").read_bytes()[:4] == b"\x89PNG"


def test_experiment_census(tmp_path):
    out = tmp_path / "exp"
    res = run("experiment", "census", "--runs", "3", "--n", "3000", "--population", "10000", "--seed", "1",
              "--jobs", "2", "--queries", "mean_20_59,prop_40_49", "--out", str(out), "--quiet")
    assert res.returncode == 0, res.stderr
    results = pd.read_csv(out / "results.csv")
    assert len(results) == 3 * 2 * 3 and set(results["query"]) == {"mean_20_59", "prop_40_49"}
    mse = pd.read_csv(out / "mse.csv", index_col=0)
    assert {"smooth", "ignore_missing", "global", "paper_smooth"} <= set(mse.columns)
    assert (out / "boxplots.png").exists() and (out / "boxplot_global.png").exists()
    res = run("experiment", "census", "--runs", "1", "--queries", "median_income", "--out", str(tmp_path / "x"))
    assert res.returncode == 2 and "unknown queries" in res.stderr and not (tmp_path / "x").exists()


def test_impute_csv_and_parquet_with_sidecar(tmp_path):
    df = census_files(tmp_path)
    for name in ("out.csv", "out.parquet"):
        res = run("impute", "--schema", str(tmp_path / "schema.toml"), "--input", str(tmp_path / "data.csv"),
                  "--output", str(tmp_path / name), "--k", "2")
        assert res.returncode == 0, res.stderr
        out = pd.read_csv(tmp_path / name) if name.endswith(".csv") else pd.read_parquet(tmp_path / name)
        assert len(out) == len(df) and out["INCWAGE"].notna().all()
        np.testing.assert_array_equal(out["AGE"], df["AGE"])
        side = json.loads((tmp_path / (name + ".json")).read_text())
        assert side["k"] == 2 and side["dpknn:imputed"] is True and "l1" not in side and "rows" not in side
        assert "label y - label x" in side["order"]
    res = run("impute", "--schema", str(tmp_path / "schema.toml"), "--input", str(tmp_path / "data.csv"),
              "--output", str(tmp_path / "o.csv"), "--diagnostics", str(tmp_path / "diag.json"))
    assert res.returncode == 0, res.stderr
    diag = json.loads((tmp_path / "diag.json").read_text())
    assert diag["confidential"] is True and diag["l1"] >= 1
    assert diag["n_incomplete"] == int(df.INCWAGE.isna().sum()) and "l1_cases" in diag


def test_release_file_and_refusals(tmp_path):
    census_files(tmp_path)
    args = ["release", "--schema", str(tmp_path / "schema.toml"), "--queries", str(tmp_path / "queries.toml"),
            "--input", str(tmp_path / "data.csv"), "--output", str(tmp_path / "r.json"), "--seed", "1"]
    res = run(*args, "--epsilon", "20")
    assert res.returncode == 0, res.stderr
    out = json.loads((tmp_path / "r.json").read_text())
    assert out["differentially_private"] is True and "l1" not in out and "rows" not in out
    assert [r["name"] for r in out["releases"]] == ["mean wage 20-59", "poor 20-29", "ignore"]
    assert out["epsilon_spent"] == pytest.approx(4.2 + 0.7 + 4.2 + 0.7 + 1.0)
    assert sum(e["epsilon"] for e in out["ledger"]) == pytest.approx(out["epsilon_spent"])
    (tmp_path / "r.json").unlink()
    # Budgets add up to 10.8 > 10: refused up front, one line, nothing written.
    res = run(*args, "--epsilon", "10")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "nothing was computed" in res.stderr
    assert not (tmp_path / "r.json").exists()
    bad = tmp_path / "bad.toml"
    bad.write_text('[[query]]\nname = "q"\ntype = "median"\nepsilon = 1.0\n')
    res = run(*[a if a != str(tmp_path / "queries.toml") else str(bad) for a in args], "--epsilon", "10")
    assert res.returncode == 2 and "type must be one of" in res.stderr
    # A failure in the middle (epsilon below 2 ln 2 for a smooth release) leaves no file either.
    bad.write_text('[[query]]\nname = "q"\ntype = "count"\nwhere = { INCWAGE = { low = 1 } }\nepsilon = 1.0\n')
    res = run(*[a if a != str(tmp_path / "queries.toml") else str(bad) for a in args], "--epsilon", "10")
    assert res.returncode == 2 and "2 ln 2" in res.stderr
    assert not (tmp_path / "r.json").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    res = run("impute", "--schema", str(tmp_path / "missing.toml"), "--input", str(tmp_path / "data.csv"),
              "--output", str(tmp_path / "o.csv"))
    assert res.returncode == 2 and "does not exist" in res.stderr and not (tmp_path / "o.csv").exists()


def test_rwn_command(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=300), "g": rng.choice(["u", "v"], 300), "id": np.arange(300)})
    df.to_csv(tmp_path / "in.csv", index=False)
    res = run("rwn", "--input", str(tmp_path / "in.csv"), "--output", str(tmp_path / "out.parquet"), "--k", "4",
              "--columns", "a,g", "--seed", "1")
    assert res.returncode == 0, res.stderr
    out = pd.read_parquet(tmp_path / "out.parquet")
    assert out["id"].equals(df["id"]) and out["a"].isin(df["a"]).all() and not out["a"].equals(df["a"])
    res = run("rwn", "--input", str(tmp_path / "in.csv"), "--output", str(tmp_path / "o.csv"), "--q", "2",
              "--columns", "a")
    assert res.returncode == 2 and "q must be" in res.stderr and not (tmp_path / "o.csv").exists()
    # Nothing is perturbed by default: identifiers were swapped between rows when every column was.
    res = run("rwn", "--input", str(tmp_path / "in.csv"), "--output", str(tmp_path / "o.csv"))
    assert res.returncode == 2 and "--columns" in res.stderr and "--keep" in res.stderr
    res = run("rwn", "--input", str(tmp_path / "in.csv"), "--output", str(tmp_path / "k.csv"), "--keep", "id",
              "--seed", "1")
    assert res.returncode == 0, res.stderr
    kept = pd.read_csv(tmp_path / "k.csv")
    assert kept["id"].equals(df["id"]) and not np.allclose(kept["a"], df["a"])
    res = run("rwn", "--input", str(tmp_path / "in.csv"), "--output", str(tmp_path / "w.csv"), "--columns", "a,id")
    assert res.returncode == 0 and "different value in every row" in res.stderr
    res = run("rwn", "--input", str(tmp_path / "in.csv"), "--output", str(tmp_path / "s.csv"), "--columns", "a",
              "--method", "sampled_points")
    assert res.returncode == 2 and "needs --m" in res.stderr
    res = run("rwn", "--input", str(tmp_path / "in.csv"), "--output", str(tmp_path / "s.csv"), "--columns", "a",
              "--k", "500")
    assert res.returncode == 2 and "k=500 must be below the number of records (300)" in res.stderr
    assert not (tmp_path / "s.csv").exists()


def test_experiment_amplification(tmp_path):
    out = tmp_path / "amp"
    res = run("experiment", "amplification", "--rates", "0.1,0.5", "--out", str(out))
    assert res.returncode == 0, res.stderr
    table = pd.read_csv(out / "table.csv", index_col=0)
    assert list(table.index) == [0.1, 0.5] and (table["exact"] <= table["partition"] + 1e-12).all()
    examples = pd.read_csv(out / "examples.csv", index_col=0, dtype={"example": str})
    assert examples.loc["5.8", "exact"] == pytest.approx(0.7925, abs=1e-4)
    assert "NOT valid" in (out / "report.md").read_text() or "not a valid bound" in (out / "report.md").read_text()
    assert (out / "amplification.png").read_bytes()[:4] == b"\x89PNG"
    res = run("experiment", "amplification", "--rates", "1.5", "--out", str(tmp_path / "x"))
    assert res.returncode == 2 and "--rates" in res.stderr and not (tmp_path / "x").exists()


def test_max_work_option_reaches_the_l1_search(tmp_path):
    # A fine, sparse ordinal: the exact L1 search needs far more than 50 ball-box
    # tests, so --max-work 50 must stop it with the attribute to bin, and the default must not.
    rng = np.random.default_rng(4)
    n = 400
    df = pd.DataFrame({"HOURS": np.clip(rng.normal(400, 150, n), 0, 999).astype(int), "SEX": rng.integers(1, 3, n),
                       "INCWAGE": np.where(rng.random(n) < 0.5, np.nan, 100.0)})
    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.toml").write_text(
        '[[known]]\nname = "HOURS"\ntype = "ordinal"\nlower = 0\nupper = 999\n\n'
        '[[known]]\nname = "SEX"\ntype = "categorical"\ncategories = [1, 2]\n\n'
        '[[imputed]]\nname = "INCWAGE"\ntype = "continuous"\nlower = 0\nupper = 5001\n')
    args = ["impute", "--schema", str(tmp_path / "s.toml"), "--input", str(tmp_path / "d.csv"),
            "--output", str(tmp_path / "o.csv")]
    res = run(*args, "--max-work", "50")
    assert res.returncode == 2 and "max_work=50" in res.stderr and "split ordinal 'HOURS'" in res.stderr
    assert not (tmp_path / "o.csv").exists()
    # --suggest-bins fits again with coarser bins and prints widths that a fit verified.
    res = run(*args, "--max-work", "2000", "--suggest-bins")
    assert res.returncode == 2 and "CONFIDENTIAL" in res.stderr and "not public bins" in res.stderr
    assert "These bin widths fit max_work on these data:\n  HOURS: bin_width = " in res.stderr
    assert not (tmp_path / "o.csv").exists()
    res = run(*args)
    assert res.returncode == 0, res.stderr


ATTRIBUTES = """
[[attribute]]
name = "AGE"
type = "ordinal"
lower = 0
upper = 99

[[attribute]]
name = "SEX"
type = "categorical"
categories = [1, 2]

[[attribute]]
name = "INCWAGE"
type = "continuous"
lower = 0
upper = 5001
"""


@pytest.mark.parametrize("method", ["privbayes", "privbayese", "privbayes-value", "columnwise"])
def test_synth_writes_rows_and_public_sidecar(tmp_path, method):
    from dpknn.datasets import make_census

    make_census(3000, rng=0).to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "a.toml").write_text(ATTRIBUTES)
    res = run("synth", "--attributes", "a.toml", "--input", "in.csv", "--output", "out.csv", "--epsilon", "1",
              "--rows", "500", "--method", method, "--seed", "1", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = pd.read_csv(tmp_path / "out.csv")
    assert list(out.columns) == ["AGE", "SEX", "INCWAGE"] and len(out) == 500
    assert out["AGE"].dropna().between(0, 99).all() and out["INCWAGE"].dropna().between(0, 5001).all()
    assert out.isna().any().any() == (method == "privbayes-value")
    side = json.loads((tmp_path / "out.csv.json").read_text())
    assert side["epsilon"] == 1.0 and side["rows"] == 500 and side["method"] == method
    # Only public parameters and released values: no true counts, scores or the data's size.
    assert "3000" not in json.dumps(side)
    if method != "columnwise":
        assert side["max_rows_is"].startswith("released") and side["max_rows"] > 3000


def test_synth_refuses_bad_input(tmp_path):
    (tmp_path / "a.toml").write_text(ATTRIBUTES)
    pd.DataFrame({"AGE": [1, 200], "SEX": [1, 2], "INCWAGE": [0, 1]}).to_csv(tmp_path / "in.csv", index=False)
    common = ["synth", "--attributes", "a.toml", "--input", "in.csv", "--epsilon", "1", "--rows", "5"]
    res = run(*common, "--output", "out.csv", cwd=tmp_path)
    assert res.returncode == 2 and "AGE" in res.stderr and not (tmp_path / "out.csv").exists()
    res = run(*common, "--output", "in.csv", cwd=tmp_path)
    assert res.returncode == 2
    res = run(*common, "--output", "o.csv", "--method", "columnwise", "--max-rows", "10", cwd=tmp_path)
    assert res.returncode == 2 and "PrivBayes methods only" in res.stderr
    (tmp_path / "b.toml").write_text("[[attribute]]\nname = 'AGE'\ntype = 'ordinal'\nlower = 0\n")
    res = run(*common[:1], "--attributes", "b.toml", *common[3:], "--output", "o.csv", cwd=tmp_path)
    assert res.returncode == 2 and "upper" in res.stderr


def test_synth_dpmisgan_writes_rows_and_public_sidecar(tmp_path):
    pytest.importorskip("torch", reason="DPMisGAN needs torch: pip install torch==2.13.0")
    from dpknn.datasets import make_census

    make_census(1200, rng=0).to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "a.toml").write_text(ATTRIBUTES)
    common = ["synth", "--attributes", "a.toml", "--input", "in.csv", "--epsilon", "3", "--rows", "300",
              "--method", "dpmisgan", "--seed", "1"]
    res = run(*common, "--output", "out.csv", cwd=tmp_path)
    assert res.returncode == 2 and "--input-rows" in res.stderr and not (tmp_path / "out.csv").exists()
    res = run(*common, "--output", "out.csv", "--input-rows", "1000", "--epochs", "0", cwd=tmp_path)
    assert res.returncode == 2 and "epochs" in res.stderr and not (tmp_path / "out.csv").exists()
    res = run(*common, "--output", "out.csv", "--input-rows", "1000", "--epochs", "1", "--batch-size", "50",
              "--gaps", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = pd.read_csv(tmp_path / "out.csv")
    assert list(out.columns) == ["AGE", "SEX", "INCWAGE"] and len(out) == 300
    assert out["AGE"].dropna().between(0, 99).all() and out.isna().any().any()
    side = json.loads((tmp_path / "out.csv.json").read_text())
    assert side["method"] == "dpmisgan" and side["input_rows"] == 1000 and side["critic_steps"] == 20
    assert side["sampling_rate"] == 0.05 and side["delta"] == 1e-5 and side["epsilon"] <= 3.0
    assert "1200" not in json.dumps(side)
    res = run("synth", "--attributes", "a.toml", "--input", "in.csv", "--epsilon", "1", "--rows", "5",
              "--output", "o.csv", "--epochs", "3", cwd=tmp_path)
    assert res.returncode == 2 and "dpmisgan only" in res.stderr


def test_impute_and_release_on_a_folder_of_parquet_partitions(tmp_path):
    """The folder path (Dask, a local cluster) gives the in-memory imputation and the same
    seeded releases; a folder written by impute is refused by release."""
    from dpknn.datasets import census_schema, make_census
    from dpknn.distributed import parquet_partitions
    from dpknn.imputation import KNNImputer

    df = make_census(20_000, rng=4)
    (tmp_path / "in").mkdir()
    for i, (a, b) in enumerate([(0, 7000), (7000, 7000), (7000, 20_000)]):
        df.iloc[a:b].to_parquet(tmp_path / "in" / f"part.{i}.parquet")
    df.to_parquet(tmp_path / "all.parquet")
    (tmp_path / "s.toml").write_text(census_schema().to_toml())
    (tmp_path / "q.toml").write_text(
        '[[query]]\nname = "wage"\ntype = "mean"\ncolumn = "INCWAGE"\n'
        'where = { AGE = { low = 20, high = 59 } }\n'
        'epsilon = 2.0\ncount_epsilon = 1.0\n\n[[query]]\nname = "adults"\ntype = "count"\n'
        'where = { AGE = { low = 20, high = 59 } }\nepsilon = 1.0\nmethod = "ignore_missing"\n')
    res = run("impute", "--schema", "s.toml", "--input", "in", "--output", "out", "--k", "2",
              "--diagnostics", "d.json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "INFO" not in res.stderr
    got = pd.concat([pd.read_parquet(f) for f in parquet_partitions(tmp_path / "out")])
    imp = KNNImputer(census_schema(), k=2)
    pd.testing.assert_frame_equal(got, imp.fit_transform(df))
    diag = json.loads((tmp_path / "d.json").read_text())
    assert diag["confidential"] and diag["l1"] == imp.l1_ and diag["n_classes"] == imp.n_classes_
    assert json.loads((tmp_path / "out.json").read_text())["dpknn:imputed"] is True
    assert run("impute", "--schema", "s.toml", "--input", "in", "--output", "out", cwd=tmp_path).returncode == 2
    res = run("impute", "--schema", "s.toml", "--input", "in", "--output", "o2", "--report", "r", cwd=tmp_path)
    assert res.returncode == 2 and "--report needs the data in memory" in res.stderr

    releases = {}
    for source in ("in", "all.parquet"):
        res = run("release", "--schema", "s.toml", "--queries", "q.toml", "--input", source, "--output",
                  f"{source}.json", "--epsilon", "4", "--seed", "3", "--diagnostics", f"{source}.diag.json",
                  cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        releases[source] = json.loads((tmp_path / f"{source}.json").read_text())["releases"]
        diag = json.loads((tmp_path / f"{source}.diag.json").read_text())
        assert diag["rows"] == len(df) and diag["l1"] == KNNImputer(census_schema()).fit(df).l1_
    assert [r["value"] for r in releases["in"]] == pytest.approx([r["value"] for r in releases["all.parquet"]],
                                                                 rel=1e-12)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []   # nothing left behind
    res = run("release", "--schema", "s.toml", "--queries", "q.toml", "--input", "out", "--output", "x.json",
              "--epsilon", "4", cwd=tmp_path)
    assert res.returncode == 2 and "written by dpknn impute" in res.stderr
