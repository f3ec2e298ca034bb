"""Conditions on attributes, as in a query's ``where`` and an imputed attribute's ``universe``.

A condition on one attribute is an inclusive range ``(low, high)`` (either end None: open) or, for
Ordinal and Categorical attributes, a list of allowed values. Conditions on several attributes
combine with AND. The query-file and schema-file form (TOML) of a range is
``{low = .., high = ..}`` and of a list an array (``docs/queries.md``).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import pandas as pd

__all__ = ["check_condition", "condition_mask", "conditions_mask", "describe_conditions", "public_conditions"]


def condition_mask(values, spec):
    """Boolean mask of ``values`` (an array) that satisfy one condition; missing values never do.

    Parameters
    ----------
    values : array_like
        The values of one attribute.
    spec : tuple or list
        The condition: an inclusive ``(low, high)`` range (either end None: open), or the allowed values.
    """
    values = np.asarray(values)
    if isinstance(spec, tuple):
        lo, hi = spec
        mask = np.ones(values.shape, dtype=bool)
        with np.errstate(invalid="ignore"):
            if lo is not None:
                mask &= values >= lo
            if hi is not None:
                mask &= values <= hi
        return mask
    if values.dtype == object:
        return pd.Index(list(spec), dtype=object).get_indexer(values) >= 0
    return np.isin(values, list(spec))


def conditions_mask(columns, n, *conditions):
    """Rows (of ``n``) that satisfy every condition of every dict in ``conditions`` (AND);
    ``columns`` maps a column name to its values (a DataFrame or a dict of arrays).

    Parameters
    ----------
    columns : DataFrame or dict of array_like
        The values of each attribute a condition names, ``n`` of each.
    n : int
        The number of rows.
    """
    mask = np.ones(n, dtype=bool)
    for where in conditions:
        for col, spec in where.items():
            mask &= condition_mask(np.asarray(columns[col]), spec)
    return mask


def public_conditions(where):
    """Conditions in the form of the query-file format (``docs/queries.md``): a range as
    ``{"low": .., "high": ..}`` (an open end left out), a set of values as a list. A range must not
    be published as a two-element list, which that format reads as a set.

    Parameters
    ----------
    where : dict
        Attribute name -> condition: a ``(low, high)`` tuple or a collection of values.
    """
    out = {}
    for col, spec in where.items():
        if isinstance(spec, tuple):
            out[col] = {k: v for k, v in zip(("low", "high"), spec) if v is not None}
        else:
            out[col] = list(spec)
    return out


def describe_conditions(where):
    """Conditions as text for people (ledger labels, reports): ``age in [25, 64] and sex in {F, M}``.

    A range reads ``in [low, high]``, or ``≥ low`` / ``≤ high`` with an open end; a list of values
    ``in {a, b}``; conditions join with "and". No conditions: "all records".

    Parameters
    ----------
    where : dict or None
        Attribute name -> condition: a ``(low, high)`` tuple or a collection of values; None or
        empty: no conditions.
    """
    parts = []
    for col, spec in (where or {}).items():
        if isinstance(spec, tuple):
            low, high = spec
            if low is None and high is None:
                parts.append(f"{col} any value")
            elif low is None:
                parts.append(f"{col} ≤ {high}")
            elif high is None:
                parts.append(f"{col} ≥ {low}")
            else:
                parts.append(f"{col} in [{low}, {high}]")
        else:
            parts.append(f"{col} in {{{', '.join(str(v) for v in spec)}}}")
    return " and ".join(parts) if parts else "all records"


def check_condition(attr, spec, name):
    """One condition of a ``where``: a (low, high) range, or a list of values of an Ordinal or
    Categorical attribute; type-checked against the attribute's public domain.

    Parameters
    ----------
    attr : Ordinal, Categorical or Continuous
        The attribute the condition is on.
    spec : tuple, list, set or frozenset
        The condition: a ``(low, high)`` tuple (ends finite numbers or None) or the allowed values.
    name : str
        The condition's name in error messages.

    Returns
    -------
    tuple or list
        The range as given, or the values as a list.
    """
    if isinstance(spec, tuple):
        if len(spec) != 2:
            raise ValueError(f"{name} must be a (low, high) pair, got {spec!r}.")
        if attr.kind == "categorical":
            raise ValueError(f"{name}: {attr.name!r} is categorical; give a list of categories, not a range.")
        for v in spec:
            if v is not None and (isinstance(v, bool) or not isinstance(v, (numbers.Real, np.integer, np.floating))
                                  or not math.isfinite(v)):
                raise ValueError(f"{name}: range ends must be finite numbers or None (open), got {spec!r}.")
        lo, hi = spec
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(f"{name} has low > high: {spec!r}.")
        return spec
    if isinstance(spec, (list, set, frozenset)):
        values = list(spec)
        if attr.kind == "continuous":
            raise ValueError(f"{name}: {attr.name!r} is continuous; a list of values is not allowed, give a "
                             "range (low, high).")
        if attr.kind == "ordinal":
            bad = [v for v in values if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer))]
            if bad:
                raise TypeError(f"{name}: values of the ordinal attribute {attr.name!r} must be integers, got "
                                f"{bad[:5]}.")
            out = [v for v in values if not attr.lower <= v <= attr.upper]
            if out:
                raise ValueError(f"{name} lists values outside [{attr.lower}, {attr.upper}]: {out[:5]}.")
        else:
            bad = [v for v in values if v not in attr.categories]
            if bad:
                raise ValueError(f"{name} lists values outside the categories {list(attr.categories)[:10]}: "
                                 f"{bad[:5]}.")
        return list(values)
    raise TypeError(f"{name} must be a (low, high) tuple or a list of values, got {spec!r}.")
