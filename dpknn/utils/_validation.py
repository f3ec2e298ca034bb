"""Validation helpers used at the public entry points.

Messages name the parameter and show the offending value, in the style of scikit-learn. Estimators
and mechanisms declare their parameters' constraints (:class:`Interval`, :class:`Options`,
:class:`InstanceOf`, :class:`Boolean`) in a ``parameter_constraints`` mapping, checked by
:func:`validate_params` in one place, as scikit-learn's ``_parameter_constraints``; every
constraint can name values that break it (:meth:`Constraint.invalid_values`), so the test suite
generates an invalid-value test for each declared parameter.
"""

import abc
import math
import numbers

import numpy as np

__all__ = ["Boolean", "Constraint", "InstanceOf", "Interval", "Options", "check_is_fitted",
           "check_params", "check_positive_int", "check_positive_int_or_auto", "check_positive_real", "check_rng",
           "check_unit_interval", "record_features", "validate_params"]


def check_rng(rng):
    """Turn ``rng`` into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    rng : numpy.random.Generator, int or None
        A Generator is returned as it is (so that successive calls share its stream); an int is
        used as a seed for :func:`numpy.random.default_rng`; None draws fresh OS entropy.

    Returns
    -------
    numpy.random.Generator

    Notes
    -----
    Used for random choices that are not release noise (synthetic data, resampling, RWN).
    Release noise never goes through here: the exact samplers take their bits from
    :func:`dpknn.mechanisms.as_source`, whose ``None`` is the OS CSPRNG. Seeded generators are
    for reproducibility, not for security: numpy's PCG64 is not cryptographically secure.
    """
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"rng must be a non-negative integer seed, got {rng!r}.")
        return np.random.default_rng(int(rng))
    if isinstance(rng, np.random.RandomState):
        raise TypeError(
            "rng must be a numpy.random.Generator, an int seed or None; got a legacy "
            "numpy.random.RandomState. Use numpy.random.default_rng(seed) instead."
        )
    raise TypeError(
        f"rng must be a numpy.random.Generator, an int seed or None; got {type(rng).__name__} {rng!r}."
    )


def check_positive_int(value, name, *, minimum=1):
    """Return ``value`` as int if it is an integer ``>= minimum``, else raise naming ``name``."""
    if isinstance(value, bool):   # an int subclass, but True is never meant as a count
        raise TypeError(f"{name} must be an integer, got bool {value!r}.")
    if not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and float(value).is_integer():
            raise TypeError(f"{name} must be an integer, got the float {value!r}.")
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def check_positive_int_or_auto(value, name, *, auto):
    """``"auto"``, or ``value`` as an int ``>= 1``; else raise naming ``name`` and what ``auto`` (text) means."""
    if isinstance(value, str) and value == "auto":
        return "auto"
    try:
        return check_positive_int(value, name)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{exc} Or 'auto': {auto}.") from None


def check_positive_real(value, name, *, allow_zero=False):
    """``value`` as float if it is a finite real > 0 (>= 0 with ``allow_zero``); else raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}.")
    value = float(value)
    if not ((value >= 0 if allow_zero else value > 0) and np.isfinite(value)):
        raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, got {value!r}.")
    return value


def check_unit_interval(value, name, *, closed=False, why=""):
    """Return ``value`` as float if it lies in (0, 1), in [0, 1] when ``closed``, or in [0, 1) when
    ``closed="left"``; else raise naming ``name`` (and ``why``, appended to the message)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}.")
    value = float(value)
    low = (0 <= value) if closed else (0 < value)
    high = (value <= 1) if closed is True else (value < 1)
    if not (low and high):
        interval = {True: "[0, 1]", "left": "[0, 1)"}.get(closed, "(0, 1)")
        raise ValueError(f"{name} must be in {interval}, got {value!r}{': ' + why if why else ''}.")
    return value


def check_keys(table, allowed, what, *, hint=None, noun="keys"):
    """Refuse the keys of a file's table (a dict) outside ``allowed``.

    The one check of unknown keys for every TOML reader (schemas, attribute files, query files,
    processing plans): a misspelt key must fail loudly rather than be ignored. The error names
    the table (``what``), the unknown keys (``noun``: what its keys are, e.g. "tables"), and the
    keys it may hold (or ``hint``).
    """
    extra = set(table) - set(allowed)
    if extra:
        raise ValueError(f"{what} has unknown {noun} {sorted(extra, key=str)}; "
                         f"{hint or f'its keys are {sorted(allowed)}'}.")


def record_features(estimator, X):
    """Set ``n_features_in_`` and ``feature_names_in_`` of ``estimator`` as scikit-learn defines them.

    ``feature_names_in_`` exists only when every column name of the DataFrame ``X`` is a string
    (a stale one from an earlier fit is removed).
    """
    estimator.n_features_in_ = int(X.shape[1])
    if all(isinstance(c, str) for c in X.columns):
        estimator.feature_names_in_ = np.asarray(X.columns, dtype=object)
    elif hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_


def check_is_fitted(estimator, attribute, *, call="fit(X)"):
    """Raise scikit-learn's ``NotFittedError`` (a ValueError and an AttributeError) unless
    ``estimator`` has ``attribute``, the one way every dpknn estimator says it is not fitted."""
    if not hasattr(estimator, attribute):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(f"this {type(estimator).__name__} is not fitted yet; call {call} first.")



# --- declared constraints ------------------------------------------------------------------------
class Constraint(abc.ABC):
    """A constraint on one parameter: :meth:`check` returns the value (converted) or raises a
    TypeError or ValueError that names the parameter and the value."""

    @abc.abstractmethod
    def check(self, value, name):
        """``value`` if it satisfies the constraint (as int or float for an :class:`Interval`)."""

    @abc.abstractmethod
    def invalid_values(self):
        """Values that break the constraint, for generated tests."""


class Interval(Constraint):
    """A real or integer parameter in an interval; ``low``/``high`` None are open ends.

    Parameters
    ----------
    kind : {"int", "real"}
    low, high : number or None
    closed : {"left", "right", "both", "neither"}
        Which ends belong to the interval (as in scikit-learn's ``Interval``).
    """

    def __init__(self, kind, low, high, *, closed):
        if kind not in ("int", "real") or closed not in ("left", "right", "both", "neither"):
            raise ValueError(f"Interval({kind!r}, ..., closed={closed!r}) is not a valid constraint.")
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def __repr__(self):
        left = "[" if self.closed in ("left", "both") and self.low is not None else "("
        right = "]" if self.closed in ("right", "both") and self.high is not None else ")"
        return f"{left}{'-inf' if self.low is None else self.low}, {'inf' if self.high is None else self.high}{right}"

    def check(self, value, name):
        if self.kind == "int" and self.high is None and self.low is not None:
            return check_positive_int(value, name, minimum=self.low + (self.closed in ("right", "neither")))
        if self.kind == "real" and (self.low, self.high) == (0, None):
            return check_positive_real(value, name, allow_zero=self.closed in ("left", "both"))
        if self.kind == "real" and (self.low, self.high) == (0, 1) and self.closed in ("both", "neither"):
            return check_unit_interval(value, name, closed=self.closed == "both")
        if isinstance(value, bool) or not isinstance(value, numbers.Integral if self.kind == "int" else numbers.Real):
            what = "an integer" if self.kind == "int" else "a real number"
            raise TypeError(f"{name} must be {what}, got {type(value).__name__} {value!r}.")
        v = int(value) if self.kind == "int" else float(value)
        if math.isnan(v) or not self._inside(v):
            raise ValueError(f"{name} must be in {self!r}, got {value!r}.")
        return v

    def _inside(self, v):
        lo_ok = self.low is None or (v >= self.low if self.closed in ("left", "both") else v > self.low)
        hi_ok = self.high is None or (v <= self.high if self.closed in ("right", "both") else v < self.high)
        return lo_ok and hi_ok and (self.kind == "int" or math.isfinite(v))

    def invalid_values(self):
        out = ["1", True]
        if self.low is not None:
            out.append(self.low if self.closed in ("right", "neither") else self.low - 1)
        if self.high is not None:
            out.append(self.high if self.closed in ("left", "neither") else self.high + 1)
        if self.kind == "real":
            out.append(float("nan"))
        else:
            out.append(1.5)
        return out


class Options(Constraint):
    """One of a fixed set of values (compared by equality, type included for strings)."""

    def __init__(self, *options):
        self.options = tuple(options)

    def check(self, value, name):
        if not any(type(value) is type(o) and value == o for o in self.options):
            raise ValueError(f"{name} must be one of {self.options}, got {value!r}.")
        return value

    def invalid_values(self):
        return ["no such option", 3.5]


class InstanceOf(Constraint):
    """An instance of ``cls`` (named ``label`` in messages)."""

    def __init__(self, cls, label=None):
        self.cls, self.label = cls, label or cls.__name__

    def check(self, value, name):
        if not isinstance(value, self.cls):
            raise TypeError(f"{name} must be a {self.label}, got {type(value).__name__}.")
        return value

    def invalid_values(self):
        return [object(), "text"]


class Boolean(Constraint):
    """True or False (numpy booleans included)."""

    def check(self, value, name):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be a bool, got {value!r}.")
        return bool(value)

    def invalid_values(self):
        return [1, "yes"]


# The budget parameters, one convention everywhere: ε finite and > 0; δ in [0, 1), or in (0, 1)
# where a mechanism needs a positive δ.
EPSILON = Interval("real", 0, None, closed="neither")
DELTA = Interval("real", 0, 1, closed="left")
POSITIVE_DELTA = Interval("real", 0, 1, closed="neither")
POSITIVE = Interval("real", 0, None, closed="neither")
NON_NEGATIVE = Interval("real", 0, None, closed="left")


def check_params(constraints, params):
    """Check ``params`` (name -> value) against ``constraints`` (name -> :class:`Constraint`, or a tuple of
    them, any of which may hold; None in the tuple allows None). Returns the checked values, converted."""
    out = {}
    for name, rule in constraints.items():
        value = params[name]
        rules = rule if isinstance(rule, tuple) else (rule,)
        if value is None and None in rules:
            out[name] = None
            continue
        errors = []
        for r in (r for r in rules if r is not None):
            try:
                out[name] = r.check(value, name)
                break
            except (TypeError, ValueError) as exc:
                errors.append(exc)
        else:
            raise errors[0] if len(errors) == 1 else type(errors[0])(" Or: ".join(str(e) for e in errors))
    return out


def validate_params(estimator):
    """Check an estimator's ``get_params()`` against its class's ``parameter_constraints``; the checked
    values (ints and floats converted) by name."""
    constraints = type(estimator).parameter_constraints
    return check_params(constraints, estimator.get_params(deep=False))
