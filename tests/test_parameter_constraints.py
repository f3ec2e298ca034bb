"""Generated invalid-value tests: every declared parameter constraint of every dpknn estimator and
mechanism refuses each value its constraint names as invalid, with an error naming the parameter
(as scikit-learn checks its ``_parameter_constraints``). Estimators check in ``fit`` (here through
``validate_params``); mechanisms check when built, before anything is derived from a parameter."""

import inspect

import pytest
from package_modules import package_modules

import dpknn
from dpknn import Continuous, Ordinal, Schema, synth
from dpknn import mechanisms as mech
from dpknn.utils._validation import Interval, Options, check_params, validate_params

SCHEMA = Schema(known=[Ordinal("a", 0, 9)], imputed=[Continuous("y", 0, 1)])
ATTRS = [Ordinal("a", 0, 9), Continuous("y", 0, 1)]
# One valid construction of each estimator that declares constraints.
VALID = {
    dpknn.KNNImputer: {"schema": SCHEMA},
    dpknn.RWN: {},
    dpknn.DPKMeans: {"epsilon": 1.0, "bounds": ([0.0], [1.0])},
    mech.Laplace: {"epsilon": 1.0, "sensitivity": 1.0},
    mech.Geometric: {"epsilon": 1.0},
    mech.Gaussian: {"epsilon": 1.0, "delta": 1e-6, "sensitivity": 1.0},
    mech.DiscreteGaussian: {"rho": 0.5},
    mech.SmoothCauchy: {"epsilon": 4.0, "smooth_bound": 2.0, "grid": 0.5},
    mech.SmoothPolyPlace: {"epsilon": 2.0, "smooth_bound": 2.0, "grid": 0.5},
    mech.PermuteAndFlip: {"epsilon": 1.0, "sensitivity": 1.0},
    mech.ExponentialMechanism: {"epsilon": 1.0, "sensitivity": 1.0},
    mech.RandomizedResponse: {"epsilon": 1.0},
    synth.AIMSynthesizer: {"attributes": ATTRS, "epsilon": 1.0},
    synth.MSTSynthesizer: {"attributes": ATTRS, "epsilon": 1.0},
    synth.AutoSynthesizer: {"attributes": ATTRS, "epsilon": 1.0},
    synth.PrivBayes: {"attributes": ATTRS, "epsilon": 1.0},
    synth.ColumnwiseSynthesizer: {"attributes": ATTRS, "epsilon": 1.0},
    synth.DPMisGAN: {"attributes": ATTRS, "epsilon": 1.0},
}


def _build_and_check(cls, kwargs):
    if issubclass(cls, mech.Mechanism):
        return cls(**kwargs)
    return validate_params(cls(**kwargs))


def _declaring_classes():
    seen = set()
    for module in package_modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (getattr(cls, "parameter_constraints", None) and cls.__module__.startswith("dpknn")
                    and not inspect.isabstract(cls)):
                seen.add(cls)
    return sorted(seen, key=lambda c: c.__name__)


def _refused_by_all(rules, value):
    for rule in rules:
        try:
            rule.check(value, "x")
        except (TypeError, ValueError):
            continue
        return False
    return True


def _cases():
    for cls in _declaring_classes():
        for name, rule in cls.parameter_constraints.items():
            rules = rule if isinstance(rule, tuple) else (rule,)
            # A value invalid for one alternative of a union may be valid for another (3.5 is no
            # option name but a valid number): only values every alternative refuses are cases.
            for bad in (v for r in rules if r is not None for v in r.invalid_values()):
                if _refused_by_all([r for r in rules if r is not None], bad):
                    # An id without a memory address, so that every worker of pytest -n collects the same tests.
                    shown = f"{type(bad).__name__}-instance" if " at 0x" in repr(bad) else repr(bad)
                    yield pytest.param(cls, name, bad, id=f"{cls.__name__}-{name}-{shown}")


def test_every_declaring_class_has_a_valid_construction():
    assert set(_declaring_classes()) == set(VALID)
    for cls, kwargs in VALID.items():
        _build_and_check(cls, kwargs)


@pytest.mark.parametrize(("cls", "name", "bad"), list(_cases()))
def test_invalid_value_is_refused_by_name(cls, name, bad):
    with pytest.raises((TypeError, ValueError), match=name):
        _build_and_check(cls, {**VALID[cls], name: bad})


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


def test_synthesizers_declare_fit_and_sample():
    """Issue 49, finding 4: the base declares ``fit`` and ``sample``; a subclass without them cannot be built."""
    import inspect as inspect_

    from dpknn.synth import Synthesizer

    assert inspect_.isabstract(Synthesizer)

    class Half(Synthesizer):
        def fit(self, X, y=None, *, accountant=None):
            return self

    with pytest.raises(TypeError, match="abstract"):
        Half()
    for cls in (synth.AIMSynthesizer, synth.MSTSynthesizer, synth.AutoSynthesizer, synth.PrivBayes,
                synth.ColumnwiseSynthesizer, synth.DPMisGAN):
        assert not inspect_.isabstract(cls) and cls.parameter_constraints


def test_fit_checks_the_declared_constraints_before_the_accountant():
    import pandas as pd

    from dpknn import BudgetAccountant

    acc = BudgetAccountant(1.0)
    df = pd.DataFrame({"a": [1, 2, 3], "y": [0.1, 0.5, 0.9]})
    with pytest.raises(ValueError, match="rank_share"):
        synth.MSTSynthesizer(ATTRS, epsilon=1.0, rank_share=1.5).fit(df, accountant=acc)
    assert acc.spent()[0] == 0


def test_one_accountant_rule_for_every_fit_whose_cost_its_parameters_fix():
    """Issue 49, finding 4: each synthesiser and DP k-means charges the caller's accountant, or with None a new
    one holding exactly its cost, kept as ``accountant_`` (dpknn.accounting.charge); anything else is refused
    before a record is read; PrivateImputation, whose cost is not fixed, requires one."""
    import numpy as np
    import pandas as pd

    from dpknn import BudgetAccountant, BudgetExceededError, PrivateImputation

    df = pd.DataFrame({"a": np.arange(60) % 10, "y": np.linspace(0, 1, 60)})
    fits = [(cls, dict(VALID[cls]), df) for cls in (synth.AIMSynthesizer, synth.MSTSynthesizer,
                                                    synth.AutoSynthesizer, synth.PrivBayes,
                                                    synth.ColumnwiseSynthesizer)]
    fits.append((dpknn.DPKMeans, {**VALID[dpknn.DPKMeans], "n_clusters": 2}, df[["y"]].to_numpy()))
    for cls, kwargs, data in fits:
        own = cls(**kwargs, rng=0).fit(data)
        (entry,) = own.accountant_.ledger
        assert own.accountant_.epsilon == entry.epsilon == pytest.approx(1.0), cls
        assert own.accountant_.remaining()[0] == pytest.approx(0.0, abs=1e-12), cls
        given = BudgetAccountant(5.0, 1e-6)
        assert cls(**kwargs, rng=0).fit(data, accountant=given).accountant_ is given and len(given.ledger) == 1
        with pytest.raises(TypeError, match="BudgetAccountant"):
            cls(**kwargs, rng=0).fit(data, accountant=5.0)
        small = BudgetAccountant(0.5, 1e-6)
        with pytest.raises(BudgetExceededError):
            cls(**kwargs, rng=0).fit(data, accountant=small)
        assert small.ledger == ()
    with pytest.raises(TypeError, match="BudgetAccountant"):
        PrivateImputation(df, SCHEMA, accountant=None)
