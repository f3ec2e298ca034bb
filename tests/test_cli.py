import json
import subprocess
import sys
import tempfile

import pandas as pd


def run(*args, cwd=None):
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
