"""Public domains of the attributes, and the encoding of a table into integer cells.

Everything a schema holds is public: the attribute ranges, bin widths, category lists and
distance weights are fixed before the data are seen, and :meth:`Schema.encode` never widens a
domain to fit the data; data outside the declared domain is an error
(:class:`~dpknn.exceptions.DomainError`) that names the column and shows offending values.

A record's *cell* is the tuple of the codes of its known (matching) attributes: an ordinal
attribute is coded as ``(value - lower) // bin_width`` and a categorical attribute as the
index of its value in the declared category list. The squared distance between two cells is
the exact integer

    d2(a, b) = sum_ordinal w_j (a_j - b_j)^2 + sum_categorical 2 w_j [a_j != b_j],

Euclidean distance on ordinal codes plus one-hot encoded categoricals, as in Clifton et al.
(2022, §6.2).

References
----------
.. [1] Clifton, Hanson, Kifer, Shamis, and others (2022). "Differentially private k-nearest
   neighbor missing data imputation". §6.2 (distance on mixed attributes).
"""

from __future__ import annotations

import logging
import math
import numbers
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from dpknn.exceptions import DomainError, PrivacyLeakWarning
from dpknn.schema._geometry import squared_distance
from dpknn.utils._validation import check_keys

__all__ = ["DRAFT_KEY", "Categorical", "Continuous", "EncodedData", "Ordinal", "Schema", "Universe",
           "blank_outside_universes", "check_draft", "check_universe", "log_outside_universes",
           "observed_outside_universes",
           "warn_outside_universes"]

#: Top-level key that ``dpknn schema`` writes (``draft = true``): the domains were read from the data.
DRAFT_KEY = "draft"

logger = logging.getLogger(__name__)

_MAX_SHOWN = 5


#: Strings that files from other software (R, SAS, spreadsheets) use for a missing cell: named in the
#: error when a numeric column holds them, never read as gaps without being asked.
NA_SPELLINGS = frozenset({"NA", "N/A", "NaN", "nan", "NULL", "null", "None", ".", "-", "?"})


def _na_hint(values):
    """The hint for a column whose entries include a common spelling of a missing cell (R's NA, say)."""
    spelt = sorted({str(v) for v in values if isinstance(v, str)} & NA_SPELLINGS)
    if not spelt:
        return ""
    return (f" If {spelt[0]!r} marks a missing cell, read the file with it as a gap (dpknn.utils._io.read_table"
            f"(path, na_values=({spelt[0]!r},)), or --na-values {spelt[0]} on the command line).")


def _type_hint(values, categories):
    """Why values that print like categories do not match them: a common spelling of a missing cell, or
    numbers against text categories (or the reverse), as a CSV read without the declared types gives."""
    na = _na_hint(values)
    if na:
        # An "NA" among numbers makes the whole column text: the spelling is the cause, not the types.
        return na
    kinds = {isinstance(v, str) for v in values if not pd.isna(v)}
    declared = {isinstance(c, str) for c in categories}
    if kinds == {False} and declared == {True} and any(str(v).removesuffix(".0") in categories for v in values):
        return (" The column holds numbers and the categories are text: read the file with the declared types "
                "(dpknn's commands do; in Python, dpknn.utils._io.read_table(path, attributes=...) or "
                "df[column].astype(str)).")
    if kinds == {True} and declared == {False}:
        return " The column holds text and the categories are numbers: declare them as text, or convert the column."
    return ""


def _show(values):
    """Up to five distinct offending values, and how many there are in all."""
    uniq = pd.unique(pd.Series(values, dtype=object))
    shown = ", ".join(repr(v) for v in uniq[:_MAX_SHOWN])
    more = f" (and {len(uniq) - _MAX_SHOWN} more distinct)" if len(uniq) > _MAX_SHOWN else ""
    return f"{len(values)} value(s), e.g. {shown}{more}"


def _check_name(name):
    if not isinstance(name, str) or not name:
        raise TypeError(f"attribute name must be a non-empty str, got {name!r}.")


def _check_int(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an integer, got {type(value).__name__} {value!r}.")
    return int(value)


def _check_weight(weight, name):
    weight = _check_int(weight, f"weight of attribute {name!r}")
    if weight < 1:
        raise ValueError(f"weight of attribute {name!r} must be a positive integer, got {weight!r}.")
    return weight


#: The widest public range of a Continuous (upper - lower): bins and densities of a wider one overflow float64.
MAX_WIDTH = 1e300

#: Significant digits that always tell two float32 values apart (FLT_DECIMAL_DIG).
FLOAT32_DIGITS = 9


def float32_as_decimals(values, *, bounds=()):
    """Float32 ``values`` (any array of them, or of their exact float64 widenings) as the float64 nearest the
    shortest decimal that rounds back to each: what the value prints as, and what the file's author typed.

    A float32 column (a Stata ``float``, the type Stata gives every new non-integer variable; a Parquet ``float``)
    holds 0.1 as 0.100000001490116..., so read exactly as float64 it is not 0.1: a codebook's top code 2.2 sits
    below the stored 2.2 (a domain error), and no value equals a round heap 0.15 (the point masses of
    :mod:`dpknn.synth` were missed). Each value that is not a whole number becomes the first of its roundings to
    1, 2, ..., 9 significant digits that is the same float32; 9 always is. Whole numbers are kept as they are
    stored (every float32 from 2^23 up is one: 123456792 prints as 1.2345679e8 but is an integer, and an
    Ordinal's or a label's values must stay the stored ones). A value that is the same float32 as one of
    ``bounds`` (a public range's ends) becomes that bound exactly, so a range read off the stored data (0.30000001
    for the decimal 0.3) still holds it. NaN and infinities are kept.
    """
    v32 = np.asarray(values, dtype=np.float64).astype(np.float32)
    out = v32.astype(np.float64)
    idx = np.flatnonzero(np.isfinite(out) & (out != np.floor(out)))
    if idx.size:
        out[idx] = _shortest(v32[idx])
    for b in bounds:
        out[v32 == np.float32(b)] = b
    return out


def _shortest(v32):
    """The float64 nearest the shortest decimal of each finite nonzero float32 of ``v32``."""
    out = v32.astype(np.float64)
    decimals = FLOAT32_DIGITS - 1 - np.floor(np.log10(np.abs(out))).astype(np.int64)
    # Beyond 10^22 a power of ten is inexact and so is the rounding below: those magnitudes (under about 1e-14 or
    # over 1e30) are read through their printed form, correctly rounded but four times slower.
    far = (decimals > 22) | (decimals - FLOAT32_DIGITS + 1 < -22)
    out[far] = v32[far].astype(str).astype(np.float64)
    near = np.flatnonzero(~far)
    x, decimals = out[near], decimals[near]
    done = np.zeros(near.size, dtype=bool)
    for digits in range(1, FLOAT32_DIGITS + 1):
        k = decimals - (FLOAT32_DIGITS - digits)
        # 10^k exact for 0 <= k <= 22 and the integer exact below 2^53, so the quotient (or product) is the
        # float64 nearest the decimal.
        up = np.power(10.0, np.abs(k))
        r = np.where(k >= 0, np.rint(x * up) / up, np.rint(x / up) * up)
        hit = ~done & (r.astype(np.float32) == v32[near])
        x = np.where(hit, r, x)
        done |= hit
    out[near] = x
    return out


def _numeric_column(df, name, bounds=()):
    """Column ``name`` as float64 plus its missing mask; non-numeric entries are an error. A float32 column is
    read as the decimals its values print as (:func:`float32_as_decimals`, ``bounds`` the public range), a float16
    one likewise through its printed form."""
    s = df[name]
    if isinstance(s.dtype, pd.CategoricalDtype):
        s = s.astype(object)
    missing = s.isna().to_numpy()
    if pd.api.types.is_bool_dtype(s.dtype):
        raise DomainError(f"column {name!r} is boolean; a numeric attribute needs numbers.")
    if isinstance(s.dtype, np.dtype) and s.dtype.kind in "iu":
        # Plain integer columns cannot hold missing values; keep them integer (no float copy).
        return s.to_numpy(), missing
    if pd.api.types.is_numeric_dtype(s.dtype):
        values = s.to_numpy(dtype=np.float64, na_value=np.nan)
        stored = np.dtype(getattr(s.dtype, "numpy_dtype", s.dtype))   # numpy, pandas' masked and Arrow floats
        if stored == np.float32:
            values = float32_as_decimals(values, bounds=bounds)
        elif stored == np.float16:
            values = values.astype(np.float16).astype(str).astype(np.float64)
    else:
        converted = pd.to_numeric(s, errors="coerce")
        bad = converted.isna().to_numpy() & ~missing
        if bad.any():
            raise DomainError(f"column {name!r} holds non-numeric entries: {_show(s.to_numpy()[bad])}."
                              f"{_na_hint(s.to_numpy()[bad])}")
        values = converted.to_numpy(dtype=np.float64, na_value=np.nan)
    return values, missing


@dataclass(frozen=True)
class Ordinal:
    """An integer-valued attribute on the public range ``[lower, upper]``.

    Parameters
    ----------
    name : str
        Column name.
    lower, upper : int
        Inclusive public bounds (``lower <= upper``).
    bin_width : int, default 1
        Width of the bins the range is cut into, starting at ``lower``: the code of a value
        ``v`` is ``(v - lower) // bin_width`` (ages by decade: ``bin_width=10``).
    weight : int, default 1
        Integer weight of the attribute in the squared distance.
    universe : dict or None
        Imputed attributes only: see :class:`Universe`.
    """

    name: str
    lower: int
    upper: int
    bin_width: int = field(default=1, kw_only=True)
    weight: int = field(default=1, kw_only=True)
    universe: object = field(default=None, kw_only=True)

    def __post_init__(self):
        _check_name(self.name)
        _set_universe(self)
        object.__setattr__(self, "lower", _check_int(self.lower, f"lower of attribute {self.name!r}"))
        object.__setattr__(self, "upper", _check_int(self.upper, f"upper of attribute {self.name!r}"))
        if self.upper < self.lower:
            raise ValueError(
                f"attribute {self.name!r} has an empty domain: upper={self.upper} < lower={self.lower}."
            )
        if self.lower < -(2**63) or self.upper > 2**63 - 1 or self.upper - self.lower > 2**63 - 1:
            raise ValueError(
                f"attribute {self.name!r}: the range [{self.lower}, {self.upper}] does not fit 64-bit integer codes "
                "(upper - lower must be below 2**63); declare a narrower public range.")
        bw = _check_int(self.bin_width, f"bin_width of attribute {self.name!r}")
        if bw < 1:
            raise ValueError(f"bin_width of attribute {self.name!r} must be >= 1, got {bw}.")
        object.__setattr__(self, "bin_width", bw)
        object.__setattr__(self, "weight", _check_weight(self.weight, self.name))

    kind = "ordinal"

    @property
    def n_codes(self):
        """Number of codes (bins) in the public domain."""
        return (self.upper - self.lower) // self.bin_width + 1

    def read_column(self, df):
        """Validate the observed values of the column; return (values, missing)."""
        values, missing = _numeric_column(df, self.name, (self.lower, self.upper))
        obs = values[~missing] if missing.any() else values
        bad = (obs < self.lower) | (obs > self.upper)
        if obs.dtype.kind == "f":
            bad |= obs != np.floor(obs)
        if bad.any():
            fractional = obs.dtype.kind == "f" and bool((obs[bad] != np.floor(obs[bad])).any())
            fix = ("Some are not whole numbers: round or bin them first, or declare the attribute Continuous (an "
                   "imputed one) instead of Ordinal." if fractional else
                   "Clamp them first (dpknn.processing.clamp, or a [clamp] step of dpknn process) or widen the "
                   "declared range.")
            raise DomainError(
                f"column {self.name!r} has values outside the integers of its public range "
                f"[{self.lower}, {self.upper}]: {_show(obs[bad])}. {fix}"
            )
        return values, missing

    def encode(self, df):
        """Codes of the column ``df[name]`` (bins from ``lower``), and its missing mask."""
        values, missing = self.read_column(df)
        if missing.any():
            raise _known_missing(self.name, int(missing.sum()))
        return ((values.astype(np.int64) - self.lower) // self.bin_width)

    def decode(self, codes):
        """Lowest value of each code's bin (the value itself when ``bin_width == 1``)."""
        return self.lower + np.asarray(codes, dtype=np.int64) * self.bin_width

    def to_dict(self):
        """The attribute as a TOML-ready dict (its public domain)."""
        return _with_universe(self, {"name": self.name, "type": "ordinal", "lower": self.lower,
                                     "upper": self.upper, "bin_width": self.bin_width, "weight": self.weight})


@dataclass(frozen=True)
class Categorical:
    """An attribute with a public, finite list of categories.

    Parameters
    ----------
    name : str
        Column name.
    categories : sequence
        The public categories (ints, strings or bools), without duplicates. The code of a
        value is its index in this list.
    weight : int, default 1
        Integer weight in the squared distance; two different categories are at squared
        distance ``2 * weight`` (one-hot encoding).
    universe : dict or None
        Imputed attributes only: see :class:`Universe`.
    """

    name: str
    categories: tuple
    weight: int = field(default=1, kw_only=True)
    universe: object = field(default=None, kw_only=True)

    def __post_init__(self):
        _check_name(self.name)
        _set_universe(self)
        if isinstance(self.categories, (str, bytes)) or not hasattr(self.categories, "__iter__"):
            raise TypeError(
                f"categories of attribute {self.name!r} must be a list of values, got {self.categories!r}."
            )
        cats = tuple(self.categories)
        if not cats:
            raise ValueError(f"attribute {self.name!r} has an empty domain: no categories declared.")
        if any(pd.isna(c) for c in cats):
            raise ValueError(f"categories of attribute {self.name!r} must not include a missing value.")
        if len(set(cats)) != len(cats):
            dup = pd.Series(cats, dtype=object)
            raise ValueError(
                f"categories of attribute {self.name!r} contain duplicates: "
                f"{_show(dup[dup.duplicated()].to_numpy())}."
            )
        object.__setattr__(self, "categories", cats)
        object.__setattr__(self, "weight", _check_weight(self.weight, self.name))

    kind = "categorical"

    @property
    def n_codes(self):
        """Number of categories."""
        return len(self.categories)

    def _codes(self, df):
        s = df[self.name]
        cats = pd.Index(self.categories, dtype=object)
        if isinstance(s.dtype, pd.CategoricalDtype):
            # Map the column's own categories once, then gather by its codes.
            raw = s.cat.codes.to_numpy()
            missing = raw < 0
            sub = cats.get_indexer(s.cat.categories.astype(object))
            codes = np.where(missing, -1, sub[np.maximum(raw, 0)])
            values = s.astype(object).to_numpy
        elif (pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)
              and all(isinstance(c, numbers.Integral) and not isinstance(c, bool) for c in self.categories)
              and max(self.categories) - min(self.categories) <= 1_000_000):
            # Integer codes against integer categories (numpy, nullable Int64 or float with NaN):
            # a lookup table instead of hashing.
            lo, hi = min(self.categories), max(self.categories)
            lut = np.full(hi - lo + 1, -1, dtype=np.int64)
            lut[np.asarray(self.categories, dtype=np.int64) - lo] = np.arange(len(self.categories))
            if (isinstance(s.dtype, np.dtype) and s.dtype.kind in "iu" and s.dtype.itemsize <= 2
                    and s.dtype.isnative):
                # 1- or 2-byte integers: one gather from a table over every value of the dtype,
                # indexed by the bits read as unsigned (a category outside the dtype cannot occur).
                bits = 8 * s.dtype.itemsize
                info = np.iinfo(s.dtype)
                full = np.full(1 << bits, -1, dtype=np.int64)
                for code, c in enumerate(self.categories):
                    if info.min <= c <= info.max:
                        full[c % (1 << bits)] = code
                v = s.to_numpy()
                codes = full[v.view(f"u{s.dtype.itemsize}")]
                missing = np.zeros(len(v), dtype=bool)
                inside = None
            elif isinstance(s.dtype, np.dtype) and s.dtype.kind in "iu":
                v = s.to_numpy()
                missing = np.zeros(len(v), dtype=bool)
                inside = (v >= lo) & (v <= hi)
            else:
                v = s.to_numpy(dtype=np.float64, na_value=np.nan)
                missing = np.isnan(v)
                with np.errstate(invalid="ignore"):
                    inside = (v >= lo) & (v <= hi) & (v == np.floor(v))
            if inside is not None:
                codes = np.full(len(v), -1, dtype=np.int64)
                codes[inside] = lut[v[inside].astype(np.int64) - lo]
            values = s.to_numpy
        else:
            missing = s.isna().to_numpy()
            codes = cats.get_indexer(s.to_numpy(dtype=object))
            values = s.to_numpy
        bad = (codes < 0) & ~missing
        if bad.any():
            shown = values()[bad]
            raise DomainError(
                f"column {self.name!r} has values outside its declared categories "
                f"{list(self.categories)[:10]}: {_show(shown)}.{_type_hint(shown, self.categories)}"
            )
        return codes, missing

    def read_column(self, df):
        """The codes of the observed values and the missing mask: (codes, missing)."""
        return self._codes(df)

    def encode(self, df):
        """Codes of the column ``df[name]`` (positions in ``categories``), and its missing mask."""
        codes, missing = self._codes(df)
        if missing.any():
            raise _known_missing(self.name, int(missing.sum()))
        return codes.astype(np.int64, copy=False)

    def decode(self, codes):
        """Categories of ``codes``."""
        return np.asarray(self.categories, dtype=object)[np.asarray(codes, dtype=np.int64)]

    def to_dict(self):
        """The attribute as a TOML-ready dict (its public domain)."""
        return _with_universe(self, {"name": self.name, "type": "categorical",
                                     "categories": list(self.categories), "weight": self.weight})


@dataclass(frozen=True)
class Continuous:
    """A real-valued attribute on the public range ``[lower, upper]``.

    Used for imputed or released numeric values (for example a wage); it cannot be a known
    (matching) attribute, whose cells must be exact integers.

    Parameters
    ----------
    name : str
    lower, upper : float
        Public bounds, ``lower < upper``.
    universe : dict or None
        The records the attribute applies to: see :class:`Universe`.
    """

    name: str
    lower: float
    upper: float
    universe: object = field(default=None, kw_only=True)

    def __post_init__(self):
        _check_name(self.name)
        _set_universe(self)
        for what in ("lower", "upper"):
            v = getattr(self, what)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
                raise TypeError(f"{what} of attribute {self.name!r} must be a finite real number, got {v!r}.")
        if not self.lower < self.upper:
            raise ValueError(
                f"attribute {self.name!r} has an empty domain: need lower < upper, "
                f"got lower={self.lower}, upper={self.upper}."
            )
        if not float(self.upper) - float(self.lower) <= MAX_WIDTH:
            # Bins, candidate grids, densities and sums of values are read off the width: near 1e308 they overflow
            # float64 (a range of +-8e307 drew no value at all with 8 bins).
            raise ValueError(f"attribute {self.name!r} has a range too wide: upper - lower must be at most "
                             f"{MAX_WIDTH:g} (lower={self.lower}, upper={self.upper}); declare a narrower public "
                             "range.")

    kind = "continuous"

    def read_column(self, df):
        """The observed values, checked inside [lower, upper], and the missing mask: (values, missing)."""
        values, missing = _numeric_column(df, self.name, (self.lower, self.upper))
        obs = values[~missing]
        bad = (obs < self.lower) | (obs > self.upper)
        if bad.any():
            raise DomainError(
                f"column {self.name!r} has values outside its public range [{self.lower}, {self.upper}]: "
                f"{_show(obs[bad])}. Clamp them first (dpknn.processing.clamp, or a [clamp] step of dpknn process) or "
                f"widen the public range if it was wrong."
            )
        return values, missing

    def to_dict(self):
        """The attribute as a TOML-ready dict (its public domain)."""
        return _with_universe(self, {"name": self.name, "type": "continuous", "lower": self.lower,
                                     "upper": self.upper})


@dataclass(frozen=True)
class Universe:
    """The records an imputed attribute applies to: a condition on known attributes.

    Outside its universe an attribute is *not applicable*, in every command and function: a value
    observed there is read as missing ("not applicable"), never as a value (:func:`blank_outside_universes`).
    So records outside are neither donors nor donees for it and leave imputation with the attribute
    missing, a release's condition on the attribute never holds there and its mean is over the
    universe, synthetic files draw no value there, and an evaluation compares the attribute inside
    the universe only. The curator is told how many observed values lay outside
    (:func:`observed_outside_universes`, a confidential count). A universe is public, like every part
    of a schema; it is given as a
    ``where``-style dict (``{"AGE": (16, None)}``: a range, either end open; ``{"SEX": [1]}``: a
    list of categories), and in TOML as ``universe = {AGE = {low = 16}}``.

    Conditions must follow the cells of the known attributes, so that a universe is a set of
    whole cells: a range on a binned ordinal starts and ends on bin edges, and a list of values of
    an ordinal must form one range. Then the order, donors and L1(D) restricted to a universe are
    those of the same imputation run on the universe's records with the domain cut to its cells
    (``docs/imputation.md``, "Universes").

    Attributes
    ----------
    conditions : tuple of (name, low, high, values)
        Sorted by name. Ordinal conditions are ranges (``values`` None, both ends set and inside
        the domain); categorical conditions list ``values`` in the attribute's category order.
    """

    conditions: tuple

    @property
    def where(self):
        """The conditions as a ``where`` dict (ranges as tuples, categories as lists)."""
        return {n: ((lo, hi) if vals is None else list(vals)) for n, lo, hi, vals in self.conditions}

    def to_public(self):
        """The TOML / JSON form: ``{name: {"low": .., "high": ..}}`` or ``{name: [values]}``."""
        from dpknn.schema._conditions import public_conditions

        return public_conditions(self.where)

    def mask(self, df):
        """Boolean mask of the rows of ``df`` inside the universe."""
        from dpknn.schema._conditions import conditions_mask

        return conditions_mask(df, len(df), self.where)


def observed_outside_universes(df, attributes):
    """CONFIDENTIAL: ``{name: number of observed values outside the attribute's universe}`` for the
    attributes of ``attributes`` (any that have a universe and such values; the others are left out).

    These values are not applicable by the universe's declaration and every part of dpknn reads them
    as missing (:class:`Universe`); the count is for the curator (diagnostics, logs), never for a
    published file. Many of them usually mean the universe was declared too narrow.

    Parameters
    ----------
    df : pandas.DataFrame
        The data; attributes without a column in it are left out.
    attributes : sequence of Ordinal, Categorical or Continuous
        The attributes to count (those without a universe are left out).
    """
    out = {}
    for a in attributes:
        if a.universe is not None and a.name in df.columns:
            n = int((df[a.name].notna().to_numpy() & ~a.universe.mask(df)).sum())
            if n:
                out[a.name] = n
    return out


def warn_outside_universes(df, attributes, log):
    """:func:`observed_outside_universes` of ``df``, each count logged as a warning on ``log`` for the curator
    (stderr, never a published file); returns the counts.

    Parameters
    ----------
    df : pandas.DataFrame
        The data.
    attributes : sequence of Ordinal, Categorical or Continuous
        The attributes to count, as for :func:`observed_outside_universes`.
    log : logging.Logger
        Where the warnings go.
    """
    return log_outside_universes(observed_outside_universes(df, attributes), attributes, log)


def log_outside_universes(counts, attributes, log):
    """Log each count of :func:`observed_outside_universes` (``counts``, also summed over the partitions of a
    folder) as a warning on ``log`` for the curator (stderr, never a published file); returns ``counts``."""
    for a in attributes:
        if a.name in counts:
            log.warning("%s: %d observed value(s) lie outside its universe %s; they are not applicable there and "
                        "are read as missing (docs/schema.md, \"Universes\")", a.name, counts[a.name],
                        a.universe.to_public())
    return counts


def blank_outside_universes(df, attributes, *, copy=True):
    """``df`` with every attribute of ``attributes`` missing outside its universe ("not applicable":
    the one meaning of a universe, :class:`Universe`); a copy unless ``copy=False`` (rows built here,
    say synthetic ones). Rows, index, columns and the values inside every universe are kept; an
    integer column becomes nullable (``Int64``) when a value is blanked.

    Parameters
    ----------
    df : pandas.DataFrame
        The data; attributes without a column in it are skipped.
    attributes : sequence of Ordinal, Categorical or Continuous
        The attributes to blank (those without a universe are skipped).
    copy : bool, default True
        Work on a copy of ``df``; False modifies ``df`` itself.
    """
    if copy:
        df = df.copy()
    for a in attributes:
        if a.universe is None or a.name not in df.columns:
            continue
        outside = ~a.universe.mask(df)
        if not (outside & df[a.name].notna().to_numpy()).any():
            continue
        col = df[a.name]
        if isinstance(col.dtype, pd.CategoricalDtype) or col.dtype == object:
            df.loc[outside, a.name] = np.nan
        elif pd.api.types.is_integer_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype):
            df[a.name] = col.astype("Int64" if pd.api.types.is_integer_dtype(col.dtype) else "boolean").mask(outside)
        else:
            df[a.name] = col.mask(outside)
    return df


def _set_universe(attr):
    """Parse ``attr.universe`` (a dict, a Universe or None) into a Universe of raw conditions;
    :class:`Schema` checks them against the known attributes."""
    u = attr.universe
    if u is None or isinstance(u, Universe):
        return
    if not isinstance(u, dict) or not u:
        raise TypeError(f"universe of attribute {attr.name!r} must be a non-empty dict of conditions on known "
                        f"attributes, e.g. {{'AGE': (16, None)}}, got {u!r}.")
    conds = []
    for col, spec in u.items():
        _check_name(col)
        if isinstance(spec, dict):  # the TOML form {low = .., high = ..}
            check_keys(spec, {"low", "high"}, f"universe of attribute {attr.name!r}: the condition on {col!r}",
                       hint="a range is {low = .., high = ..}")
            if not spec:
                raise ValueError(f"universe of attribute {attr.name!r}: the condition on {col!r} must be "
                                 f"{{low = .., high = ..}} or a list of values, got {spec!r}.")
            spec = (spec.get("low"), spec.get("high"))
        if isinstance(spec, tuple):
            if len(spec) != 2:
                raise ValueError(f"universe of attribute {attr.name!r}: the range on {col!r} must be a (low, high) "
                                 f"pair, got {spec!r}.")
            conds.append((col, spec[0], spec[1], None))
        elif isinstance(spec, (list, set, frozenset)):
            conds.append((col, None, None, tuple(spec)))
        else:
            raise TypeError(f"universe of attribute {attr.name!r}: the condition on {col!r} must be a (low, high) "
                            f"range or a list of values, got {spec!r}.")
    object.__setattr__(attr, "universe", Universe(tuple(sorted(conds, key=lambda c: c[0]))))


def _with_universe(attr, out):
    if attr.universe is not None:
        out["universe"] = attr.universe.to_public()
    return out


def check_universe(attr, known, *, whole_bins=True):
    """``attr.universe`` checked against the attributes ``known`` and put in canonical form.

    ``whole_bins``: a range on an ordinal must start and end on its bin edges (the imputer's
    cells); synthesis instead adds the range's ends to its bin edges
    (:class:`~dpknn.schema.Discretization`)."""
    from dpknn.schema._conditions import check_condition

    by_name = {a.name: a for a in known}
    conds = []
    for col, lo, hi, values in attr.universe.conditions:
        where = f"universe of attribute {attr.name!r}: {col}"
        if col not in by_name:
            raise ValueError(f"universe of attribute {attr.name!r} names {col!r}, which is not a known attribute "
                             f"(known: {list(by_name)}); a universe is a condition on known attributes.")
        a = by_name[col]
        spec = check_condition(a, (lo, hi) if values is None else list(values), where)
        if isinstance(a, Categorical):
            chosen = set(spec)
            conds.append((col, None, None, tuple(c for c in a.categories if c in chosen)))
            if not conds[-1][3]:
                raise ValueError(f"{where} lists no category; the universe would be empty.")
            continue
        if isinstance(spec, list):
            lo, hi = (min(spec), max(spec)) if spec else (None, None)
            if not spec or set(range(lo, hi + 1)) != set(spec):
                raise ValueError(f"{where} lists {sorted(spec)[:10]}, which is not one range of values; give a range "
                                 "{low = .., high = ..} (a universe must be whole cells of the ordinal).")
        else:
            lo, hi = spec
        lo = a.lower if lo is None else max(a.lower, math.ceil(lo))
        hi = a.upper if hi is None else min(a.upper, math.floor(hi))
        if lo > hi:
            raise ValueError(f"{where} leaves no value of the public range [{a.lower}, {a.upper}]; the universe "
                             "would be empty.")
        bw = a.bin_width
        if whole_bins and ((lo - a.lower) % bw or (hi != a.upper and (hi - a.lower + 1) % bw)):
            first = a.lower + (lo - a.lower) // bw * bw
            raise ValueError(
                f"{where} = [{lo}, {hi}] cuts a bin of {col!r} (bins of width {bw} from {a.lower}); a universe must be "
                f"whole bins: start at a bin edge such as {first} or {first + bw}, and end just before one.")
        conds.append((col, int(lo), int(hi), None))
    return Universe(tuple(conds))


def _known_missing(name, count):
    return DomainError(
        f"known attribute {name!r} has {count} missing value(s). Known (matching) attributes must be "
        f"complete; fill them with a data-independent draw first (dpknn.processing.impute) or move "
        f"{name!r} to the imputed attributes."
    )


_KINDS = {"ordinal": Ordinal, "categorical": Categorical, "continuous": Continuous}


def attribute_from_dict(entry, where="known"):
    """An attribute from its TOML table (``name``, ``type`` and the type's keys); ``where`` names the
    list it came from in messages and allows ``universe`` for ``"imputed"`` and ``"attribute"``
    (synthesis)."""
    if isinstance(entry, dict) and entry.get("type") in _KINDS:
        allowed = {"name", "type", "weight"} | ({"universe"} if where in ("imputed", "attribute") else set()) | (
            {"categories"} if entry["type"] == "categorical" else
            {"lower", "upper", "bin_width"} if entry["type"] == "ordinal" else {"lower", "upper"})
        check_keys(entry, allowed, f"attribute {entry.get('name')!r} of type {entry['type']!r}")
    if not isinstance(entry, dict) or "type" not in entry or "name" not in entry:
        raise ValueError(f"each entry of {where} needs 'name' and 'type', got {entry!r}.")
    entry = dict(entry)
    kind = entry.pop("type")
    if kind not in _KINDS:
        raise ValueError(f"attribute {entry['name']!r} has unknown type {kind!r}; "
                         f"expected one of {sorted(_KINDS)}.")
    name = entry.pop("name")
    try:
        if kind == "categorical":
            return Categorical(name, entry.pop("categories"), **entry)
        if kind == "ordinal":
            return Ordinal(name, entry.pop("lower"), entry.pop("upper"), **entry)
        return Continuous(name, entry.pop("lower"), entry.pop("upper"), **entry)
    except KeyError as exc:
        raise ValueError(f"attribute {name!r} of type {kind!r} lacks {exc.args[0]!r}.") from None
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise ValueError(f"attribute {name!r} of type {kind!r} has unknown keys "
                             f"{sorted(entry)}.") from None
        raise


@dataclass(frozen=True)
class EncodedData:
    """A table encoded against a :class:`Schema`.

    Attributes
    ----------
    cells : ndarray of shape (n, p)
        Codes of the known attributes, in the schema's order, in the smallest signed integer
        dtype that holds every code of the public domain.
    labels : ndarray of shape (n,), int64
        Unique record labels (the schema's label column, or the row position).
    incomplete : ndarray of shape (n,), bool
        True where any imputed attribute is missing.
    """

    cells: np.ndarray
    labels: np.ndarray
    incomplete: np.ndarray

    @property
    def n_records(self):
        """Number of encoded records."""
        return self.cells.shape[0]


@dataclass(frozen=True, kw_only=True)
class Schema:
    """The public description of a table: known attributes, imputed attributes, record label.

    Parameters
    ----------
    known : sequence of Ordinal or Categorical
        The known (matching) attributes that define a record's cell and the distance.
    imputed : sequence of Ordinal, Categorical or Continuous
        The attribute set A; a record is incomplete when any of them is missing.
    label : str or None, default None
        Column holding unique integer record labels; None uses the row position.

    Examples
    --------
    >>> from dpknn import Schema, Ordinal, Categorical, Continuous
    >>> schema = Schema(known=[Ordinal("AGE", 0, 99, bin_width=10), Categorical("SEX", [1, 2])],
    ...                 imputed=[Continuous("INCWAGE", 0, 5001)])
    >>> schema.known_names
    ('AGE', 'SEX')
    """

    known: tuple
    imputed: tuple
    label: str | None = None

    def __post_init__(self):
        known, imputed = tuple(self.known), tuple(self.imputed)
        if not known:
            raise ValueError("known must list at least one attribute.")
        if not imputed:
            raise ValueError("imputed must list at least one attribute (the set A).")
        for a in known:
            if isinstance(a, Continuous):
                raise TypeError(
                    f"known attribute {a.name!r} is Continuous; matching attributes must be Ordinal "
                    "(bin it with bin_width) or Categorical so that distances are exact integers."
                )
            if not isinstance(a, (Ordinal, Categorical)):
                raise TypeError(f"known attributes must be Ordinal or Categorical, got {a!r}.")
        for a in imputed:
            if not isinstance(a, (Ordinal, Categorical, Continuous)):
                raise TypeError(f"imputed attributes must be Ordinal, Categorical or Continuous, got {a!r}.")
        for a in known:
            if a.universe is not None:
                raise ValueError(f"known attribute {a.name!r} has a universe; only imputed attributes have one "
                                 "(known attributes are complete for every record).")
        imputed = tuple(a if a.universe is None else replace(a, universe=check_universe(a, known))
                        for a in imputed)
        names = [a.name for a in known]
        both = sorted(set(names) & {a.name for a in imputed})
        if both:
            raise ValueError(f"attributes {both} are listed as both known and imputed; A must be disjoint "
                             "from the matching attributes.")
        for group, what in ((known, "known"), (imputed, "imputed")):
            seen = [a.name for a in group]
            dups = sorted({n for n in seen if seen.count(n) > 1})
            if dups:
                raise ValueError(f"{what} attributes {dups} are listed more than once.")
        if self.label is not None:
            _check_name(self.label)
            if self.label in names or self.label in {a.name for a in imputed}:
                raise ValueError(f"label column {self.label!r} cannot also be an attribute.")
        object.__setattr__(self, "known", known)
        object.__setattr__(self, "imputed", imputed)

    @property
    def known_names(self):
        """Names of the known attributes, in order."""
        return tuple(a.name for a in self.known)

    @property
    def imputed_names(self):
        """Names of the imputed attributes (the set A), in order."""
        return tuple(a.name for a in self.imputed)

    @property
    def n_codes(self):
        """Number of codes of each known attribute (the public domain of the cells)."""
        return np.array([a.n_codes for a in self.known], dtype=np.int64)

    @property
    def weights(self):
        """Distance weights of the known attributes, in order."""
        return np.array([a.weight for a in self.known], dtype=np.int64)

    @property
    def is_categorical(self):
        """Whether each known attribute is categorical, in order."""
        return np.array([isinstance(a, Categorical) for a in self.known], dtype=bool)

    def attribute(self, name):
        """The attribute called ``name``."""
        for a in (*self.known, *self.imputed):
            if a.name == name:
                return a
        raise KeyError(f"no attribute {name!r} in the schema; attributes are "
                       f"{list(self.known_names + self.imputed_names)}.")

    def cell_dtype(self):
        """Smallest signed integer dtype that holds every code of the public domain."""
        top = int(self.n_codes.max()) - 1
        for dt in (np.int8, np.int16, np.int32):
            if top <= np.iinfo(dt).max:
                return np.dtype(dt)
        return np.dtype(np.int64)

    def _check_columns(self, df):
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"data must be a pandas DataFrame, got {type(df).__name__}.")
        wanted = list(self.known_names + self.imputed_names)
        if self.label is not None:
            wanted.append(self.label)
        absent = [c for c in wanted if c not in df.columns]
        if absent:
            from dpknn.schema._codebook import NIU_SUFFIX

            hint = (f" The {NIU_SUFFIX} indicators of a schema from a codebook come from reading the file with its "
                    "codebook (--codebook, or dpknn.schema._coded_files.read_coded)."
                    if any(str(c).endswith(NIU_SUFFIX) for c in absent) else "")
            raise DomainError(f"columns {absent} declared in the schema are not in the data "
                              f"(data columns: {list(df.columns)[:20]}).{hint}")
        if df.columns.has_duplicates:
            dup = df.columns[df.columns.duplicated()].unique().tolist()
            raise DomainError(f"data has duplicate column names {dup}.")

    def labels(self, df):
        """Unique int64 record labels of ``df`` (row positions when ``label`` is None)."""
        if self.label is None:
            return np.arange(len(df), dtype=np.int64)
        values, missing = _numeric_column(df, self.label)
        if missing.any():
            raise DomainError(f"label column {self.label!r} has {int(missing.sum())} missing value(s).")
        bad = (values != np.floor(values)) | (np.abs(values) > 2.0**62)
        if bad.any():
            raise DomainError(f"label column {self.label!r} must hold integers: {_show(values[bad])}.")
        if pd.api.types.is_integer_dtype(df[self.label].dtype):
            labels = df[self.label].to_numpy(dtype=np.int64)
        else:
            labels = values.astype(np.int64)
        index = pd.Index(labels)
        if index.has_duplicates:
            raise DomainError(
                f"label column {self.label!r} has duplicate labels: {_show(labels[index.duplicated()])}."
            )
        return labels

    def incomplete_mask(self, df):
        """True where an imputed attribute is missing inside its universe; observed values must fit
        their domain (outside the universe too)."""
        incomplete = np.zeros(len(df), dtype=bool)
        for a in self.imputed:
            _, missing = a.read_column(df)
            if a.universe is not None:
                missing = missing & a.universe.mask(df)
            incomplete |= missing
        return incomplete

    @property
    def has_universes(self):
        """Whether an imputed attribute declares a universe."""
        return any(a.universe is not None for a in self.imputed)

    @property
    def universe_names(self):
        """The known attributes the universes of the imputed attributes read (a reader of some columns
        needs them to tell where an attribute is not applicable)."""
        return sorted({name for a in self.imputed if a.universe is not None for name in a.universe.where})

    def universe_groups(self):
        """The imputed attributes grouped by universe: a list of (Universe or None, names), in the
        order of first appearance. Each group is imputed on its own (``docs/imputation.md``)."""
        groups = {}
        for a in self.imputed:
            groups.setdefault(a.universe, []).append(a.name)
        return [(u, tuple(names)) for u, names in groups.items()]

    def restricted(self, universe, names, *, label):
        """The schema of one universe's imputation: the known attributes cut to the universe's cells
        (codes shift, distances and the lexicographic order of cells are unchanged) and the imputed
        attributes ``names`` without universe; ``label`` is the label column."""
        cut = {} if universe is None else universe.where
        known = []
        for a in self.known:
            if a.name not in cut:
                known.append(a)
            elif isinstance(a, Categorical):
                known.append(Categorical(a.name, cut[a.name], weight=a.weight))
            else:
                lo, hi = cut[a.name]
                known.append(Ordinal(a.name, lo, hi, bin_width=a.bin_width, weight=a.weight))
        imputed = [replace(self.attribute(n), universe=None) for n in names]
        return Schema(known=known, imputed=imputed, label=label)

    def encode(self, df):
        """Encode ``df`` into integer cells, labels and the incomplete mask, in O(n).

        Parameters
        ----------
        df : pandas.DataFrame
            Must hold every column the schema declares; other columns are ignored. It is not
            modified.

        Returns
        -------
        EncodedData

        Raises
        ------
        DomainError
            When a column is absent, a value lies outside its public domain, a known
            attribute has missing values, or labels are missing, non-integer or duplicated.
        """
        self._check_columns(df)
        n = len(df)
        cells = np.empty((n, len(self.known)), dtype=self.cell_dtype())
        for j, a in enumerate(self.known):
            cells[:, j] = a.encode(df)
        labels = self.labels(df)
        incomplete = self.incomplete_mask(df)
        logger.debug("encoded %d records: %d incomplete", n, int(incomplete.sum()))
        return EncodedData(cells=cells, labels=labels, incomplete=incomplete)

    def decode(self, cells):
        """Known attributes from cells (ordinal codes become the lower edge of their bin)."""
        cells = np.asarray(cells)
        return pd.DataFrame({a.name: a.decode(cells[:, j]) for j, a in enumerate(self.known)})

    def squared_distance(self, a, b):
        """Exact integer squared distance between cells ``a`` and ``b`` (broadcasting); see
        :func:`dpknn.schema.squared_distance` for what a weight means."""
        return squared_distance(a, b, self.weights, self.is_categorical)

    # --- description files -------------------------------------------------------------
    def to_dict(self):
        """The schema as a TOML-ready dict (public domains only)."""
        out = {"known": [a.to_dict() for a in self.known], "imputed": [a.to_dict() for a in self.imputed]}
        if self.label is not None:
            out["label"] = self.label
        return out

    @classmethod
    def from_dict(cls, spec, *, allow_draft=False):
        """Build a schema from a dict shaped like the TOML description (see :meth:`from_file`).

        A description with ``draft = true`` (written by ``dpknn schema``, domains read from the
        data) is refused unless ``allow_draft``, which loads it with a PrivacyLeakWarning.
        """
        if not isinstance(spec, dict):
            raise TypeError(f"schema description must be a mapping, got {type(spec).__name__}.")
        check_draft(spec, "schema description", allow_draft=allow_draft)
        spec = {k: v for k, v in spec.items() if k != DRAFT_KEY}
        check_keys(spec, {"known", "imputed", "label"}, "schema description",
                   hint="expected 'known', 'imputed' and optionally 'label'")

        for key in ("known", "imputed"):
            if not isinstance(spec.get(key, []), list):
                raise TypeError(f"schema description: {key!r} must be a list of attribute tables ([[{key}]] in "
                                f"TOML), got {type(spec[key]).__name__} {spec[key]!r}.")
        return cls(known=[attribute_from_dict(e, "known") for e in spec.get("known", [])],
                   imputed=[attribute_from_dict(e, "imputed") for e in spec.get("imputed", [])],
                   label=spec.get("label"))

    @classmethod
    def from_file(cls, path, *, allow_draft=False):
        """Read a schema from a TOML file.

        A file with the top-level line ``draft = true`` (written by ``dpknn schema``) is refused
        unless ``allow_draft``, which loads it with a PrivacyLeakWarning (see :func:`check_draft`).

        The file lists ``[[known]]`` and ``[[imputed]]`` tables, each with ``name`` and ``type``
        (``"ordinal"``, ``"categorical"`` or ``"continuous"``) and that type's parameters, and an
        optional top-level ``label``::

            label = "SERIAL"

            [[known]]
            name = "AGE"
            type = "ordinal"
            lower = 0
            upper = 99
            bin_width = 10

            [[known]]
            name = "SEX"
            type = "categorical"
            categories = [1, 2]

            [[imputed]]
            name = "INCWAGE"
            type = "continuous"
            lower = 0
            upper = 5001
        """
        from dpknn.utils._io import read_toml

        spec = read_toml(path, "schema file")
        check_draft(spec, f"schema file {str(path)!r}", allow_draft=allow_draft)
        return cls.from_dict({k: v for k, v in spec.items() if k != DRAFT_KEY})

    @classmethod
    def from_codebook(cls, codebook, *, known, imputed, label=None, bounds=None, bin_widths=None):
        """A schema whose domains and codes all come from a public codebook (an IPUMS DDI ``.xml``, or a
        Stata, SPSS or SAS file's metadata); see :func:`dpknn.schema._codebook.schema_from_codebook`, whose
        ``.to_toml()`` also writes the review notes and the codes' labels.

        Parameters
        ----------
        codebook : Codebook or str or Path
            The codebook or its path.
        known, imputed : sequence of str
            The known (matching) and the imputed attributes: the one choice a codebook cannot make.
        label : str or None
            Column of unique integer record labels.
        bounds : dict of str to (lower, upper), optional
            Public ranges narrower than the codebook's.
        bin_widths : dict of str to int, optional
            Bins of known ordinal attributes.

        Returns
        -------
        Schema
        """
        from dpknn.schema._codebook import schema_from_codebook

        return schema_from_codebook(codebook, known=known, imputed=imputed, label=label, bounds=bounds,
                                    bin_widths=bin_widths).schema

    def to_toml(self):
        """The TOML description of this schema (read back by :meth:`from_file`)."""
        lines = []
        if self.label is not None:
            lines.append(f"label = {_toml_value(self.label)}")
        for group, attrs in (("known", self.known), ("imputed", self.imputed)):
            for a in attrs:
                lines += ["", f"[[{group}]]"]
                lines += [f"{k} = {_toml_value(v)}" for k, v in a.to_dict().items()]
        return "\n".join(lines) + "\n"


def _toml_value(v):
    if isinstance(v, bool) or isinstance(v, np.bool_):
        return "true" if v else "false"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return repr(float(v))
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_toml_value(str(k))} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write {v!r} to TOML.")


def check_draft(spec, where, *, allow_draft=False):
    """Refuse a description (schema or attributes) marked ``draft = true`` by ``dpknn schema``.

    Its domains were read from the data, so a release with them leaks the data and voids the
    guarantee. ``allow_draft`` loads it anyway with a :class:`PrivacyLeakWarning` (tests, a first
    look at the data); ``draft = false`` or no key passes.

    Parameters
    ----------
    spec : dict
        The parsed description (a TOML table), read for its ``draft`` key.
    where : str
        The description's name in messages (say its file).
    allow_draft : bool, default False
        Load a draft with a :class:`PrivacyLeakWarning` instead of refusing it.
    """
    draft = spec.get(DRAFT_KEY, False)
    if not isinstance(draft, bool):
        raise ValueError(f"{where}: {DRAFT_KEY} must be true or false, got {draft!r}.")
    if not draft:
        return
    if not allow_draft:
        raise ValueError(
            f"{where} is a DRAFT (draft = true): dpknn schema read its domains from the data, and a release with them "
            "leaks the data and voids the privacy guarantee. Replace every bound and category list by public ones "
            "(a code book, a legal range), then delete the line 'draft = true'.")
    warnings.warn(f"{where} is a DRAFT (draft = true) loaded with allow_draft=True: its domains were read from the "
                  "data, so releases with it are not differentially private.", PrivacyLeakWarning, stacklevel=3)
