"""What the command families share: the user-error type, schema and JSON helpers, common options."""

from __future__ import annotations

import argparse
import contextlib
import logging
from pathlib import Path

logger = logging.getLogger(__name__)


class CLIError(Exception):
    """An error reported to the user as one line."""


def read_schema(path):
    from dpknn.schema._attributes import Schema

    if not Path(path).exists():
        raise CLIError(f"schema file {str(path)!r} does not exist.")
    with file_content(path):
        return Schema.from_file(path)


@contextlib.contextmanager
def file_content(path):
    """A TypeError while a user's TOML file is read is about what the file holds (a string for a
    number, a table for a list): report it in one line naming the file, like a ValueError."""
    try:
        yield
    except TypeError as exc:
        raise CLIError(f"{str(path)!r}: {exc}") from exc


def to_json(obj, *, ascii_only=False):
    """What a command publishes, through the package's one strict serialiser (:func:`dpknn.mechanisms._base.to_json`),
    imported when a command writes so that the parser stays cheap to start."""
    from dpknn.mechanisms._base import to_json as strict

    return strict(obj, ascii_only=ascii_only)


def scheduler_client(args):
    """A client of the Dask scheduler at --scheduler, or None (a LocalCluster is started)."""
    import dask.distributed  # noqa: F401 - sets Dask's loggers, which the next line quiets

    if not args.verbose:
        # Dask logs at INFO; a local cluster's start and stop are not news here.
        logging.getLogger("distributed").setLevel(logging.WARNING)
    if args.scheduler is None:
        return contextlib.nullcontext(None)
    from dask.distributed import Client

    return Client(args.scheduler)


def comma_list(text):
    """The non-empty, stripped items of a comma-separated option (``"a, b,"`` -> ``["a", "b"]``)."""
    return [t.strip() for t in text.split(",") if t.strip()]


def named_values(text, option, parse, *, value, example):
    """``"A=x,B=y"`` -> {"A": parse("x"), "B": parse("y")} for an option such as ``--mcar-rates``; a CLIError
    naming ``option`` on an empty list, an item that is not NAME=``value`` (or that ``parse`` refuses with a
    ValueError), or a name given twice."""
    items = comma_list(text)
    if not items:
        raise CLIError(f"{option} is empty; give NAME={value} pairs, such as {example}, or drop it.")
    out = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip()
        try:
            parsed = parse(raw)
        except ValueError:
            sep = ""
        if not sep or not name:
            raise CLIError(f"{option} takes NAME={value} pairs separated by commas, such as {example}; got {item!r}.")
        if name in out:
            raise CLIError(f"{option} names {name!r} twice; give each attribute one {value.lower()}.")
        out[name] = parsed
    return out


def add_progress(p, what="show progress"):
    """``--progress`` / ``--no-progress``: on a terminal progress shows by default (resolved by ``main``)."""
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help=f"{what} (default: on when stderr is a terminal)")


def add_seed(p):
    p.add_argument("--seed", type=int, default=None, help="seed (reproducibility only, not security)")


#: What a seeded output's public record says of itself (``"seeded": true`` beside it).
SEEDED_NOTE = ("seeded with --seed: reproducible by anyone who knows the seed, and the same seed on neighbouring "
               "files gives the same noise; not for publication")


def warn_seeded(args):
    """Warn, before any work, when ``--seed`` is given to a command whose output is a DP release."""
    if args.seed is not None:
        logger.warning("--seed makes the noise reproducible: anyone who knows the seed can remove it, and the same "
                       "seed on neighbouring files gives the same noise. Do not publish seeded releases.")


#: What an --input may also be, in every command's help (read by :func:`read_input`).
AGENCY_INPUT = "an agency file: .dta, .sav, .sas7bdat, an IPUMS .dat.gz with --codebook"


def add_na_values(p):
    p.add_argument("--na-values", type=lambda t: tuple(v.strip() for v in t.split(",") if v.strip()), default=(),
                   metavar="S,T", help="CSV input: strings that mean a missing cell besides an empty field "
                   "(default: none, so NA or None are values). Files written by R: --na-values NA")
    p.add_argument("--codebook", type=Path, default=None, metavar="FILE",
                   help="the input's codebook: an IPUMS DDI .xml (needed for a fixed-width .dat/.dat.gz extract; "
                   "for a CSV or Parquet extract, to read its codes) or a .dta/.sav file; a .dta, .sav or .sas7bdat "
                   "input is its own. Coded missing values become gaps, not-applicable codes the indicator "
                   "NAME_niu (docs/agency.md)")


def read_input(args, path=None, *, attributes=()):
    """The table of ``--input`` (or ``path``) and, for an agency file or with ``--codebook``, its
    :class:`~dpknn.schema._coded_files.CodedTable` (None otherwise): (data, coded)."""
    from dpknn.schema._coded_files import is_agency_file, read_coded
    from dpknn.utils._io import read_table

    path = args.input if path is None else path
    codebook = getattr(args, "codebook", None)
    if codebook is not None or is_agency_file(path):
        coded = read_coded(path, codebook, attributes=attributes, na_values=args.na_values)
        return coded.data, coded
    return read_table(path, na_values=args.na_values, attributes=attributes), None


def input_is_coded(args, path=None):
    """True when the input is read with a codebook: an agency file, or ``--codebook`` given."""
    from dpknn.schema._coded_files import is_agency_file

    return getattr(args, "codebook", None) is not None or is_agency_file(args.input if path is None else path)


def output_writer(df, path, coded, *, same_rows=False, metadata=None):
    """A writer (:func:`dpknn.utils._io.write_files`) of ``df`` to ``path``: ``.dta``/``.sav``/``.zsav`` coded
    as the input's codebook says (each cell left missing gets back its own code when ``same_rows``), else
    CSV or Parquet (``metadata`` in Parquet). ``df=None`` only checks the name, before any work: pass
    ``coded=True`` there when the input is coded (:func:`input_is_coded`)."""
    from dpknn.schema._coded_files import WRITE_SUFFIXES, coded_writer
    from dpknn.utils._io import table_writer

    if str(path).lower().endswith(WRITE_SUFFIXES):
        if df is None and coded:
            return None
        if not coded:
            raise CLIError(f"output {str(path)!r}: a Stata or SPSS file is written with the input's codebook; give "
                           "an agency input or --codebook, or write .csv or .parquet.")
        from dpknn.schema._flags import flag_columns

        return coded_writer(df, path, coded.codebook, codes=coded.codes if same_rows else None,
                            flags=flag_columns(df))
    if coded and not str(path).lower().endswith((".csv", ".gz", ".parquet")):
        raise CLIError(f"output {str(path)!r}: write .dta, .sav or .zsav (the input's coding) or .csv or .parquet.")
    return table_writer(df, path, metadata=metadata)


def add_diagnostics(p):
    p.add_argument("--diagnostics", type=Path, default=None,
                   help="also write CONFIDENTIAL curator diagnostics (L1(D), noise scales, row counts) to this "
                        "JSON file; never publish it")


def add_scheduler(p):
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="for a folder of Parquet partitions: address of a running Dask scheduler (default: a local "
                        "cluster with one single-threaded worker per core); its workers must see the folders")


def add_max_work(p):
    from dpknn.exceptions import DEFAULT_MAX_WORK

    p.add_argument("--max-work", type=int, default=DEFAULT_MAX_WORK,
                   help="largest number of ball-box tests spent certifying L1(D) exactly; past it the run stops "
                   f"and names an ordinal attribute to bin (default {DEFAULT_MAX_WORK:,})")


def column_names(path):
    """Column names of a CSV or Parquet file, or of a folder of Parquet files, without reading rows."""
    path = Path(path)
    if path.is_dir() or path.suffix.lower() == ".parquet":
        import pyarrow.dataset as ds

        return [c for c in ds.dataset(path, format="parquet").schema.names if not c.startswith("__index")]
    import pandas as pd

    if not path.exists():
        raise FileNotFoundError(f"input {str(path)!r} does not exist.")
    return list(pd.read_csv(path, nrows=0).columns)
