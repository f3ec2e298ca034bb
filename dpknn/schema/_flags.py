"""Imputation flags kept in the data, the way statistical agencies ship them.

:class:`~dpknn.impute.KNNImputer` (and ``dpknn impute``) add one boolean column
``dpknn_imputed_<attribute>`` per imputed attribute, True where the value was filled from donors.
A marker in a sidecar file or in Parquet metadata is lost by ``cp``, by a spreadsheet or by a
``to_csv``; a column travels with the rows. Every differentially private entry point refuses data
with such columns (:func:`check_not_imputed`): it would take the imputed values as observed and
calibrate its noise to the wrong L1(D). Dropping the flags (:func:`drop_flags`) is a deliberate act
that voids the calibration of any later release on those data (``docs/imputation.md``,
"Imputation flags").
"""

from __future__ import annotations

import warnings

# numpy and pandas are imported where used: the command line imports this module to build its parser.
from dpknn.exceptions import ImputedDataError, PrivacyLeakWarning

__all__ = ["ATTRS_KEY", "FLAG_PREFIX", "ImputedDataError", "check_not_imputed", "check_path_not_imputed", "drop_flags",
           "flag_column", "flag_columns", "path_flag_columns"]

#: Prefix of the flag columns: ``dpknn_imputed_<attribute>`` (recognised in any letter case: tools that
#: upper-case column names must not hide the flags).
FLAG_PREFIX = "dpknn_imputed_"
#: Key of ``DataFrame.attrs`` that :class:`~dpknn.impute.KNNImputer` sets on what it imputes: pandas
#: keeps it through column selection, copies and assignments, so selecting the schema's columns of an
#: imputed frame (which drops the flag columns) does not hide that the values are imputed.
ATTRS_KEY = "dpknn_imputed"


def flag_column(name):
    """The name of the flag column of imputed attribute ``name``.

    Parameters
    ----------
    name : str or object
        The imputed attribute (converted with ``str``).
    """
    return FLAG_PREFIX + str(name)


def _names(columns_or_frame):
    import numpy as np
    import pandas as pd

    if hasattr(columns_or_frame, "columns"):
        return list(columns_or_frame.columns)
    if hasattr(columns_or_frame, "names") and hasattr(columns_or_frame, "field"):
        return list(columns_or_frame.names)  # a pyarrow schema (a pandas Index has level names instead)
    if isinstance(columns_or_frame, (str, bytes, pd.Series)):
        return []  # a single string, or a Series (values, not column names)
    if isinstance(columns_or_frame, np.ndarray) and columns_or_frame.ndim != 1:
        return []  # a matrix has no column names
    return list(columns_or_frame)


def flag_columns(columns_or_frame):
    """The flag columns among the names (a DataFrame, a pyarrow schema, a pandas Index or a list of
    names), in order.

    Anything without column names (a NumPy array) has none.

    Parameters
    ----------
    columns_or_frame : DataFrame, pyarrow.Schema, pandas.Index or sequence of str
        The names to search (a string or a Series has no column names, hence no flags).
    """
    return [c for c in _names(columns_or_frame) if isinstance(c, str) and c.lower().startswith(FLAG_PREFIX)]


def check_not_imputed(columns_or_frame, what):
    """Raise :class:`ImputedDataError` when ``columns_or_frame`` holds imputation flag columns.

    ``what`` names the data in the message ("input 'imp.csv'", "X", ...).

    Parameters
    ----------
    columns_or_frame : DataFrame, pyarrow.Schema, pandas.Index or sequence of str
        The data or their column names (:func:`flag_columns`); a DataFrame also fails when its ``attrs``
        carry the imputed mark of :data:`ATTRS_KEY`.
    what : str
        The data's name in the error message.
    """
    found = flag_columns(columns_or_frame)
    marked = getattr(columns_or_frame, "attrs", None)
    if found:
        how = f"holds imputation flag columns {found}"
    elif attrs_marked(marked):
        how = (f"is marked imputed (DataFrame.attrs[{ATTRS_KEY!r}] = {list(marked[ATTRS_KEY])}: columns selected "
               "from KNNImputer's output, without its flag columns)")
    if found or attrs_marked(marked):
        raise ImputedDataError(
            f"{what} {how}: these are imputed data (dpknn impute / KNNImputer). "
            "Imputed values would be taken as observed and the noise calibrated to the wrong L1(D) (that of data "
            "without gaps: often several times too little noise). Release or synthesise from the original data, "
            "which dpknn imputes itself; dropping the flags (dpknn.impute.drop_flags) does not make a release on "
            "imputed data private.")


def attrs_marked(attrs):
    """Whether a DataFrame's ``attrs`` carry the imputed mark of :data:`ATTRS_KEY`."""
    return isinstance(attrs, dict) and bool(attrs.get(ATTRS_KEY))


def drop_flags(df):
    """A copy of ``df`` without its imputation flag columns, with a :class:`PrivacyLeakWarning`.

    A deliberate act: the values stay imputed, and any differentially private release on the
    result is calibrated to the wrong L1(D). Meant for tables that leave the DP tools (a report,
    a model that needs no guarantee), never as a way into ``release`` or ``synth``.

    Parameters
    ----------
    df : pandas.DataFrame
        The imputed data; not modified.
    """
    found = flag_columns(df)
    if found or attrs_marked(df.attrs):
        warnings.warn(f"dropped the imputation flag columns {found}: the imputed values now look observed, and a "
                      "differentially private release on these data would be calibrated to the wrong L1(D).",
                      PrivacyLeakWarning, stacklevel=2)
    out = df.drop(columns=found)
    out.attrs.pop(ATTRS_KEY, None)
    return out


def path_flag_columns(path):
    """The flag columns of a CSV, Parquet, Stata, SPSS or SAS file, or of a folder of Parquet files (any
    partition), read from the header, the Parquet schemas or the file's metadata only, not from the rows.

    Parameters
    ----------
    path : str or Path
        The file or folder; a path that does not exist, or a file of another kind, has no flag columns.
    """
    from pathlib import Path

    path = Path(path)
    if path.is_dir():
        import pyarrow.parquet as pq

        from dpknn.utils._io import partition_files

        found = []
        for f in sorted(partition_files(path)):
            found += [c for c in flag_columns(pq.read_schema(f).names) if c not in found]
        return found
    if not path.exists():
        return []
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        return flag_columns(pq.read_schema(path).names)
    if path.suffix.lower() in (".csv", ".gz"):
        import pandas as pd

        return flag_columns(pd.read_csv(path, nrows=0).columns)
    from dpknn.schema._codebook import STAT_SUFFIXES, read_codebook

    if path.suffix.lower() in STAT_SUFFIXES:
        return flag_columns(read_codebook(path).names)   # the file's metadata, no record
    return []


def check_path_not_imputed(path, what=None):
    """:func:`check_not_imputed` for a file or a folder of Parquet files (see :func:`path_flag_columns`),
    and the marker ``dpknn impute`` writes into Parquet metadata and JSON sidecars, which a copy loses
    but a file of an earlier version may carry without flag columns.

    Parameters
    ----------
    path : str or Path
        The file or folder of Parquet files.
    what : str or None
        The data's name in the error message; None: ``"input '<path>'"``.
    """
    from dpknn.utils._io import is_marked_imputed

    what = what or f"input {str(path)!r}"
    if is_marked_imputed(path):
        raise ImputedDataError(f"{what} was written by dpknn impute: its imputed values would be taken as observed "
                               "and the noise calibrated to the wrong L1(D). Use the original data.")
    check_not_imputed(path_flag_columns(path), what)
