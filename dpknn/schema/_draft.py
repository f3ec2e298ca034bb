"""A first draft of a schema, read from the data: a starting point to edit, never a public domain.

Differential privacy assumes that every domain of a schema (bounds, categories) is fixed before
the data are seen. A draft reads them from the data, so :func:`draft_schema` always warns
:class:`~dpknn.exceptions.PrivacyLeakWarning`, and the TOML it writes says, above every bound,
that it must be replaced by a public one (a questionnaire's code list, a legal range) before any
release.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpknn.exceptions import PrivacyLeakWarning
from dpknn.schema._attributes import DRAFT_KEY, Categorical, Continuous, Ordinal, Schema

__all__ = ["SchemaDraft", "draft_schema"]

_WARNING = ("the domains of this draft (bounds, category lists) were READ FROM THE DATA. They are not public: "
            "releasing with them leaks information about the records and voids the privacy guarantee. Replace "
            "every bound and category list by public ones (a code book, a legal range) before any release.")


@dataclass(frozen=True)
class SchemaDraft:
    """A drafted schema and the columns left out of it, with the reason for each.

    Attributes
    ----------
    schema : Schema
        Known attributes: complete integer (Ordinal) and string or boolean (Categorical)
        columns. Imputed attributes: columns with missing values (Ordinal for integer values,
        Continuous for other numbers, Categorical for strings). Domains are read from the data.
    left_out : dict of str to str
        Column -> why it is not in the schema.
    """

    schema: Schema
    left_out: dict

    def to_toml(self, *, source=None):
        """The schema as TOML, headed by the warning and the left-out columns as comments, and the
        top-level key ``draft = true``: comments are lost on a reader's way, a key is not, and
        :meth:`Schema.from_file` refuses the file until the user deletes it."""
        head = ["# DRAFT schema written by dpknn schema" + (f" from {source}" if source else "") + ".",
                "# WARNING: " + _WARNING,
                "# Also check each attribute's role: known (matching) attributes must be complete; imputed",
                "# attributes may take a universe (docs/schema.md)."]
        head += [f"# left out: {name}: {why}" for name, why in self.left_out.items()]
        head += ["# Delete the next line once every domain is public; until then dpknn refuses this file.",
                 f"{DRAFT_KEY} = true"]
        return "\n".join(head) + "\n\n" + self.schema.to_toml()


def _integer_valued(values):
    return values.size == 0 or bool(np.all(values == np.floor(values)))


def _attribute(name, s):
    """(attribute, None) for column ``s``, or (None, reason) when it cannot be drafted."""
    observed = s.dropna()
    if observed.empty:
        return None, "no observed value"
    if pd.api.types.is_bool_dtype(s.dtype) or not pd.api.types.is_numeric_dtype(s.dtype):
        cats = sorted(pd.unique(observed), key=lambda v: (str(type(v)), v))
        if len(cats) == len(s) and len(s) >= 50:
            return None, "a different value in every row (an identifier?)"
        return Categorical(name, cats), None
    values = observed.to_numpy(dtype=np.float64)
    if not np.isfinite(values).all():
        return None, "infinite values"
    if _integer_valued(values):
        if not s.isna().any() and len(s) >= 50 and observed.nunique() == len(s):
            return None, ("a different integer in every row (a record identifier? pass it as the label: "
                          f"--label {name!r})")
        return Ordinal(name, int(values.min()), int(values.max())), None
    lo, hi = float(values.min()), float(values.max())
    if lo == hi:
        hi = math.nextafter(hi, math.inf)
    return Continuous(name, lo, hi), None


def draft_schema(df, *, label=None):
    """Draft a schema from a table; the domains are read from the data and are NOT public.

    Columns with missing values become imputed attributes; complete columns become known
    attributes. Integer-valued columns are Ordinal (range: the observed minimum and maximum),
    other numeric columns Continuous (a complete one cannot be a known attribute, so it is left
    out: bin it into an Ordinal first), strings and booleans Categorical (the observed values).

    Parameters
    ----------
    df : pandas.DataFrame
        Not modified.
    label : str or None
        Column of unique integer record labels, kept out of the attributes.

    Returns
    -------
    SchemaDraft

    Warns
    -----
    PrivacyLeakWarning
        Always: every domain is read from the data.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}.")
    if label is not None and label not in df.columns:
        raise ValueError(f"label {label!r} is not a column of the data (columns: {list(df.columns)[:20]}).")
    warnings.warn("draft_schema: " + _WARNING, PrivacyLeakWarning, stacklevel=2)
    known, imputed, left_out = [], [], {}
    for name in df.columns:
        if name == label:
            continue
        s = df[name]
        attr, why = _attribute(str(name), s)
        if attr is None:
            left_out[str(name)] = why
        elif s.isna().any():
            imputed.append(attr)
        elif isinstance(attr, Continuous):
            left_out[str(name)] = ("complete and not integer: a known attribute must be Ordinal or Categorical; "
                                   "bin it (an Ordinal with bin_width) or list it as imputed")
        else:
            known.append(attr)
    gappy = [str(c) for c in df.columns if c != label and df[c].isna().any()]
    if not imputed and gappy:
        why = "; ".join(f"{c}: {left_out[c]}" for c in gappy)
        raise ValueError(f"no imputed attribute could be drafted: the columns with missing values were left out "
                         f"({why}). A column with no observed value has no donor to impute from: drop it, or "
                         "draft from data in which it has observed values.")
    if not imputed:
        raise ValueError("no column has missing values, so there is nothing to impute; every release can ignore "
                         "imputation (method ignore_missing).")
    if not known:
        raise ValueError(f"no complete integer or categorical column to match on; columns left out: {left_out}.")
    return SchemaDraft(Schema(known=known, imputed=imputed, label=label), left_out)
