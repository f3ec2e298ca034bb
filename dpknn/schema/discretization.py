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

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpknn.schema.attributes import Categorical, Continuous, Ordinal
from dpknn.utils.validation import check_keys, check_positive_int

__all__ = ["Discretization", "check_attributes", "read_attributes"]

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
    return attrs


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
        """Width of the bins of the Ordinal attribute ``a`` (its values per bin)."""
        if a.n_codes <= self.bins:
            return a.bin_width
        return -(-(a.upper - a.lower + 1) // self.bins)

    @property
    def sizes(self):
        """Number of codes of each attribute (missing not counted)."""
        out = []
        for a in self.attributes:
            if isinstance(a, Categorical):
                out.append(a.n_codes)
            elif isinstance(a, Ordinal):
                out.append((a.upper - a.lower) // self.ordinal_width(a) + 1)
            else:
                out.append(self.bins)
        return np.asarray(out, dtype=np.int64)

    def encode(self, df):
        """Codes of ``df``'s attribute columns, shape (d, n), int16, −1 where missing.

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
                    codes = (v.astype(np.int64) - a.lower) // self.ordinal_width(a)
                else:
                    codes = np.minimum(np.floor((v - a.lower) / (a.upper - a.lower) * self.bins), self.bins - 1)
            out[j] = np.where(missing, MISSING, codes)
        return out

    def decode(self, codes, *, rng, missing_value=True):
        """A DataFrame of domain-valid values from codes of shape (d, n), uniform inside each bin.

        ``rng`` is a :class:`numpy.random.Generator` (synthetic values are post-processing of
        released tables). Code −1 decodes to a missing value: NaN, ``<NA>`` for an Ordinal
        (``Int64``) and NaN in a categorical column.
        """
        codes = np.asarray(codes)
        n = codes.shape[1]
        cols = {}
        for j, a in enumerate(self.attributes):
            c = codes[j].astype(np.int64)
            miss = c < 0
            c = np.where(miss, 0, c)
            if isinstance(a, Categorical):
                col = pd.Categorical.from_codes(np.where(miss, -1, c), categories=pd.Index(a.categories, dtype=object))
            elif isinstance(a, Ordinal):
                w = self.ordinal_width(a)
                lo = a.lower + c * w
                hi = np.minimum(lo + w - 1, a.upper)
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
        return pd.DataFrame(cols, columns=self.names)



def read_attributes(path, *, allow_draft=False):
    """The attributes listed in a TOML file.

    Either ``[[attribute]]`` tables (``name``, ``type`` and the type's keys, as in a schema; see
    ``docs/synthesis.md``), or a schema file, whose known then imputed attributes are taken in
    order (universes play no part in synthesis). A file with ``draft = true`` is refused unless
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
