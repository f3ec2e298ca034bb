"""Public discretisation of attributes for synthesis: codes in, domain-valid values out.

Every bin is a function of the declared attributes and ``bins`` only, never of the data:

- :class:`~dpknn.schema.Categorical`: one code per declared category;
- :class:`~dpknn.schema.Ordinal`: its own codes (``bin_width``) when there are at most ``bins``
  of them; otherwise ``bins`` equal integer bins of width ⌈(upper − lower + 1)/bins⌉;
- :class:`~dpknn.schema.Continuous`: ``bins`` equal bins of [lower, upper] (the top bin closed).

Decoding draws a value uniformly inside the code's bin (integers for an Ordinal), so synthetic
values are always inside the declared domain. A missing cell has code −1.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from dpknn.schema.attributes import Categorical, Continuous, Ordinal, check_universe
from dpknn.utils.validation import check_keys, check_positive_int

__all__ = ["Discretization", "blank_outside_universes", "check_attributes", "read_attributes"]

MISSING = -1


def check_attributes(attributes):
    """``attributes`` as a tuple of distinct-named Ordinal, Categorical or Continuous; else a clear error."""
    if isinstance(attributes, (str, bytes)) or not hasattr(attributes, "__iter__"):
        raise TypeError(f"attributes must be a list of Ordinal, Categorical or Continuous, got {attributes!r}.")
    attrs = tuple(attributes)
    if not attrs:
        raise ValueError("attributes must not be empty.")
    for a in attrs:
        if not isinstance(a, (Ordinal, Categorical, Continuous)):
            raise TypeError(f"attributes must be Ordinal, Categorical or Continuous, got {a!r}.")
    names = [a.name for a in attrs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"attributes must have distinct names, got duplicates {dup}.")
    return tuple(_checked_universe(a, attrs) for a in attrs)


def _checked_universe(attr, attrs):
    """``attr`` with its universe (if any) checked against the other attributes of the list."""
    if attr.universe is None:
        return attr
    others = [b for b in attrs if b.name != attr.name]
    for col, *_ in attr.universe.conditions:
        if col == attr.name:
            raise ValueError(f"universe of attribute {attr.name!r} names {attr.name!r} itself; a universe is a "
                             "condition on other attributes.")
        b = next((b for b in others if b.name == col), None)
        if isinstance(b, Continuous):
            raise ValueError(f"universe of attribute {attr.name!r} is a condition on the continuous {col!r}; "
                             "conditions are on ordinal or categorical attributes (declare it an ordinal).")
        if b is not None and b.universe is not None:
            raise ValueError(f"universe of attribute {attr.name!r} is a condition on {col!r}, which has a universe "
                             "of its own; a universe is a condition on attributes that apply to every record.")
    return replace(attr, universe=check_universe(attr, others, whole_bins=False))


def blank_outside_universes(df, attributes):
    """``df`` (synthetic rows, changed in place) with every attribute missing outside its
    universe: structural gaps, never a drawn value (the universes are public)."""
    for a in attributes:
        if a.universe is not None:
            outside = ~a.universe.mask(df)
            if outside.any():
                col = df[a.name]
                if isinstance(col.dtype, pd.CategoricalDtype) or col.dtype == object:
                    df.loc[outside, a.name] = np.nan
                elif pd.api.types.is_integer_dtype(col.dtype):
                    df[a.name] = col.astype("Int64").mask(outside)
                else:
                    df[a.name] = col.mask(outside)
    return df


def check_frame(df, names):
    """Raise unless ``df`` is a DataFrame holding every attribute column in ``names``."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"X must be a pandas DataFrame, got {type(df).__name__}.")
    absent = [n for n in names if n not in df.columns]
    if absent:
        raise ValueError(f"X lacks the attribute columns {absent}.")


@dataclass(frozen=True)
class Discretization:
    """The public codes of a list of attributes.

    Parameters
    ----------
    attributes : sequence of Ordinal, Categorical or Continuous
    bins : int, default 10
        Number of equal public bins of a numeric attribute with a wide domain.
    """

    attributes: tuple
    bins: int = 10

    def __post_init__(self):
        object.__setattr__(self, "attributes", check_attributes(self.attributes))
        object.__setattr__(self, "bins", check_positive_int(self.bins, "bins"))

    @property
    def names(self):
        """Names of the attributes, in order."""
        return [a.name for a in self.attributes]

    def ordinal_width(self, a):
        """Width of the equal bins of the Ordinal attribute ``a`` (its values per bin), before
        the universes' ends are added (:meth:`ordinal_bins`)."""
        if a.n_codes <= self.bins:
            return a.bin_width
        return -(-(a.upper - a.lower + 1) // self.bins)

    def universe_cuts(self, a):
        """The ends of the universes' ranges on the Ordinal ``a`` (first values of a range and
        first values after one) inside its domain: public bin edges, so that every universe is
        a union of whole bins and an out-of-universe cell is a whole code."""
        cuts = set()
        for b in self.attributes:
            for col, lo, hi, values in () if b.universe is None else b.universe.conditions:
                if col == a.name and values is None:
                    cuts.update(v for v in (lo, hi + 1) if a.lower < v <= a.upper)
        return sorted(cuts)

    def ordinal_bins(self, a):
        """(first, last) values of each bin of the Ordinal ``a``: equal bins of
        :meth:`ordinal_width`, split at :meth:`universe_cuts`."""
        w = self.ordinal_width(a)
        first = np.unique(np.r_[np.arange(a.lower, a.upper + 1, w), self.universe_cuts(a)]).astype(np.int64)
        return first, np.r_[first[1:] - 1, a.upper].astype(np.int64)

    def value_codes(self, a):
        """Number of codes of the values of attribute ``a`` (its bins or categories)."""
        if isinstance(a, Categorical):
            return a.n_codes
        if isinstance(a, Ordinal):
            return int(self.ordinal_bins(a)[0].size)
        return self.bins

    @property
    def sizes(self):
        """Number of codes of each attribute (missing not counted): its values, and one more,
        "not applicable" (the last code), for an attribute with a universe."""
        return np.asarray([self.value_codes(a) + (a.universe is not None) for a in self.attributes], dtype=np.int64)

    def encode(self, df):
        """Codes of ``df``'s attribute columns, shape (d, n), int16, −1 where missing; the last
        code of an attribute with a universe ("not applicable") outside it.

        Raises :class:`~dpknn.exceptions.DomainError` for a value outside its declared domain and
        ``ValueError`` for an absent column. ``df`` is not modified.
        """
        check_frame(df, self.names)
        if max(self.sizes) >= 2**15 - 1:
            raise ValueError(f"an attribute has {max(self.sizes)} codes; at most 32766 are supported.")
        out = np.empty((len(self.attributes), len(df)), dtype=np.int16)
        for j, a in enumerate(self.attributes):
            if isinstance(a, Categorical):
                codes, missing = a.read_column(df)
            else:
                values, missing = a.read_column(df)
                v = np.where(missing, a.lower, values)
                if isinstance(a, Ordinal):
                    codes = np.searchsorted(self.ordinal_bins(a)[0], v.astype(np.int64), side="right") - 1
                else:
                    codes = np.minimum(np.floor((v - a.lower) / (a.upper - a.lower) * self.bins), self.bins - 1)
            out[j] = np.where(missing, MISSING, codes)
            if a.universe is not None:
                # Outside its universe an attribute is "not applicable", a known structural value,
                # not a gap: the models learn where it applies from every record.
                out[j][~a.universe.mask(df)] = self.value_codes(a)
        return out

    def decode(self, codes, *, rng, missing_value=True):
        """A DataFrame of domain-valid values from codes of shape (d, n), uniform inside each bin,
        every attribute missing outside its universe (:func:`blank_outside_universes`).

        ``rng`` is a :class:`numpy.random.Generator` (synthetic values are post-processing of
        released tables). Code −1 and the "not applicable" code decode to a missing value: NaN,
        ``<NA>`` for an Ordinal (``Int64``) and NaN in a categorical column.
        """
        codes = np.asarray(codes)
        n = codes.shape[1]
        cols = {}
        for j, a in enumerate(self.attributes):
            c = codes[j].astype(np.int64)
            miss = (c < 0) | (c >= self.value_codes(a))
            c = np.where(miss, 0, c)
            if isinstance(a, Categorical):
                col = pd.Categorical.from_codes(np.where(miss, -1, c), categories=pd.Index(a.categories, dtype=object))
            elif isinstance(a, Ordinal):
                first, last = self.ordinal_bins(a)
                lo, hi = first[c], last[c]
                v = lo + np.floor(rng.random(n) * (hi - lo + 1)).astype(np.int64)
                v = np.minimum(v, hi)
                col = pd.array(v, dtype="Int64") if miss.any() else v
                if miss.any():
                    col[miss] = pd.NA
            else:
                w = (a.upper - a.lower) / self.bins
                v = a.lower + (c + rng.random(n)) * w
                col = np.clip(v, a.lower, a.upper)
                col[miss] = np.nan
            cols[a.name] = col
        return blank_outside_universes(pd.DataFrame(cols, columns=self.names), self.attributes)



def read_attributes(path, *, allow_draft=False):
    """The attributes listed in a TOML file.

    Either ``[[attribute]]`` tables (``name``, ``type`` and the type's keys, as in a schema; see
    ``docs/synthesis.md``), or a schema file, whose known then imputed attributes are taken in
    order (an imputed attribute keeps its universe: synthetic values are missing outside it). An
    ``[[attribute]]`` table may give a ``universe`` too. A file with ``draft = true`` is refused unless
    ``allow_draft`` (:func:`dpknn.schema.check_draft`).
    """
    from dpknn.schema.attributes import DRAFT_KEY, Schema, attribute_from_dict, check_draft
    from dpknn.utils.io import read_toml

    spec = read_toml(path, "attributes file")
    check_draft(spec, f"attributes file {str(path)!r}", allow_draft=allow_draft)
    spec = {k: v for k, v in spec.items() if k != DRAFT_KEY}
    if "attribute" in spec:
        check_keys(spec, {"attribute"}, f"attributes file {str(path)!r}", hint="it lists [[attribute]] tables only")
        if not isinstance(spec["attribute"], list):
            raise ValueError(f"attributes file {str(path)!r}: 'attribute' must be a list of [[attribute]] tables.")
        return check_attributes(attribute_from_dict(e, "attribute") for e in spec["attribute"])
    if "known" in spec or "imputed" in spec:
        schema = Schema.from_dict(spec)
        return check_attributes([*schema.known, *schema.imputed])
    raise ValueError(f"attributes file {str(path)!r} lists no [[attribute]] tables (nor [[known]]/[[imputed]]).")
