"""The command line's shared helpers (``dpknn.cli._common``), the experiment and RWN commands' parsers
(``dpknn.cli._experiments``, ``dpknn.cli._sdc``) and the optional-dependency import (``dpknn.utils._extras``),
tested by name: a command's defaults are the library's, so that ``dpknn demo`` and ``run_demo()`` do the same."""

import argparse
import inspect
import json
import math
from pathlib import Path

import numpy as np
import pytest

from dpknn.cli import build_parser
from dpknn.cli._common import AGENCY_INPUT, CLIError, comma_list, named_values, to_json
from dpknn.cli._experiments import add_demo_parser, add_experiment_parser
from dpknn.cli._sdc import add_rwn_parser
from dpknn.experiments import run_amplification_experiment, run_census_experiment, run_demo, run_synthesis_experiment
from dpknn.mechanisms import PublishedRecord
from dpknn.sdc import RWN
from dpknn.utils._extras import require


def _parser(*adders):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    for add in adders:
        add(sub)
    return parser


def _defaults(function):
    return {name: p.default for name, p in inspect.signature(function).parameters.items()}


def test_the_experiment_commands_default_to_the_library_defaults():
    parser = _parser(add_demo_parser, add_experiment_parser)
    for argv, function, names in (
            (["demo"], run_demo, ("n", "k", "epsilon", "count_epsilon")),
            (["experiment", "census"], run_census_experiment,
             ("runs", "n", "population", "k", "epsilon", "count_epsilon", "jobs")),
            (["experiment", "amplification"], run_amplification_experiment, ("epsilon",)),
            (["experiment", "synthesis"], run_synthesis_experiment, ("n", "runs", "epsilon", "gan_epochs"))):
        given, library = vars(parser.parse_args(argv)), _defaults(function)
        assert {n: given[n] for n in names} == {n: library[n] for n in names}, argv
        assert given["out"] == Path(library["out"])
    amplification = vars(parser.parse_args(["experiment", "amplification"]))
    assert tuple(map(float, comma_list(amplification["rates"]))) == _defaults(run_amplification_experiment)["rates"]
    synthesis = vars(parser.parse_args(["experiment", "synthesis"]))
    library = _defaults(run_synthesis_experiment)
    assert tuple(map(float, comma_list(synthesis["rates"]))) == library["rates"]
    assert tuple(comma_list(synthesis["mechanisms"])) == library["mechanisms"]
    assert math.isclose(vars(parser.parse_args(["demo"]))["epsilon"], 6 * math.log(2))


def test_the_rwn_command_defaults_to_the_estimators():
    args = vars(_parser(add_rwn_parser).parse_args(["rwn", "--input", "in.csv", "--output", "out.csv", "--keep",
                                                    "id"]))
    estimator = RWN().get_params()
    assert {n: args[n] for n in ("k", "radius", "q", "method", "m", "partitions")} == {
        n: estimator[n] for n in ("k", "radius", "q", "method", "m", "partitions")}


def test_every_command_that_reads_an_input_names_the_agency_files(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")   # one line per option: the help text as written
    commands = build_parser().commands.choices
    for name in ("impute", "release", "synth", "process", "rwn"):
        line = next(x for x in commands[name].format_help().splitlines() if x.strip().startswith("--input"))
        assert AGENCY_INPUT in line, name
    assert AGENCY_INPUT.endswith("with --codebook")


def test_comma_lists_and_named_values():
    assert comma_list(" a, b ,,c,") == ["a", "b", "c"] and comma_list("") == []
    assert named_values("wage=0.2, age=0.1", "--mcar-rates", float, value="RATE", example="wage=0.2") == {
        "wage": 0.2, "age": 0.1}
    for text, message in (("", "is empty"), ("wage", "NAME=RATE pairs"), ("wage=x", "NAME=RATE pairs"),
                          ("=0.2", "NAME=RATE pairs"), ("wage=0.2,wage=0.3", "names 'wage' twice")):
        with pytest.raises(CLIError, match=message):
            named_values(text, "--mcar-rates", float, value="RATE", example="wage=0.2")


def test_the_commands_write_through_the_one_strict_serialiser():
    record = PublishedRecord(epsilon=1.0, delta=0.0, params={"x": np.int64(3), "label": "AGE ≥ 16"})
    text = to_json(record)
    assert json.loads(text)["x"] == 3 and "AGE ≥ 16" in text            # numpy converted; UTF-8 as written
    assert "\\u2265" in to_json(record, ascii_only=True)                  # the synthesis sidecar's escaping
    with pytest.raises(ValueError):
        to_json({"value": math.nan})
    with pytest.raises(TypeError):
        to_json({"value": object()})


def test_an_optional_dependency_is_imported_or_named_with_its_extra():
    assert require("json", "plot", "the report") is json
    with pytest.raises(ImportError, match=r"the report needs no_such_module_xyz: pip install 'dpknn\[plot\]'"):
        require("no_such_module_xyz.sub", "plot", "the report")
