"""The ``dpknn`` command line.

Every command has ``--help``. Errors print one line to stderr and exit with status 2; output
files are written to a temporary name and moved into place only when complete, so a failed
run leaves nothing behind. An output that resolves to an input is refused before any work.

Main outputs of ``release`` and ``demo`` hold only what may be published; data-dependent
curator diagnostics (L1(D), noise scales, row counts) are written only with ``--diagnostics``,
to a separate file marked confidential. The query-file format is documented in
``docs/queries.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import sys
import traceback
import warnings
from pathlib import Path

from dpknn.exceptions import PrivacyLeakWarning, WorkLimitError
from dpknn.impute.flags import check_path_not_imputed, flag_columns
from dpknn.utils.io import (
    IMPUTED_MARKER,
    check_outputs,
    defer_signal,
    is_marked_imputed,
    read_table,
    table_writer,
    text_writer,
    write_files,
    write_with_figures,
)

__all__ = ["main"]

logger = logging.getLogger(__name__)


class CLIError(Exception):
    """An error reported to the user as one line."""


def _cmd_census(args):
    import numpy as np

    from dpknn.datasets.census import census_schema, make_census

    df = make_census(args.n, missing=args.missing, missing_rate=args.missing_rate, rng=args.seed)
    enc = census_schema().encode(df)
    from dpknn._core._grouping import pack_cells

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
        write_files([(args.output, table_writer(df, args.output))])
        summary["output"] = str(args.output)
    print(json.dumps(summary, indent=2))
    return 0


def _schema(path):
    from dpknn.schema.attributes import Schema

    if not Path(path).exists():
        raise CLIError(f"schema file {str(path)!r} does not exist.")
    with _file_content(path):
        return Schema.from_file(path)


@contextlib.contextmanager
def _file_content(path):
    """A TypeError while a user's TOML file is read is about what the file holds (a string for a
    number, a table for a list): report it in one line naming the file, like a ValueError."""
    try:
        yield
    except TypeError as exc:
        raise CLIError(f"{str(path)!r}: {exc}") from exc


def _json(obj):
    """Strict JSON (no NaN or Infinity) of ``obj``, numpy scalars and tuples converted."""
    from dpknn.mechanisms.base import jsonable

    # Not ASCII-escaped: ledger labels such as "AGE ≥ 16" must read as written (files are UTF-8).
    return json.dumps(jsonable(obj), indent=2, allow_nan=False, ensure_ascii=False)


def _bin_advice(schema, df, args, failure):
    """Text of a verified coarser binning (dpknn.impute.binning), for a run stopped at --max-work."""
    from dpknn.impute.binning import suggest_bin_widths

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
    from dpknn.experiments.demo import curator_stats
    from dpknn.impute.knn import KNNImputer
    from dpknn.impute.report import REPORT_FILES
    from dpknn.releases.queryfile import read_queries

    side = Path(str(args.output) + ".json")
    report_files = [] if args.report is None else [args.report / name for name in REPORT_FILES]
    check_outputs([args.output, side, args.diagnostics, *report_files],
                  [args.input, args.schema, *([] if args.queries is None else [args.queries])])
    if args.queries is not None and args.report is None:
        raise CLIError("--queries plans releases in the curator's report: give --report DIR too.")
    if args.draws < 20:
        raise CLIError(f"--draws must be at least 20, got {args.draws}.")
    check_path_not_imputed(args.input)
    schema = _schema(args.schema)
    if Path(args.input).is_dir():
        return _impute_folder(args, schema, side)
    if args.scheduler is not None:
        raise CLIError("--scheduler applies to a folder of Parquet partitions (--input DIR) only.")
    with _file_content(args.queries):
        queries = None if args.queries is None else read_queries(args.queries, schema)[0]
    table_writer(None, args.output)  # refuse a bad output name before any work
    df = read_table(args.input)
    imp = KNNImputer(schema, k=args.k, aggregate=args.aggregate, max_work=args.max_work, progress=args.progress)
    try:
        out = imp.fit_transform(df)
    except WorkLimitError as err:
        if not args.suggest_bins:
            raise
        raise CLIError(f"{err}\n{_bin_advice(schema, df, args, err)}") from err
    files = [(args.output, table_writer(out, args.output, metadata={IMPUTED_MARKER: "1"})),
             (side, text_writer(_json(_impute_sidecar(args, schema))))]
    if args.diagnostics:
        diag = {"confidential": True, "input": str(args.input), "rows": len(df), **curator_stats(imp)}
        files.append((args.diagnostics, text_writer(_json(diag))))
    def figures():
        return []

    if args.report is not None:
        from dpknn.impute.report import curator_report

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


def _scheduler_client(args):
    """A client of the Dask scheduler at --scheduler, or None (a LocalCluster is started)."""
    import dask.distributed  # noqa: F401 - sets Dask's loggers, which the next line quiets

    if not args.verbose:
        # Dask logs at INFO; a local cluster's start and stop are not news here.
        logging.getLogger("distributed").setLevel(logging.WARNING)
    if args.scheduler is None:
        return contextlib.nullcontext(None)
    from dask.distributed import Client

    return Client(args.scheduler)


def _impute_folder(args, schema, side):
    """``dpknn impute`` on a folder of Parquet partitions, on Dask (dpknn.impute.distributed)."""
    from dpknn.impute.distributed import impute_parquet

    for option in ("report", "queries", "suggest_bins"):
        if getattr(args, option):
            raise CLIError(f"--{option.replace('_', '-')} needs the data in memory; it does not apply to a folder "
                           "of Parquet partitions.")
    if Path(args.output).exists():
        raise CLIError(f"output {str(args.output)!r} exists; choose a new folder.")
    with _scheduler_client(args) as client:
        fit = impute_parquet(args.input, args.output, schema, k=args.k, aggregate=args.aggregate,
                             max_work=args.max_work, client=client, progress=args.progress)
    files = [(side, text_writer(_json({**_impute_sidecar(args, schema), "partitions": fit.n_partitions_})))]
    if args.diagnostics:
        files.append((args.diagnostics, text_writer(_json({"input": str(args.input), **fit.curator_dict()}))))
    write_files(files)
    print(f"imputed {fit.n_incomplete_} of {fit.n_records_} records in {fit.n_partitions_} Parquet partitions "
          f"(k={args.k}); wrote {args.output} and {side}"
          + (f"; curator diagnostics (confidential) in {args.diagnostics}" if args.diagnostics else ""))
    return 0


def _cmd_release(args):
    from dpknn.accounting import BudgetAccountant
    from dpknn.exceptions import BudgetExceededError
    from dpknn.releases.queries import PrivateImputation
    from dpknn.releases.queryfile import read_queries

    check_outputs([args.output, args.diagnostics], [args.input, args.schema, args.queries])
    if Path(args.output).suffix.lower() != ".json":
        raise CLIError(f"--output {str(args.output)!r}: release writes JSON, so its name must end in .json (for "
                       f"example {str(Path(args.output).with_suffix('.json'))!r}).")
    schema = _schema(args.schema)
    with _file_content(args.queries):
        queries, total = read_queries(args.queries, schema, allow_non_dp=args.allow_non_dp)
    if not math.isfinite(args.epsilon) or args.epsilon <= 0:
        raise CLIError(f"--epsilon must be a finite number > 0, got {args.epsilon!r}.")
    if total > args.epsilon:
        raise BudgetExceededError(
            f"the queries in {str(args.queries)!r} spend epsilon={total:g} in all, more than "
            f"--epsilon={args.epsilon:g}; nothing was computed.")
    check_path_not_imputed(args.input)
    if args.seed is not None:
        logger.warning("--seed makes the noise reproducible: anyone who knows the seed can remove it, and the same "
                       "seed on neighbouring files gives the same noise. Do not publish seeded releases.")
    acc = BudgetAccountant(args.epsilon)
    with contextlib.ExitStack() as stack:
        if Path(args.input).is_dir():
            from dpknn.impute.distributed import ParquetStatistics

            if any(q.get("method") == "global" for q in queries):
                raise CLIError('method = "global" (NOT DP) needs the data in memory; it does not apply to a folder '
                               "of Parquet partitions.")
            client = stack.enter_context(_scheduler_client(args))
            stats = stack.enter_context(ParquetStatistics(args.input, schema, k=args.k, max_work=args.max_work,
                                                          client=client))
            private = PrivateImputation.from_statistics(stats, accountant=acc, rng=args.seed, noise=args.noise)
            rows = private.imputer.n_records_
        else:
            if args.scheduler is not None:
                raise CLIError("--scheduler applies to a folder of Parquet partitions (--input DIR) only.")
            df = read_table(args.input)
            rows = len(df)
            private = PrivateImputation(df, schema, k=args.k, accountant=acc, rng=args.seed, noise=args.noise,
                                        max_work=args.max_work)
        return _release(args, private, queries, acc, rows)


def _release(args, private, queries, acc, rows):
    """Ask every query of the file and write the releases (and the curator's diagnostics)."""
    from dpknn.experiments.baseline import NOT_DP, global_baseline
    from dpknn.releases.queryfile import ask

    out, curator, non_dp = [], [], False
    for q in queries:
        kwargs = {k: v for k, v in q.items() if k not in ("name", "type")}
        if kwargs.get("method") == "global":
            kwargs.pop("method")
            kwargs.pop("gamma", None)
            value = global_baseline(private, q["type"], **kwargs)
            out.append({"name": q["name"], "type": q["type"], "value": value, "differentially_private": False,
                        "note": NOT_DP})
            non_dp = True
            continue
        rel = ask(private, q)
        out.append({"name": q["name"], "type": q["type"], **rel.to_dict()})
        curator.append({"name": q["name"], **rel.curator_dict()})
    result = {"differentially_private": not non_dp}
    if non_dp:
        result["WARNING"] = "NOT DIFFERENTIALLY PRIVATE: some values use --allow-non-dp (" + NOT_DP + ")."
    result.update({"neighbouring_relation": "add or remove one record", "k": args.k,
                   "epsilon_budget": args.epsilon, "epsilon_spent": acc.spent()[0],
                   "ledger": [vars(e) for e in acc.ledger], "releases": out})
    files = [(args.output, text_writer(_json(result)))]
    if args.diagnostics:
        diag = {"confidential": True, "input": str(args.input), "rows": rows, "l1": private.l1,
                "releases": curator}
        files.append((args.diagnostics, text_writer(_json(diag))))
    write_files(files)
    print(f"{len(out)} releases, epsilon spent {acc.spent()[0]:.4g} of {args.epsilon:g}; wrote {args.output}"
          + (" (contains NOT DP values)" if non_dp else ""))
    return 0


def _cmd_rwn(args):
    from dpknn.sdc.rwn import RWN, perturb_parquet

    check_outputs([args.output], [args.input])
    if (args.columns is None) == (args.keep is None):
        raise CLIError("name the columns to perturb with --columns, or the columns to leave untouched (record "
                       "identifiers, weights) with --keep; exactly one of the two.")
    if args.method in ("sampled_points", "sampled_pairs") and args.m is None:
        what = "the sample size" if args.method == "sampled_points" else "the average number of partners per record"
        raise CLIError(f"--method {args.method} needs --m ({what}).")
    if args.method == "partitioned" and args.partitions is None and not Path(args.input).is_dir():
        raise CLIError("--method partitioned needs --partitions (the number of partitions of the records).")
    names = [c.strip() for c in (args.columns or args.keep).split(",") if c.strip()]
    if args.keep is None:
        columns = names
    else:
        present = _column_names(args.input)
        absent = [c for c in names if c not in present]
        if absent:
            raise CLIError(f"--keep names columns {absent} that are not in {str(args.input)!r}.")
        # Imputation flags are never perturbed (RWN warns and carries them through).
        columns = [c for c in present if c not in names and c not in flag_columns(present)]
        if not columns:
            raise CLIError("--keep leaves no column to perturb.")
    rwn = RWN(k=args.k, radius=args.radius, q=args.q, method=args.method, m=args.m, partitions=args.partitions,
              n_jobs=args.jobs, progress=args.progress, rng=args.seed)
    if Path(args.input).is_dir():
        if Path(args.output).exists():
            raise CLIError(f"output {str(args.output)!r} exists; choose a new folder.")
        with _scheduler_client(args) as client:
            info = perturb_parquet(args.input, args.output, rwn, columns=columns, client=client)  # atomic itself
        within = "exact" if args.method == "partitioned" else args.method
        print(f"perturbed {info['partitions']} Parquet partitions ({within} within each) into {args.output}")
        print(_changed_summary(info["changed_share"]))
        return 0
    if args.scheduler is not None:
        raise CLIError("--scheduler applies to a folder of Parquet partitions (--input DIR) only.")
    table_writer(None, args.output)
    df = read_table(args.input)
    out = rwn.fit_transform(df, columns=columns)
    write_files([(args.output, table_writer(out, args.output))])
    print(f"perturbed {len(df)} records ({args.method}, k={args.k}, radius={args.radius}, q={args.q}); "
          f"wrote {args.output}")
    print(_changed_summary(rwn.changed_share_))
    return 0


def _changed_summary(shares):
    return "values changed: " + ", ".join(f"{c} {100 * s:.1f} %" for c, s in shares.items())


SYNTH_METHODS = {
    "privbayes": ("PrivBayes on complete rows", "complete_rows"),
    "privbayese": ("PrivBayesE: each table on the rows observed on it", "observe"),
    "privbayes-value": ("PrivBayes with missingness as a value (reproduces gaps)", "value"),
    "columnwise": ("column-wise naive-Bayes stages that impute as they go (KaminoI)", None),
    "dpmisgan": ("MisGAN trained with DP-SGD on both critics (valid DP-MisGAN)", None),
}


def _cmd_synth(args):
    from dpknn.schema.discretization import read_attributes
    from dpknn.synth import ColumnwiseSynthesizer, DPMisGAN, PrivBayes

    check_outputs([args.output, _sidecar(args.output)], [args.input, args.attributes])
    table_writer(None, args.output)
    if args.rows < 1:
        raise CLIError(f"--rows must be a positive number of synthetic rows, got {args.rows}.")
    check_path_not_imputed(args.input)
    with _file_content(args.attributes):
        attrs = read_attributes(args.attributes)
    what, missing = SYNTH_METHODS[args.method]
    gan_only = {"--input-rows": args.input_rows, "--delta": args.delta, "--epochs": args.epochs,
                "--batch-size": args.batch_size, "--gaps": args.gaps or None}
    if args.method != "dpmisgan" and any(v is not None for v in gan_only.values()):
        raise CLIError(f"{', '.join(k for k, v in gan_only.items() if v is not None)} apply to --method dpmisgan only.")
    if args.method in ("dpmisgan", "columnwise") and (args.max_rows is not None or args.degree != 2):
        raise CLIError("--max-rows and --degree apply to the PrivBayes methods only.")
    sample_options = {}
    if args.method == "dpmisgan":
        if args.input_rows is None:
            raise CLIError("--method dpmisgan needs --input-rows, the public number of input rows that sets the "
                           "sampling rate batch/rows and the step count (derived from the data they would reveal n).")
        # Only the options given: the estimator's defaults hold otherwise, and it validates what was given.
        given = {k: v for k, v in (("epochs", args.epochs), ("batch_size", args.batch_size)) if v is not None}
        model = DPMisGAN(attrs, epsilon=args.epsilon, delta=args.delta, n_rows=args.input_rows,
                         progress=args.progress, rng=args.seed, **given)
        sample_options["missing"] = args.gaps
    elif args.method == "columnwise":
        model = ColumnwiseSynthesizer(attrs, epsilon=args.epsilon, bins=args.bins, progress=args.progress,
                                      rng=args.seed)
    else:
        model = PrivBayes(attrs, epsilon=args.epsilon, degree=args.degree, missing=missing, bins=args.bins,
                          max_rows=args.max_rows, progress=args.progress, rng=args.seed)
    df = read_table(args.input)
    model.fit(df)
    out = model.sample(args.rows, rng=None if args.seed is None else args.seed + 1, **sample_options)
    public = {"method": args.method, "description": what, "epsilon": model.epsilon_, "delta": model.delta_,
              "neighbours": "add/remove one record", "rows": args.rows, "attributes": [a.to_dict() for a in attrs]}
    if args.method == "dpmisgan":
        public.update(input_rows=args.input_rows, input_rows_is="public input", epochs=model.epochs,
                      batch_size=model.batch_size, clip=model.clip, sampling_rate=model.sampling_rate_,
                      critic_steps=model.steps_, noise_multiplier=model.noise_multiplier_, gaps=args.gaps,
                      accounting="RDP of the sampled Gaussian mechanism, improved conversion")
    elif args.method == "columnwise":
        public.update(bins=args.bins, order=list(model.order_))
        if model.noisy_missing_counts_ is not None:
            public["noisy_missing_counts"] = model.noisy_missing_counts_
    else:
        public.update(bins=args.bins, degree=args.degree, network=[[c, list(p)] for c, p in model.network_],
                      max_rows=model.max_rows_,
                      max_rows_is=("public input" if args.max_rows is not None else "released (noisy count + margin)"))
    write_files([(args.output, table_writer(out, args.output)),
                 (_sidecar(args.output), text_writer(json.dumps(public, indent=2, default=str) + "\n"))])
    print(f"{args.method}: {what}; epsilon={model.epsilon_:g}, delta={model.delta_:g}; wrote {args.rows} synthetic "
          f"rows to {args.output} and the public parameters to {_sidecar(args.output)}")
    return 0


def _cmd_evaluate(args):
    from dpknn.metrics.evaluation import FIGURES, evaluate
    from dpknn.schema.discretization import read_attributes

    names = ("evaluation.md", "evaluation.json", *FIGURES.values())
    check_outputs([args.out / n for n in names], [args.real, args.released, args.attributes])
    with _file_content(args.attributes):
        attrs = read_attributes(args.attributes)
    keys = None if args.keys is None else [k.strip() for k in args.keys.split(",") if k.strip()]
    real, released = read_table(args.real), read_table(args.released)
    report = evaluate(real, released, attrs, label=args.label, same_order=args.same_order,
                      regressions=args.regression or (), keys=keys,
                      target=args.target, bins=args.bins, max_rows=args.max_rows, rng=args.seed)
    # A figure a measure did not produce this time must not survive from an earlier run.
    for name in FIGURES.values():
        stale = args.out / name
        if stale.exists() and name not in dict(report.figures()):
            stale.unlink()
    written = report.write(args.out)
    print(f"evaluated {len(released)} released rows against {len(real)} real rows; wrote "
          f"{', '.join(p.name for p in written)} to {args.out} (CONFIDENTIAL: computed from the real data)")
    return 0


def _sidecar(path):
    return Path(str(path) + ".json")


def _cmd_schema(args):
    from dpknn.schema.draft import draft_schema

    check_outputs([args.output], [args.input])
    df = read_table(args.input)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # said below, louder
        draft = draft_schema(df, label=args.label)
    write_files([(args.output, text_writer(draft.to_toml(source=Path(args.input).name)))])
    print(f"PrivacyLeakWarning: the domains in {args.output} were READ FROM THE DATA and are not public; replace "
          "every bound and category list by public ones before any release.", file=sys.stderr)
    print(f"drafted {len(draft.schema.known)} known and {len(draft.schema.imputed)} imputed attributes"
          + (f"; left out {', '.join(draft.left_out)}" if draft.left_out else "") + f"; wrote {args.output}")
    return 0


def _cmd_process(args):
    from dpknn.processing.pipeline import ProcessingPlan, run_plan

    side = Path(str(args.output) + ".json")
    check_outputs([args.output, side], [args.input, args.steps])
    with _file_content(args.steps):
        plan = ProcessingPlan.from_file(args.steps)
    table_writer(None, args.output)
    df = read_table(args.input)
    result = run_plan(df, plan, rng=args.seed)
    # An imputed input stays imputed: its flag columns ride with the rows (run_plan), and its marker
    # goes on, so that release refuses the processed file as it refused the input.
    marked = is_marked_imputed(args.input)
    files = [(args.output, table_writer(result.data, args.output, metadata={IMPUTED_MARKER: "1"} if marked else None))]
    sidecar = {}
    if marked:
        sidecar = {IMPUTED_MARKER: True, "imputed_note": "processed from a file written by dpknn impute: imputed "
                   "values are not observed values; dpknn release refuses this file."}
    if result.resized is not None:
        r = result.resized
        # c, s and the relation follow from the public n and p; the sampled rows do not go here.
        sidecar.update({"resize": {"n": len(result.data), "p": r.c * r.s, "c": r.c, "s": r.s,
                                   "neighboring": r.neighboring},
                        "note": "a mechanism that is (eps, delta)-DP on this resized file is (eps', delta')-DP on "
                                "the input with eps' = ln(1 + s (exp(c eps) - 1)), delta' = s sum_{i<c} exp(i eps) "
                                "delta (dpknn.processing.Resized.privacy_on_original); dpknn release does not apply "
                                "it."})
    if sidecar:
        files.append((side, text_writer(_json(sidecar))))
    write_files(files)
    steps = [s for s, t in (("clamp", plan.clamp), ("impute", plan.impute)) if t]
    if plan.resize is not None:
        steps.append(f"resize to {len(result.data)} records (c={result.resized.c}, s={result.resized.s:.4g}; "
                     f"privacy accounting in {side})")
    print(f"processed {len(df)} records ({', '.join(steps)}); wrote {args.output}")
    return 0


def _column_names(path):
    """Column names of a CSV or Parquet file, or of a folder of Parquet files, without reading rows."""
    path = Path(path)
    if path.is_dir() or path.suffix.lower() == ".parquet":
        import pyarrow.dataset as ds

        return [c for c in ds.dataset(path, format="parquet").schema.names if not c.startswith("__index")]
    import pandas as pd

    if not path.exists():
        raise FileNotFoundError(f"input {str(path)!r} does not exist.")
    return list(pd.read_csv(path, nrows=0).columns)


def _cmd_demo(args):
    from dpknn.experiments.demo import run_demo

    return run_demo(n=args.n, k=args.k, epsilon=args.epsilon, count_epsilon=args.count_epsilon,
                    seed=args.seed, out=args.out, diagnostics=args.diagnostics, progress=not args.quiet)


def _cmd_experiment(args):
    from dpknn.experiments.demo import run_census_experiment

    for flag, value in (("--runs", args.runs), ("--n", args.n), ("--population", args.population), ("--k", args.k)):
        if value < 1:
            raise CLIError(f"{flag} must be at least 1, got {value}.")
    if args.jobs == 0:
        raise CLIError("--jobs must be a number of workers >= 1, or -1 for all cores; got 0.")
    queries = None if args.queries is None else [q.strip() for q in args.queries.split(",") if q.strip()]
    return run_census_experiment(runs=args.runs, n=args.n, population=args.population, k=args.k,
                                 epsilon=args.epsilon, count_epsilon=args.count_epsilon, queries=queries,
                                 jobs=args.jobs, seed=args.seed, out=args.out, progress=not args.quiet)


def _cmd_amplification(args):
    from dpknn.experiments.amplification import run_amplification_experiment

    rates = [float(r) for r in args.rates.split(",") if r.strip()]
    for r in rates:
        if not 0 <= r < 1:
            raise CLIError(f"--rates must be missing rates in [0, 1), got {r!r}.")
    return run_amplification_experiment(rates=rates, epsilon=args.epsilon, out=args.out)


def _cmd_synthesis_experiment(args):
    from dpknn.experiments.synthesis import run_synthesis_experiment

    rates = [float(r) for r in args.rates.split(",") if r.strip()]
    for r in rates:
        if not 0 < r < 0.7:
            raise CLIError(f"--rates must be missing rates in (0, 0.7), got {r!r}.")
    mechs = [m.strip() for m in args.mechanisms.split(",") if m.strip()]
    bad = [m for m in mechs if m not in ("mcar", "mar", "mnar")]
    if bad or not mechs:
        raise CLIError(f"--mechanisms must list mcar, mar and/or mnar, got {args.mechanisms!r}.")
    if args.n < 1000 or args.runs < 1:
        raise CLIError("--n must be at least 1000 and --runs at least 1.")
    if args.gan_epochs < 1:
        raise CLIError(f"--gan-epochs must be at least 1, got {args.gan_epochs}.")
    return run_synthesis_experiment(n=args.n, rates=rates, mechanisms=mechs, runs=args.runs, epsilon=args.epsilon,
                                    seed=0 if args.seed is None else args.seed, out=args.out,
                                    progress=not args.quiet, gan=args.gan, gan_epochs=args.gan_epochs)


def _add_seed(p):
    p.add_argument("--seed", type=int, default=None, help="seed (reproducibility only, not security)")


def _add_diagnostics(p):
    p.add_argument("--diagnostics", type=Path, default=None,
                   help="also write CONFIDENTIAL curator diagnostics (L1(D), noise scales, row counts) to this "
                        "JSON file; never publish it")


def _add_scheduler(p):
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="for a folder of Parquet partitions: address of a running Dask scheduler (default: a local "
                        "cluster with one single-threaded worker per core); its workers must see the folders")


def _add_max_work(p):
    from dpknn.impute.knn import DEFAULT_MAX_WORK

    p.add_argument("--max-work", type=int, default=DEFAULT_MAX_WORK,
                   help="largest number of ball-box tests spent certifying L1(D) exactly; past it the run stops "
                   f"and names an ordinal attribute to bin (default {DEFAULT_MAX_WORK:,})")


def _add_census_run_options(p):
    """Options shared by ``demo`` and ``experiment census``."""
    p.add_argument("--k", type=int, default=1, help="donors per incomplete record (default 1)")
    p.add_argument("--epsilon", type=float, default=6 * math.log(2),
                   help="budget of each mean / proportion numerator (default 6 ln 2)")
    p.add_argument("--count-epsilon", type=float, default=math.log(2),
                   help="budget of each subpopulation count / denominator (default ln 2)")
    _add_seed(p)


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
    _add_seed(p)
    p.add_argument("--output", type=Path, default=None, help="write the data to this .csv or .parquet")
    p.set_defaults(func=_cmd_census)

    p = sub.add_parser("demo", help="the main job: DP releases on imputed synthetic census data",
                       description="Draw a synthetic census extract, impute INCWAGE by exact 1-NN, report "
                       "L1(D) and the equivalence classes, and release the paper's queries with smooth "
                       "sensitivity, ignoring missing data, and the paper's global-sensitivity comparison, "
                       "next to the true values. Writes report.md, results.json and demo.png to --out.")
    p.add_argument("--n", type=int, default=200_000, help="records (default 200000)")
    _add_census_run_options(p)
    p.add_argument("--out", type=Path, default=Path("dpknn-demo"), help="output folder (default ./dpknn-demo)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_diagnostics(p)
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("experiment", help="reproduce a paper's experiment",
                       description="Reproduce an experiment of the papers.")
    exp = p.add_subparsers(dest="experiment", required=True)
    p = exp.add_parser("census", help="Clifton et al. (2022) §6: repeated census releases, box plots, MSE",
                       description="Repeat: draw a survey sample from a synthetic census population, a new "
                       "missingness realisation and new noise; release every query by every method. Writes "
                       "box plots (box: IQR, whiskers: 5th-95th percentiles, line: true value), an MSE table "
                       "and the raw results as CSV to --out.")
    p.add_argument("--runs", type=int, default=200, help="repetitions (default 200)")
    p.add_argument("--n", type=int, default=200_000, help="survey sample size (default 200000)")
    p.add_argument("--population", type=int, default=1_000_000, help="population size (default 1000000)")
    p.add_argument("--queries", default=None,
                   help="comma-separated subset of mean_20_59,mean_20_29,mean_40_49,prop_20_29,prop_40_49")
    p.add_argument("--jobs", type=int, default=1, help="parallel joblib workers (-1: all cores)")
    _add_census_run_options(p)
    p.add_argument("--out", type=Path, default=Path("dpknn-census-experiment"), help="output folder")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_experiment)
    p = exp.add_parser("amplification", help="Mohapatra et al. (2024) §5: MCAR amplification, valid and exact",
                       description="The paper's Examples 5.5-5.13 and a Table-2-style table on a census network "
                       "(paper's linear cost, child bound, best valid partition, exact), with a plot. Writes "
                       "report.md, examples.csv, table.csv and amplification.png to --out.")
    p.add_argument("--rates", default="0.1,0.2,0.3,0.4,0.5", help="comma-separated MCAR rates")
    p.add_argument("--epsilon", type=float, default=1.0, help="total epsilon of the marginals (default 1)")
    p.add_argument("--out", type=Path, default=Path("dpknn-amplification"), help="output folder")
    p.set_defaults(func=_cmd_amplification)

    p = exp.add_parser("synthesis", help="Mohapatra et al. (2024) §6: DP synthesis by strategy and missing rate",
                       description="On synthetic census data with missing cells (MCAR, MAR, MNAR), compare "
                       "PrivBayes and the column-wise synthesiser on complete rows, after a data-independent "
                       "imputation, and missing-aware (PrivBayesE, KaminoI; DP-MisGAN with --gan): 1- and 2-way TVD "
                       "and F1 against the missing rate. Writes report.md, results.csv, summary.csv and synthesis.png "
                       "to --out.")
    p.add_argument("--n", type=int, default=20_000, help="ground-truth rows (default 20000)")
    p.add_argument("--rates", default="0.1,0.2,0.3", help="comma-separated missing rates per cell")
    p.add_argument("--mechanisms", default="mcar,mar,mnar", help="comma-separated missingness mechanisms")
    p.add_argument("--runs", type=int, default=2, help="repetitions per setting (default 2)")
    p.add_argument("--epsilon", type=float, default=1.0, help="epsilon of every synthesiser (default 1)")
    p.add_argument("--gan", action="store_true",
                   help="add a DP-MisGAN row (needs torch; minutes per setting)")
    p.add_argument("--gan-epochs", type=int, default=10, help="DP-MisGAN epochs (default 10)")
    _add_seed(p)
    p.add_argument("--out", type=Path, default=Path("dpknn-synthesis"), help="output folder")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_synthesis_experiment)

    p = sub.add_parser("impute", help="impute a file by exact k-NN (L1(D) only to --diagnostics)",
                       description="Impute the attributes the schema lists as imputed, by the fixed k-NN "
                       "order, and write the data (CSV or Parquet, confidential microdata) with a flag column "
                       "dpknn_imputed_ATTRIBUTE per imputed attribute, by which release, synth and impute refuse it "
                       "(docs/imputation.md), and OUTPUT.json with the "
                       "order's public parameters and a marker that makes dpknn release refuse the file. L1(D) and "
                       "class statistics go to --diagnostics; --report writes the curator's report (confidential), "
                       "with plots and, for a --queries file, the planned releases' noise and 90% intervals. A "
                       "folder of Parquet partitions is imputed on Dask into a folder of partitions "
                       "(docs/distributed.md).")
    p.add_argument("--schema", type=Path, required=True, help="TOML schema (see dpknn.Schema.from_file)")
    p.add_argument("--input", type=Path, required=True,
                   help=".csv or .parquet, or a folder of Parquet partitions (imputed on Dask, out of core)")
    p.add_argument("--output", type=Path, required=True,
                   help=".csv or .parquet; a new folder for a folder of partitions")
    p.add_argument("--k", type=int, default=1, help="donors per incomplete record (default 1)")
    p.add_argument("--aggregate", default="auto", choices=["auto", "mean", "median"],
                   help="how k > 1 numeric donor values are combined (default auto)")
    p.add_argument("--progress", action="store_true", help="show progress")
    _add_max_work(p)
    p.add_argument("--suggest-bins", action="store_true",
                   help="when the run stops at --max-work, fit again with coarser ordinal bins and "
                        "print bin widths verified to fit; chosen on the data, so for planning only")
    _add_diagnostics(p)
    p.add_argument("--report", type=Path, default=None, metavar="DIR",
                   help="write a CONFIDENTIAL curator's report to DIR: report.md, report.json and PNG plots "
                        "(classes, donors, L1(D) per universe, imputed vs observed values, planned releases)")
    p.add_argument("--queries", type=Path, default=None,
                   help="query file (docs/queries.md) whose releases the report rehearses: estimate, noise scale, "
                        "90%% interval (needs --report)")
    p.add_argument("--draws", type=int, default=1000,
                   help="rehearsals per planned release in the report (default 1000)")
    _add_scheduler(p)
    _add_seed(p)
    p.set_defaults(func=_cmd_impute)

    p = sub.add_parser("synth", help="DP synthetic data from a table with missing values (PrivBayes, columnwise)",
                       description="Fit a differentially private synthesiser on --input and write --rows synthetic "
                       "rows to --output (CSV or Parquet) and OUTPUT.json with the public parameters and what was "
                       "released (the network, the row bound). Methods: privbayes (complete rows), privbayese (each "
                       "table on the rows observed on its attributes), privbayes-value (missingness as a value), "
                       "columnwise (KaminoI), dpmisgan (MisGAN with DP-SGD on its critics; needs torch). See "
                       "docs/synthesis.md.")
    p.add_argument("--attributes", type=Path, required=True,
                   help="TOML file of [[attribute]] tables (or a schema file): the public domains")
    p.add_argument("--input", type=Path, required=True, help=".csv or .parquet")
    p.add_argument("--output", type=Path, required=True, help=".csv or .parquet")
    p.add_argument("--epsilon", type=float, required=True, help="total epsilon")
    p.add_argument("--method", default="privbayese", choices=list(SYNTH_METHODS), help="default privbayese")
    p.add_argument("--rows", type=int, required=True, help="synthetic rows to write (a public number)")
    p.add_argument("--degree", type=int, default=2, help="parents per attribute for PrivBayes (1-3, default 2)")
    p.add_argument("--bins", type=int, default=10, help="public bins of wide numeric attributes (default 10)")
    p.add_argument("--max-rows", type=int, default=None,
                   help="public bound on the input's rows (PrivBayes); without it a bound is released with 1%% of "
                        "epsilon and delta=1e-9")
    gan = p.add_argument_group("dpmisgan")
    gan.add_argument("--input-rows", type=int, default=None,
                     help="public number of input rows: sets the sampling rate and the step count (required)")
    gan.add_argument("--delta", type=float, default=None, help="delta (default 10^-(digits of --input-rows + 1))")
    gan.add_argument("--epochs", type=int, default=None, help="expected passes over the data (default 20)")
    gan.add_argument("--batch-size", type=int, default=None, help="expected batch size (default 64)")
    gan.add_argument("--gaps", action="store_true", help="write the learnt missingness pattern (gaps) too")
    p.add_argument("--progress", action="store_true", help="show progress")
    _add_seed(p)
    p.set_defaults(func=_cmd_synth)

    p = sub.add_parser("evaluate", help="utility and disclosure risk of a released table against the real one",
                       description="Compare a released table (RWN output, imputed or synthetic data) with the real "
                                   "one: marginals, correlations, pMSE, regressions (CI overlap), and disclosure "
                                   "risk (closest records, linkage, attribution, uniques). The report is computed "
                                   "from the real data: it is confidential, not a release.")
    p.add_argument("--real", type=Path, required=True, help="the real table (.csv or .parquet)")
    p.add_argument("--released", type=Path, required=True, help="the released table (.csv or .parquet)")
    p.add_argument("--attributes", type=Path, required=True,
                   help="TOML file of the public attributes (as for synth; a schema file also works)")
    p.add_argument("--out", type=Path, required=True, help="folder for evaluation.md, evaluation.json and PNGs")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--label", default=None,
                       help="column of record labels in both tables; record-level releases are then tested for "
                            "linkage (refused when either table lacks it or the real labels repeat)")
    which.add_argument("--same-order", action="store_true",
                       help="the released rows are the real records in the same order (dpknn rwn and dpknn impute "
                            "output): test linkage by row position")
    p.add_argument("--regression", action="append", default=None, metavar="'Y ~ X1 + X2'",
                   help="a regression to compare (repeatable); logit for a two-category response, else OLS")
    p.add_argument("--keys", default=None, help="comma-separated quasi-identifiers (default: every attribute but "
                                                "--target)")
    p.add_argument("--target", default=None, help="sensitive attribute for the correct attribution probability")
    p.add_argument("--bins", type=int, default=10, help="public bins of wide numeric attributes (default 10)")
    p.add_argument("--max-rows", type=int, default=100_000,
                   help="rows of each table the pMSE fits use at most (uniform sample; default 100000)")
    _add_seed(p)
    p.set_defaults(func=_cmd_evaluate)

    p = sub.add_parser("schema", help="draft a schema from a data file (domains read from the data: NOT public)",
                       description="Draft a TOML schema from a table: columns with missing values become imputed "
                       "attributes, integer columns Ordinal, other numbers Continuous, strings Categorical. The "
                       "bounds and categories are read from the data, so they are NOT public: replace them by public "
                       "domains before any release (docs/schema.md). The file holds the line draft = true; impute, "
                       "release and synth refuse it until you delete that line, after replacing the domains.")
    p.add_argument("--input", type=Path, required=True, help=".csv or .parquet")
    p.add_argument("--output", type=Path, required=True, help="TOML schema to write")
    p.add_argument("--label", default=None, help="column of unique integer record labels")
    p.set_defaults(func=_cmd_schema)

    p = sub.add_parser("process", help="clamp, impute (data-independent) and resize a file with public parameters",
                       description="Run the steps of a TOML file (docs/processing.md) on a table: clamp each column "
                       "to its public domain, fill missing values by draws that ignore the data (integers for "
                       "integer columns or integer = true), then optionally resize to a public number of records. "
                       "Use it to complete known attributes before dpknn impute or release.")
    p.add_argument("--input", type=Path, required=True, help=".csv or .parquet")
    p.add_argument("--steps", type=Path, required=True, help="TOML file of [clamp.COLUMN], [impute.COLUMN], [resize]")
    p.add_argument("--output", type=Path, required=True, help=".csv or .parquet")
    _add_seed(p)
    p.set_defaults(func=_cmd_process)

    p = sub.add_parser("rwn", help="Randomization Within Neighbourhoods (statistical disclosure control)",
                       description="Perturb a table by RWN (Perry et al. 2022): each value is replaced, with "
                       "probability q, by the same variable of a random neighbour. INPUT may be a .csv or "
                       ".parquet file (processed in memory) or a folder of Parquet files (processed partition by "
                       "partition on a local Dask cluster or the one at --scheduler, bounded memory). RWN is not "
                       "differential privacy. It prints the share of values changed per perturbed column and warns "
                       "about a column left (nearly) unchanged (docs/rwn.md).")
    p.add_argument("--input", type=Path, required=True)
    p.add_argument("--output", type=Path, required=True, help="file (.csv/.parquet) or folder for Parquet input")
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
    p.add_argument("--jobs", type=int, default=1, help="joblib workers for partitioned")
    p.add_argument("--progress", action="store_true", help="show progress (sampled_pairs, partitioned)")
    _add_scheduler(p)
    _add_seed(p)
    p.set_defaults(func=_cmd_rwn)

    p = sub.add_parser("release", help="private releases listed in a TOML file, under a total budget",
                       description="Impute by exact k-NN and release the queries of a TOML file "
                       "([[query]] tables: name, type = count|proportion|mean|variance, epsilon, and "
                       "count_epsilon / mean_epsilon / denominator_epsilon, where, within, column, bounds, "
                       "method, gamma; see docs/queries.md). The file is refused up front when its budgets add up "
                       "to more than --epsilon. The output holds only publishable fields.")
    p.add_argument("--schema", type=Path, required=True)
    p.add_argument("--queries", type=Path, required=True)
    p.add_argument("--input", type=Path, required=True,
                   help=".csv or .parquet, or a folder of Parquet partitions (imputed and summed on Dask)")
    p.add_argument("--output", type=Path, required=True, help="JSON file of the releases (a name ending in .json)")
    p.add_argument("--epsilon", type=float, required=True, help="total privacy budget")
    p.add_argument("--k", type=int, default=1)
    p.add_argument("--noise", default="polyplace", choices=["polyplace", "cauchy"],
                   help="noise of the smooth releases whose query sets no noise: polyplace (default, any epsilon > "
                        "ln 2) or cauchy (the paper's generalized Cauchy, epsilon > 2 ln 2)")
    p.add_argument("--allow-non-dp", action="store_true",
                   help='allow method = "global" (the paper\'s comparison, NOT differentially private)')
    _add_max_work(p)
    _add_diagnostics(p)
    _add_scheduler(p)
    _add_seed(p)
    p.set_defaults(func=_cmd_release)
    return parser


class Terminated(SystemExit):
    """SIGTERM or SIGHUP arrived: unwinds like an exception so that every ``finally`` and context
    manager on the way removes its temporary microdata, then exits with 128 + the signal number."""


@contextlib.contextmanager
def _cleanup_on_termination():
    """Turn SIGTERM and SIGHUP into :class:`Terminated` while a command runs; restore the previous
    handlers afterwards. Staged observed values, partial partitions and the imputed folder of
    ``release --input DIR`` are confidential; by default these signals kill the process without
    running any cleanup. SIGKILL cannot be caught (docs/distributed.md says what it leaves)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield  # handlers can only be set in the main thread; an embedding program keeps its own
        return
    wanted = [s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None]

    def terminate(signum, frame):
        if defer_signal(signum):
            return  # a temporary folder is being removed: the signal comes back when it is gone
        # A second signal during the cleanup must not cut it short.
        for s in wanted:
            signal.signal(s, signal.SIG_IGN)
        raise Terminated(128 + signum)

    previous = {s: signal.signal(s, terminate) for s in wanted}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        with _cleanup_on_termination(), warnings.catch_warnings():
            warnings.showwarning = _one_line_warning(args)
            return args.func(args)
    # Only errors about the user's input, files or installation become one line; anything else is a
    # bug and keeps its traceback. ValueError covers DomainError and BudgetExceededError;
    # WorkLimitError is a RuntimeError, so it is named.
    except (CLIError, ValueError, OSError, WorkLimitError) as exc:
        return _user_error(args, exc, str(exc))
    except ImportError as exc:
        message = _missing_extra(exc)
        if message is None:
            raise
        return _user_error(args, exc, message)


def _one_line_warning(args):
    """Warnings as one line each, ``dpknn CMD: warning: ...``: no source path and no code line (with -v the
    category and the place that warned are added)."""
    def show(message, category, filename, lineno, file=None, line=None):
        where = f" ({category.__name__} at {filename}:{lineno})" if args.verbose else ""
        print(f"dpknn {args.command}: warning: {message}{where}", file=sys.stderr)
    return show


def _user_error(args, exc, message):
    """Report an error about the user's input in one line (after its traceback with -v); status 2."""
    if args.verbose:
        traceback.print_exception(exc)
    print(f"dpknn {args.command}: error: {message}", file=sys.stderr)
    return 2


# Optional extras (pyproject.toml) by the top-level module whose absence means the extra is missing.
_EXTRAS = {"matplotlib": "plot", "pyarrow": "parquet", "dask": "distributed,parquet",
           "distributed": "distributed,parquet", "torch": "gan"}


def _missing_extra(exc):
    """The one-line message for an ImportError of a missing optional extra, with the install hint;
    None for any other ImportError."""
    message = str(exc)
    if "pip install" in message:
        return message
    name = (getattr(exc, "name", None) or "").split(".")[0]
    named = [m for m in _EXTRAS if m == name or (not name and m in message)]
    if not named:
        return None
    return f"{message} (an optional extra is missing: pip install 'dpknn[{_EXTRAS[named[0]]}]')"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
