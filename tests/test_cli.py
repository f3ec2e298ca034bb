import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_run import run


def test_python_m_dpknn_runs_the_same_command_line(tmp_path):
    """The entry point itself, in a fresh interpreter (the other tests call main() in process)."""
    res = subprocess.run([sys.executable, "-m", "dpknn", "census", "--n", "200", "--seed", "1", "--output",
                          str(tmp_path / "c.csv")], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["rows"] == 200 and len(pd.read_csv(tmp_path / "c.csv")) == 200


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
    from dpknn.datasets._census import make_census

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
    # Published: the 15 DP releases only (the non-DP baseline is in the curator's report): PolyPlace and the
    # paper's Cauchy noise side by side, and ignoring missing data.
    assert results["differentially_private"] is True and len(results["releases"]) == 15
    assert {r["method"] for r in results["releases"]} == {"smooth", "smooth_cauchy", "ignore_missing"}
    mechanisms = {r["method"]: r["mechanism"] for r in results["releases"] if r["query"] == "mean_20_59"}
    assert mechanisms["smooth"] == "smooth_polyplace" and mechanisms["smooth_cauchy"] == "smooth_cauchy"
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
    assert len(results) == 3 * 2 * 4 and set(results["query"]) == {"mean_20_59", "prop_40_49"}
    mse = pd.read_csv(out / "mse.csv", index_col=0)
    assert {"smooth", "smooth_cauchy", "ignore_missing", "global", "paper_smooth_cauchy"} <= set(mse.columns)
    assert (out / "boxplots.png").exists() and (out / "boxplot_global.png").exists()
    res = run("experiment", "census", "--runs", "1", "--queries", "median_income", "--out", str(tmp_path / "x"))
    assert res.returncode == 2 and "unknown queries" in res.stderr and not (tmp_path / "x").exists()


def test_census_report_says_why_its_mses_differ_from_the_papers(tmp_path, capsys):
    # Issue 28, finding 12: MSEs many times the paper's were printed beside them without a word.
    from dpknn.experiments._demo import run_census_experiment

    run_census_experiment(runs=3, n=3000, population=10_000, seed=1, queries=["mean_20_59", "prop_40_49"],
                          out=tmp_path / "exp", progress=False)
    capsys.readouterr()
    report = (tmp_path / "exp" / "report.md").read_text()
    why = report.split("## Why these MSEs differ from the paper's", 1)[1]
    assert "synthetic" in why and "IPUMS" in why and "L1(D)" in why and "squared bias" in why
    # At the default budget the noise drawn is narrower than the paper's Theorem 3.8 constants give.
    assert "α = ε/(2(γ - 1)) = 0.693" in why and "smooth noise is narrower than the paper's" in why


def test_paper_gap_notes_compare_the_cauchy_constants():
    import math

    from dpknn.experiments._demo import paper_gap_notes

    rows = [{"query": "mean_20_59", "method": m, "mechanism": mech, "value": v, "truth": 100.0, "run": r,
             "l1": 15 + r, "n_missing": 200}
            for r in range(4) for m, mech, v in (("smooth", "smooth_cauchy", 100.0 + (-1) ** r),
                                                 ("ignore_missing", "laplace", 90.0 + 0.1 * r))]
    text = "\n".join(paper_gap_notes(pd.DataFrame(rows), n=1000, epsilon=6 * math.log(2)))
    assert "missing rate (here 20.0% of INCWAGE)" in text and "1 + L1(D) (here 15 to 18)" in text
    assert "γ = 3.75 and α = 0.990" in text and "α = ε/(2(γ - 1)) = 0.693" in text and "1.27 times as wide" in text
    assert "squared bias is 0.0% to 0.0% of the MSE" in text   # smooth: unbiased here by construction


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


def test_published_ledger_labels_read_as_text(tmp_path):
    # Issue 28, finding 12: the ledger in R.json held Python reprs of the conditions.
    census_files(tmp_path)
    res = run("release", "--schema", "schema.toml", "--queries", "queries.toml", "--input", "data.csv", "--output",
              "r.json", "--seed", "1", "--epsilon", "20", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    text = (tmp_path / "r.json").read_text(encoding="utf-8")
    labels = [e["label"] for e in json.loads(text)["ledger"]]
    assert not [label for label in labels if "{'" in label or "(" in label]
    assert "mean of INCWAGE where AGE in [20, 59]" in labels and "count where INCWAGE ≤ 100" in labels
    assert '"count where INCWAGE ≤ 100"' in text   # as written, not \u-escaped


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
    # A failure in the middle (epsilon at most ln 2 for a smooth release) leaves no file either.
    bad.write_text('[[query]]\nname = "q"\ntype = "count"\nwhere = { INCWAGE = { low = 1 } }\nepsilon = 0.6\n')
    res = run(*[a if a != str(tmp_path / "queries.toml") else str(bad) for a in args], "--epsilon", "10")
    assert res.returncode == 2 and "epsilon > ln 2" in res.stderr
    # The paper's Cauchy noise (noise = "cauchy") still needs 2 ln 2.
    bad.write_text('[[query]]\nname = "q"\ntype = "count"\nwhere = { INCWAGE = { low = 1 } }\nepsilon = 1.0\n'
                   'noise = "cauchy"\n')
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


def test_rwn_command_prints_the_share_of_changed_values_and_warns(tmp_path):
    # Issue 28, finding 9: a categorical column left as it was must not pass without a word.
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": rng.integers(18, 90, 400), "gender": rng.choice(["f", "m"], 400)})
    df.to_csv(tmp_path / "in.csv", index=False)
    res = run("rwn", "--input", "in.csv", "--output", "out.csv", "--columns", "age,gender", "--seed", "1",
              cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = pd.read_csv(tmp_path / "out.csv")
    age, gender = ((out[c] != df[c]).mean() for c in ("age", "gender"))
    assert f"values changed: age {100 * age:.1f} %, gender {100 * gender:.1f} %" in res.stdout
    assert "column 'gender'" in res.stderr and "Raise the radius (--radius)" in res.stderr and "'age'" not in res.stderr
    pytest.importorskip("dask")
    pytest.importorskip("pyarrow")
    (tmp_path / "dir").mkdir()
    df.to_parquet(tmp_path / "dir" / "part.0.parquet")
    res = run("rwn", "--input", "dir", "--output", "outdir", "--columns", "age,gender", "--seed", "1", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "values changed: age " in res.stdout and "column 'gender'" in res.stderr


@pytest.mark.slow   # Dask, 11 s; perturb_parquet's own tests (test_rwn.py) run in the README's command
def test_rwn_command_runs_the_method_within_each_partition_of_a_folder(tmp_path):
    # --method sampled_pairs on a folder ran the exact method; now it runs within each partition.
    pytest.importorskip("dask")
    pytest.importorskip("pyarrow")
    from dpknn.sdc._rwn import RWN

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=600), "b": rng.normal(size=600), "id": np.arange(600)})
    (tmp_path / "dir").mkdir()
    for p in range(2):
        df.iloc[p * 300:(p + 1) * 300].to_parquet(tmp_path / "dir" / f"part.{p}.parquet")
    res = run("rwn", "--input", "dir", "--output", "pairs", "--columns", "a,b", "--k", "3", "--method", "sampled_pairs",
              "--m", "10", "--seed", "4", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "perturbed 2 Parquet partitions (sampled_pairs within each)" in res.stdout
    out = pd.read_parquet(tmp_path / "pairs")
    for p in range(2):
        part = pd.read_parquet(tmp_path / "dir" / f"part.{p}.parquet")
        seed = np.random.default_rng(np.random.SeedSequence(4, spawn_key=(p,)))
        expected = RWN(k=3, method="sampled_pairs", m=10, rng=seed, columns=["a", "b"]).fit_transform(part)
        exact = RWN(k=3, rng=np.random.default_rng(np.random.SeedSequence(4, spawn_key=(p,))),
                    columns=["a", "b"]).fit_transform(part)
        got = out.loc[part.index, list(df.columns)]
        np.testing.assert_array_equal(got.to_numpy(), expected.to_numpy())
        assert not np.array_equal(got["a"], exact["a"])
    # partitioned on a folder: its partitions are the partitions, so --partitions is not needed.
    res = run("rwn", "--input", "dir", "--output", "parts", "--columns", "a,b", "--method", "partitioned",
              "--seed", "4", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "(exact within each)" in res.stdout
    # --scheduler: the folder is perturbed on a running cluster, with the same result.
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                      dashboard_address=":0") as cluster:
        res = run("rwn", "--input", "dir", "--output", "on-cluster", "--columns", "a,b", "--k", "3", "--method",
                  "sampled_pairs", "--m", "10", "--seed", "4", "--scheduler", cluster.scheduler_address, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "on-cluster"), out)
    df.to_csv(tmp_path / "flat.csv", index=False)
    res = run("rwn", "--input", "flat.csv", "--output", "x.csv", "--columns", "a,b", "--scheduler", "tcp://nowhere:1",
              cwd=tmp_path)
    assert res.returncode == 2 and "--scheduler applies to a folder" in res.stderr


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


@pytest.mark.parametrize("method", ["auto", "aim", "mst", "privbayes", "privbayese", "privbayes-value", "columnwise",
                                    "aim --noise laplace", "mst --noise laplace"])
def test_synth_writes_rows_and_public_sidecar(tmp_path, method):
    from dpknn.datasets._census import make_census

    method, *options = method.split()
    make_census(3000, rng=0).to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "a.toml").write_text(ATTRIBUTES)
    res = run("synth", "--attributes", "a.toml", "--input", "in.csv", "--output", "out.csv", "--epsilon", "1",
              "--rows", "500", "--method", method, "--seed", "1", *options, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = pd.read_csv(tmp_path / "out.csv")
    assert list(out.columns) == ["AGE", "SEX", "INCWAGE"] and len(out) == 500
    assert out["AGE"].dropna().between(0, 99).all() and out["INCWAGE"].dropna().between(0, 5001).all()
    assert out.isna().any().any() == (method in ("privbayes-value", "mst", "aim", "auto"))   # those reproduce gaps
    side = json.loads((tmp_path / "out.csv.json").read_text())
    assert side["epsilon"] == 1.0 and side["rows"] == 500 and side["method"] == method
    # Only public parameters and released values: no true counts, scores or the data's size.
    assert "3000" not in json.dumps(side)
    if method == "auto":   # 3,000 rows at ε = 1: MST's tables are the more useful
        assert side["chosen"] == "mst" and len(side["tree"]) == 2 and side["count_share"] == 0.01
        # INCWAGE's quantiles and point masses keep MST's "auto" noise Gaussian.
        assert (side["noise"], side["method_delta"], side["delta"]) == ("gaussian", 1e-9, 1e-9)
    elif options:   # pure DP asked for: δ = 0 and no ρ
        assert (side["noise"], side["delta"], side["rho"]) == ("laplace", 0.0, None)
    elif method in ("aim", "mst"):
        assert side["noise"] == "gaussian" and 0 < side["delta"] and side["rho"] < 1
    if method in ("mst", "auto"):
        assert len(side["tree"]) == 2
        # auto: a released count of about 3,000 rows pays for the first levels of quantiles only at ε = 1 (a
        # deeper level's parts would hold fewer records than its median's error); mst, given no count, buys all 6.
        assert side["bins"] == "auto" and set(side["released_bin_edges"]) == {"INCWAGE"}
        levels = side["quantile_levels"]
        assert (0 < levels < 6 if method == "auto" else levels == 6)
        assert 2 ** (levels - 1) <= len(side["released_bin_edges"]["INCWAGE"]) <= 2**levels - 1   # a part may run dry
    elif method == "aim":
        assert side["workload"] == 2 and len(side["rounds"]) == len(side["measured"]) > 3
        assert side["bins"] == "auto" and set(side["released_bin_edges"]) == {"INCWAGE"}
    elif method != "columnwise":
        assert side["max_rows_is"].startswith("released") and side["max_rows"] > 3000


def test_synth_quantile_share_reaches_the_estimator_and_is_refused_by_a_method_without_it(tmp_path):
    from dpknn.datasets._census import make_census

    make_census(1000, rng=0).to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "a.toml").write_text(ATTRIBUTES)
    common = ["synth", "--attributes", "a.toml", "--input", "in.csv", "--epsilon", "1", "--rows", "50", "--seed", "0"]
    shares = []
    for share in ("0.1", "0.3"):
        res = run(*common, "--output", f"{share}.csv", "--method", "mst", "--quantile-share", share, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        shares.append(json.loads((tmp_path / f"{share}.csv.json").read_text())["quantile_share"])
    # MST given no row count buys every level: INCWAGE's 6 levels and point masses spend the share asked for, in 7
    # parts, and the narrow Ordinal AGE's histogram one part more (taken from the model's budget).
    assert shares == [pytest.approx(0.1 * 8 / 7, rel=1e-12), pytest.approx(0.3 * 8 / 7, rel=1e-12)]
    res = run(*common, "--output", "o.csv", "--method", "columnwise", "--quantile-share", "0.2", cwd=tmp_path)
    assert res.returncode == 2 and "--quantile-share does not apply to --method columnwise" in res.stderr
    res = run(*common, "--output", "o.csv", "--quantile-share", "1", cwd=tmp_path)
    assert res.returncode == 2 and "quantile_share" in res.stderr and not (tmp_path / "o.csv").exists()


def test_synth_refuses_bad_input(tmp_path):
    (tmp_path / "a.toml").write_text(ATTRIBUTES)
    pd.DataFrame({"AGE": [1, 200], "SEX": [1, 2], "INCWAGE": [0, 1]}).to_csv(tmp_path / "in.csv", index=False)
    common = ["synth", "--attributes", "a.toml", "--input", "in.csv", "--epsilon", "1", "--rows", "5"]
    res = run(*common, "--output", "out.csv", cwd=tmp_path)
    assert res.returncode == 2 and "AGE" in res.stderr and not (tmp_path / "out.csv").exists()
    res = run(*common, "--output", "in.csv", cwd=tmp_path)
    assert res.returncode == 2
    res = run(*common, "--output", "o.csv", "--method", "columnwise", "--max-rows", "10", cwd=tmp_path)
    # Issue 49: an option applies where the method's estimator has its parameter (read from its signature).
    assert res.returncode == 2 and ("--max-rows does not apply to --method columnwise (ColumnwiseSynthesizer has no "
                                    "parameter 'max_rows'); it applies to --method privbayes, privbayese, "
                                    "privbayes-value") in res.stderr
    res = run(*common, "--output", "o.csv", "--method", "columnwise", "--delta", "1e-6", cwd=tmp_path)
    assert res.returncode == 2 and "it applies to --method auto, aim, mst, privbayes" in res.stderr
    res = run(*common, "--output", "o.csv", "--method", "privbayese", "--never-missing", "SEX", cwd=tmp_path)
    assert res.returncode == 2 and "never_missing applies to missing='value' only" in res.stderr
    res = run(*common, "--output", "o.csv", "--method", "columnwise", "--never-missing", "SEX", cwd=tmp_path)
    assert res.returncode == 2 and "--never-missing does not apply to --method columnwise" in res.stderr
    res = run(*common, "--output", "o.csv", "--method", "privbayes", "--noise", "laplace", cwd=tmp_path)
    assert res.returncode == 2 and "--noise does not apply to --method privbayes" in res.stderr
    res = run(*common, "--output", "o.csv", "--noise", "laplace", "--delta", "1e-6", cwd=tmp_path)
    assert res.returncode == 2 and "pure epsilon-DP (delta = 0)" in res.stderr
    res = run(*common, "--output", "o.csv", "--method", "privbayes", "--bins", "auto", cwd=tmp_path)
    assert res.returncode == 2 and "bins" in res.stderr and "'auto'" in res.stderr   # the estimator refuses it
    res = run(*common, "--output", "o.csv", "--bins", "deciles", cwd=tmp_path)
    assert res.returncode == 2 and "'auto' or 'quantiles'" in res.stderr
    res = run(*common, "--output", "o.csv", "--method", "aim", "--mcar-rates", "AGE=0.2", cwd=tmp_path)
    assert res.returncode == 2 and "--mcar-rates does not apply to --method aim" in res.stderr
    res = run(*common, "--output", "o.csv", "--method", "mst", "--mcar-rates", "AGE", cwd=tmp_path)
    assert res.returncode == 2 and "NAME=RATE" in res.stderr
    res = run(*common, "--output", "o.csv", "--method", "mst", "--mcar-rates", "AGE=0.2,AGE=0.3", cwd=tmp_path)
    assert res.returncode == 2 and "names 'AGE' twice" in res.stderr
    res = run(*common, "--output", "o.csv", "--method", "mst", "--mcar-rates", ",", cwd=tmp_path)
    assert res.returncode == 2 and "--mcar-rates is empty" in res.stderr
    res = run(*common, "--output", "o.csv", "--method", "mst", "--mcar-rates", "AGE=0.2", "--delta", "1e-6",
              cwd=tmp_path)
    assert res.returncode == 2 and "drop --delta" in res.stderr
    pd.DataFrame({"AGE": [1, 2], "SEX": [1, None], "INCWAGE": [0, 1]}).to_csv(tmp_path / "gap.csv", index=False)
    res = run(*common[:4], "gap.csv", *common[5:], "--output", "o.csv", "--never-missing", "SEX", cwd=tmp_path)
    assert res.returncode == 2 and "never_missing have gaps: ['SEX']" in res.stderr
    assert not (tmp_path / "o.csv").exists()
    (tmp_path / "b.toml").write_text("[[attribute]]\nname = 'AGE'\ntype = 'ordinal'\nlower = 0\n")
    res = run(*common[:1], "--attributes", "b.toml", *common[3:], "--output", "o.csv", cwd=tmp_path)
    assert res.returncode == 2 and "upper" in res.stderr


def test_synth_reads_public_bin_edges_from_the_attributes_file(tmp_path):
    """``bin_edges`` in an [[attribute]] table become the method's public edges (no quantiles are
    released for that attribute); bad edges and methods without edges are refused up front."""
    from dpknn.datasets._census import make_census

    make_census(3000, rng=0).to_csv(tmp_path / "in.csv", index=False)
    edged = ATTRIBUTES.replace('upper = 5001\n', 'upper = 5001\nbin_edges = [100, 500, 1000, 2000]\n')
    (tmp_path / "a.toml").write_text(edged)
    common = ["synth", "--attributes", "a.toml", "--input", "in.csv", "--epsilon", "1", "--rows", "500", "--seed", "1"]
    res = run(*common, "--output", "out.csv", "--method", "mst", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    side = json.loads((tmp_path / "out.csv.json").read_text())
    assert side["bin_edges"] == {"INCWAGE": [100.0, 500.0, 1000.0, 2000.0]} and side["released_bin_edges"] == {}
    out = pd.read_csv(tmp_path / "out.csv")
    assert out["INCWAGE"].dropna().between(0, 5001).all()
    res = run(*common, "--output", "o.csv", "--method", "privbayes", cwd=tmp_path)
    assert res.returncode == 2 and "bin_edges in a.toml (for ['INCWAGE']) apply to --method auto" in res.stderr
    (tmp_path / "b.toml").write_text(ATTRIBUTES.replace('upper = 5001\n', 'upper = 5001\nbin_edges = [900, 100]\n'))
    res = run(*common[:1], "--attributes", "b.toml", *common[3:], "--output", "o.csv", cwd=tmp_path)
    assert res.returncode == 2 and "must increase strictly inside" in res.stderr
    sex_edges = ATTRIBUTES.replace("categories = [1, 2]\n", "categories = [1, 2]\nbin_edges = [1]\n")
    (tmp_path / "c.toml").write_text(sex_edges)
    res = run(*common[:1], "--attributes", "c.toml", *common[3:], "--output", "o.csv", cwd=tmp_path)
    assert res.returncode == 2 and "not a numeric attribute" in res.stderr
    assert not (tmp_path / "o.csv").exists()


def test_synth_analysis_auto_names_each_amount_on_every_other_attribute(tmp_path):
    from dpknn.datasets._census import make_census

    make_census(2000, rng=0).to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "a.toml").write_text(ATTRIBUTES)
    common = ["synth", "--attributes", "a.toml", "--input", "in.csv", "--epsilon", "1", "--rows", "300", "--seed", "0",
              "--method", "mst"]
    res = run(*common, "--output", "o.csv", "--analysis", "auto", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    side = json.loads((tmp_path / "o.csv.json").read_text())
    assert side["analyses"] == ["INCWAGE ~ AGE + SEX"] and side["analyses_rule"] == "auto"
    assert "no --analysis" not in res.stderr
    res = run(*common, "--output", "q.csv", cwd=tmp_path)   # a new user who names none is told what that keeps
    assert res.returncode == 0 and "no --analysis: a regression of INCWAGE" in res.stderr
    side = json.loads((tmp_path / "q.csv.json").read_text())
    assert ("bought no level of quantiles for INCWAGE" in res.stderr) == (side["released_bin_edges"]["INCWAGE"] == [])
    # 80 rows buy the default no level (the released count decides): said on the terminal, not only in the
    # sidecar's empty edges
    pd.read_csv(tmp_path / "in.csv").head(80).to_csv(tmp_path / "few.csv", index=False)
    res = run(*common[:4], "few.csv", *common[5:-2], "--output", "f.csv", cwd=tmp_path)
    assert res.returncode == 0 and "bought no level of quantiles for INCWAGE" in res.stderr
    assert json.loads((tmp_path / "f.csv.json").read_text())["released_bin_edges"]["INCWAGE"] == []
    res = run(*common, "--output", "p.csv", "--analysis", "auto", "--analysis", "INCWAGE ~ AGE", cwd=tmp_path)
    assert res.returncode == 2 and "give it alone" in res.stderr and not (tmp_path / "p.csv").exists()


def test_synth_mst_with_public_mcar_rates(tmp_path):
    (tmp_path / "a.toml").write_text(ATTRIBUTES)
    rng = np.random.default_rng(0)
    n = 2000
    age = rng.integers(0, 100, n).astype(float)
    age[rng.random(n) < 0.25] = np.nan
    pd.DataFrame({"AGE": age, "SEX": rng.integers(1, 3, n),
                  "INCWAGE": rng.gamma(2, 500, n).clip(0, 5001)}).to_csv(tmp_path / "in.csv", index=False)
    res = run("synth", "--attributes", "a.toml", "--input", "in.csv", "--output", "o.csv", "--epsilon", "1",
              "--rows", "1000", "--method", "mst", "--mcar-rates", "AGE=0.25", "--seed", "0", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    side = json.loads((tmp_path / "o.csv.json").read_text())
    assert side["mcar_rates"] == {"AGE": 0.25} and side["noise"] == "laplace" and side["delta"] == 0.0
    assert "observed rows" in side["description"] and "MCAR" in side["description"]
    assert len(side["table_epsilons"]) == 2
    out = pd.read_csv(tmp_path / "o.csv")
    assert out["AGE"].isna().mean() == pytest.approx(0.25, abs=0.02)


@pytest.mark.slow   # trains DP-MisGAN: one of the suite's longest tests
def test_synth_dpmisgan_writes_rows_and_public_sidecar(tmp_path):
    pytest.importorskip("torch", reason="DPMisGAN needs torch: pip install torch==2.13.0")
    from dpknn.datasets._census import make_census

    make_census(1200, rng=0).to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "a.toml").write_text(ATTRIBUTES)
    common = ["synth", "--attributes", "a.toml", "--input", "in.csv", "--epsilon", "3", "--rows", "300",
              "--method", "dpmisgan", "--seed", "1"]
    res = run(*common, "--output", "out.csv", cwd=tmp_path)
    assert res.returncode == 2 and "--input-rows" in res.stderr and not (tmp_path / "out.csv").exists()
    res = run(*common, "--output", "out.csv", "--input-rows", "1000", "--epochs", "0", cwd=tmp_path)
    assert res.returncode == 2 and "epochs" in res.stderr and not (tmp_path / "out.csv").exists()
    res = run(*common, "--output", "out.csv", "--input-rows", "1000", "--epochs", "1", "--batch-size", "50",
              "--marginal-share", "1.5", cwd=tmp_path)
    assert res.returncode == 2 and "marginal_share must be in [0, 1)" in res.stderr
    res = run(*common, "--output", "out.csv", "--input-rows", "1000", "--epochs", "1", "--batch-size", "50",
              "--gaps", "--bins", "5", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = pd.read_csv(tmp_path / "out.csv")
    assert list(out.columns) == ["AGE", "SEX", "INCWAGE"] and len(out) == 300
    assert out["AGE"].dropna().between(0, 99).all() and out.isna().any().any()
    side = json.loads((tmp_path / "out.csv.json").read_text())
    assert side["method"] == "dpmisgan" and side["input_rows"] == 1000 and side["critic_steps"] == 20
    assert side["sampling_rate"] == 0.05 and side["delta"] == 1e-5 and side["epsilon"] <= 3.0
    assert "1200" not in json.dumps(side)
    # The tables: every pair, their zCDP cost, the share; --bins reached the GAN.
    assert side["marginal_tables"] == [["AGE", "SEX"], ["AGE", "INCWAGE"], ["SEX", "INCWAGE"]]
    assert side["marginal_share"] == 0.9 and 0 < side["marginal_rho"] and side["bins"] == 5
    res = run(*common, "--output", "adv.csv", "--input-rows", "1000", "--epochs", "1", "--batch-size", "50",
              "--marginal-share", "0", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    adv = json.loads((tmp_path / "adv.csv.json").read_text())
    assert adv["marginal_tables"] == [] and adv["marginal_rho"] == 0.0
    assert adv["noise_multiplier"] < side["noise_multiplier"]   # the critics got the whole budget
    res = run("synth", "--attributes", "a.toml", "--input", "in.csv", "--epsilon", "1", "--rows", "5",
              "--output", "o.csv", "--epochs", "3", cwd=tmp_path)
    assert res.returncode == 2 and "--epochs does not apply to --method auto" in res.stderr
    assert "it applies to --method dpmisgan." in res.stderr
    res = run("synth", "--attributes", "a.toml", "--input", "in.csv", "--epsilon", "1", "--rows", "5",
              "--output", "o.csv", "--method", "mst", "--marginal-share", "0.5", cwd=tmp_path)
    assert res.returncode == 2 and "--marginal-share does not apply to --method mst" in res.stderr


def test_impute_and_release_on_a_folder_of_parquet_partitions(tmp_path):
    """The folder path (Dask, a local cluster) gives the in-memory imputation and the same
    seeded releases; a folder written by impute is refused by release."""
    from dpknn.datasets._census import census_schema, make_census
    from dpknn.impute._distributed import parquet_partitions
    from dpknn.impute._knn import KNNImputer

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


# Issue 28, finding 1: imputation flags travel with the rows, so losing the sidecar loses nothing.
def imputed_files(tmp_path):
    df = census_files(tmp_path, n=1500)
    res = run("impute", "--schema", "schema.toml", "--input", "data.csv", "--output", "imp.csv", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    res = run("impute", "--schema", "schema.toml", "--input", "data.csv", "--output", "imp.parquet", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    return df


def test_a_copy_of_an_imputed_file_is_refused_by_release(tmp_path):
    import pyarrow.parquet as pq

    df = imputed_files(tmp_path)
    imp = pd.read_csv(tmp_path / "imp.csv")
    assert list(imp.columns) == [*df.columns, "dpknn_imputed_INCWAGE"]
    assert imp["dpknn_imputed_INCWAGE"].equals(df["INCWAGE"].isna())
    # cp imp.csv copy.csv: the JSON sidecar stays behind; a re-saved Parquet file loses its metadata.
    (tmp_path / "copy.csv").write_bytes((tmp_path / "imp.csv").read_bytes())
    pd.read_parquet(tmp_path / "imp.parquet").to_parquet(tmp_path / "copy.parquet")
    assert b"dpknn:imputed" not in (pq.read_schema(tmp_path / "copy.parquet").metadata or {})
    for copy in ("copy.csv", "copy.parquet"):
        res = run("release", "--schema", "schema.toml", "--queries", "queries.toml", "--input", copy,
                  "--output", "r.json", "--epsilon", "20", cwd=tmp_path)
        assert res.returncode == 2, res.stderr
        assert "dpknn_imputed_INCWAGE" in res.stderr and "original data" in res.stderr
    assert not (tmp_path / "r.json").exists()


def test_synth_and_impute_refuse_imputed_files(tmp_path):
    imputed_files(tmp_path)
    (tmp_path / "copy.csv").write_bytes((tmp_path / "imp.csv").read_bytes())
    (tmp_path / "a.toml").write_text(ATTRIBUTES)
    for source in ("imp.csv", "copy.csv", "imp.parquet"):
        res = run("synth", "--attributes", "a.toml", "--input", source, "--output", "s.csv", "--epsilon", "1",
                  "--rows", "5", cwd=tmp_path)
        assert res.returncode == 2 and ("dpknn_imputed_INCWAGE" in res.stderr or "written by dpknn impute"
                                        in res.stderr), res.stderr
        res = run("impute", "--schema", "schema.toml", "--input", source, "--output", "again.csv", cwd=tmp_path)
        assert res.returncode == 2 and ("dpknn_imputed_INCWAGE" in res.stderr or "written by dpknn impute"
                                        in res.stderr), res.stderr
    res = run("synth", "--attributes", "a.toml", "--input", "copy.csv", "--output", "s.csv", "--epsilon", "1",
              "--rows", "5", cwd=tmp_path)
    assert "dpknn_imputed_INCWAGE" in res.stderr
    assert not (tmp_path / "s.csv").exists() and not (tmp_path / "again.csv").exists()


@pytest.mark.parametrize("name", ["imp.csv", "imp.parquet"])
def test_process_keeps_the_flags_and_the_marker_of_an_imputed_file(tmp_path, name):
    import pyarrow.parquet as pq

    imputed_files(tmp_path)
    source = pd.read_csv(tmp_path / name) if name.endswith(".csv") else pd.read_parquet(tmp_path / name)
    (tmp_path / "steps.toml").write_text("[clamp.AGE]\nlower = 20\nupper = 60\n")
    (tmp_path / "resize.toml").write_text("[clamp.AGE]\nlower = 20\nupper = 60\n\n[resize]\nn = 1700\n"
                                          'source_column = "SRC"\n\n[impute.AGE]\nlower = 0\nupper = 99\n'
                                          "integer = true\n\n[impute.SEX]\ncategories = [1, 2]\n\n"
                                          "[impute.INCWAGE]\nlower = 0\nupper = 5001\n")
    out = "p" + Path(name).suffix
    for steps in ("steps.toml", "resize.toml"):
        res = run("process", "--input", name, "--steps", steps, "--output", out, "--seed", "2", cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        got = pd.read_csv(tmp_path / out) if out.endswith(".csv") else pd.read_parquet(tmp_path / out)
        assert "dpknn_imputed_INCWAGE" in got.columns
        if steps == "steps.toml":
            assert got["dpknn_imputed_INCWAGE"].equals(source["dpknn_imputed_INCWAGE"])
        else:
            real = got["SRC"].to_numpy() >= 0
            assert len(got) == 1700 and (~real).any()
            # Flags follow their rows; padding records have no imputed value.
            assert np.array_equal(got["dpknn_imputed_INCWAGE"].to_numpy()[real],
                                  source["dpknn_imputed_INCWAGE"].to_numpy()[got["SRC"].to_numpy()[real]])
            assert not got["dpknn_imputed_INCWAGE"].to_numpy()[~real].any()
        assert json.loads((tmp_path / (out + ".json")).read_text())["dpknn:imputed"] is True
        if out.endswith(".parquet"):
            assert b"dpknn:imputed" in pq.read_schema(tmp_path / out).metadata
        res = run("release", "--schema", "schema.toml", "--queries", "queries.toml", "--input", out,
                  "--output", "r.json", "--epsilon", "20", cwd=tmp_path)
        assert res.returncode == 2 and not (tmp_path / "r.json").exists()
        (tmp_path / out).unlink()
        (tmp_path / (out + ".json")).unlink()
    (tmp_path / "bad.toml").write_text("[clamp.dpknn_imputed_INCWAGE]\ncategories = [true, false]\n")
    res = run("process", "--input", name, "--steps", "bad.toml", "--output", out, cwd=tmp_path)
    assert res.returncode == 2 and "flag columns" in res.stderr


def test_rwn_warns_on_imputed_data_and_keeps_the_flags_only_on_purpose(tmp_path):
    df = imputed_files(tmp_path)
    imp = pd.read_csv(tmp_path / "imp.csv")
    for option in (["--columns", "AGE,INCWAGE"], ["--keep", "SEX"]):
        for keep in ([], ["--keep-flags"]):
            res = run("rwn", "--input", "imp.csv", "--output", "r.csv", "--k", "3", "--seed", "1", *option, *keep,
                      cwd=tmp_path)
            assert res.returncode == 0, res.stderr
            assert "dpknn_imputed_INCWAGE" in res.stderr and ("unchanged" if keep else "left out") in res.stderr
            got = pd.read_csv(tmp_path / "r.csv")
            flags = [c for c in imp.columns if c.startswith("dpknn_imputed_")]
            assert list(got.columns) == [c for c in imp.columns if keep or c not in flags] and len(got) == len(df)
            if keep:
                assert got["dpknn_imputed_INCWAGE"].equals(imp["dpknn_imputed_INCWAGE"])
            assert not got["INCWAGE"].equals(imp["INCWAGE"])
            (tmp_path / "r.csv").unlink()


# Issue 28, finding 7: an output inside an input folder becomes input of the next run.
def test_outputs_inside_an_input_folder_are_refused(tmp_path):
    from dpknn.datasets._census import census_schema, make_census

    (tmp_path / "in").mkdir()
    make_census(400, rng=1).to_parquet(tmp_path / "in" / "part.0.parquet")
    (tmp_path / "s.toml").write_text(census_schema().to_toml())
    (tmp_path / "q.toml").write_text('[[query]]\nname = "n"\ntype = "count"\nepsilon = 1.0\n'
                                     'method = "ignore_missing"\n')
    for extra in (["--output", "in/imp"], ["--output", "imp", "--diagnostics", "in/d.json"],
                  ["--output", "in/sub/deeper/imp"]):
        res = run("impute", "--schema", "s.toml", "--input", "in", *extra, cwd=tmp_path)
        assert res.returncode == 2 and "inside the input folder" in res.stderr, res.stderr
    res = run("release", "--schema", "s.toml", "--queries", "q.toml", "--input", "in", "--output", "in/r.json",
              "--epsilon", "1", cwd=tmp_path)
    assert res.returncode == 2 and "inside the input folder" in res.stderr
    res = run("rwn", "--input", "in", "--output", "in/rwn", "--columns", "AGE", cwd=tmp_path)
    assert res.returncode == 2 and "inside the input folder" in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "q.toml", "s.toml"]
    assert [p.name for p in (tmp_path / "in").iterdir()] == ["part.0.parquet"]


# Issue 28, finding 4: a terminated run must not leave its staged microdata beside the input.
@pytest.mark.parametrize("command", ["release", "impute"])
def test_sigterm_removes_the_temporary_microdata(tmp_path, command):
    import os
    import signal
    import time

    from dpknn.datasets._census import census_schema, make_census

    df = make_census(300_000, rng=2)
    (tmp_path / "in").mkdir()
    for i in range(4):
        df.iloc[i * 75_000:(i + 1) * 75_000].to_parquet(tmp_path / "in" / f"part.{i}.parquet")
    (tmp_path / "s.toml").write_text(census_schema().to_toml())
    (tmp_path / "q.toml").write_text('[[query]]\nname = "n"\ntype = "count"\nepsilon = 1.0\n'
                                     'method = "ignore_missing"\n')
    args = (["release", "--queries", "q.toml", "--output", "r.json", "--epsilon", "1"] if command == "release"
            else ["impute", "--output", "out"])
    proc = subprocess.Popen([sys.executable, "-m", "dpknn", *args, "--schema", "s.toml", "--input", "in"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        # Staged observed values exist once the first pass has begun.
        while not list(tmp_path.rglob("staged-*")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be interrupted; use more data"
        assert list(tmp_path.rglob("staged-*"))
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "q.toml", "s.toml"], err
    assert sorted(p.name for p in (tmp_path / "in").iterdir()) == [f"part.{i}.parquet" for i in range(4)]


def test_main_restores_the_signal_handlers_it_installs(tmp_path):
    import signal

    from dpknn.cli._main import main

    def mine(signum, frame):  # pragma: no cover - never delivered
        pass

    old = signal.signal(signal.SIGTERM, mine)
    try:
        assert main(["census", "--n", "200", "--seed", "1", "--output", str(tmp_path / "c.csv")]) == 0
        assert signal.getsignal(signal.SIGTERM) is mine
        assert main(["census", "--n", "100", "--missing-rate", "0.95", "--output", str(tmp_path / "d.csv")]) == 2
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, old)
