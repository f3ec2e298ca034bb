"""``synth`` (DP synthetic data) and ``evaluate`` (utility and risk of a released table)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from dpknn.cli._common import (
    AGENCY_INPUT,
    SEEDED_NOTE,
    CLIError,
    add_na_values,
    add_progress,
    add_scheduler,
    add_seed,
    comma_list,
    file_content,
    input_is_coded,
    named_values,
    output_writer,
    read_input,
    scheduler_client,
    to_json,
    warn_seeded,
)
from dpknn.schema._flags import check_path_not_imputed
from dpknn.utils._io import (
    check_outputs,
    text_writer,
    write_files,
)
from dpknn.utils._validation import validate_params

logger = logging.getLogger(__name__)


SYNTH_METHODS = {
    "auto": ("AIM or MST, chosen on a released row count (AIM where the budget pays for its rounds); missingness "
             "as a category", None),
    "aim": ("AIM: noisy marginals chosen adaptively for all two-way marginals, one fitted model; missingness as "
            "a category", None),
    "mst": ("MST: noisy marginals on a private maximum spanning tree, one fitted model; missingness as a category",
            None),
    "privbayes": ("PrivBayes on complete rows", "complete_rows"),
    "privbayese": ("PrivBayesE: each table on the rows observed on it", "observe"),
    "privbayes-value": ("PrivBayes with missingness as a value (reproduces gaps)", "value"),
    "columnwise": ("column-wise naive-Bayes stages that impute as they go (KaminoI)", None),
    "dpmisgan": ("MisGAN trained with DP-SGD on both critics, its generators also fitted to two-way tables with "
                 "discrete Gaussian noise (valid DP-MisGAN)", None),
}


# With --mcar-rates those attributes have no gap code, so "missingness as a category" would misdescribe them.
MST_MCAR_DESCRIPTION = ("MST: noisy marginals on a private maximum spanning tree, one fitted model; the attributes "
                        "with public MCAR rates measured on their observed rows (amplified), missingness as a "
                        "category for the others")


def _degree(text):
    return text if text == "auto" else int(text)


def _bins(text):
    """``--bins``: a positive integer, ``auto`` or ``quantiles``."""
    if text in ("auto", "quantiles"):
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of bins, 'auto' or 'quantiles', got {text!r}") from None


def _cmd_synth(args):
    from dpknn.schema._discretization import read_attributes_file
    from dpknn.synth import ColumnwiseSynthesizer, DPMisGAN, PrivBayes

    check_outputs([args.output, _sidecar(args.output), args.diagnostics], [args.input, args.attributes])
    folder = Path(args.input).is_dir()
    _check_input_options(args, folder)
    if args.rows < 1:
        raise CLIError(f"--rows must be a positive number of synthetic rows, got {args.rows}.")
    check_path_not_imputed(args.input)
    with file_content(args.attributes):
        declared = read_attributes_file(args.attributes)
    attrs, edges = declared.attributes, declared.bin_edges or None
    what, missing = SYNTH_METHODS[args.method]
    marginal = _check_method_options(args)
    bins = args.bins if args.bins is not None else ("auto" if marginal else 10)
    if edges and not (marginal or args.method == "dpmisgan"):
        raise CLIError(f"bin_edges in {args.attributes} (for {sorted(edges)}) apply to --method auto, aim, mst and "
                       "dpmisgan only; remove them or choose one of those methods.")
    # Complete by design: a schema's known attributes, and those named. No synthetic gap is drawn there.
    never = list(dict.fromkeys([*declared.never_missing,
                                *([] if args.never_missing is None else comma_list(args.never_missing))]))
    _gap_notes(args, declared, never)   # before the work, which can take minutes
    if marginal and not args.analysis:
        _analysis_note(attrs)
    warn_seeded(args)
    sample_options = {}
    if args.method == "dpmisgan":
        if args.input_rows is None:
            raise CLIError("--method dpmisgan needs --input-rows, the public number of input rows that sets the "
                           "sampling rate batch/rows and the step count (derived from the data they would reveal n).")
        # Only the options given: the estimator's defaults hold otherwise, and it validates what was given.
        given = {k: v for k, v in (("epochs", args.epochs), ("batch_size", args.batch_size), ("bins", args.bins),
                                   ("marginal_share", args.marginal_share), ("bin_edges", edges)) if v is not None}
        model = DPMisGAN(attrs, epsilon=args.epsilon, delta=args.delta, n_rows=args.input_rows,
                         progress=args.progress, rng=args.seed, **given)
        sample_options.update(missing=args.gaps, never_missing=never)
    elif marginal:
        extra = {} if args.mcar_rates is None else {"mcar_rates": named_values(
            args.mcar_rates, "--mcar-rates", float, value="RATE", example="wage=0.2,age=0.1")}
        if extra:
            what = MST_MCAR_DESCRIPTION
        if args.input_rows is not None:
            extra["n_rows"] = args.input_rows
        if args.quantile_share is not None:
            extra["quantile_share"] = args.quantile_share
        model = _method_class(args.method)(
            attrs, epsilon=args.epsilon, delta=1e-9 if args.delta is None else args.delta, bins=bins,
            bin_edges=edges, noise=args.noise or "auto", never_missing=never, analyses=_analyses(args.analysis),
            within_bin=args.within_bin or "auto", progress=args.progress, rng=args.seed,
            **extra)
    elif args.method == "columnwise":
        model = ColumnwiseSynthesizer(attrs, epsilon=args.epsilon, bins=bins, progress=args.progress,
                                      rng=args.seed)
    else:
        degree = "auto" if args.degree is None else args.degree
        # A schema's known attributes only where gaps are drawn; named ones always (PrivBayes refuses them
        # where it draws no gap).
        named = missing == "value" or args.never_missing is not None
        model = PrivBayes(attrs, epsilon=args.epsilon, degree=degree, missing=missing, bins=bins,
                          max_rows=args.max_rows, never_missing=never if named else (),
                          **({} if args.delta is None else {"delta": args.delta}), progress=args.progress,
                          rng=args.seed)
    try:
        validate_params(model)   # the estimator checks the options it was given, before anything is read
    except (TypeError, ValueError) as err:
        raise CLIError(f"--method {args.method}: {err}") from None
    written = out = coded = None
    if folder:
        written = _synth_folder(args, model)
        model = written.synthesizer
    else:
        df, coded = read_input(args, attributes=attrs)
        model.fit(df)
        out = model.sample(args.rows, rng=None if args.seed is None else args.seed + 1, **sample_options)
    _publish(args, model, what, written, out, coded)
    return 0


def _publish(args, model, what, written, out, coded):
    """Write the synthetic rows (``out``, unless a folder run ``written`` wrote them), the public record beside
    them and, for a folder, the curator's diagnostics; then say what was written."""
    folder = written is not None
    params = model.public_params()
    # The command's own facts first; the dict merge keeps their places and appends the model's.
    public = {"method": args.method, "description": what, "epsilon": params["epsilon"], "delta": params["delta"],
              "privacy_unit": params["privacy_unit"], "rows": args.rows, **params}
    # A resumed folder run publishes its saved fit's record: seeded as that fit was, whatever --seed says now.
    if (written.seeded if folder else args.seed is not None):
        public = {"seeded": True, "seeded_note": SEEDED_NOTE, **public}
    if args.method == "dpmisgan":
        public["gaps"] = args.gaps
        public["accounting"] = public.pop("accounting")   # the record has always ended with it
    if folder:
        public["partitions"] = written.partitions
    sidecar = [(_sidecar(args.output), text_writer(to_json(public, ascii_only=True) + "\n"))]
    if folder and args.diagnostics:
        sidecar.append((args.diagnostics, text_writer(to_json({"input": str(args.input), **written.curator_dict()},
                                                              ascii_only=True) + "\n")))
    write_files(sidecar if folder else [(args.output, output_writer(out, args.output, coded)), *sidecar])
    _unshaped_note(params)
    chosen = f" (chose {model.method_})" if args.method == "auto" else ""
    where = (f"{written.partitions} Parquet partition{'s' if written.partitions != 1 else ''} in {args.output}"
             if folder else str(args.output))
    print(f"{args.method}{chosen}: {what}; epsilon={model.epsilon_:g}, delta={model.delta_:g}; wrote {args.rows} "
          f"synthetic rows to {where} and the public parameters to {_sidecar(args.output)}"
          + ("; finished the interrupted run with its saved model (no budget spent again)"
             if folder and written.resumed else ""))


def _check_input_options(args, folder):
    """Refuse, before any work, the options the input's kind (a file or a folder of partitions) does not take."""
    if folder:
        _check_folder_options(args)
        return
    output_writer(None, args.output, input_is_coded(args))
    for option, value in (("--scheduler", args.scheduler), ("--resume", args.resume or None),
                          ("--partition-rows", args.partition_rows), ("--diagnostics", args.diagnostics)):
        if value is not None:
            raise CLIError(f"{option} applies to a folder of Parquet partitions (--input DIR) only.")


def _method_class(method):
    """The estimator of ``--method``."""
    from dpknn import synth

    return {"auto": synth.AutoSynthesizer, "aim": synth.AIMSynthesizer, "mst": synth.MSTSynthesizer,
            "privbayes": synth.PrivBayes, "privbayese": synth.PrivBayes, "privbayes-value": synth.PrivBayes,
            "columnwise": synth.ColumnwiseSynthesizer, "dpmisgan": synth.DPMisGAN}[method]


def _analyses(given):
    """``--analysis`` as the estimators' ``analyses``: the regressions named, or "auto" given alone."""
    given = list(given or ())
    if "auto" in given:
        if len(given) > 1:
            raise CLIError("--analysis auto names each amount on every other attribute; give it alone, or name the "
                           "regressions instead.")
        return "auto"
    return tuple(given)


# Each method-specific option sets one parameter of the method's estimator (``sample.`` one of its sample): it
# applies to the methods whose estimator declares that parameter, read from the estimator's signature, so no
# table of options by method is kept here (issue 49). The estimator then checks the value itself.
OPTION_PARAMETERS = {"--input-rows": ("input_rows", "n_rows"), "--epochs": ("epochs", "epochs"),
                     "--batch-size": ("batch_size", "batch_size"),
                     "--marginal-share": ("marginal_share", "marginal_share"),
                     "--gaps": ("gaps", "sample.missing"), "--delta": ("delta", "delta"),
                     "--never-missing": ("never_missing", "never_missing"), "--noise": ("noise", "noise"),
                     "--mcar-rates": ("mcar_rates", "mcar_rates"), "--max-rows": ("max_rows", "max_rows"),
                     "--degree": ("degree", "degree"), "--analysis": ("analysis", "analyses"),
                     "--within-bin": ("within_bin", "within_bin"),
                     "--quantile-share": ("quantile_share", "quantile_share")}


def _parameters(cls):
    """The parameters of estimator ``cls`` and, prefixed ``sample.``, of its ``sample``."""
    import inspect

    return {*inspect.signature(cls).parameters, *(f"sample.{p}" for p in inspect.signature(cls.sample).parameters)}


def _check_method_options(args):
    """Refuse, before any work, an option whose parameter ``--method``'s estimator does not have; True for the
    marginal methods."""
    cls = _method_class(args.method)
    have = _parameters(cls)
    for option, (dest, parameter) in OPTION_PARAMETERS.items():
        if getattr(args, dest) in (None, False) or parameter in have:
            continue
        takers = [m for m in SYNTH_METHODS if parameter in _parameters(_method_class(m))]
        raise CLIError(f"{option} does not apply to --method {args.method} ({cls.__name__} has no parameter "
                       f"{parameter.split('.')[-1]!r}); it applies to --method {', '.join(takers)}.")
    # The command's default delta (1e-9) is its own: an explicit --delta beside a pure epsilon-DP choice is refused.
    if args.mcar_rates is not None and args.delta is not None:
        raise CLIError("--mcar-rates is pure epsilon-DP (delta = 0); drop --delta.")
    if args.noise == "laplace" and args.delta is not None:
        raise CLIError("--noise laplace is pure epsilon-DP (delta = 0); drop --delta.")
    return args.method in ("auto", "aim", "mst")


def _check_folder_options(args):
    """Refuse, before any work, what synthesis of a folder of Parquet partitions does not do."""
    if args.method not in ("auto", "aim", "mst"):
        raise CLIError(f"--method {args.method} needs the table in memory; a folder of Parquet partitions is "
                       "synthesised by --method auto, aim or mst (they read sums over records).")
    if getattr(args, "codebook", None) is not None:
        raise CLIError("--codebook reads one agency file; convert it to a folder of Parquet partitions first "
                       "(dpknn convert) and give a schema or attributes file for the folder.")
    if args.output.suffix.lower() in (".csv", ".parquet", ".dta", ".sav", ".zsav"):
        raise CLIError(f"--output {str(args.output)!r}: a folder of partitions is synthesised into a new folder of "
                       "Parquet partitions; give a folder name.")
    if args.diagnostics is not None:
        # The curator's file must not land in the folder that is published.
        if args.output.resolve() in args.diagnostics.resolve().parents:
            raise CLIError(f"--diagnostics {str(args.diagnostics)!r} lies inside --output {str(args.output)!r}, the "
                           "folder to publish; write the curator's diagnostics elsewhere.")
    if args.partition_rows is not None and args.partition_rows < 1:
        raise CLIError(f"--partition-rows must be a positive number of rows, got {args.partition_rows}.")


def _synth_folder(args, model):
    """Fit and sample a folder of Parquet partitions on Dask (dpknn.synth._distributed)."""
    from dpknn.synth._distributed import PARTITION_ROWS, synthesize_parquet

    with scheduler_client(args) as client:
        return synthesize_parquet(args.input, args.output, model, rows=args.rows,
                                  rows_per_partition=args.partition_rows or PARTITION_ROWS, client=client,
                                  rng=None if args.seed is None else args.seed + 1, resume=args.resume,
                                  progress=args.progress)


def _gap_notes(args, declared, never):
    """Say where synthetic gaps may be drawn, for the methods that draw them: everywhere when no attribute is complete
    by design; the schema file's known attributes complete when they come from one."""
    if not (args.method in ("auto", "aim", "mst", "privbayes-value") or (args.method == "dpmisgan" and args.gaps)):
        return
    if not never:
        _note("every attribute may get synthetic gaps (missingness is learnt for each); name the attributes "
              "that are complete by design with --never-missing (a schema file's known attributes count as "
              "such)")
    elif declared.never_missing:
        # A new user who hands synth the schema of an imputation job did not say these are complete: say so, before
        # a gap in one is refused after the read (DPMisGAN does not refuse one: it only draws none there).
        refused = "" if args.method == "dpmisgan" else " and a gap in one is refused"
        _note(f"{args.attributes} is a schema file: its known attributes ({', '.join(declared.never_missing)}) "
              f"are taken as complete by design, so no synthetic gap is drawn there{refused}; to let them have "
              "gaps, list the attributes as [[attribute]] tables instead")


def _analysis_note(attrs):
    """Say, where the file has amounts and no analysis is named, that their regressions are not what it buys."""
    from dpknn import Continuous

    amounts = [a.name for a in attrs if isinstance(a, Continuous)]
    if amounts:
        _note(f"no --analysis: a regression of {', '.join(amounts)} on the other attributes keeps only what the "
              "two-way tables carry (values inside a bin are drawn apart from the record's other attributes); name "
              "the regressions the file is for (--analysis 'Y ~ X1 + X2') or give --analysis auto (each amount on "
              "every other attribute: on most public tables measured, better regressions than none named and worse "
              "2-way tables; docs/synthesis.md, 'Analyses')")


def _unshaped_note(params):
    """Say which amounts got no level of quantiles (the record's empty released edges): a new user found it only in
    the sidecar, after her regression on one of them came out flat."""
    unshaped = [name for name, edges in (params.get("released_bin_edges") or {}).items() if not edges]
    if unshaped:
        _note(f"the released row count bought no level of quantiles for {', '.join(unshaped)}: the model knows "
              "them only by equal bins of their public ranges, and values are drawn inside those from the bins' "
              "masses (docs/synthesis.md, 'Bins for amounts'); a larger --epsilon, or public bin_edges in the "
              "attributes file, shapes them")


def _note(text):
    print(f"dpknn synth: note: {text}", file=sys.stderr)


def _cmd_evaluate(args):
    from dpknn.metrics._evaluation import FIGURES, evaluate
    from dpknn.schema._discretization import read_attributes

    names = ("evaluation.md", "evaluation.json", *FIGURES.values())
    check_outputs([args.out / n for n in names], [args.real, args.released, args.attributes])
    with file_content(args.attributes):
        attrs = read_attributes(args.attributes)
    keys = None if args.keys is None else comma_list(args.keys)
    real, released = (read_input(args, path, attributes=attrs)[0] for path in (args.real, args.released))
    report = evaluate(real, released, attrs, label=args.label, same_order=args.same_order,
                      regressions=args.regression or (), keys=keys,
                      target=args.target, bins=args.bins, max_rows=args.max_rows, progress=args.progress,
                      rng=args.seed)
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


def add_synth_parser(sub):
    """Add the ``synth`` command to the subparsers ``sub``."""
    p = sub.add_parser("synth",
                       help="DP synthetic data from a table with missing values (AIM, MST, PrivBayes, columnwise, "
                            "DP-MisGAN)",
                       description="Fit a differentially private synthesiser on --input and write --rows synthetic "
                       "rows to --output (CSV or Parquet) and OUTPUT.json with the public parameters and what was "
                       "released (the tables measured, the tree or network, the row bound). Methods: auto "
                       "(default; AIM or MST, chosen on a row count released with 1% of epsilon), aim (AIM with "
                       "missingness as a category: tables chosen adaptively for every two-way marginal and one model "
                       "fitted to all of them), mst (MST: the tables of a private maximum spanning tree), "
                       "privbayes (complete rows), privbayese (each table on the rows observed on its attributes), "
                       "privbayes-value (missingness as a value), columnwise (KaminoI), dpmisgan (MisGAN with DP-SGD "
                       "on its critics; needs torch). See docs/synthesis.md.")
    p.add_argument("--attributes", type=Path, required=True,
                   help="TOML file of [[attribute]] tables (or a schema file): the public domains")
    p.add_argument("--input", type=Path, required=True,
                   help=f".csv or .parquet; or {AGENCY_INPUT}; or a folder of Parquet partitions (auto, aim, mst: read "
                        "in passes on Dask, out of core)")
    p.add_argument("--output", type=Path, required=True,
                   help=".csv or .parquet; .dta or .sav for an agency input (its labels and missing "
                        "codes); a new folder of Parquet partitions for a folder input")
    p.add_argument("--epsilon", type=float, required=True, help="total epsilon")
    p.add_argument("--method", default="auto", choices=list(SYNTH_METHODS),
                   help="default auto: AIM or MST, chosen on a released row count (1%% of epsilon)")
    p.add_argument("--rows", type=int, required=True, help="synthetic rows to write (a public number)")
    p.add_argument("--degree", type=_degree, default=None, metavar="{1,2,3,auto}",
                   help="parents per attribute for PrivBayes (default auto: the largest whose noisy tables are "
                   "theta-useful for the budget, from a released row count)")
    p.add_argument("--bins", type=_bins, default=None, metavar="{N,auto,quantiles}",
                   help="bins of wide numeric attributes: N equal public bins (default 10, the only choice besides "
                        "auto, aim and mst); auto, aim and mst: auto (default; 10 equal bins, values inside drawn "
                        "from DP quantiles' shape for amounts: Continuous attributes and Ordinals of 16 or more "
                        "values per bin) or quantiles (bins cut at DP quantiles); see docs/synthesis.md")
    p.add_argument("--max-rows", type=int, default=None,
                   help="public bound on the input's rows (PrivBayes); without it a bound is released with 1%% of "
                        "epsilon and delta=1e-9")
    p.add_argument("--delta", type=float, default=None,
                   help="delta of auto, aim and mst (default 1e-9), the PrivBayes methods (their released row bound, "
                        "default 1e-9) and dpmisgan (default 10^-(digits of --input-rows + 1))")
    p.add_argument("--never-missing", default=None, metavar="A,B",
                   help="auto, aim, mst, privbayes-value and dpmisgan: comma-separated attributes with no gaps by "
                        "design (public; a schema file's known attributes count as such); no synthetic gap is drawn "
                        "in them, and a gap in the input is refused (dpmisgan: not checked, only never drawn)")
    p.add_argument("--analysis", action="append", default=None, metavar="'Y ~ X1 + X2'",
                   help="auto, aim and mst (repeatable): a regression the analyst will fit on the file (public), or "
                        "a formula of the attributes as statsmodels writes it ('np.log(Y) ~ X1 + I(X1 ** 2) + C(X2)'); "
                        "the "
                        "tables of Y with each X are measured first, weigh more in AIM's workload, and Y's values "
                        "inside its bins follow each X (released rank sums); AIM also measures Y's complete cases "
                        "with pairs of X where two X or more select them (docs/synthesis.md, 'Analyses'). "
                        "'--analysis auto': each amount on every other attribute, for a file whose analyses "
                        "nobody can name (it buys a table of each amount with every attribute, at a cost in 2-way fit)")
    p.add_argument("--within-bin", default=None, choices=["auto", "ranks", "copula"],
                   help="auto, aim and mst, with --analysis: how the amounts an analysis names are drawn inside their "
                        "bins: 'ranks' each by its released rank sums; 'copula' together, by a Gaussian copula of the "
                        "fitted model (no budget; an assumption about the data); 'auto' (default) the copula where "
                        "the rank sums would be noise for the released row count, else the rank sums "
                        "(docs/synthesis.md)")
    p.add_argument("--quantile-share", type=float, default=None, metavar="SHARE",
                   help="auto, aim and mst: the share of the budget for the amounts' DP quantiles and point masses "
                        "(default 0.1; the levels not worth their epsilon go to the model). 0.2 kept the wage "
                        "regression of a 50,000-row survey at epsilon 1 and cost a 10,000-row one's "
                        "(docs/synthesis.md, 'Analyses')")
    p.add_argument("--mcar-rates", default=None, metavar="A=0.2,B=0.1",
                   help="mst: attributes whose cells are missing completely at random at these public rates (a "
                        "fact of the design, not estimated); their tables read only observed rows and are "
                        "amplified, pure DP")
    p.add_argument("--noise", default=None, choices=["auto", "gaussian", "laplace"],
                   help="auto, aim and mst: discrete Gaussian noise in zCDP, discrete Laplace noise for pure "
                        "epsilon-DP (delta = 0), or auto (default): Gaussian when quantiles are released (the default "
                        "bins of a numeric attribute), else the one with the smaller expected error for the planned "
                        "tables; the sidecar names the one used")
    _add_gan_options(p)
    _add_folder_options(p)
    add_progress(p)
    add_seed(p)
    add_na_values(p)
    p.set_defaults(func=_cmd_synth)


def _add_gan_options(p):
    """The options of ``dpknn synth --method dpmisgan`` (``--input-rows`` is taken by aim and mst too)."""
    gan = p.add_argument_group("dpmisgan")
    gan.add_argument("--input-rows", type=int, default=None,
                     help="public number of input rows: sets the sampling rate and the step count (required); also "
                          "taken by aim and mst (a public row count that buys quantile levels without a released one)")
    gan.add_argument("--epochs", type=int, default=None, help="expected passes over the data (default 40)")
    gan.add_argument("--batch-size", type=int, default=None,
                     help="expected batch size (default: min(256, input rows / 8))")
    gan.add_argument("--marginal-share", type=float, default=None,
                     help="the two-way tables the generators also fit get the zCDP budget that alone would be this "
                          "share of epsilon (default 0.9; "
                          "0: MisGAN's adversarial losses alone)")
    gan.add_argument("--gaps", action="store_true", help="write the learnt missingness pattern (gaps) too")


def _add_folder_options(p):
    """The options of ``dpknn synth`` on a folder of Parquet partitions."""
    folder = p.add_argument_group("a folder of Parquet partitions (auto, aim, mst; out of core on Dask)")
    folder.add_argument("--partition-rows", type=int, default=None,
                        help="the most synthetic rows of an output partition (default 1,000,000; the rows are "
                             "split evenly over as few partitions as that allows)")
    folder.add_argument("--resume", action="store_true",
                        help="finish an interrupted run into the same --output with the model it saved (no budget "
                             "spent again)")
    folder.add_argument("--diagnostics", type=Path, default=None,
                        help="also write CONFIDENTIAL curator diagnostics (rows read, values outside universes, "
                             "seconds per pass) to this JSON file")
    add_scheduler(folder)


def add_evaluate_parser(sub):
    """Add the ``evaluate`` command to the subparsers ``sub``."""
    p = sub.add_parser("evaluate", help="utility and disclosure risk of a released table against the real one",
                       description="Compare a released table (RWN output, imputed or synthetic data) with the real "
                                   "one: marginals, correlations, pMSE, regressions (CI overlap), and disclosure "
                                   "risk (closest records, linkage, attribution, uniques). The report is computed "
                                   "from the real data: it is confidential, not a release.")
    p.add_argument("--real", type=Path, required=True,
                   help=f"the real table (.csv or .parquet; or {AGENCY_INPUT})")
    p.add_argument("--released", type=Path, required=True,
                   help=f"the released table (.csv or .parquet; or {AGENCY_INPUT})")
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
                   help="a regression to compare (repeatable), 'Y ~ X1 + X2' or a formula as statsmodels writes it "
                        "('np.log(Y) ~ X1 + I(X1 ** 2) + C(X2)', fitted as written); logit for a two-category "
                        "response, else OLS")
    p.add_argument("--keys", default=None, help="comma-separated quasi-identifiers (default: every attribute but "
                                                "--target)")
    p.add_argument("--target", default=None, help="sensitive attribute for the correct attribution probability")
    p.add_argument("--bins", type=int, default=10, help="public bins of wide numeric attributes (default 10)")
    p.add_argument("--max-rows", type=int, default=100_000,
                   help="rows of each table the pMSE fits use at most (uniform sample; default 100000)")
    add_progress(p)
    add_seed(p)
    add_na_values(p)
    p.set_defaults(func=_cmd_evaluate)
