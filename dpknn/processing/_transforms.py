"""Data processing before a release: clamp, data-independent impute, resize with amplification.

These steps fix the public properties a mechanism needs (bounds, non-null data, a known number
of records) without reading them from the data. ``clamp`` and ``impute`` act on each record
separately and never depend on other records, so they are 1-stable: a neighbouring data set
(add/remove one record) stays neighbouring. ``resize`` is c-stable and subsamples, which its
privacy accounting states (Theorem 1 and Algorithms 3-4 of the Privacy Tools notes, with the
errata listed in :func:`resize`).

Inputs are never modified; ``clamp`` and ``impute`` never add, drop or reorder rows.

References
----------
.. [1] Harvard Privacy Tools Project. "Data Processing Notes": §2 clamping, §3 imputation,
   §4 resize (Algorithms 1-4, Theorem 1).
.. [2] Balle, Barthe, Gaboardi (2018). "Privacy amplification by subsampling: tight analyses
   via couplings and divergences", Theorems 8 and 9.
.. [3] Vadhan (2017). "The complexity of differential privacy", Lemma 2.3 (group privacy).
"""

from __future__ import annotations

import logging
import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpknn.mechanisms._base import PrivacyUnit
from dpknn.schema._flags import flag_columns
from dpknn.utils._validation import DELTA, EPSILON, check_rng

__all__ = ["Resized", "clamp", "impute", "resize"]

logger = logging.getLogger(__name__)

#: Most records :func:`resize` builds: it holds the whole table in memory, and a larger public n
#: would only fail later, inside numpy or pandas, with an unhelpful error.
MAX_RESIZE_RECORDS = 2**32


# --- per-column parameters -------------------------------------------------------------------
def _as_frame(data):
    """(DataFrame view of data, function turning a result frame back into data's type)."""
    if isinstance(data, pd.DataFrame):
        if not data.columns.is_unique:
            dups = sorted({str(c) for c in data.columns[data.columns.duplicated()]})
            raise ValueError(f"data has duplicate column names {dups}; parameters are given by column name, so "
                             "give every column a distinct name (rename them, or drop the repeated columns).")
        return data, lambda df: df
    if isinstance(data, pd.Series):
        name = data.name if data.name is not None else 0
        return data.to_frame(name=name), lambda df: df[name].rename(data.name)
    if isinstance(data, np.ndarray):
        if data.ndim == 1:
            return pd.DataFrame({0: data}), lambda df: df[0].to_numpy()
        if data.ndim == 2:
            return pd.DataFrame(data), lambda df: df.to_numpy()
        raise ValueError(f"data must be 1- or 2-dimensional, got shape {data.shape}.")
    raise TypeError(f"data must be a pandas DataFrame or Series or a numpy array, got {type(data).__name__}.")


def _per_column(value, columns, name):
    """Expand a parameter to {column: value}: a dict by name, a sequence by position, or a scalar
    (only for single-column data)."""
    if value is None:
        return {}
    if isinstance(value, dict):
        unknown = [c for c in value if c not in columns]
        if unknown:
            raise ValueError(f"{name} names columns {unknown} that are not in the data.")
        return dict(value)
    if len(columns) == 1:
        return {columns[0]: value}
    if isinstance(value, (list, tuple)) and len(value) == len(columns) and name != "categories":
        return {c: v for c, v in zip(columns, value) if v is not None}
    if name == "categories" and isinstance(value, (list, tuple)) and len(value) == len(columns) \
            and all(v is None or isinstance(v, (list, tuple, set)) for v in value):
        return {c: v for c, v in zip(columns, value) if v is not None}
    raise ValueError(f"{name} must be a dict by column, or one value per column ({len(columns)}), got {value!r}.")


def _kind(series):
    dt = series.dtype
    if pd.api.types.is_bool_dtype(dt):
        return "bool"
    if pd.api.types.is_integer_dtype(dt):
        return "int"
    if pd.api.types.is_float_dtype(dt):
        return "float"
    return "object"


def _is_null(series, null_value):
    null = series.isna().to_numpy()
    if null_value is not None and not (isinstance(null_value, float) and math.isnan(null_value)):
        null = null | (series == null_value).to_numpy()
    return null


# --- clamp -----------------------------------------------------------------------------------
def clamp(data, *, lower=None, upper=None, categories=None, null_value=None):
    """Clamp each column to its public domain (Privacy Tools notes, Algorithm 1).

    A numeric column (float or int) with ``lower`` and ``upper`` has values below ``lower``
    moved to ``lower`` and values above ``upper`` moved to ``upper``; NaN stays NaN. A
    categorical column (int, bool or str) with ``categories`` has every value outside the set
    replaced by that column's ``null_value``; nulls stay nulls. A column is clamped one way or
    the other, never both; columns with no parameters are returned as they are.

    Each record is mapped on its own, so clamping is 1-stable under add/remove one record.

    Parameters
    ----------
    data : DataFrame, Series or ndarray
        Not modified.
    lower, upper : scalar, sequence or dict
        Public bounds per column (a dict by column name, one value per column, or a scalar
        for single-column data).
    categories : collection, sequence of collections or dict
        The public category set per categorical column.
    null_value : scalar, sequence or dict
        Value that out-of-set categories become. Needed for int and bool columns (which
        cannot hold a missing value); for other columns it defaults to None (missing).

    Returns
    -------
    Same type as ``data``, a new object with the same rows in the same order.

    References
    ----------
    .. [1] Privacy Tools "Data Processing Notes", §2.
    """
    frame, back = _as_frame(data)
    cols = list(frame.columns)
    lo, hi = _per_column(lower, cols, "lower"), _per_column(upper, cols, "upper")
    cats, nulls = _per_column(categories, cols, "categories"), _per_column(null_value, cols, "null_value")
    out = frame.copy()
    for c in cols:
        numeric = c in lo or c in hi
        if numeric and c in cats:
            raise ValueError(f"column {c!r} has both numeric bounds and categories; clamp it one way only.")
        kind = _kind(frame[c])
        if numeric:
            if c not in lo or c not in hi:
                raise ValueError(f"column {c!r}: numeric clamping needs both lower and upper.")
            a, b = lo[c], hi[c]
            for v, what in ((a, "lower"), (b, "upper")):
                if isinstance(v, bool) or not isinstance(v, numbers.Real) or math.isnan(v):
                    raise ValueError(f"column {c!r}: {what} must be a number, got {v!r}.")
            if a > b:
                raise ValueError(f"column {c!r}: lower={a!r} is greater than upper={b!r}.")
            if kind not in ("int", "float"):
                raise TypeError(f"column {c!r} has dtype {frame[c].dtype}; numeric clamping needs float or int.")
            if kind == "int" and not (float(a).is_integer() and float(b).is_integer()):
                raise ValueError(f"column {c!r} is integer; its bounds must be integers, got {a!r}, {b!r}.")
            out[c] = frame[c].clip(lower=a, upper=b)
        elif c in cats:
            allowed = _check_categories(cats[c], c, frame[c])
            if kind == "float":
                raise TypeError(f"column {c!r} is float; categorical clamping needs int, bool or str values.")
            nv = nulls.get(c)
            if kind in ("int", "bool") and nv is None:
                raise ValueError(f"column {c!r} has dtype {frame[c].dtype}, which cannot hold a missing value; "
                                 "give its null_value.")
            s = frame[c]
            null = _is_null(s, nv)
            inside = pd.Index(allowed, dtype=object).get_indexer(s.astype(object).to_numpy()) >= 0
            replace = ~inside & ~null
            if replace.any():
                new = s.to_numpy(dtype=object, copy=True)
                new[replace] = nv
                out[c] = _restore_dtype(pd.Series(new, index=s.index, name=c), s)
        elif c in nulls:
            raise ValueError(f"column {c!r} has a null_value but no categories.")
    return back(out)


# --- impute ----------------------------------------------------------------------------------
def impute(data, *, categories=None, weights=None, null_value=None, distribution="uniform", shift=None,
           scale=None, lower=None, upper=None, integer=None, rng=None):
    """Replace missing values by draws that never depend on the data (Privacy Tools, Algorithm 2).

    Numeric columns with ``lower`` and ``upper``: a missing value becomes a draw from
    Uniform[lower, upper] (``distribution="uniform"``) or from Gaussian(shift, scale) moved into
    [lower, upper] by clamping (``distribution="gaussian"``, as the notes specify: a draw below
    ``lower`` becomes ``lower``, so the bounds carry point masses). Integer columns (a nullable
    ``Int64`` column holds missing values) and float columns named in ``integer`` get integer
    draws instead: uniform on the integers of [lower, upper], or the Gaussian draw rounded to the
    nearest integer and then clamped, so that an :class:`~dpknn.schema.Ordinal` attribute stays
    in its domain. Categorical columns with ``categories``: nulls (missing values, or
    ``null_value``) become a draw from the categories with probabilities proportional to
    ``weights`` (uniform by default).

    The draws ignore the data, so each record is mapped on its own: the step is 1-stable.

    Parameters
    ----------
    data : DataFrame, Series or ndarray
        Not modified.
    categories, weights, null_value : per column (dict by name, one per column, or a scalar
        for single-column data)
        Public category list, draw weights, and the value that marks a null besides a missing one.
    distribution : {"uniform", "gaussian"}
    shift, scale : per column
        Mean and standard deviation of the Gaussian draws.
    lower, upper : per column
        Public bounds of the numeric draws; integers for integer draws.
    integer : bool per column, optional
        Draw integers for these float columns and return them as nullable ``Int64`` columns
        (integer-dtype columns always get integers and keep their dtype). Their observed
        values must be integers.
    rng : numpy.random.Generator, int or None
        Source of the draws (reproducibility only, not security).

    Returns
    -------
    Same type as ``data``, a new object with the same rows in the same order.

    References
    ----------
    .. [1] Privacy Tools "Data Processing Notes", §3.
    """
    if distribution not in ("uniform", "gaussian"):
        raise ValueError(f"distribution must be 'uniform' or 'gaussian', got {distribution!r}.")
    rng = check_rng(rng)
    frame, back = _as_frame(data)
    cols = list(frame.columns)
    cats, w = _per_column(categories, cols, "categories"), _per_column(weights, cols, "weights")
    nulls = _per_column(null_value, cols, "null_value")
    lo, hi = _per_column(lower, cols, "lower"), _per_column(upper, cols, "upper")
    mu, sd = _per_column(shift, cols, "shift"), _per_column(scale, cols, "scale")
    integers = _per_column(integer, cols, "integer")
    for c, v in integers.items():
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"column {c!r}: integer must be true or false, got {v!r}.")
    out = frame.copy()
    for c in cols:
        if c in cats:
            if c in lo or c in hi:
                raise ValueError(f"column {c!r} has both categories and numeric bounds; impute it one way only.")
            _impute_categories(frame, out, c, cats[c], w.get(c), nulls.get(c), rng)
        elif c in lo or c in hi:
            if c not in lo or c not in hi:
                raise ValueError(f"column {c!r}: numeric imputation needs both lower and upper.")
            gauss = None if distribution == "uniform" else (mu.get(c), sd.get(c))
            _impute_numbers(frame, out, c, lo[c], hi[c], bool(integers.get(c, False)), gauss, rng)
        elif c in nulls or c in w:
            raise ValueError(f"column {c!r} has null_value or weights but no categories.")
    return back(out)


def _impute_categories(frame, out, c, categories, weights, null_value, rng):
    """Fill the nulls of categorical column ``c`` of ``out`` with draws from ``categories``."""
    allowed = _check_categories(categories, c, frame[c])
    if not allowed:
        raise ValueError(f"column {c!r}: categories must not be empty.")
    p = np.ones(len(allowed)) if weights is None else np.asarray(weights, dtype=float)
    if p.shape != (len(allowed),) or np.any(p < 0) or not np.isfinite(p).all() or p.sum() <= 0:
        raise ValueError(f"column {c!r}: weights must be {len(allowed)} non-negative numbers with a positive "
                         f"sum, got {weights!r}.")
    null = _is_null(frame[c], null_value)
    if null.any():
        draws = rng.choice(len(allowed), size=int(null.sum()), p=p / p.sum())
        filled = frame[c].to_numpy(dtype=object, copy=True)
        filled[null] = [allowed[i] for i in draws]
        out[c] = _restore_dtype(pd.Series(filled, index=frame.index, name=c), frame[c])


def _impute_numbers(frame, out, c, lower, upper, integer, gauss, rng):
    """Fill the missing values of numeric column ``c`` of ``out``: uniform draws on [lower, upper]
    (``gauss`` None) or clamped Gaussian(shift, scale) draws (``gauss`` = (shift, scale));
    integers for an integer column or when ``integer``."""
    kind = _kind(frame[c])
    if kind not in ("int", "float"):
        raise TypeError(f"column {c!r} has dtype {frame[c].dtype}; numeric imputation needs a float or "
                        "integer column.")
    ints = kind == "int" or integer
    a, b = _bounds(lower, upper, c, ints)
    if ints and kind == "float":
        v = frame[c].to_numpy()
        bad = ~np.isnan(v) & (v != np.floor(v))
        if bad.any():
            raise ValueError(f"column {c!r} gets integer draws but holds {int(bad.sum())} non-integer "
                             f"value(s), e.g. {v[bad][0]!r}.")
    null = frame[c].isna().to_numpy()
    m = int(null.sum())
    if gauss is None:
        draws = rng.integers(a, b, size=m, endpoint=True) if ints else rng.uniform(a, b, size=m)
    else:
        shift, scale = gauss
        if shift is None or scale is None:
            raise ValueError(f"column {c!r}: the gaussian distribution needs shift and scale.")
        if not (isinstance(scale, numbers.Real) and scale > 0 and math.isfinite(scale)):
            raise ValueError(f"column {c!r}: scale must be a finite number > 0, got {scale!r}.")
        if isinstance(shift, bool) or not isinstance(shift, numbers.Real) or not math.isfinite(shift):
            raise ValueError(f"column {c!r}: shift must be a finite number, got {shift!r}.")
        draws = rng.normal(float(shift), float(scale), size=m)
        draws = np.clip(np.rint(draws), a, b).astype(np.int64) if ints else np.clip(draws, a, b)
    if kind == "int":
        filled = frame[c].copy()
        if m:   # a complete numpy integer column refuses even an empty float assignment
            filled[null] = draws
        out[c] = filled.astype(frame[c].dtype)
    else:
        filled = frame[c].to_numpy(dtype=np.float64, copy=True)
        filled[null] = draws
        out[c] = pd.Series(filled, index=frame.index).astype("Int64") if ints else filled


def _bounds(lower, upper, column, ints):
    """Checked (lower, upper): finite, ordered, and integers for integer draws."""
    for v, what in ((lower, "lower"), (upper, "upper")):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
            raise ValueError(f"column {column!r}: {what} must be a finite number, got {v!r}.")
    if lower > upper:
        raise ValueError(f"column {column!r}: need lower <= upper, got {lower!r}, {upper!r}.")
    if not ints:
        return float(lower), float(upper)
    if not (float(lower).is_integer() and float(upper).is_integer()):
        raise ValueError(f"column {column!r} gets integer draws; its bounds must be integers, got {lower!r}, "
                         f"{upper!r}.")
    return int(lower), int(upper)


def _check_categories(categories, column, series=None):
    """The category list as a list; a missing value (None, NaN, NA) is not a category. With the
    column's ``series``: categories of a numeric or bool column must be numbers or bools."""
    allowed = list(categories)
    if any(pd.isna(v) for v in allowed if not isinstance(v, (list, tuple))):
        raise ValueError(f"column {column!r}: categories must not contain a missing value (None/NaN/NA), got "
                         f"{allowed[:10]!r}; missing values are what impute fills.")
    # A column with no observed value has no type to match (a CSV column left empty reads as float).
    kind = "object" if series is None or series.isna().all() else _kind(series)
    if kind == "bool":
        wrong = [v for v in allowed if not isinstance(v, (bool, np.bool_))]
    elif kind in ("int", "float"):
        wrong = [v for v in allowed if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.number))]
    else:
        wrong = []
    if wrong:
        what = "true/false values" if kind == "bool" else "numbers"
        raise ValueError(f"column {column!r} holds {what} (dtype {series.dtype}) but its categories include "
                         f"{wrong[:10]!r}, which are not {what}: the column would get values of another type. Give "
                         f"categories that are {what}, or convert the column to text first.")
    return allowed


def _restore_dtype(col, original):
    """Cast an imputed object column back to the original dtype when every value allows it."""
    if _kind(original) in ("int", "bool") or (_kind(original) == "float" and col.notna().all()):
        try:
            return col.astype(original.dtype)
        except (TypeError, ValueError):
            return col
    return col


# --- resize ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Resized:
    """Result of :func:`resize`.

    Attributes
    ----------
    data : DataFrame (or the input's type)
        The resized data: ``n`` records, real ones first, then the imputed padding.
    c : int
        Stability: every original record appears at most c times (c = ceil(p)).
    s : float
        Sampling proportion of the c copies (s = p / c).
    source : ndarray of int64
        Row position in the input of each output record; -1 for imputed padding.
    unit : PrivacyUnit
        The neighbouring relation the sampling was drawn for (:meth:`privacy_on_original` holds for it):
        Poisson sampling for add/remove one record, a fixed sample size for replace one record.
    """

    data: object
    c: int
    s: float
    source: np.ndarray
    unit: PrivacyUnit

    def __post_init__(self):
        object.__setattr__(self, "unit", PrivacyUnit.parse(self.unit))

    @property
    def neighboring(self):
        """Deprecated: the short name (``"add_remove"``, ``"replace"``) of :attr:`unit`."""
        warnings.warn("Resized.neighboring is deprecated; read Resized.unit (a PrivacyUnit).", DeprecationWarning,
                      stacklevel=2)
        return "add_remove" if self.unit is PrivacyUnit.ADD_REMOVE else "replace"

    def privacy_on_original(self, epsilon, delta=0.0):
        """(ε', δ') on the original data of an (ε, δ)-DP mechanism run on the resized data.

        Group privacy for the c copies (Vadhan 2017, Lemma 2.3: (cε, Σ_{i=0}^{c-1} e^{iε} δ)),
        then amplification by subsampling with probability s (Balle et al. 2018, Theorem 8 for
        Poisson sampling under add/remove, Theorem 9 for sampling without replacement under
        replace-one): ε' = ln(1 + s(e^{cε} - 1)), δ' = s Σ_{i=0}^{c-1} e^{iε} δ. Erratum: the
        notes' sum starts at i = 1, which gives δ' = 0 for c = 1; it starts at i = 0.
        """
        epsilon, delta = _check_privacy(epsilon, delta)
        c, s = self.c, self.s
        eps = _log1p_scaled_expm1(c * epsilon, s)
        return eps, _scaled_delta(math.log(s) + _log_geometric_sum(epsilon, c), delta)

    def functional_privacy(self, epsilon, delta=0.0):
        """(ε_f, δ_f) to use on the resized data for (ε, δ)-DP on the original (Theorem 1, Algorithm 4).

        The inverse of :meth:`privacy_on_original`: ε_f = (1/c) ln((e^ε - 1)/s + 1) and
        δ_f = δ / (s Σ_{i=0}^{c-1} e^{i ε_f}). Erratum: the notes write e^{iε} (and start the
        sum at i = 1) in δ_f; inverting δ' = s Σ e^{iε_f} δ_f needs e^{i ε_f}.
        """
        epsilon, delta = _check_privacy(epsilon, delta)
        c, s = self.c, self.s
        eps_f = _log1p_scaled_expm1(epsilon, 1.0 / s) / c
        return eps_f, _scaled_delta(-(math.log(s) + _log_geometric_sum(eps_f, c)), delta)


def _check_privacy(epsilon, delta):
    return EPSILON.check(epsilon, "epsilon"), DELTA.check(delta, "delta")


def _log1p_scaled_expm1(x, s):
    """ln(1 + s (e^x - 1)) for x >= 0, s > 0, without overflow for large x."""
    if x < 700:
        return math.log1p(s * math.expm1(x))
    return x + math.log(s) + math.log1p((1.0 - s) / s * math.exp(-x))


def _log_geometric_sum(epsilon, c):
    """ln Σ_{i=0}^{c-1} e^{iε} (log domain: ε may be large)."""
    return float(np.logaddexp.reduce(np.arange(c) * float(epsilon)))


def _scaled_delta(log_factor, delta):
    """δ · e^log_factor; inf when that overflows (a vacuous δ)."""
    if delta == 0:
        return 0.0
    log_value = log_factor + math.log(delta)
    return math.exp(log_value) if log_value < 700 else math.inf


def resize(data, n, *, p=1.0, unit=None, impute_kwargs=None, rng=None, neighboring=None):
    """Resize data to exactly ``n`` records with subsampling and data-independent padding.

    Algorithm 3 of the Privacy Tools notes: c = ceil(p), s = p / c; the data are stacked c
    times; m real records are available (m ~ Binomial(c·ñ, s) for add/remove one record,
    which is Poisson sampling of each copy with probability s; m = floor(s·c·ñ) for
    replace one record); the output is min(m, n) records drawn without replacement from the c copies
    plus max(0, n - m) padding records that start all null and are filled by :func:`impute`
    with ``impute_kwargs``. Erratum: line 10 of the notes samples max(m, n) records; the notes'
    own examples (§4.5) need min(m, n).

    Privacy: see :meth:`Resized.privacy_on_original` and :meth:`Resized.functional_privacy`.
    The padding draws never depend on the data.

    Parameters
    ----------
    data : DataFrame or ndarray
        Not modified.
    n : int
        Number of output records (public), at most ``MAX_RESIZE_RECORDS`` (2**32): the result is
        built in memory.
    p : float, default 1.0
        Proportion of the data used; may exceed 1 (then records can repeat, c = ceil(p)).
    unit : PrivacyUnit or {"add_remove", "replace"} or None, default None
        The neighbouring relation of the guarantee the resized data will serve (the sampling follows it);
        None: add/remove one record.
    impute_kwargs : dict
        Passed to :func:`impute` for the padding; it must fill every column.
    rng : numpy.random.Generator, int or None
    neighboring : {"add_remove", "replace"}, optional
        Deprecated name of ``unit``.

    Returns
    -------
    Resized
    """
    if neighboring is not None:
        if unit is not None:
            raise ValueError("resize() got unit and neighboring (its deprecated name); pass unit only.")
        warnings.warn("resize(neighboring=...) is deprecated; pass unit= (a PrivacyUnit or 'add_remove' / "
                      "'replace').", DeprecationWarning, stacklevel=2)
        unit = neighboring
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}.")
    if n > MAX_RESIZE_RECORDS:
        raise ValueError(f"n={n} records is more than resize builds in memory (at most MAX_RESIZE_RECORDS = "
                         f"{MAX_RESIZE_RECORDS}); choose a smaller n.")
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not (p > 0 and math.isfinite(p)):
        raise ValueError(f"p must be a finite number > 0, got {p!r}.")
    unit = PrivacyUnit.ADD_REMOVE if unit is None else PrivacyUnit.parse(unit)
    rng = check_rng(rng)
    frame, back = _as_frame(data)
    n_true = len(frame)
    c = math.ceil(p)
    s = p / c
    total = c * n_true
    m = int(rng.binomial(total, s)) if unit is PrivacyUnit.ADD_REMOVE else math.floor(s * total)
    take = min(m, n)
    picked = rng.choice(total, size=take, replace=False) if take else np.zeros(0, dtype=np.int64)
    source = np.concatenate([picked % max(n_true, 1), np.full(n - take, -1)]).astype(np.int64)
    real = frame.iloc[source[:take]].reset_index(drop=True)
    pad_n = n - take
    if pad_n:
        flags = flag_columns(frame)
        padded = [col for col in frame.columns if col not in flags]
        pad = pd.DataFrame({col: pd.Series([None] * pad_n, dtype=object) for col in padded})
        for col in padded:
            if _kind(frame[col]) == "float":
                pad[col] = np.full(pad_n, np.nan)
            elif _kind(frame[col]) == "int":
                pad[col] = pd.array([pd.NA] * pad_n, dtype="Int64")
        pad = impute(pad, rng=rng, **(impute_kwargs or {}))
        unfilled = [col for col in pad.columns if pad[col].isna().any()]
        if unfilled:
            raise ValueError(f"impute_kwargs leave columns {unfilled} of the padding records null; give "
                             "categories or bounds for every column.")
        # Imputation flags (dpknn.schema._flags) ride with their rows; a padding record is drawn without
        # donors, so none of its values was filled by the k-NN imputation that the flags record.
        pad = pad.assign(**{col: np.zeros(pad_n, dtype=bool) for col in flags})[list(frame.columns)]
        pad = pad.astype({col: frame[col].dtype for col in frame.columns}, errors="ignore")
        out = pd.concat([real, pad], ignore_index=True)
    else:
        out = real
    logger.debug("resize: %d of %d real records (m=%d), %d imputed; c=%d, s=%.4g", take, n_true, m, pad_n, c, s)
    return Resized(data=back(out), c=c, s=s, source=source, unit=unit)
