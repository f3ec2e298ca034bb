import numpy as np
import pytest

from dpknn import check_rng
from dpknn.utils._validation import check_positive_int, check_positive_int_or_auto, check_positive_real


def test_check_rng_passes_generator_through():
    g = np.random.default_rng(3)
    assert check_rng(g) is g


def test_check_rng_seed_is_reproducible():
    assert check_rng(7).random() == check_rng(7).random()
    assert isinstance(check_rng(None), np.random.Generator)


@pytest.mark.parametrize(("bad", "exc"), [(np.random.RandomState(0), TypeError), ("1", TypeError),
                                          (1.0, TypeError), (True, TypeError), (-1, ValueError)])
def test_check_rng_rejects(bad, exc):
    with pytest.raises(exc, match="rng"):
        check_rng(bad)


def test_positive_int_and_finite_real():
    assert check_positive_int(3, "k") == 3
    with pytest.raises(ValueError, match="k must be an integer >= 1, got 0"):
        check_positive_int(0, "k")
    with pytest.raises(TypeError, match="k must be an integer, got the float 2.0"):
        check_positive_int(2.0, "k")
    with pytest.raises(TypeError, match="k must be an integer, got bool True"):
        check_positive_int(True, "k")
    assert check_positive_int_or_auto("auto", "k", auto="ten") == "auto"
    assert check_positive_int_or_auto(np.int64(7), "k", auto="ten") == 7
    with pytest.raises(ValueError, match=r"k must be an integer >= 1, got 0\. Or 'auto': ten\."):
        check_positive_int_or_auto(0, "k", auto="ten")
    with pytest.raises(TypeError, match="got str 'AUTO'. Or 'auto': ten"):
        check_positive_int_or_auto("AUTO", "k", auto="ten")
    assert check_positive_real(2, "eps") == 2.0
    with pytest.raises(ValueError, match="eps must be a finite number > 0"):
        check_positive_real(float("inf"), "eps")
    with pytest.raises(ValueError, match="eps must be a finite number > 0, got 0.0"):
        check_positive_real(0, "eps")
    with pytest.raises(TypeError, match="eps must be a real number"):
        check_positive_real("1", "eps")
    assert check_positive_real(0, "w", allow_zero=True) == 0.0
    with pytest.raises(ValueError, match="w must be a finite number >= 0, got -0.1"):
        check_positive_real(-0.1, "w", allow_zero=True)
    with pytest.raises(ValueError, match="w must be a finite number >= 0"):
        check_positive_real(float("nan"), "w", allow_zero=True)


def test_check_keys_names_the_table_the_unknown_keys_and_the_allowed_ones():
    from dpknn.utils._validation import check_keys

    check_keys({"a": 1}, {"a", "b"}, "table t")
    check_keys({}, {"a"}, "table t")
    with pytest.raises(ValueError, match=r"table t has unknown keys \['c'\]; its keys are \['a', 'b'\]\."):
        check_keys({"a": 1, "c": 2}, {"a", "b"}, "table t")
    with pytest.raises(ValueError, match=r"t has unknown tables \['x'\]; use \[\[y\]\]\."):
        check_keys({"x": 1}, {"y"}, "t", hint="use [[y]]", noun="tables")


SCHEMA_TOML = '[[known]]\nname = "a"\ntype = "categorical"\ncategories = [0, 1]\n\n' \
              '[[imputed]]\nname = "y"\ntype = "ordinal"\nlower = 0\nupper = 9\n'


@pytest.mark.parametrize(("text", "reader"), [
    (SCHEMA_TOML + 'colour = "red"\n', "schema"),
    (SCHEMA_TOML.replace('upper = 9\n', 'upper = 9\ncolour = "red"\n'), "schema"),
    ('[[attribute]]\nname = "a"\ntype = "categorical"\ncategories = [0, 1]\ncolour = "red"\n', "attributes"),
    ('colour = "red"\n[[attribute]]\nname = "a"\ntype = "categorical"\ncategories = [0, 1]\n', "attributes"),
    ('[[query]]\nname = "q"\ntype = "count"\nepsilon = 1.0\ncolour = "red"\n', "queries"),
    ('[[query]]\nname = "q"\ntype = "count"\nepsilon = 1.0\nwhere = { a = { low = 0, colour = 1 } }\n', "queries"),
    ('[clamp.a]\nlower = 0\nupper = 1\ncolour = "red"\n', "plan"),
    ('[resize]\nn = 10\ncolour = "red"\n', "plan"),
])
def test_every_toml_reader_refuses_an_unknown_key(tmp_path, text, reader):
    # One reader of TOML tables (check_keys) behind every file format: a misspelt key fails
    # loudly with its name, in every table of every file.
    from dpknn import Schema
    from dpknn.processing._pipeline import ProcessingPlan
    from dpknn.releases import read_queries
    from dpknn.schema._discretization import read_attributes

    path = tmp_path / "f.toml"
    path.write_text(text)
    schema = Schema.from_file(_write(tmp_path / "s.toml", SCHEMA_TOML))
    read = {"schema": Schema.from_file, "attributes": read_attributes, "queries": lambda p: read_queries(p, schema),
            "plan": ProcessingPlan.from_file}[reader]
    with pytest.raises(ValueError, match=r"unknown (keys|tables) \['colour'\]"):
        read(path)


def _write(path, text):
    path.write_text(text)
    return path
