"""What the command families share: the user-error type, schema and JSON helpers, common options."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
from pathlib import Path

logger = logging.getLogger(__name__)


class CLIError(Exception):
    """An error reported to the user as one line."""


def read_schema(path):
    from dpknn.schema.attributes import Schema

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


def to_json(obj):
    """Strict JSON (no NaN or Infinity) of ``obj``, numpy scalars and tuples converted."""
    from dpknn.mechanisms.base import jsonable

    # Not ASCII-escaped: ledger labels such as "AGE ≥ 16" must read as written (files are UTF-8).
    return json.dumps(jsonable(obj), indent=2, allow_nan=False, ensure_ascii=False)


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


def add_na_values(p):
    p.add_argument("--na-values", type=lambda t: tuple(v.strip() for v in t.split(",") if v.strip()), default=(),
                   metavar="S,T", help="CSV input: strings that mean a missing cell besides an empty field "
                   "(default: none, so NA or None are values). Files written by R: --na-values NA")


def add_diagnostics(p):
    p.add_argument("--diagnostics", type=Path, default=None,
                   help="also write CONFIDENTIAL curator diagnostics (L1(D), noise scales, row counts) to this "
                        "JSON file; never publish it")


def add_scheduler(p):
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="for a folder of Parquet partitions: address of a running Dask scheduler (default: a local "
                        "cluster with one single-threaded worker per core); its workers must see the folders")


def add_max_work(p):
    from dpknn.impute.knn import DEFAULT_MAX_WORK

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
