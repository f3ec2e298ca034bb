"""Public numeric encoding of attributes for neural synthesisers: one-hot and scaled columns.

Every column is a function of the declared attributes only, never of the data:

- :class:`~dpknn.schema.Categorical`: one column per declared category (one-hot);
- :class:`~dpknn.schema.Ordinal` and :class:`~dpknn.schema.Continuous`: one column,
  (value − lower) / (upper − lower) in [0, 1], from the public bounds.

A missing cell encodes as zeros in its attribute's columns and 0 in the mask (MisGAN's
convention: the mask is 1 where a value is observed). Decoding maps generator outputs back
into the declared domains: a category by its largest score or by a draw from the scores, a
numeric value clipped to [0, 1] and scaled (an Ordinal rounded to the nearest integer).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpknn.schema.attributes import Categorical, Ordinal
from dpknn.schema.discretization import check_attributes, check_frame

__all__ = ["TabularEncoding"]


def _span(a):
    # A one-point Ordinal range scales to 0.
    return max(a.upper - a.lower, 1)


@dataclass(frozen=True)
class TabularEncoding:
    """The public column layout of a list of attributes.

    Parameters
    ----------
    attributes : sequence of Ordinal, Categorical or Continuous

    Attributes
    ----------
    spans : tuple of (int, int)
        The [start, stop) columns of each attribute.
    categorical : tuple of bool
        Whether each attribute is one-hot.
    """

    attributes: tuple

    def __post_init__(self):
        attrs = check_attributes(self.attributes)
        object.__setattr__(self, "attributes", attrs)
        spans, start = [], 0
        for a in attrs:
            width = a.n_codes if isinstance(a, Categorical) else 1
            spans.append((start, start + width))
            start += width
        object.__setattr__(self, "spans", tuple(spans))
        object.__setattr__(self, "categorical", tuple(isinstance(a, Categorical) for a in attrs))

    @property
    def names(self):
        """Names of the attributes, in order."""
        return [a.name for a in self.attributes]

    @property
    def n_columns(self):
        """Width p of the encoded data."""
        return self.spans[-1][1]

    @property
    def column_attribute(self):
        """For each encoded column, the index of its attribute (to expand a mask to columns)."""
        return np.repeat(np.arange(len(self.attributes)), [b - a for a, b in self.spans])

    def encode(self, df):
        """``(x, m)``: x of shape (n, p) float32, zeros where missing; m of shape (n, d), 1 = observed.

        Raises :class:`~dpknn.exceptions.DomainError` for a value outside its declared domain and
        ``ValueError`` for an absent column. ``df`` is not modified.
        """
        check_frame(df, self.names)
        n = len(df)
        x = np.zeros((n, self.n_columns), dtype=np.float32)
        m = np.zeros((n, len(self.attributes)), dtype=np.float32)
        rows = np.arange(n)
        for j, (a, (lo, _)) in enumerate(zip(self.attributes, self.spans)):
            if isinstance(a, Categorical):
                codes, missing = a.read_column(df)
                obs = ~missing
                x[rows[obs], lo + codes[obs].astype(np.int64)] = 1.0
            else:
                values, missing = a.read_column(df)
                obs = ~missing
                x[obs, lo] = (np.asarray(values, dtype=np.float64)[obs] - a.lower) / _span(a)
            m[:, j] = ~missing
        return x, m

    def decode(self, x, m=None, *, rng=None):
        """A DataFrame of domain-valid values from encoded rows ``x`` (n, p) and mask ``m`` (n, d).

        A one-hot block holds non-negative scores (probabilities): with ``rng`` (a
        :class:`numpy.random.Generator`) the category is drawn in proportion to them, without it
        the largest is taken. ``m`` None: every cell observed; otherwise a cell with m = 0
        decodes to a missing value (NaN; ``<NA>`` in an Ordinal's ``Int64`` column).
        """
        x = np.asarray(x, dtype=np.float64)
        n = x.shape[0]
        if x.ndim != 2 or x.shape[1] != self.n_columns:
            raise ValueError(f"x must have shape (n, {self.n_columns}), got {x.shape}.")
        miss = np.zeros((n, len(self.attributes)), dtype=bool) if m is None else np.asarray(m) < 0.5
        cols = {}
        for j, (a, (lo, hi)) in enumerate(zip(self.attributes, self.spans)):
            if isinstance(a, Categorical):
                p = np.clip(x[:, lo:hi], 0.0, None)
                if rng is None:
                    c = p.argmax(axis=1)
                else:
                    tot = p.sum(axis=1, keepdims=True)
                    p = np.where(tot > 0, p / np.where(tot > 0, tot, 1.0), 1.0 / (hi - lo))
                    c = (p.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
                    c = np.minimum(c, hi - lo - 1)
                col = pd.Categorical.from_codes(np.where(miss[:, j], -1, c),
                                                categories=pd.Index(a.categories, dtype=object))
            else:
                v = a.lower + np.clip(x[:, lo], 0.0, 1.0) * _span(a)
                if isinstance(a, Ordinal):
                    v = np.clip(np.rint(v), a.lower, a.upper).astype(np.int64)
                    col = pd.array(v, dtype="Int64") if miss[:, j].any() else v
                    if miss[:, j].any():
                        col[miss[:, j]] = pd.NA
                else:
                    col = np.where(miss[:, j], np.nan, v)
            cols[a.name] = col
        return pd.DataFrame(cols, columns=self.names)
