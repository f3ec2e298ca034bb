"""The ``dpknn`` command line.

Every command has ``--help``. Errors print one line to stderr and exit with status 2; output
files are written to a temporary name and moved into place only when complete, so a failed
run leaves nothing behind.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from pathlib import Path

__all__ = ["main"]

logger = logging.getLogger(__name__)


class CLIError(Exception):
    """An error reported to the user as one line."""


def _atomic_write(path, write):
    """Call ``write(tmp_path)`` and move the result to ``path`` only if it succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_table(df, path):
    """Write ``df`` to CSV or Parquet (by the file extension), atomically."""
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        _atomic_write(path, lambda tmp: df.to_parquet(tmp, index=False))
    elif suffix in (".csv", ".gz"):
        _atomic_write(path, lambda tmp: df.to_csv(tmp, index=False))
    else:
        raise CLIError(f"output {str(path)!r}: use a .csv or .parquet file name.")


def _cmd_census(args):
    import numpy as np

    from .datasets import census_schema, make_census

    df = make_census(args.n, missing=args.missing, missing_rate=args.missing_rate, rng=args.seed)
    enc = census_schema().encode(df)
    from ._core._grouping import pack_cells

    keys = pack_cells(enc.cells, census_schema().n_codes)
    adults = df[df.AGE.between(20, 59)]
    summary = {
        "rows": len(df),
        "incomplete": int(enc.incomplete.sum()),
        "incomplete_share": float(enc.incomplete.mean()) if len(df) else 0.0,
        "equivalence_classes": int(np.unique(keys).size),
        "mean_incwage_20_59_true": float(adults.INCWAGE_TRUE.mean()),
        "mean_incwage_20_59_complete_cases": float(adults.INCWAGE.mean()),
    }
    if args.output:
        write_table(df, args.output)
        summary["output"] = str(args.output)
    print(json.dumps(summary, indent=2))
    return 0


def build_parser():
    parser = argparse.ArgumentParser(
        prog="dpknn",
        description="Differentially private release of survey and census data with missing values.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("census", help="draw a synthetic 1940-style census extract and summarise it",
                       description="Draw a synthetic census extract (dpknn.datasets.make_census), print "
                       "its size, missingness, equivalence classes and the bias of ignoring missing "
                       "wages; optionally write it to CSV or Parquet.")
    p.add_argument("--n", type=int, default=200_000, help="number of records (default 200000)")
    p.add_argument("--missing", default="mar", choices=["mar", "mnar", "mcar", "none"],
                   help="missingness model of INCWAGE (default mar)")
    p.add_argument("--missing-rate", type=float, default=0.2, help="share of records missing INCWAGE")
    p.add_argument("--seed", type=int, default=None, help="seed (reproducibility only, not security)")
    p.add_argument("--output", type=Path, default=None, help="write the data to this .csv or .parquet")
    p.set_defaults(func=_cmd_census)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except (CLIError, ValueError, TypeError, OSError, ImportError) as exc:
        print(f"dpknn {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
