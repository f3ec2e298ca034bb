"""RWN: Randomization Within Neighbourhoods (Perry et al. 2022), exact and at scale.

For every record i, the neighbourhood S_i is the larger of its k nearest other records and the
records within ``radius`` of it (i itself excluded). Every variable j of record i is, with
probability q and independently of the other variables, replaced by variable j of a uniformly
chosen member of S_i, a fresh choice for each j. Records keep their labels (index), columns,
order and dtypes; categorical values stay valid categories because they are copied from other
records.

RWN is statistical disclosure control, not differential privacy: it makes no DP claim, and the
standardisation of numeric columns uses their own mean and standard deviation (pass
``scales=`` to fix them in advance).

Distances: numeric columns standardised, categorical columns one-hot encoded, and each column's
part of the squared distance multiplied by its weight (the meaning of a weight everywhere in the
package, :mod:`dpknn.schema._geometry`). Ties at the k-th distance are all included in the neighbourhood, so
the result never depends on the order of the rows.

Methods (the paper's §10-11):

- ``"exact"``: all pairs, computed on equivalence classes of identical rows (so tied, census-like
  data cost follows the number of classes, not of rows) with a KD-tree over the classes.
- ``"sampled_points"`` (Method 1): neighbours are drawn from a sample of m records, shared by all
  records or fresh for each (``fresh=True``).
- ``"sampled_pairs"`` (Method 2): n·m/2 random pairs of records, kept as a sparse graph; the
  neighbours of i are its sampled partners within the radius or its k closest sampled partners.
  Pairs are drawn uniformly with replacement through the exact index-to-pair mapping
  (:func:`pairs_from_indices`); a pair drawn twice counts once.
- ``"partitioned"`` (Method 3): u partitions, each perturbed on its own by the exact method,
  in parallel with joblib or on a Dask cluster.

References
----------
.. [1] Perry, Matloff, et al. (2022). "RWN: a novel neighborhood-based method for statistical
   disclosure control", §5 (method), §6 (theorem), §10-11 (large data).
"""

from __future__ import annotations

import logging
import math
import numbers
import os
import tempfile
import typing
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin

from dpknn.schema._flags import flag_columns
from dpknn.sdc._neighbourhoods import exact, sampled_pairs, sampled_points
from dpknn.utils._progress import progress_bar
from dpknn.utils._validation import (
    Boolean,
    Interval,
    Options,
    check_is_fitted,
    check_positive_int,
    check_rng,
    record_features,
    validate_params,
)

__all__ = ["RWN", "UNCHANGED_SHARE", "perturb_parquet", "warn_unchanged"]

logger = logging.getLogger(__name__)

_METHODS = ("exact", "sampled_points", "sampled_pairs", "partitioned")
# fit's deprecated columns argument, told apart from an explicit None (all columns).
_UNSET = object()
#: A perturbed column whose share of changed values is below this fraction of q draws a warning
#: (below 1 % of its values when q = 1).
UNCHANGED_SHARE = 0.01


def _flags_message(flags, keep):
    what = ("carried through unchanged (keep_flags, --keep-flags): the released file tells who did not answer"
            if keep else "left out of the output, since they tell who did not answer (keep them on purpose with "
            "keep_flags=True, --keep-flags)")
    return (f"RWN on imputed data: the imputation flag columns {flags} are never perturbed and are {what}; the "
            "imputed values they flag are perturbed like observed ones.")


def _without_flags(df, keep):
    """``df`` without its imputation flag columns unless ``keep``."""
    flags = [] if keep else flag_columns(df)
    return df.drop(columns=flags) if flags else df


def _warn_identifiers(df, columns):
    """Warn about perturbed integer or string columns whose values are unique per row: they look
    like record identifiers, which RWN would swap between records. Tables under 50 rows are not
    checked: there distinct values per row happen by chance."""
    if len(df) < 50:
        return
    suspects = [c for c in columns
                if not pd.api.types.is_float_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
                and df[c].nunique(dropna=False) == len(df)]
    if suspects:
        warnings.warn(f"columns {suspects} have a different value in every row, like record identifiers; RWN "
                      "would swap them between records. Leave them out of columns (--keep at the command line).",
                      UserWarning, stacklevel=4)


def _changed(before, after):
    """Boolean per row: the value differs (two missing values count as equal)."""
    a, b = before.to_numpy(), after.to_numpy()
    return ~(np.asarray(a == b, dtype=bool) | (pd.isna(a) & pd.isna(b)))


def _changed_shares(before, after, columns):
    n = len(before)
    return {c: float(_changed(before[c], after[c]).sum() / n) if n else 0.0 for c in columns}


def warn_unchanged(shares, q, *, stacklevel=2):
    """Warn (UserWarning) about each perturbed column whose share of changed values
    is below ``UNCHANGED_SHARE · q``. Returns the names of those columns.

    Copying a neighbour's value changes nothing when every neighbour holds the record's own
    value, which is what happens to a categorical column whose one-hot mismatch costs more
    than the distance to the k-th neighbour: the column was asked to be perturbed and is
    released as it was, so the curator must hear about it.

    Parameters
    ----------
    shares : dict
        Column -> share of its values that changed, in [0, 1].
    q : float
        The probability that each value is replaced (``RWN.q``); 0 or None: no warning.
    stacklevel : int, default 2
        The ``stacklevel`` of :func:`warnings.warn` counted from the caller (2: the caller's caller).
    """
    if not q:
        return []
    low = [c for c, share in shares.items() if share < UNCHANGED_SHARE * q]
    for c in low:
        message = (f"RWN changed {100 * shares[c]:.2f} % of the values of column {c!r} (warned below "
                   f"{100 * UNCHANGED_SHARE:g} % of q={q:g}): every neighbour (the k nearest or those within the "
                   "radius) shares the record's value under the current weights and scales, so copying a "
                   "neighbour's value leaves it as it was. "
                   f"Raise the radius (--radius) or k (--k), lower the weight of {c!r} or raise the other columns' "
                   f"weights (RWN(weights=...) in Python), or perturb {c!r} differently (e.g. "
                   "dpknn.mechanisms.RandomizedResponse).")
        warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)
    return low


class RWN(TransformerMixin, BaseEstimator):
    """Randomization Within Neighbourhoods (Perry et al. 2022).

    A scikit-learn transformer: ``fit`` checks the data and the columns to perturb, ``transform``
    perturbs a table with the same columns (neighbourhoods are found within that table).

    Parameters
    ----------
    columns : list of str or None
        Columns used for the distance and perturbed; None: all. Other columns (identifiers, weights)
        are copied unchanged. A parameter, so that ``clone`` and a ``Pipeline`` carry it.
    k : int, default 5
        Minimum neighbourhood size (k nearest other records, ties at the k-th distance
        included; all other records when there are fewer than k).
    radius : float or None
        Records within this Euclidean distance (in standardised units) are neighbours too;
        the larger of the two sets is used.
    q : float in [0, 1], default 1.0
        Probability that each value is replaced.
    method : {"exact", "sampled_points", "sampled_pairs", "partitioned"}
    m : int or None
        Sample size for "sampled_points" (points) or the average number of sampled partners
        per record for "sampled_pairs" (n·m/2 pairs).
    partitions : int or None
        Number of partitions for "partitioned".
    partition_key : str or None
        Column whose values define the partitions ("partitioned"); None: a random key.
    fresh : bool, default False
        "sampled_points": draw a new sample for each record instead of one shared sample.
    weights : dict or None
        Per-column weights of the distance.
    scales : dict or None
        Per-column (mean, standard deviation) for standardising numeric columns; by default
        they are computed from the data.
    n_jobs : int, default 1
        joblib workers for "partitioned".
    client : dask.distributed.Client or None
        Run "partitioned" on this Dask cluster instead of joblib.
    progress : bool, default False
        Show a tqdm progress bar over the chunks of "sampled_pairs" and the partitions of
        "partitioned".
    keep_flags : bool, default False
        Imputation flag columns (``dpknn_imputed_*``, :mod:`dpknn.schema._flags`) are never perturbed;
        they tell who did not answer, so the output leaves them out unless this is True.
    rng : numpy.random.Generator, int or None
        Seeded generators are for reproducibility, not security.

    Attributes
    ----------
    changed_share_ : dict of str to float
        Set by :meth:`transform` and :meth:`fit_transform`: per perturbed column, the share of
        records whose value differs from their own original value. A column below
        ``UNCHANGED_SHARE · q`` (1 % of the values when q = 1) draws a ``UserWarning`` (also
        logged) that names it: every neighbour within the radius then shares the record's value
        under the current weights and scales (typical of a categorical column with default
        weights); raise the radius (or k), lower that column's weight or raise the others', or
        perturb it differently.
    neighbourhood_sizes_ : numpy.ndarray
        Size of each record's neighbourhood (not for "partitioned").

    References
    ----------
    .. [1] Perry et al. (2022), §5, §11.
    """

    def __init__(self, *, columns=None, k=5, radius=None, q=1.0, method="exact", m=None, partitions=None,
                 partition_key=None, fresh=False, weights=None, scales=None, n_jobs=1, client=None, progress=False,
                 keep_flags=False, rng=None):
        self.columns = columns
        self.k = k
        self.radius = radius
        self.q = q
        self.method = method
        self.m = m
        self.partitions = partitions
        self.partition_key = partition_key
        self.fresh = fresh
        self.weights = weights
        self.scales = scales
        self.n_jobs = n_jobs
        self.client = client
        self.progress = progress
        self.keep_flags = keep_flags
        self.rng = rng

    parameter_constraints: typing.ClassVar[dict] = {
        "k": Interval("int", 1, None, closed="left"),
        "radius": (None, Interval("real", 0, None, closed="left")),
        "q": Interval("real", 0, 1, closed="both"),
        "method": Options(*_METHODS),
        "m": (None, Interval("int", 1, None, closed="left")),
        "partitions": (None, Interval("int", 1, None, closed="left")),
        "fresh": Boolean(),
        "progress": Boolean(),
        "keep_flags": Boolean(),
    }

    def _check_settings(self):
        """Check the parameters that do not depend on the data (``parameter_constraints``, then how they
        combine)."""
        validate_params(self)
        if self.method in ("sampled_points", "sampled_pairs") and self.m is None:
            what = "the sample size" if self.method == "sampled_points" else "the average number of partners"
            raise ValueError(f"method={self.method!r} needs m ({what} per record); got m=None.")
        if self.method == "partitioned" and self.partition_key is None and self.partitions is None:
            check_positive_int(self.partitions, "partitions")

    def _validate(self, df, columns):
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"data must be a pandas DataFrame, got {type(df).__name__}.")
        self._check_settings()
        dup = sorted({str(c) for c in df.columns[df.columns.duplicated()]})
        if dup:
            raise ValueError(f"data has duplicate column names {dup}; rename them first.")
        columns = list(df.columns) if columns is None else list(columns)
        missing = [c for c in columns if c not in df.columns]
        if missing:
            raise ValueError(f"columns {missing} are not in the data.")
        flags = flag_columns(df)
        if flags:
            # RWN is disclosure control, not DP, so imputed data are allowed; but the flags say who did not
            # answer, which a released file should not tell unless the curator means it to.
            warnings.warn(_flags_message(flags, self.keep_flags), UserWarning, stacklevel=3)
            columns = [c for c in columns if c not in flags]
        gappy = {c: int(df[c].isna().sum()) for c in columns if df[c].isna().any()}
        if gappy:
            warnings.warn(f"RWN on columns with gaps {gappy}: a gap is one more value, at a distance from every "
                          "value, and is copied from a neighbour like any value (so who answered is perturbed too). "
                          "To perturb filled values instead, impute first with dpknn impute (donors among each "
                          "record's neighbours; docs/imputation.md): dpknn.processing.impute draws values "
                          "independently of the record, which breaks their relations.", UserWarning, stacklevel=3)
        for c in columns:
            col = df[c]
            if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
                bad = ~np.isfinite(col.to_numpy(dtype=np.float64, na_value=np.nan)) & col.notna().to_numpy()
                if bad.any():
                    raise ValueError(f"column {c!r} has {int(bad.sum())} infinite value(s); RWN needs finite "
                                     "numbers (clamp them first, dpknn.processing.clamp).")
        if self.partition_key is not None and self.partition_key not in df.columns:
            raise ValueError(f"partition_key {self.partition_key!r} is not a column of the data.")
        for name in ("weights", "scales"):
            extra = [c for c in (getattr(self, name) or {}) if c not in columns]
            if extra:
                raise ValueError(f"{name} names columns {extra} that are not perturbed.")
        for c, w in (self.weights or {}).items():
            if isinstance(w, bool) or not (isinstance(w, numbers.Real) and w > 0 and math.isfinite(w)):
                raise ValueError(f"weight of column {c!r} must be a finite positive number, got {w!r}; an infinite "
                                 "weight makes every distance infinite (to match a column exactly, use partition_key).")
        for c, scale in (self.scales or {}).items():
            ok = isinstance(scale, (tuple, list)) and len(scale) == 2 and all(
                isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v) for v in scale)
            if not ok or scale[1] < 0:
                raise ValueError(f"scales[{c!r}] must be a pair (mean, standard deviation) of finite numbers with "
                                 f"standard deviation >= 0, got {scale!r}.")
        return columns

    # ------------------------------------------------------------------------------------------
    def fit(self, X, y=None, *, columns=_UNSET):
        """Check ``X`` and the columns to perturb (the ``columns`` parameter); record ``n_features_in_`` and
        ``columns_``.

        Parameters
        ----------
        X : pandas.DataFrame
        y : None
            Ignored (scikit-learn's signature).
        columns : list or None
            Deprecated: pass ``RWN(columns=...)``. Given here, it is used instead of the parameter (with a
            DeprecationWarning).
        """
        self.columns_ = self._validate(X, self._columns(columns))
        if len(X) and self.k >= len(X):
            raise ValueError(f"k={self.k} must be below the number of records ({len(X)}): with k >= n every "
                             "neighbourhood is the whole table and RWN becomes a random shuffle.")
        _warn_identifiers(X, self.columns_)
        record_features(self, X)
        return self

    def _columns(self, columns):
        """The columns to perturb: the parameter, or a deprecated ``fit(columns=...)``."""
        if columns is _UNSET:
            return self.columns
        warnings.warn("RWN.fit(X, columns=...) is deprecated; pass RWN(columns=...) so that clone and Pipeline "
                      "carry it.", DeprecationWarning, stacklevel=3)
        return columns

    def transform(self, X):
        """Return a perturbed copy of ``X`` (same index, column order and dtypes; the imputation flag
        columns left out unless ``keep_flags``).

        ``X`` must have the columns seen by :meth:`fit`, in the same order.
        """
        check_is_fitted(self, "columns_", call="fit(X) or fit_transform(X)")
        if not isinstance(X, pd.DataFrame):
            raise TypeError(f"data must be a pandas DataFrame, got {type(X).__name__}.")
        if X.shape[1] != self.n_features_in_ or (
                hasattr(self, "feature_names_in_") and list(X.columns) != list(self.feature_names_in_)):
            raise ValueError(f"X has columns {list(X.columns)}; RWN was fitted on "
                             f"{list(getattr(self, 'feature_names_in_', range(self.n_features_in_)))}.")
        return self._run_and_report(X, self._validate(X, self.columns_))

    def fit_transform(self, X, y=None, *, columns=_UNSET):
        """Fit on ``X`` and return a perturbed copy of it; ``y`` is ignored (see :meth:`fit`)."""
        return self.fit(X, columns=columns)._run_and_report(X, self.columns_)

    def _run_and_report(self, df, columns):
        out = self._run(df, columns)
        self.changed_share_ = _changed_shares(df, out, columns)
        if len(df) >= 2:
            # Past scikit-learn's set_output wrapper of transform and fit_transform, to the caller.
            warn_unchanged(self.changed_share_, self.q, stacklevel=4)
        return _without_flags(out, self.keep_flags)

    def _run(self, df, columns):
        rng = check_rng(self.rng)
        if self.method == "partitioned":
            return _partitioned(self, df, columns, rng)
        if len(df) < 2 or self.q == 0:
            return df.copy()
        settings = dict(k=self.k, radius=self.radius, weights=self.weights, scales=self.scales)
        if self.method == "exact":
            nb = exact(df, columns, **settings)
            self.n_classes_ = nb.n_classes
        elif self.method == "sampled_points":
            nb = sampled_points(df, columns, m=self.m, fresh=self.fresh, rng=rng, **settings)
        else:
            nb = sampled_pairs(df, columns, m=self.m, rng=rng, progress=self.progress, **settings)
        self.neighbourhood_sizes_ = nb.sizes
        return self._perturb(df, columns, nb.pick, rng)

    def _perturb(self, df, columns, picker, rng):
        out = df.copy()
        n = len(df)
        for c in columns:
            # A fresh draw per variable: the donors of different variables are independent.
            modify = rng.random(n) < self.q
            donors = picker(rng.random(n), modify)
            values = df[c].to_numpy()
            out[c] = pd.Series(values[donors], index=df.index, dtype=df[c].dtype)
        return out


def _partitioned(rwn, df, columns, rng):
    """Method 3: u partitions (by ``rwn.partition_key`` or at random), each perturbed by the exact method
    with its own seed, on joblib or ``rwn.client``; sets ``rwn.partition_seeds_``."""
    if rwn.partition_key is not None:
        key, uniques = pd.factorize(df[rwn.partition_key])
        u = len(uniques)
    else:
        u = int(rwn.partitions)
        key = rng.integers(0, u, size=len(df))
    seeds = np.random.SeedSequence(int(rng.integers(2**63))).spawn(u)
    parts = [np.flatnonzero(key == p) for p in range(u)]
    inner = dict(k=rwn.k, radius=rwn.radius, q=rwn.q, method="exact", weights=rwn.weights,
                 scales=rwn.scales)
    if rwn.client is not None:
        futures = rwn.client.map(_perturb_part, [df.iloc[idx] for idx in parts], seeds,
                                  [columns] * u, [inner] * u)
        results = rwn.client.gather(futures)
    else:
        from joblib import Parallel, delayed
        results = Parallel(n_jobs=rwn.n_jobs, return_as="generator")(
            delayed(_perturb_part)(df.iloc[idx], s, columns, inner) for idx, s in zip(parts, seeds))
        results = list(progress_bar(results, total=u, desc="RWN partitions", unit="partition",
                                    progress=rwn.progress))
    out = df.copy()
    for idx, res in zip(parts, results):
        for c in columns:
            col = out[c].to_numpy(copy=True)
            col[idx] = res[c].to_numpy()
            out[c] = pd.Series(col, index=df.index, dtype=df[c].dtype)
    rwn.partition_seeds_ = seeds
    return out


def _perturb_part(part, seed, columns, params):
    """RWN on one partition with its own seed, by the method in ``params`` (module level so that
    workers can run it)."""
    # Not fit(): a partition may hold fewer than k records (then all others are its neighbours),
    # and the whole table's checks ran once before it was split.
    rwn = RWN(rng=np.random.default_rng(seed), **params)
    with warnings.catch_warnings():
        # perturb_parquet said it once on the client; a worker's warnings would repeat it per partition.
        warnings.filterwarnings("ignore", "RWN on imputed data", UserWarning)
        warnings.filterwarnings("ignore", "RWN on columns with gaps", UserWarning)
        columns = rwn._validate(part, columns)
    return rwn._run(part, columns)


def _check_perturb_target(rwn, input_dir, output_dir):
    """Refuse a bad ``rwn`` or output folder before any work; return the output folder as a Path."""
    from dpknn.utils._io import check_not_inside

    if not isinstance(rwn, RWN):
        raise TypeError(f"rwn must be a dpknn.sdc.RWN, got {type(rwn).__name__}.")
    if not (rwn.rng is None or isinstance(rwn.rng, numbers.Integral)):
        raise TypeError("perturb_parquet needs rwn.rng to be an int seed or None so that workers can derive seeds.")
    output_dir = Path(output_dir)
    if output_dir.exists():
        raise FileExistsError(f"output_dir {str(output_dir)!r} exists; choose a new folder.")
    check_not_inside(output_dir, input_dir, "output_dir")
    return output_dir


def _write_perturbed(ddf, run, flags, output_dir, client, keep_flags):
    """Perturb every partition with ``run`` and write the data columns (the imputation flags only if
    ``keep_flags``) to ``output_dir`` in one pass that also sums the changed-value ``flags``; return
    (changes per flag, rows)."""
    import dask
    from dask.dataframe.utils import make_meta

    from dpknn.utils._cluster import dask_client
    from dpknn.utils._io import remove_tree

    meta = make_meta(ddf).assign(**{f: np.zeros(0, dtype=bool) for f in flags})
    # Written under a hidden name beside the output and renamed when complete, so that a failed or
    # interrupted run leaves no partial folder of perturbed microdata that looks finished.
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.partial-", dir=output_dir.parent))
    try:
        with dask_client(client):
            out = ddf.map_partitions(run, meta=meta)
            kept = [c for c in ddf.columns if keep_flags or c not in flag_columns(ddf.columns)]
            write = out[kept].to_parquet(str(partial / "out"), write_index=True, compute=False)
            _, changed, rows = dask.compute(write, out[flags].sum(), out.map_partitions(len).sum())
        os.replace(partial / "out", output_dir)
    finally:
        remove_tree(partial)
    return changed, int(rows)


def _columns_to_perturb(all_columns, columns, keep_flags):
    """``columns`` (None: all) without the imputation flag columns, which are never perturbed."""
    cols = list(all_columns) if columns is None else list(columns)
    imputation_flags = flag_columns(all_columns)
    if imputation_flags:
        # Said once here; the partitions' own checks run on the workers, where warnings are lost.
        warnings.warn(_flags_message(imputation_flags, keep_flags), UserWarning, stacklevel=3)
        cols = [c for c in cols if c not in imputation_flags]
    return cols


def perturb_parquet(input_dir, output_dir, rwn, *, columns=None, client=None):
    """Perturb a partitioned Parquet data set partition by partition on Dask, with bounded memory.

    Each Parquet partition is perturbed on its own with its own seed (the partition number
    spawns a child of ``rwn``'s seed), so neighbourhoods and donors lie within one partition, as
    in Method 3 of the paper, and memory per worker is bounded by one partition. Within a
    partition, ``rwn.method`` is used as follows:

    - ``"exact"``: the exact method on the partition's records;
    - ``"sampled_points"`` (Method 1 within each partition): a sample of ``m`` of the partition's
      records (fresh for each record when ``rwn.fresh``), not of the folder's;
    - ``"sampled_pairs"`` (Method 2 within each partition): pairs are drawn among the
      partition's records, not across the folder (n_p·m/2 pairs for a partition of n_p
      records); a global pair sample over 10^9 records would need a shuffle of n·m/2 pairs
      across partitions;
    - ``"partitioned"``: the folder's partitions are the paper's Method-3 partitions, each
      perturbed by the exact method; ``rwn.partitions`` and ``rwn.partition_key`` are ignored.

    Each Parquet file is one partition (row groups are never split). With an int seed, a partition ``number``
    of more than k records is perturbed exactly as an ``RWN`` with the same k, radius, q, m, fresh, weights and
    scales, ``method=rwn.method`` (``"exact"`` for ``"partitioned"``) and
    ``rng=numpy.random.default_rng(numpy.random.SeedSequence(rwn.rng, spawn_key=(number,)))`` perturbs it in
    memory (``fit_transform``). ``rwn.n_jobs``, ``rwn.progress`` and ``rwn.client`` are not used: each worker
    runs one partition at a time, single-threaded.

    The output is written under a hidden name beside ``output_dir`` (``.NAME.partial-*``) and
    renamed when complete; a failure removes it. Imputation flag columns (:mod:`dpknn.schema._flags`)
    are never perturbed, and left out of the output unless ``rwn.keep_flags`` (with a warning either way).

    Parameters
    ----------
    input_dir, output_dir : str or Path
        ``output_dir`` must not exist, nor lie inside ``input_dir``.
    rwn : RWN
        Its k, radius, q, weights, scales, m and fresh are used. Its method is run within each
        partition ("exact", "sampled_points" or "sampled_pairs" on the partition's records;
        "partitioned": exact within each partition, the folder's partitions being the
        partitions). Its rng must be an int seed or None (a seed sequence is derived).
    columns : list of str or None
        Columns used for the distance and perturbed; None: ``rwn.columns`` (all columns of the data when
        that is None too). Imputation flag columns are left out either way.
    client : dask.distributed.Client or None
        None: a LocalCluster with one single-threaded worker per core, closed afterwards.

    Returns
    -------
    dict
        ``partitions`` and ``rows`` processed, and ``changed_share``: per perturbed column, the
        share of records whose value changed, with the warning of :attr:`RWN.changed_share_`.
    """
    try:
        import dask.dataframe as dd
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("perturb_parquet needs Dask: pip install 'dpknn[distributed,parquet]'") from exc

    output_dir = _check_perturb_target(rwn, input_dir, output_dir)
    root = np.random.SeedSequence(rwn.rng)
    # The folder's partitions are Method 3's partitions; any other method runs within each of them.
    params = dict(k=rwn.k, radius=rwn.radius, q=rwn.q, method="exact" if rwn.method == "partitioned" else rwn.method,
                  m=rwn.m, fresh=rwn.fresh, weights=rwn.weights, scales=rwn.scales)
    RWN(**params)._check_settings()   # here rather than once per partition on the workers
    ddf = dd.read_parquet(str(input_dir), split_row_groups=False)
    cols = _columns_to_perturb(ddf.columns, rwn.columns if columns is None else columns, rwn.keep_flags)

    # Flags of changed values ride along with each perturbed partition so that one pass over the
    # data both writes it and counts the changes; the NUL prefix keeps them apart from data columns.
    flags = [f"\0changed\0{i}" for i in range(len(cols))]

    def run(part, partition_info=None):
        number = partition_info["number"] if partition_info else 0
        seed = np.random.SeedSequence(root.entropy, spawn_key=(number,))
        res = _perturb_part(part, seed, cols, params)
        return res.assign(**{f: _changed(part[c], res[c]) for f, c in zip(flags, cols)})

    changed, rows = _write_perturbed(ddf, run, flags, output_dir, client, rwn.keep_flags)
    shares = {c: float(changed[f]) / rows if rows else 0.0 for f, c in zip(flags, cols)}
    if rows >= 2:
        warn_unchanged(shares, rwn.q)
    return {"partitions": ddf.npartitions, "rows": rows, "changed_share": shares}
