"""``rwn`` (Randomization Within Neighbourhoods, disclosure control: not DP)."""

from __future__ import annotations

import logging
from pathlib import Path

from dpknn.cli._common import (
    AGENCY_INPUT,
    CLIError,
    add_na_values,
    add_progress,
    add_scheduler,
    add_seed,
    column_names,
    comma_list,
    input_is_coded,
    output_writer,
    read_input,
    scheduler_client,
)
from dpknn.schema._flags import flag_columns
from dpknn.utils._io import (
    check_outputs,
    write_files,
)

logger = logging.getLogger(__name__)


def _cmd_rwn(args):
    from dpknn.sdc._rwn import RWN, perturb_parquet

    check_outputs([args.output], [args.input])
    if (args.columns is None) == (args.keep is None):
        raise CLIError("name the columns to perturb with --columns, or the columns to leave untouched (record "
                       "identifiers, weights) with --keep; exactly one of the two.")
    if args.method in ("sampled_points", "sampled_pairs") and args.m is None:
        what = "the sample size" if args.method == "sampled_points" else "the average number of partners per record"
        raise CLIError(f"--method {args.method} needs --m ({what}).")
    if args.method == "partitioned" and args.partitions is None and not Path(args.input).is_dir():
        raise CLIError("--method partitioned needs --partitions (the number of partitions of the records).")
    names = comma_list(args.columns or args.keep)
    if args.keep is None:
        columns = names
    else:
        from dpknn.schema._coded_files import is_agency_file

        if args.codebook is not None or is_agency_file(args.input):
            present = list(read_input(args)[0].columns)   # the columns as read: NAME_niu indicators included
        else:
            present = column_names(args.input)
        absent = [c for c in names if c not in present]
        if absent:
            raise CLIError(f"--keep names columns {absent} that are not in {str(args.input)!r}.")
        # Imputation flags are never perturbed (RWN warns, and leaves them out unless --keep-flags).
        columns = [c for c in present if c not in names and c not in flag_columns(present)]
        if not columns:
            raise CLIError("--keep leaves no column to perturb.")
    rwn = RWN(k=args.k, radius=args.radius, q=args.q, method=args.method, m=args.m, partitions=args.partitions,
              n_jobs=args.jobs, progress=args.progress, keep_flags=args.keep_flags, rng=args.seed)
    if Path(args.input).is_dir():
        if Path(args.output).exists():
            raise CLIError(f"output {str(args.output)!r} exists; choose a new folder.")
        with scheduler_client(args) as client:
            info = perturb_parquet(args.input, args.output, rwn, columns=columns, client=client)  # atomic itself
        within = "exact" if args.method == "partitioned" else args.method
        print(f"perturbed {info['partitions']} Parquet partitions ({within} within each) into {args.output}")
        print(_changed_summary(info["changed_share"]))
        return 0
    if args.scheduler is not None:
        raise CLIError("--scheduler applies to a folder of Parquet partitions (--input DIR) only.")
    output_writer(None, args.output, input_is_coded(args))
    df, coded = read_input(args)
    out = rwn.set_params(columns=columns).fit_transform(df)
    # A gap may move with a neighbour's value: a cell left missing takes its variable's first gap code.
    write_files([(args.output, output_writer(out, args.output, coded))])
    print(f"perturbed {len(df)} records ({args.method}, k={args.k}, radius={args.radius}, q={args.q}); "
          f"wrote {args.output}")
    print(_changed_summary(rwn.changed_share_))
    return 0


def _changed_summary(shares):
    return "values changed: " + ", ".join(f"{c} {100 * s:.1f} %" for c, s in shares.items())


def add_rwn_parser(sub):
    """Add the ``rwn`` command to the subparsers ``sub``."""
    p = sub.add_parser("rwn", help="Randomization Within Neighbourhoods (statistical disclosure control)",
                       description="Perturb a table by RWN (Perry et al. 2022): each value is replaced, with "
                       "probability q, by the same variable of a random neighbour. INPUT may be a .csv or "
                       ".parquet file (processed in memory) or a folder of Parquet files (processed partition by "
                       "partition on a local Dask cluster or the one at --scheduler, bounded memory). RWN is not "
                       "differential privacy. It prints the share of values changed per perturbed column and warns "
                       "about a column left (nearly) unchanged (docs/rwn.md).")
    p.add_argument("--input", type=Path, required=True, help=".csv or .parquet file, or a folder of Parquet files"
                   f"; or {AGENCY_INPUT}")
    p.add_argument("--output", type=Path, required=True, help="file (.csv/.parquet) or folder for Parquet input"
                   "; .dta or .sav for an agency input (its labels and missing codes)")
    p.add_argument("--k", type=int, default=5,
                   help="least neighbourhood size: the k nearest other records, ties included (default 5)")
    p.add_argument("--radius", type=float, default=None,
                   help="records within this Euclidean distance are neighbours too, in standardised units (numeric "
                        "columns divided by their standard deviation; two different categories are sqrt(2) apart)")
    p.add_argument("--q", type=float, default=1.0, help="probability that each value is replaced (default 1)")
    p.add_argument("--method", default="exact", choices=["exact", "sampled_points", "sampled_pairs", "partitioned"],
                   help="exact, or a method for large data (docs/rwn.md); default exact. For a folder each "
                        "Parquet partition is perturbed on its own: exact, sampled_points and sampled_pairs run within "
                        "each partition (samples and pairs drawn among the partition's records, not across the "
                        "folder); partitioned is exact within each partition (the folder's partitions are the "
                        "partitions; --partitions is ignored)")
    p.add_argument("--m", type=int, default=None,
                   help="required by the sampled methods: sample size (sampled_points) or partners per record "
                        "(sampled_pairs)")
    p.add_argument("--partitions", type=int, default=None,
                   help="number of partitions (partitioned; not for a folder, whose partitions are used)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--columns", default=None,
                       help="comma-separated columns to perturb (this or --keep is required)")
    which.add_argument("--keep", default=None,
                       help="comma-separated columns to leave untouched, such as record identifiers and weights; "
                            "all others are perturbed")
    p.add_argument("--keep-flags", action="store_true",
                   help="imputed input: keep the dpknn_imputed_* flag columns in the output (never perturbed; they "
                        "tell who did not answer, so by default they are left out)")
    p.add_argument("--jobs", type=int, default=1, help="joblib workers for partitioned")
    add_progress(p, "show progress (sampled_pairs, partitioned)")
    add_scheduler(p)
    add_seed(p)
    add_na_values(p)
    p.set_defaults(func=_cmd_rwn)
