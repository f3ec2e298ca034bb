"""Checks shared by the measures that compare a real table with a released one."""

from __future__ import annotations

import pandas as pd

__all__ = ["check_tables", "is_numeric", "shared_columns"]


def check_tables(**tables):
    """Raise unless every named table is a DataFrame with at least one row."""
    for name, df in tables.items():
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"{name} must be a pandas DataFrame, got {type(df).__name__}.")
        if len(df) == 0:
            raise ValueError(f"{name} has no rows.")


def shared_columns(a, b, columns, name="columns"):
    """``columns`` (None: all of ``a``'s) as a list, after checking that both tables hold them."""
    cols = list(a.columns) if columns is None else ([columns] if isinstance(columns, str) else list(columns))
    if not cols:
        raise ValueError(f"{name} must not be empty.")
    absent = [c for c in cols if c not in a.columns or c not in b.columns]
    if absent:
        raise ValueError(f"{name}: both tables must hold the columns {absent}.")
    return cols


def is_numeric(s):
    """True for a numeric column that is not a pandas categorical (codes of categories stay categories)."""
    return pd.api.types.is_numeric_dtype(s) and not isinstance(s.dtype, pd.CategoricalDtype)
