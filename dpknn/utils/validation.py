"""Validation helpers used at the public entry points.

Messages name the parameter and show the offending value, in the style of scikit-learn.
"""

import numbers

import numpy as np

__all__ = ["check_fitted", "check_positive_int", "check_positive_real", "check_rng", "check_unit_interval",
           "record_features"]


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
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and float(value).is_integer():
            raise TypeError(f"{name} must be an integer, got the float {value!r}.")
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def check_positive_real(value, name, *, allow_zero=False):
    """``value`` as float if it is a finite real > 0 (>= 0 with ``allow_zero``); else raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}.")
    value = float(value)
    if not ((value >= 0 if allow_zero else value > 0) and np.isfinite(value)):
        raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, got {value!r}.")
    return value


def check_unit_interval(value, name, *, closed=False):
    """Return ``value`` as float if it lies in (0, 1), or in [0, 1] when ``closed``; else raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}.")
    value = float(value)
    if not ((0 <= value <= 1) if closed else (0 < value < 1)):
        raise ValueError(f"{name} must be in {'[0, 1]' if closed else '(0, 1)'}, got {value!r}.")
    return value


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


def check_fitted(estimator, attribute, *, call="fit(X)"):
    """Raise scikit-learn's ``NotFittedError`` (a ValueError and an AttributeError) unless
    ``estimator`` has ``attribute``, the one way every dpknn estimator says it is not fitted."""
    if not hasattr(estimator, attribute):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(f"this {type(estimator).__name__} is not fitted yet; call {call} first.")
