"""The command line at its edges (issue 28, findings 6 and 11): outputs named for what they hold,
refusals instead of silent or wrong results, help text that says what exists, and one-line
errors only for the user's own mistakes."""

import json

import numpy as np
import pandas as pd
import pytest
from test_cli import census_files

import dpknn.datasets._census
from dpknn.cli._main import build_parser, main
from dpknn.exceptions import WorkLimitError


def test_release_refuses_an_output_not_named_json_before_any_work(tmp_path, capsys):
    census_files(tmp_path)
    # The queries file does not exist: the name is refused before anything is read.
    rc = main(["release", "--schema", str(tmp_path / "schema.toml"), "--queries", str(tmp_path / "none.toml"),
               "--input", str(tmp_path / "data.csv"), "--output", str(tmp_path / "r.csv"), "--epsilon", "20"])
    err = capsys.readouterr().err
    assert rc == 2 and "release writes JSON, so its name must end in .json" in err and "r.json" in err
    assert not (tmp_path / "r.csv").exists()


def test_process_refuses_categories_of_another_type_than_the_column(tmp_path, capsys):
    pd.DataFrame({"AGE": [20, np.nan, 40], "SEX": ["f", None, "m"]}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "steps.toml").write_text('[impute.AGE]\ncategories = ["young", "old"]\n')
    rc = main(["process", "--input", str(tmp_path / "d.csv"), "--steps", str(tmp_path / "steps.toml"),
               "--output", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and "column 'AGE' holds numbers" in err and "['young', 'old']" in err
    assert not (tmp_path / "o.csv").exists()
    # Categories of the column's type still work, and text categories on a text column.
    (tmp_path / "steps.toml").write_text('[impute.AGE]\ncategories = [20, 40]\n\n[impute.SEX]\ncategories = ["f", '
                                         '"m"]\n')
    rc = main(["process", "--input", str(tmp_path / "d.csv"), "--steps", str(tmp_path / "steps.toml"),
               "--output", str(tmp_path / "o.csv"), "--seed", "0"])
    out = pd.read_csv(tmp_path / "o.csv")
    assert rc == 0 and set(out["AGE"]) <= {20, 40} and set(out["SEX"]) <= {"f", "m"}


def _evaluate_files(tmp_path):
    real = pd.DataFrame({"id": np.arange(60), "age": np.arange(60) % 50 + 20})
    real.to_csv(tmp_path / "real.csv", index=False)
    real.to_csv(tmp_path / "rel.csv", index=False)
    (tmp_path / "a.toml").write_text('[[attribute]]\nname = "age"\ntype = "ordinal"\nlower = 18\nupper = 90\n')
    return real


@pytest.mark.parametrize("label,real_ids,message", [
    ("idd", None, "label='idd' is not a column of the real table"),
    ("id", [0, 0, *range(2, 60)], "label='id': the real table's record labels are not unique"),
])
def test_evaluate_refuses_a_label_it_cannot_link_by(tmp_path, capsys, label, real_ids, message):
    real = _evaluate_files(tmp_path)
    if real_ids is not None:
        real.assign(id=real_ids).to_csv(tmp_path / "real.csv", index=False)
    rc = main(["evaluate", "--real", str(tmp_path / "real.csv"), "--released", str(tmp_path / "rel.csv"),
               "--attributes", str(tmp_path / "a.toml"), "--out", str(tmp_path / "rep"), "--label", label])
    assert rc == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "rep" / "evaluation.json").exists()


def test_schema_gives_the_true_reason_when_the_gappy_column_has_no_observed_value(tmp_path, capsys):
    pd.DataFrame({"AGE": np.arange(60) % 40, "SEX": ["f", "m"] * 30, "WAGE": [np.nan] * 60}).to_csv(
        tmp_path / "d.csv", index=False)
    rc = main(["schema", "--input", str(tmp_path / "d.csv"), "--output", str(tmp_path / "s.toml")])
    err = capsys.readouterr().err
    assert rc == 2 and "WAGE: no observed value" in err and "no column has missing values" not in err


def test_experiment_census_validates_its_counts_up_front(tmp_path, capsys):
    for flag in ("--runs", "--n", "--population", "--k", "--jobs"):
        rc = main(["experiment", "census", flag, "0", "--out", str(tmp_path / "x"), "--quiet"])
        assert rc == 2 and f"{flag} must be" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    from dpknn.experiments._census import run_experiment

    with pytest.raises(ValueError, match="runs must be an integer >= 1, got 0"):
        run_experiment(runs=0, n=10, population=100)


def _parsers(parser, path="dpknn"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action.choices, dict):   # the sub-commands
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_help_texts_print_as_written_and_say_what_the_sidecar_holds(capsys):
    # argparse %-formats argument help but prints descriptions as they are.
    for path, parser in _parsers(build_parser()):
        assert "%%" not in parser.format_help(), path
    with pytest.raises(SystemExit):
        main(["impute", "--help"])
    assert "90% intervals" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--help"])
    top = " ".join(capsys.readouterr().out.split())
    assert "sidecar with L1(D)" not in top and "L1(D) only to --diagnostics" in top


def _raising(exc):
    def boom(*args, **kwargs):
        raise exc
    return boom


@pytest.mark.parametrize("exc", [ValueError("bad value"), OSError("no such file"), WorkLimitError("too much work"),
                                 ImportError("plots need matplotlib: pip install 'dpknn[plot]'"),
                                 ModuleNotFoundError("No module named 'pyarrow'", name="pyarrow")])
def test_user_errors_are_one_line_and_their_traceback_shows_with_verbose(monkeypatch, capsys, exc):
    monkeypatch.setattr(dpknn.datasets._census, "make_census", _raising(exc))
    assert main(["census", "--n", "10"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dpknn census: error: ") and str(exc) in err
    if isinstance(exc, ModuleNotFoundError):
        assert "pip install 'dpknn[parquet]'" in err
    assert main(["-v", "census", "--n", "10"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.rstrip().splitlines()[-1].startswith("dpknn census: error: ")


@pytest.mark.parametrize("exc", [TypeError("unsupported operand"), KeyError("query"), RuntimeError("bug"),
                                 ImportError("cannot import name 'x' from 'dpknn.y'")])
def test_library_bugs_keep_their_traceback(monkeypatch, exc):
    monkeypatch.setattr(dpknn.datasets._census, "make_census", _raising(exc))
    with pytest.raises(type(exc)):
        main(["census", "--n", "10"])


def test_rwn_partitioned_without_partitions_is_one_line(tmp_path, capsys):
    pd.DataFrame({"a": np.arange(40.0), "b": np.arange(40.0) % 3}).to_csv(tmp_path / "d.csv", index=False)
    rc = main(["rwn", "--input", str(tmp_path / "d.csv"), "--output", str(tmp_path / "o.csv"), "--columns", "a,b",
               "--method", "partitioned"])
    err = capsys.readouterr().err
    assert rc == 2 and "needs --partitions" in err and "Traceback" not in err


def test_a_smooth_budget_too_small_is_refused_before_the_data_are_read(tmp_path, capsys):
    census_files(tmp_path)
    (tmp_path / "q.toml").write_text(
        '[[query]]\nname = "a"\ntype = "count"\nwhere = { INCWAGE = { low = 1 } }\nepsilon = 1.0\n\n'
        '[[query]]\nname = "b"\ntype = "mean"\ncolumn = "INCWAGE"\nepsilon = 0.6\ncount_epsilon = 1.0\n')
    # The input does not exist: the query is refused first, by name, with the fix in the file's syntax.
    rc = main(["release", "--schema", str(tmp_path / "schema.toml"), "--queries", str(tmp_path / "q.toml"),
               "--input", str(tmp_path / "none.csv"), "--output", str(tmp_path / "r.json"), "--epsilon", "20"])
    err = capsys.readouterr().err
    assert rc == 2 and "query 'b': epsilon = 0.6 is too small" in err and 'method = "ignore_missing"' in err
    (tmp_path / "q.toml").write_text(
        '[[query]]\nname = "c"\ntype = "count"\nwhere = { INCWAGE = { low = 1 } }\nepsilon = 1.0\nnoise = "cauchy"\n')
    rc = main(["release", "--schema", str(tmp_path / "schema.toml"), "--queries", str(tmp_path / "q.toml"),
               "--input", str(tmp_path / "none.csv"), "--output", str(tmp_path / "r.json"), "--epsilon", "20"])
    err = capsys.readouterr().err
    assert rc == 2 and "query 'c'" in err and "2 ln 2" in err and "default PolyPlace" in err


def test_warnings_print_once_on_one_line(tmp_path, capsys):
    df = pd.DataFrame({"x": np.arange(200.0), "g": pd.Series(["a", "b"] * 100)})
    df.to_csv(tmp_path / "d.csv", index=False)
    rc = main(["rwn", "--input", str(tmp_path / "d.csv"), "--output", str(tmp_path / "o.csv"), "--columns", "x,g",
               "--seed", "1"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "column 'g'" in line]
    assert rc == 0 and len(lines) == 1 and lines[0].startswith("dpknn rwn: warning: RWN changed")
    assert ".py:" not in err and "UserWarning" not in err


def test_a_signal_during_cleanup_waits_for_it(tmp_path):
    # Issue 28 review: a SIGTERM arriving while a temporary folder is removed must not stop the removal
    # halfway; the command line's handler ends the run once the folder is gone.
    import os
    import signal

    from dpknn.cli._main import Terminated, _cleanup_on_termination
    from dpknn.utils._io import remove_tree

    folder = tmp_path / "staging"
    for i in range(200):
        (folder / f"d{i}").mkdir(parents=True)
        (folder / f"d{i}" / "x.npy").write_bytes(b"0" * 100)
    real, calls = os.unlink, []

    def unlink(path, *args, **kwargs):   # the signal arrives in the middle of the removal
        calls.append(path)
        if len(calls) == 100:
            os.kill(os.getpid(), signal.SIGTERM)
        return real(path, *args, **kwargs)

    os.unlink = unlink
    try:
        with pytest.raises(Terminated), _cleanup_on_termination():
            remove_tree(folder)
    finally:
        os.unlink = real
    assert len(calls) == 200 and not folder.exists()


def test_a_category_spelt_like_a_missing_value_stays_a_value(tmp_path, capsys):
    # pandas' default NA strings would read the regions "NA" (North America) and "None" as gaps and
    # impute them away; only an empty field is a gap unless --na-values says otherwise.
    (tmp_path / "d.csv").write_text("REGION,AGE\nNA,30\nNone,31\nEU,\n,40\n")
    (tmp_path / "steps.toml").write_text('[impute.REGION]\ncategories = ["EU"]\n\n[impute.AGE]\ncategories = [50]\n')
    args = ["process", "--input", str(tmp_path / "d.csv"), "--steps", str(tmp_path / "steps.toml"), "--seed", "0"]
    assert main([*args, "--output", str(tmp_path / "o.csv")]) == 0
    out = pd.read_csv(tmp_path / "o.csv", keep_default_na=False)
    assert out["REGION"].tolist() == ["NA", "None", "EU", "EU"] and out["AGE"].tolist() == [30, 31, 50, 40]
    # Files written by R spell a gap NA: declared, those are gaps (and empty fields stay gaps).
    assert main([*args, "--output", str(tmp_path / "r.csv"), "--na-values", "NA"]) == 0
    out = pd.read_csv(tmp_path / "r.csv", keep_default_na=False)
    assert out["REGION"].tolist() == ["EU", "None", "EU", "EU"]


def test_a_numeric_column_spelt_with_na_names_the_option(tmp_path, capsys):
    (tmp_path / "d.csv").write_text("AGE\n30\nNA\n41\n")
    (tmp_path / "a.toml").write_text('[[attribute]]\nname = "AGE"\ntype = "ordinal"\nlower = 0\nupper = 99\n')
    args = ["synth", "--attributes", str(tmp_path / "a.toml"), "--input", str(tmp_path / "d.csv"), "--epsilon", "1",
            "--rows", "5", "--output", str(tmp_path / "o.csv"), "--seed", "0"]
    assert main(args) == 2 and "--na-values NA on the command line" in capsys.readouterr().err
    assert main([*args, "--na-values", "NA"]) == 0


def test_csv_columns_are_read_with_the_declared_types(tmp_path, capsys):
    """Issue 47, finding 6: a coded column declared with text categories ("9", "10", ...) whose file holds only
    numbers (a synthetic file in which a category did not occur) reads back as the declared text, in every
    command; in Python the refusal says that the types differ."""
    from dpknn import Categorical
    from dpknn.schema import Discretization

    rng = np.random.default_rng(0)
    codes = ["9", "10", "11", "x"]
    real = pd.DataFrame({"occ": rng.choice(codes, 300), "age": rng.integers(20, 70, 300)})
    released = real.assign(occ=rng.choice(["9", "10", "11"], 300))   # no "x": the CSV reads as integers
    real.to_csv(tmp_path / "real.csv", index=False)
    released.to_csv(tmp_path / "rel.csv", index=False)
    assert pd.read_csv(tmp_path / "rel.csv").occ.dtype.kind == "i"
    (tmp_path / "a.toml").write_text('[[attribute]]\nname = "occ"\ntype = "categorical"\ncategories = ["9", "10", '
                                     '"11", "x"]\n[[attribute]]\nname = "age"\ntype = "ordinal"\nlower = 18\n'
                                     'upper = 90\n')
    rc = main(["evaluate", "--real", str(tmp_path / "real.csv"), "--released", str(tmp_path / "rel.csv"),
               "--attributes", str(tmp_path / "a.toml"), "--out", str(tmp_path / "rep"), "--seed", "0"])
    assert rc == 0, capsys.readouterr().err
    rc = main(["synth", "--attributes", str(tmp_path / "a.toml"), "--input", str(tmp_path / "rel.csv"),
               "--output", str(tmp_path / "syn.csv"), "--epsilon", "2", "--rows", "100", "--seed", "1",
               "--method", "mst"])
    assert rc == 0, capsys.readouterr().err
    # In Python, a frame read without the declared types is refused with the reason.
    with pytest.raises(ValueError, match="holds numbers and the categories are text"):
        Discretization([Categorical("occ", codes)], 10).encode(pd.read_csv(tmp_path / "rel.csv"))


def test_synth_from_a_schema_never_gives_known_attributes_gaps_and_notes_come_first(tmp_path, capsys, monkeypatch,
                                                                                      caplog):
    """Issue 47, finding 7: with a schema file the known attributes are complete by declaration, so no
    synthetic gap is drawn in them (default method and PrivBayes with missingness as a value); the note about
    gaps comes before the work, not after a long run; and --seed is warned about and marked in the sidecar
    (finding 10)."""
    from dpknn.datasets._census import census_schema, make_census

    df = make_census(3000, rng=3)[["AGE", "SEX", "SCHOOL", "INCWAGE"]]
    schema = census_schema()
    known = ["AGE", "SEX", "SCHOOL"]
    small = schema.__class__(known=[schema.attribute(n) for n in known], imputed=[schema.attribute("INCWAGE")])
    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.toml").write_text(small.to_toml())
    for method in ("auto", "privbayes-value"):
        rc = main(["synth", "--attributes", str(tmp_path / "s.toml"), "--input", str(tmp_path / "d.csv"), "--output",
                   str(tmp_path / f"{method}.csv"), "--epsilon", "0.5", "--rows", "3000", "--method", method,
                   "--seed", "4"])
        err = capsys.readouterr().err
        assert rc == 0, err
        # The known attributes' status is said before the work (a new user had not known why gaps were refused).
        assert f"s.toml is a schema file: its known attributes ({', '.join(known)}) are taken as complete" in err
        out = pd.read_csv(tmp_path / f"{method}.csv")
        assert out[known].notna().all().all(), method
        assert out["INCWAGE"].isna().any(), method      # the imputed attribute keeps its gaps
        side = json.loads((tmp_path / f"{method}.csv.json").read_text())
        assert side["seeded"] is True and "not for publication" in side["seeded_note"]
        assert any("--seed makes the noise reproducible" in r.message for r in caplog.records)
        caplog.clear()
    # Without a schema or --never-missing the note comes, and before the fit runs.
    (tmp_path / "a.toml").write_text('[[attribute]]\nname = "AGE"\ntype = "ordinal"\nlower = 0\nupper = 99\n')
    import dpknn.synth

    def refuse(self, X, y=None, **kw):
        raise ValueError("stopped in fit")

    monkeypatch.setattr(dpknn.synth.AutoSynthesizer, "fit", refuse)
    capsys.readouterr()
    rc = main(["synth", "--attributes", str(tmp_path / "a.toml"), "--input", str(tmp_path / "d.csv"), "--output",
               str(tmp_path / "o.csv"), "--epsilon", "1", "--rows", "10"])
    err = capsys.readouterr().err
    assert rc == 2 and "stopped in fit" in err
    assert "note: every attribute may get synthetic gaps" in err and err.index("note:") < err.index("stopped in fit")


@pytest.mark.parametrize("epsilon,ok", [("1e308", False), ("1e-8", True)])
def test_synth_at_extreme_budgets_ends_with_a_result_or_a_named_refusal(tmp_path, capsys, epsilon, ok):
    """Issue 47, finding 10: --epsilon 1e-8 hung in the zCDP conversion and 1e308 ended in a bare
    OverflowError."""
    from dpknn.datasets._census import make_census

    make_census(500, rng=2)[["AGE", "SEX"]].to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "a.toml").write_text('[[attribute]]\nname = "AGE"\ntype = "ordinal"\nlower = 0\nupper = 99\n'
                                     '[[attribute]]\nname = "SEX"\ntype = "categorical"\ncategories = [1, 2]\n')
    rc = main(["synth", "--attributes", str(tmp_path / "a.toml"), "--input", str(tmp_path / "d.csv"), "--output",
               str(tmp_path / "o.csv"), "--epsilon", epsilon, "--rows", "50", "--never-missing", "AGE,SEX"])
    err = capsys.readouterr().err
    if ok:
        assert rc == 0 and len(pd.read_csv(tmp_path / "o.csv")) == 50
    else:
        assert rc == 2 and "epsilon=1e+308 is more than 1e+06" in err and "Traceback" not in err


@pytest.mark.parametrize("argv,message", [
    (["release", "--shema", "s.toml", "--queries", "q.toml", "--input", "d.csv", "--output", "r.json", "--epsilon",
      "1"], "unrecognised option --shema (did you mean --schema?)"),
    (["synth", "--attributes", "a.toml", "--input", "d.csv", "--output", "o.csv", "--epsilon", "1", "--row", "10"],
     "unrecognised option --row (did you mean --rows? options are taken only as spelt in full)"),
    (["synth", "--attributes", "a.toml", "--input", "d.csv", "--output", "o.csv", "--eps", "1", "--rows", "10"],
     "unrecognised option --eps (did you mean --epsilon?"),
    (["experiment", "census", "--runs", "2", "--jbs", "2"],
     "dpknn experiment census: error: unrecognised option --jbs"),
])
def test_options_are_taken_only_as_spelt_and_unknown_ones_are_named(argv, message, capsys):
    """Issue 47, finding 9: --shema was reported as "--schema required", --row was silently taken for --rows
    (prefix matching also took any prefix of a privacy option); now nothing runs and the option is named."""
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):   # argparse itself no longer expands a prefix
        build_parser().parse_args(argv)


def test_an_r_file_na_in_a_coded_column_names_the_option(tmp_path, capsys):
    """Issue 47, finding 9: an R file's NA cells in a categorical column named no fix."""
    pd.DataFrame({"SEX": ["1", "2", "NA", "1"] * 10}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "a.toml").write_text('[[attribute]]\nname = "SEX"\ntype = "categorical"\ncategories = [1, 2]\n')
    args = ["synth", "--attributes", str(tmp_path / "a.toml"), "--input", str(tmp_path / "d.csv"), "--output",
            str(tmp_path / "o.csv"), "--epsilon", "1", "--rows", "5"]
    assert main(args) == 2 and "--na-values NA" in capsys.readouterr().err
    assert main([*args, "--na-values", "NA"]) == 0


def test_progress_is_on_on_a_terminal_and_counts_are_whole(monkeypatch, capsys):
    """Issue 47, finding 8: synth and evaluate ran for minutes with no output, and AIM's bar printed
    "69.44444444444446/100". Long commands show progress by default when stderr is a terminal (off when piped,
    --no-progress switches it off), evaluate and release have bars too, and counts print as whole numbers."""
    import io
    import sys

    from dpknn.utils._progress import progress_bar

    buf = io.StringIO()
    monkeypatch.setattr(sys, "stderr", buf)
    bar = progress_bar(total=100, progress=True, desc="AIM", unit="% of rho")
    bar.update(69.44444444444446)
    bar.refresh()
    assert "69/100 % of rho" in buf.getvalue() and "69.444" not in buf.getvalue()
    seen = {}

    def record(args):
        seen[args.command] = args.progress
        return 0

    parser = build_parser()
    for command in ("synth", "evaluate", "impute", "release", "rwn"):
        sub = next(a for a in parser._actions if hasattr(a, "choices") and a.choices)
        assert "--no-progress" in {o for a in sub.choices[command]._actions for o in a.option_strings}, command
    cli_main = sys.modules["dpknn.cli._main"]
    argv = ["evaluate", "--real", "r.csv", "--released", "s.csv", "--attributes", "a.toml", "--out", "o"]
    for tty, extra, expected in ((True, [], True), (False, [], False), (True, ["--no-progress"], False),
                                 (False, ["--progress"], True)):
        monkeypatch.setattr(buf, "isatty", lambda tty=tty: tty, raising=False)
        monkeypatch.setattr(cli_main, "build_parser", lambda: _with_func(record))
        assert main([*argv, *extra]) == 0
        assert seen["evaluate"] is expected, (tty, extra)


def _with_func(func):
    parser = build_parser()
    sub = next(a for a in parser._actions if hasattr(a, "choices") and a.choices)
    sub.choices["evaluate"].set_defaults(func=func)
    return parser


def test_each_synth_option_sets_a_parameter_an_estimator_declares():
    """Issue 49: ``dpknn synth`` keeps no table of options by method; each option names the estimator parameter
    it sets, and applies where the method's estimator has it. A renamed parameter would leave its option
    applying nowhere: caught here."""
    import inspect

    from dpknn import synth
    from dpknn.cli._synth import OPTION_PARAMETERS

    estimators = (synth.AutoSynthesizer, synth.AIMSynthesizer, synth.MSTSynthesizer, synth.PrivBayes,
                  synth.ColumnwiseSynthesizer, synth.DPMisGAN)
    declared = set()
    for cls in estimators:
        declared |= set(inspect.signature(cls).parameters)
        declared |= {f"sample.{p}" for p in inspect.signature(cls.sample).parameters}
    assert {parameter for _, parameter in OPTION_PARAMETERS.values()} <= declared
