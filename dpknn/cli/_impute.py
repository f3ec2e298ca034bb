"""``impute`` (exact k-NN imputation) and ``release`` (the DP releases of a query file)."""

from __future__ import annotations

import contextlib
import logging
import math
import warnings
from pathlib import Path

from dpknn.cli._common import (
    AGENCY_INPUT,
    SEEDED_NOTE,
    CLIError,
    add_diagnostics,
    add_max_work,
    add_na_values,
    add_progress,
    add_scheduler,
    add_seed,
    file_content,
    input_is_coded,
    output_writer,
    read_input,
    read_schema,
    scheduler_client,
    to_json,
    warn_seeded,
)
from dpknn.exceptions import PrivacyLeakWarning, WorkLimitError
from dpknn.schema._flags import check_path_not_imputed
from dpknn.utils._io import (
    IMPUTED_MARKER,
    check_outputs,
    text_writer,
    write_files,
    write_with_figures,
)

logger = logging.getLogger(__name__)


def _bin_advice(schema, df, args, failure):
    """Text of a verified coarser binning (dpknn.impute._binning), for a run stopped at --max-work."""
    from dpknn.impute._binning import suggest_bin_widths

    with warnings.catch_warnings():
        # Said below in words, where the reader of the advice sees it.
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        found = suggest_bin_widths(schema, df, k=args.k, max_work=args.max_work, failure=failure)
    tried = "; ".join(f"{t.bin_widths} {'fits' if t.fits else 'does not fit'}"
                      + ("" if t.seconds is None else f" ({t.seconds:.1f} s)") for t in found.trials)
    head = ("--suggest-bins (CONFIDENTIAL: chosen on these data, so not public bins; fix bins on public "
            f"grounds before a release) tried: {tried}.")
    if not found.fits:
        return head + " No coarser binning of the ordinal attributes tried fits; drop an attribute or raise --max-work."
    lines = "\n".join(f"  {name}: bin_width = {bw}" for name, bw in found.changed().items())
    return f"{head}\nThese bin widths fit max_work on these data:\n{lines}"


def _cmd_impute(args):
    from dpknn.impute._knn import KNNImputer
    from dpknn.releases._queryfile import read_queries
    from dpknn.releases._report import REPORT_FILES

    side = Path(str(args.output) + ".json")
    report_files = [] if args.report is None else [args.report / name for name in REPORT_FILES]
    check_outputs([args.output, side, args.diagnostics, *report_files],
                  [args.input, args.schema, *([] if args.queries is None else [args.queries])])
    if args.queries is not None and args.report is None:
        raise CLIError("--queries plans releases in the curator's report: give --report DIR too.")
    if args.draws < 20:
        raise CLIError(f"--draws must be at least 20, got {args.draws}.")
    check_path_not_imputed(args.input)
    schema = read_schema(args.schema)
    if Path(args.input).is_dir():
        return _impute_folder(args, schema, side)
    if args.scheduler is not None:
        raise CLIError("--scheduler applies to a folder of Parquet partitions (--input DIR) only.")
    with file_content(args.queries):
        queries = None if args.queries is None else read_queries(args.queries, schema)[0]
    output_writer(None, args.output, input_is_coded(args))  # refuse a bad output name before any work
    df, coded = read_input(args, attributes=(*schema.known, *schema.imputed))
    imp = KNNImputer(schema, k=args.k, aggregate=args.aggregate, max_work=args.max_work, progress=args.progress)
    try:
        out = imp.fit_transform(df)
    except WorkLimitError as err:
        if not args.suggest_bins:
            raise
        raise CLIError(f"{err}\n{_bin_advice(schema, df, args, err)}") from err
    files = [(args.output, output_writer(out, args.output, coded, same_rows=True, metadata={IMPUTED_MARKER: "1"})),
             (side, text_writer(to_json(_impute_sidecar(args, schema))))]
    if args.diagnostics:
        diag = {"confidential": True, "input": str(args.input), "rows": len(df), **imp.curator_dict()}
        files.append((args.diagnostics, text_writer(to_json(diag))))
    def figures():
        return []

    if args.report is not None:
        from dpknn.releases._report import curator_report

        report = curator_report(imp, df, queries=queries, draws=args.draws, rng=args.seed, progress=args.progress)
        more, figures = report.files(args.report)
        files += more
    write_with_figures(files, figures)
    print(f"imputed {int(imp.incomplete_index_.size)} of {len(df)} records (k={args.k}); wrote {args.output} and "
          f"{side}" + (f"; curator diagnostics (confidential) in {args.diagnostics}" if args.diagnostics else "")
          + (f"; curator's report (CONFIDENTIAL, not for publication) in {args.report}" if args.report else ""))
    return 0


def _impute_sidecar(args, schema):
    """The sidecar of ``dpknn impute``: the marker and public parameters only. The imputed data
    are confidential microdata, and L1(D) with its worst cases goes to --diagnostics."""
    return {
        IMPUTED_MARKER: True,
        "note": "written by dpknn impute: imputed values are not observed values; dpknn release refuses this "
                "file. The table is confidential microdata.",
        "k": args.k, "aggregate": args.aggregate,
        "order": "(d2(cell x, cell y), cell y lexicographic, (label y - label x) mod circle)",
        "label": schema.label or "row position", "schema": schema.to_dict(),
    }


def _impute_folder(args, schema, side):
    """``dpknn impute`` on a folder of Parquet partitions, on Dask (dpknn.impute._distributed)."""
    from dpknn.impute._distributed import impute_parquet

    for option in ("report", "queries", "suggest_bins"):
        if getattr(args, option):
            raise CLIError(f"--{option.replace('_', '-')} needs the data in memory; it does not apply to a folder "
                           "of Parquet partitions.")
    if Path(args.output).exists():
        raise CLIError(f"output {str(args.output)!r} exists; choose a new folder.")
    with scheduler_client(args) as client:
        fit = impute_parquet(args.input, args.output, schema, k=args.k, aggregate=args.aggregate,
                             max_work=args.max_work, client=client, progress=args.progress)
    files = [(side, text_writer(to_json({**_impute_sidecar(args, schema), "partitions": fit.n_partitions_})))]
    if args.diagnostics:
        files.append((args.diagnostics, text_writer(to_json({"input": str(args.input), **fit.curator_dict()}))))
    write_files(files)
    print(f"imputed {fit.n_incomplete_} of {fit.n_records_} records in {fit.n_partitions_} Parquet partitions "
          f"(k={args.k}); wrote {args.output} and {side}"
          + (f"; curator diagnostics (confidential) in {args.diagnostics}" if args.diagnostics else ""))
    return 0


def _cmd_release(args):
    from dpknn.accounting import BudgetAccountant
    from dpknn.exceptions import BudgetExceededError
    from dpknn.releases._queries import PrivateImputation
    from dpknn.releases._queryfile import read_queries
    from dpknn.releases._statistics import CachedStatistics

    check_outputs([args.output, args.diagnostics], [args.input, args.schema, args.queries])
    if Path(args.output).suffix.lower() != ".json":
        raise CLIError(f"--output {str(args.output)!r}: release writes JSON, so its name must end in .json (for "
                       f"example {str(Path(args.output).with_suffix('.json'))!r}).")
    schema = read_schema(args.schema)
    with file_content(args.queries):
        queries, total = read_queries(args.queries, schema, allow_non_dp=args.allow_non_dp)
    if not math.isfinite(args.epsilon) or args.epsilon <= 0:
        raise CLIError(f"--epsilon must be a finite number > 0, got {args.epsilon!r}.")
    if total > args.epsilon:
        raise BudgetExceededError(
            f"the queries in {str(args.queries)!r} spend epsilon={total:g} in all, more than "
            f"--epsilon={args.epsilon:g}; nothing was computed.")
    check_path_not_imputed(args.input)
    warn_seeded(args)
    acc = BudgetAccountant(args.epsilon)
    with contextlib.ExitStack() as stack:
        if Path(args.input).is_dir():
            from dpknn.releases._parquet import ParquetStatistics

            if any(q.get("method") == "global" for q in queries):
                raise CLIError('method = "global" (NOT DP) needs the data in memory; it does not apply to a folder '
                               "of Parquet partitions.")
            client = stack.enter_context(scheduler_client(args))
            stats = stack.enter_context(ParquetStatistics(args.input, schema, k=args.k, max_work=args.max_work,
                                                          client=client, progress=args.progress))
            # A mean's count and the count asked for it are one pass, not two.
            private = PrivateImputation.from_statistics(CachedStatistics(stats), accountant=acc, rng=args.seed,
                                                        noise=args.noise)
            rows = private.imputer.n_records_
        else:
            if args.scheduler is not None:
                raise CLIError("--scheduler applies to a folder of Parquet partitions (--input DIR) only.")
            df, _ = read_input(args, attributes=(*schema.known, *schema.imputed))
            rows = len(df)
            private = PrivateImputation(df, schema, k=args.k, accountant=acc, rng=args.seed, noise=args.noise,
                                        max_work=args.max_work, progress=args.progress)
        return _release(args, private, queries, acc, rows)


def _release(args, private, queries, acc, rows):
    """Ask every query of the file and write the releases (and the curator's diagnostics)."""
    from dpknn.releases._queryfile import release_queries

    made = release_queries(private, queries, progress=args.progress)
    published = made.published(acc, k=args.k, epsilon_budget=args.epsilon)
    if args.seed is not None:
        published = {"seeded": True, "seeded_note": SEEDED_NOTE, **published}
    files = [(args.output, text_writer(to_json(published)))]
    if args.diagnostics:
        diag = {"confidential": True, "input": str(args.input), "rows": rows, "l1": private.l1,
                "releases": list(made.curator)}
        files.append((args.diagnostics, text_writer(to_json(diag))))
    write_files(files)
    print(f"{len(made.releases)} releases, epsilon spent {acc.spent()[0]:.4g} of {args.epsilon:g}; wrote {args.output}"
          + ("" if made.differentially_private else " (contains NOT DP values)"))
    return 0


def add_impute_parser(sub):
    """Add the ``impute`` command to the subparsers ``sub``."""
    p = sub.add_parser("impute", help="impute a file by exact k-NN (L1(D) only to --diagnostics)",
                       description="Impute the attributes the schema lists as imputed, by the fixed k-NN "
                       "order, and write the data (CSV or Parquet, confidential microdata) with a flag column "
                       "dpknn_imputed_ATTRIBUTE per imputed attribute, by which release, synth and impute refuse it "
                       "(docs/imputation.md), and OUTPUT.json with the "
                       "order's public parameters and a marker that makes dpknn release refuse the file. L1(D) and "
                       "class statistics go to --diagnostics; --report writes the curator's report (confidential), "
                       "with plots and, for a --queries file, the planned releases' noise and 90% intervals. A "
                       "folder of Parquet partitions is imputed on Dask into a folder of partitions, universes "
                       "included (docs/distributed.md).")
    p.add_argument("--schema", type=Path, required=True, help="TOML schema (see dpknn.Schema.from_file)")
    p.add_argument("--input", type=Path, required=True,
                   help=".csv or .parquet, or a folder of Parquet partitions (imputed on Dask, out of core)"
                   f"; or {AGENCY_INPUT}")
    p.add_argument("--output", type=Path, required=True,
                   help=".csv or .parquet; a new folder for a folder of partitions"
                   "; .dta or .sav for an agency input (its labels and missing codes)")
    p.add_argument("--k", type=int, default=1, help="donors per incomplete record (default 1)")
    p.add_argument("--aggregate", default="auto", choices=["auto", "mean", "median"],
                   help="how k > 1 numeric donor values are combined (default auto)")
    add_progress(p)
    add_max_work(p)
    p.add_argument("--suggest-bins", action="store_true",
                   help="when the run stops at --max-work, fit again with coarser ordinal bins and "
                        "print bin widths verified to fit; chosen on the data, so for planning only")
    add_diagnostics(p)
    p.add_argument("--report", type=Path, default=None, metavar="DIR",
                   help="write a CONFIDENTIAL curator's report to DIR: report.md, report.json and PNG plots "
                        "(classes, donors, L1(D) per universe, imputed vs observed values, planned releases)")
    p.add_argument("--queries", type=Path, default=None,
                   help="query file (docs/queries.md) whose releases the report rehearses: estimate, noise scale, "
                        "90%% interval (needs --report)")
    p.add_argument("--draws", type=int, default=1000,
                   help="rehearsals per planned release in the report (default 1000)")
    add_scheduler(p)
    add_seed(p)
    add_na_values(p)
    p.set_defaults(func=_cmd_impute)


def add_release_parser(sub):
    """Add the ``release`` command to the subparsers ``sub``."""
    p = sub.add_parser("release", help="private releases listed in a TOML file, under a total budget",
                       description="Impute by exact k-NN and release the queries of a TOML file "
                       "([[query]] tables: name, type = count|proportion|mean|variance, epsilon, and "
                       "count_epsilon / mean_epsilon / denominator_epsilon, where, within, column, bounds, "
                       "method, gamma; see docs/queries.md). The file is refused up front when its budgets add up "
                       "to more than --epsilon. The output holds only publishable fields.")
    p.add_argument("--schema", type=Path, required=True,
                   help="TOML schema: the public domains, known and imputed attributes (docs/schema.md)")
    p.add_argument("--queries", type=Path, required=True,
                   help="TOML file of [[query]] tables, the releases and their budgets (docs/queries.md)")
    p.add_argument("--input", type=Path, required=True,
                   help=".csv or .parquet, or a folder of Parquet partitions (imputed and summed on Dask)"
                   f"; or {AGENCY_INPUT}")
    p.add_argument("--output", type=Path, required=True, help="JSON file of the releases (a name ending in .json)")
    p.add_argument("--epsilon", type=float, required=True, help="total privacy budget")
    p.add_argument("--k", type=int, default=1, help="donors per incomplete record (default 1)")
    p.add_argument("--noise", default="polyplace", choices=["polyplace", "cauchy"],
                   help="noise of the smooth releases whose query sets no noise: polyplace (default, any epsilon > "
                        "ln 2) or cauchy (the paper's generalized Cauchy, epsilon > 2 ln 2)")
    p.add_argument("--allow-non-dp", action="store_true",
                   help='allow method = "global" (the paper\'s comparison, NOT differentially private)')
    add_max_work(p)
    add_diagnostics(p)
    add_scheduler(p)
    add_progress(p, "show progress (the imputation's stages, one bar per pass over a folder, the releases)")
    add_seed(p)
    add_na_values(p)
    p.set_defaults(func=_cmd_release)
