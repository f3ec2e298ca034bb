"""Agency files in and out: IPUMS fixed-width extracts, Stata, SPSS and SAS files with coded missing values.

Reading maps each special code as its codebook says (:mod:`dpknn.schema._codebook`), never by guessing
from the values: a gap code becomes a missing value (imputation fills it); a not-applicable code becomes
a missing value too, and the indicator column ``NAME_niu`` says that the record is outside the variable's
universe, which the schema from the codebook declares on it, so that every command reads the attribute
as not applicable there. A known categorical attribute that lists a not-applicable code keeps it as a
value (a known attribute is complete). The original codes of the cells made missing are kept
(:attr:`CodedTable.codes`), so that writing an imputed file back restores each cell left missing to its
own code.

Writing back in the input's format (``.dta`` or ``.sav``) puts the codes, the value labels and the
user-missing declarations back: a cell left missing gets its original code (an imputed file, same rows),
or the variable's first gap code (a synthetic file, whose rows are new); a record with ``NAME_niu`` true
gets the first not-applicable code, and the indicator column is folded away; imputation flags are written
as 0/1 columns labelled "observed"/"imputed". SAS files are read only (pyreadstat writes no
``.sas7bdat``), and a fixed-width extract's outputs are written as Parquet, CSV, ``.dta`` or ``.sav``
(a new fixed-width layout would need a new DDI codebook).

IPUMS data are read with ``ipumspy`` (a hierarchical extract as one row per person with the household's
variables), Stata, SPSS and SAS files with ``pyreadstat``; both are the optional extra ``agency``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpknn.schema._attributes import float32_as_decimals
from dpknn.schema._codebook import NIU_SUFFIX, STAT_SUFFIXES, Codebook, read_codebook
from dpknn.utils._extras import require

__all__ = ["AGENCY_SUFFIXES", "WRITE_SUFFIXES", "CodedTable", "apply_codebook", "coded_writer", "is_agency_file",
           "read_coded", "write_coded"]

logger = logging.getLogger(__name__)

#: Suffixes read by :func:`read_coded` (besides CSV and Parquet with a codebook).
AGENCY_SUFFIXES = (".dat", ".dat.gz", ".dta", ".sav", ".zsav", ".por", ".sas7bdat")

#: Suffixes :func:`write_coded` writes.
WRITE_SUFFIXES = (".dta", ".sav", ".zsav")


def _suffix(path):
    name = Path(path).name.lower()
    return ".dat.gz" if name.endswith(".dat.gz") else Path(name).suffix


def is_agency_file(path):
    """True for a fixed-width extract (``.dat``, ``.dat.gz``) or a Stata, SPSS or SAS file."""
    return _suffix(path) in AGENCY_SUFFIXES


@dataclass(frozen=True)
class CodedTable:
    """A table read from an agency file, its special codes mapped.

    Attributes
    ----------
    data : pandas.DataFrame
        The records: gaps and not-applicable cells missing, ``NAME_niu`` indicators beside variables
        with not-applicable codes.
    codebook : Codebook
        What the codes mean.
    codes : dict of str to pandas.Series
        For each variable, the original code of each cell made missing (index: row position).
    """

    data: pd.DataFrame
    codebook: Codebook
    codes: dict = field(default_factory=dict)


def _read_fixed_width(path, codebook, record_type):
    import warnings

    readers = require("ipumspy.readers", "agency", "reading IPUMS extracts")
    with warnings.catch_warnings():
        # ipumspy reminds of IPUMS's conditions on every read; the codebook's citation is in the schema file.
        warnings.simplefilter("ignore")
        ddi = readers.read_ipums_ddi(codebook.source)
        if not codebook.hierarchical:
            return readers.read_microdata(ddi, str(path)).reset_index(drop=True)
        parts = readers.read_hierarchical_microdata(ddi, str(path), as_dict=True)
    if record_type not in parts:
        raise ValueError(f"extract {str(path)!r} has record types {sorted(parts)}, not {record_type!r}.")
    rows = parts[record_type]
    # Each record follows the household record it belongs to (IPUMS's hierarchical layout): attach the
    # household variables of the last household line above each person line.
    for other, frame in parts.items():
        if other not in codebook.parents(record_type) or frame.empty:
            continue
        pos = np.searchsorted(frame.index.to_numpy(), rows.index.to_numpy(), side="right") - 1
        if (pos < 0).any():
            raise ValueError(f"extract {str(path)!r}: {int((pos < 0).sum())} {record_type} records precede every "
                             f"{other} record; the file is not in IPUMS's hierarchical order.")
        extra = [c for c in frame.columns if c not in rows.columns]
        attached = frame[extra].iloc[pos].reset_index(drop=True)
        rows = pd.concat([rows.reset_index(drop=True), attached], axis=1)
    return rows.reset_index(drop=True)


def _read_stat(path, codebook):
    """A Stata, SPSS or SAS file with its user-missing values as their codes (those ``codebook`` lists)."""
    pyreadstat = require("pyreadstat", "agency", "reading Stata, SPSS or SAS files")
    suffix = _suffix(path)
    kind = STAT_SUFFIXES[suffix]
    if suffix == ".por":
        df, _ = pyreadstat.read_por(str(path))
        return df
    reader = {"stata": pyreadstat.read_dta, "spss": pyreadstat.read_sav, "sas": pyreadstat.read_sas7bdat}[kind]
    if kind == "spss":
        # SPSS user-missing values are numbers: read them as they are, and the codebook maps them.
        df, _ = reader(str(path), user_missing=True)
        return df
    plain, meta = reader(str(path))
    types = meta.readstat_variable_types or {}
    for name in [c for c in plain.columns if types.get(c) == "float"]:
        # A Stata float (the default type of a non-integer variable) comes back widened to float64: 2.2 as
        # 2.2000000476837, above a codebook's top code of 2.2. Read it as the decimal Stata shows.
        plain[name] = float32_as_decimals(plain[name].to_numpy(dtype=np.float64, na_value=np.nan))
    numeric = [c for c in plain.columns if types.get(c) != "string" and plain[c].isna().any()]
    if numeric:
        # Stata and SAS special missing values (.a-.z) read as their letters, in every numeric column with missing
        # cells (a letter without a label is a missing value too). pyreadstat's user_missing read turns a system
        # missing value of an integer column into 0, so take only the letters from it, where the plain read has
        # a missing cell, and every other cell from the plain read.
        coded, _ = reader(str(path), user_missing=True, usecols=numeric)
        for name in numeric:
            s = coded[name]
            is_letter = s.map(lambda x: isinstance(x, str)).to_numpy() & plain[name].isna().to_numpy()
            if is_letter.any():
                col = plain[name].astype(object)
                col[is_letter] = s[is_letter]
                plain[name] = col
    return plain


def read_coded(path, codebook=None, *, attributes=(), record_type="P", na_values=()):
    """Read an agency file and map its special codes by its codebook.

    Parameters
    ----------
    path : str or Path
        An IPUMS fixed-width extract (``.dat`` or ``.dat.gz``, with its DDI codebook), a Stata ``.dta``,
        SPSS ``.sav``/``.zsav``/``.por`` or SAS ``.sas7bdat`` file, or a CSV or Parquet file with a codebook
        (an IPUMS CSV extract and its DDI).
    codebook : Codebook or str or Path, optional
        The codebook; a Stata, SPSS or SAS file is its own when None; a fixed-width extract needs its DDI.
    attributes : sequence of attributes, optional
        Declared attributes (a schema's): a known Categorical that lists a not-applicable code keeps it
        as a value; CSV columns are read with their declared types.
    record_type : str, default "P"
        Of a hierarchical IPUMS extract: the records to read (persons), with the variables of the records
        above them (the household's) attached.
    na_values : sequence of str
        Of a CSV: strings read as a missing cell besides an empty field (:func:`dpknn.utils._io.read_table`).

    Returns
    -------
    CodedTable
    """
    from dpknn.utils._io import read_table

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"input {str(path)!r} does not exist.")
    suffix = _suffix(path)
    if codebook is None:
        if suffix not in STAT_SUFFIXES:
            raise ValueError(f"input {str(path)!r} needs its codebook (--codebook EXTRACT.xml): the codes of a "
                             "fixed-width or CSV file are not in the file.")
        codebook = read_codebook(path)
    elif not isinstance(codebook, Codebook):
        codebook = read_codebook(codebook)
    if suffix in (".dat", ".dat.gz"):
        if codebook.file_format != "ipums-ddi":
            raise ValueError(f"input {str(path)!r} is a fixed-width file: its codebook must be a DDI .xml, got "
                             f"{codebook.source!r}.")
        raw = _read_fixed_width(path, codebook, record_type)
    elif suffix in STAT_SUFFIXES:
        raw = _read_stat(path, codebook)
    else:
        raw = read_table(path, attributes=attributes, na_values=na_values)
    data, codes = apply_codebook(raw, codebook, attributes=attributes)
    return CodedTable(data, codebook, codes)


def _special_mask(s, codes, ranges=()):
    if not codes and not ranges:
        return np.zeros(len(s), dtype=bool)
    numbers = pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)
    # A numeric column against numeric codes compares as numbers: no object copy of the column (every block of
    # dpknn convert passes here).
    col = s if numbers and all(isinstance(c, (int, float)) for c in codes) else s.astype(object)
    mask = np.array(col.isin(list(codes)), dtype=bool) if codes else np.zeros(len(s), dtype=bool)
    numeric = [(lo, hi) for lo, hi in ranges if not isinstance(lo, str) and not isinstance(hi, str)]
    if numeric:
        v = (s if numbers else pd.to_numeric(s.astype(object), errors="coerce")).to_numpy(dtype=np.float64,
                                                                                        na_value=np.nan)
        for lo, hi in numeric:
            with np.errstate(invalid="ignore"):
                mask |= (v >= lo) & (v <= hi)
    return mask


def apply_codebook(df, codebook, *, attributes=()):
    """``df`` with its special codes mapped by ``codebook`` (a new frame; ``df`` is not changed).

    Returns
    -------
    (pandas.DataFrame, dict)
        The mapped data (gaps and not-applicable cells missing, a ``NAME_niu`` indicator after each
        variable with not-applicable codes) and, per variable, the original codes of the cells made missing.
    """
    declared = {a.name: a for a in attributes}
    columns, codes = {}, {}
    for name in df.columns:
        s = df[name]
        if name not in codebook.names:
            columns[name] = s
            continue
        v = codebook.variable(name)
        gap = _special_mask(s, v.gaps, v.gap_ranges)
        if (codebook.file_format in ("stata", "sas") and s.dtype == object and v.kind != "text"
                and not any(isinstance(c, str) for c in v.values)):   # a numeric variable, not a string one
            # A special missing value (.a-.z) the metadata does not name is a missing value all the same.
            gap |= np.array([isinstance(x, str) and x not in v.not_applicable for x in s], dtype=bool)
        niu = _special_mask(s, v.not_applicable)
        a = declared.get(name)
        keep_niu = (a is not None and getattr(a, "categories", None) is not None and a.universe is None
                    and all(c in a.categories for c in v.not_applicable))
        drop = gap | (niu & (not keep_niu))
        if drop.any():
            codes[name] = pd.Series(s.to_numpy(dtype=object)[drop], index=np.flatnonzero(drop), name=name)
            if isinstance(s.dtype, np.dtype) and s.dtype.kind in "iub":
                s = s.astype(np.float64)
            s = s.mask(pd.Series(drop, index=s.index))
            if s.dtype == object and not any(isinstance(x, str) for x in s.dropna()):
                s = pd.to_numeric(s)   # the letters gone, numbers are left (Stata's .a-.z)
        columns[name] = s
        if v.not_applicable and not keep_niu:
            columns[name + NIU_SUFFIX] = pd.Series(niu, index=df.index)
    out = pd.DataFrame(columns, index=df.index)
    for name, codes_ in codes.items():
        logger.info("%s: %d coded cell(s) read as missing (%s)", name, len(codes_),
                    ", ".join(f"{c}: {n}" for c, n in codes_.value_counts().items()))
    return out, codes


def _spss_format(v):
    """An SPSS display format wide enough for a variable's public range and codes (pyreadstat's default, F8.2,
    shows no value over 99,999.99): ``F{width}.{decimals}``. From the codebook only, never from the data: the
    written format is metadata that a later ``read_codebook`` takes as public."""
    numbers_ = [abs(x) for x in (v.lower, v.upper, *v.special_codes, *v.values)
                if isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x)]
    if not numbers_:
        return "F16.4" if v.kind == "continuous" else "F12.0"
    digits = len(str(int(max(numbers_)))) if max(numbers_) < 1e15 else 16
    # A DDI field states its decimals (0 included); a Stata or SPSS amount without them gets two.
    dec = int(v.decimals) if v.decimals or v.range_source.startswith("field width") else (
        2 if v.kind == "continuous" else 0)
    negative = v.lower is not None and v.lower < 0
    return f"F{min(40, digits + negative + (dec + 1 if dec else 0))}.{dec}"


def _spss_missing(v):
    """The user-missing declaration of a variable for SPSS: the input's own when it was an SPSS file, else its
    numeric special codes, not-applicable ones first, within SPSS's limits (three values, or a range and one
    value); a code left undeclared is logged."""
    if v.declared_missing:
        return [dict(r) if r["lo"] != r["hi"] else r["lo"] for r in v.declared_missing]
    codes = [c for c in (*v.not_applicable, *v.gaps) if not isinstance(c, str)]
    ranges = [{"lo": lo, "hi": hi} for lo, hi in v.gap_ranges][:1]
    spec = ranges + codes[:3 - 2 * len(ranges)]
    left = codes[3 - 2 * len(ranges):] + [r for r in v.gap_ranges[1:]]
    if left:
        logger.warning("%s: SPSS declares at most three missing values (or a range and one value); %s stay "
                       "undeclared in the output and read back as numbers without the codebook.", v.name, left)
    return spec


def write_coded(df, path, codebook, *, codes=None, flags=()):
    """Write ``df`` as a Stata ``.dta`` or SPSS ``.sav``/``.zsav`` file coded as ``codebook`` says, atomically
    (:func:`coded_writer` under a temporary name, then renamed). Returns the path.

    Parameters
    ----------
    df : pandas.DataFrame
        Records read with :func:`read_coded` and then imputed, processed or synthesised.
    path : str or Path
        The output (``.dta``, ``.sav`` or ``.zsav``); written under a temporary name, then renamed.
    codebook : Codebook
        The input's codebook.
    codes : dict, optional
        :attr:`CodedTable.codes` of the input when ``df`` has the input's rows in its order (an imputed or
        processed file): each cell still missing gets its own original code back. Without it (a synthetic
        file), a missing cell takes the variable's first gap code.
    flags : sequence of str, optional
        Imputation flag columns (:func:`dpknn.schema._flags.flag_columns`), written as 0/1 labelled
        "observed"/"imputed".
    """
    from dpknn.utils._io import write_files

    write_files([(path, coded_writer(df, path, codebook, codes=codes, flags=flags))])
    return Path(path)


def coded_writer(df, path, codebook, *, codes=None, flags=()):
    """A writer for :func:`dpknn.utils._io.write_files`: ``write(tmp)`` writes ``df`` as :func:`write_coded` says.
    The name and the codes are checked now, before any write."""
    pyreadstat = require("pyreadstat", "agency", "writing Stata or SPSS files")
    suffix = _suffix(path)
    if suffix not in WRITE_SUFFIXES:
        raise ValueError(f"output {str(path)!r}: write .dta, .sav or .zsav (or .csv/.parquet, whose missing cells "
                         "stay blank).")
    if codes is not None and any(len(c) and c.index.max() >= len(df) for c in codes.values()):
        raise ValueError("codes given for rows the output does not have: pass codes only for a file with the "
                         "input's rows (an imputed one).")
    out, labels, missing_ranges, missing_letters, var_labels, formats, measures = {}, {}, {}, {}, {}, {}, {}
    for name in df.columns:
        base = name[:-len(NIU_SUFFIX)] if name.endswith(NIU_SUFFIX) else None
        if base is not None and base in df.columns and base in codebook.names \
                and codebook.variable(base).not_applicable:
            continue  # folded back into its variable below
        s = df[name]
        if name in flags:
            out[name] = s.astype(np.int8)
            labels[name] = {0: "observed", 1: "imputed"}
            continue
        if name not in codebook.names:
            out[name] = s
            continue
        v = codebook.variable(name)
        var_labels[name] = v.label
        col = s.astype(object).where(s.notna(), None)
        missing = s.isna().to_numpy()
        if missing.any():
            filled = np.zeros(len(s), dtype=bool)
            niu_col = name + NIU_SUFFIX
            if codes is not None and name in codes and len(codes[name]):
                pos = codes[name].index.to_numpy()
                keep = missing[pos]
                col.iloc[pos[keep]] = codes[name].to_numpy()[keep]
                filled[pos[keep]] = True
            if niu_col in df.columns and v.not_applicable:
                niu = df[niu_col].fillna(False).astype(bool).to_numpy() & missing & ~filled
                col.iloc[np.flatnonzero(niu)] = next(iter(v.not_applicable))
                filled |= niu
            if codes is None and v.gaps:
                rest = missing & ~filled
                col.iloc[np.flatnonzero(rest)] = next(iter(v.gaps))
        letters = [c for c in v.special_codes if isinstance(c, str)]
        as_letter = {}
        if suffix == ".dta":
            # Stata has no numeric missing values: a numeric code (IPUMS's 99999999, SPSS's 77) written as a number
            # would read back as a value. Each becomes a special missing value .a-.z, labelled with its code.
            numeric = [c for c in (*v.not_applicable, *v.gaps) if not isinstance(c, str)]
            free = [ch for ch in "abcdefghijklmnopqrstuvwxyz" if ch not in letters]
            if len(numeric) > len(free):
                raise ValueError(f"output {str(path)!r}: {name!r} has {len(numeric)} missing-value codes; Stata has "
                                 f"{len(free)} special missing values left. Write .sav instead.")
            as_letter = dict(zip(numeric, free))
            if as_letter:
                col = pd.Series([as_letter.get(x, x) if x is not None and not isinstance(x, str) else x for x in col],
                                index=col.index, dtype=object)
                letters = letters + list(as_letter.values())
        if letters or codebook.file_format in ("stata", "sas"):
            # Letters the metadata did not name but the file held (Stata lists no user-missing values).
            numeric_var = not any(isinstance(c, str) for c in v.values) and v.kind != "text"
            letters += sorted({x for x in col.dropna() if isinstance(x, str) and numeric_var} - set(letters))
        if not letters and not any(isinstance(x, str) for x in col.dropna()):
            col = pd.to_numeric(col)
        elif letters:
            # Numbers beside the letters must all be of one type, or pyreadstat takes the column for text (and then
            # refuses its missing letters): ints where every number is whole, else floats. A synthetic amount mixes
            # both when a draw lands on a released point mass (40 hours among 37.52 and 41.07).
            numbers = [x for x in col if x is not None and not isinstance(x, str)]
            kind = int if all(float(x).is_integer() for x in numbers) else float
            col = pd.Series([x if x is None or isinstance(x, str) else kind(x) for x in col], index=col.index,
                            dtype=object)
        out[name] = col
        lab = {as_letter.get(k, k): (f"{val} ({k})" if k in as_letter else val) for k, val in v.labels().items()}
        if suffix == ".dta":
            # Stata labels integers and letters only, and no string variable.
            lab = {} if any(isinstance(x, str) and x not in letters for x in col) else {
                k: val for k, val in lab.items() if isinstance(k, str) or float(k).is_integer()}
        if lab:
            labels[name] = lab
        if suffix != ".dta":
            formats[name] = v.display_format or _spss_format(v)
            measures[name] = {"categorical": "nominal", "ordinal": "ordinal"}.get(v.kind, "scale")
            spec = _spss_missing(v)
            if spec:
                missing_ranges[name] = spec
        elif letters:
            missing_letters[name] = letters
    if suffix == ".dta":
        long = [c for c in df.columns if len(str(c)) > 32]
        if long:
            raise ValueError(f"output {str(path)!r}: Stata names have at most 32 characters; {long} are longer. "
                             "Write .sav or .parquet, or rename them.")
    frame = pd.DataFrame(out)
    kwargs = {"column_labels": [var_labels.get(c, "") or "" for c in frame.columns],
              "variable_value_labels": labels or None}

    def write(tmp):
        if suffix == ".dta":
            pyreadstat.write_dta(frame, tmp, missing_user_values=missing_letters or None, **kwargs)
        else:
            pyreadstat.write_sav(frame, tmp, missing_ranges=missing_ranges or None, compress=suffix == ".zsav",
                                 variable_format=formats or None, variable_measure=measures or None, **kwargs)

    return write
