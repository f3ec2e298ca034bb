"""Generated invalid-value tests: every declared parameter constraint of every dpknn estimator refuses
each value its constraint names as invalid, with an error naming the parameter (as scikit-learn
checks its ``_parameter_constraints``)."""

import inspect

import pytest
from package_modules import public_modules

import dpknn
from dpknn import Continuous, Ordinal, Schema
from dpknn.utils.validation import Interval, Options, check_params, validate_params

SCHEMA = Schema(known=[Ordinal("a", 0, 9)], imputed=[Continuous("y", 0, 1)])
# One valid construction of each estimator that declares constraints.
VALID = {
    dpknn.KNNImputer: {"schema": SCHEMA},
    dpknn.RWN: {},
    dpknn.DPKMeans: {"epsilon": 1.0, "bounds": ([0.0], [1.0])},
}


def _declaring_classes():
    seen = set()
    for module in public_modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if "parameter_constraints" in vars(cls) and cls.__module__.startswith("dpknn"):
                seen.add(cls)
    return sorted(seen, key=lambda c: c.__name__)


def _cases():
    for cls in _declaring_classes():
        for name, rule in cls.parameter_constraints.items():
            for rule_ in (rule if isinstance(rule, tuple) else (rule,)):
                if rule_ is None:
                    continue
                for bad in rule_.invalid_values():
                    yield pytest.param(cls, name, bad, id=f"{cls.__name__}-{name}-{bad!r}")


def test_every_declaring_class_has_a_valid_construction():
    assert set(_declaring_classes()) == set(VALID)
    for cls, kwargs in VALID.items():
        validate_params(cls(**kwargs))


@pytest.mark.parametrize(("cls", "name", "bad"), list(_cases()))
def test_invalid_value_is_refused_by_name(cls, name, bad):
    est = cls(**VALID[cls])
    est.set_params(**{name: bad})
    with pytest.raises((TypeError, ValueError), match=name):
        validate_params(est)


def test_the_generated_test_can_fail():
    # Negative control: a constraint that accepts its own "invalid" value would not raise.
    loose = Options("yes", "no")
    loose.invalid_values = lambda: ["yes"]
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        with pytest.raises((TypeError, ValueError)):
            check_params({"flag": loose}, {"flag": loose.invalid_values()[0]})


def test_interval_text_and_conversion():
    assert repr(Interval("real", 0, 1, closed="left")) == "[0, 1)"
    assert check_params({"x": Interval("int", 2, 5, closed="both")}, {"x": 5}) == {"x": 5}
    with pytest.raises(ValueError, match=r"x must be in \[2, 5\], got 6"):
        check_params({"x": Interval("int", 2, 5, closed="both")}, {"x": 6})
