"""Commands on data files: ``census`` (a synthetic extract), ``schema`` (a draft) and ``process``."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from dpknn.cli._common import (
    AGENCY_INPUT,
    CLIError,
    add_na_values,
    add_progress,
    add_seed,
    comma_list,
    file_content,
    input_is_coded,
    named_values,
    output_writer,
    read_input,
    read_schema,
    to_json,
)
from dpknn.utils._io import (
    IMPUTED_MARKER,
    check_outputs,
    is_marked_imputed,
    read_table,
    table_writer,
    text_writer,
    write_files,
)

logger = logging.getLogger(__name__)


def _cmd_census(args):
    import numpy as np

    from dpknn.datasets._census import census_schema, make_census

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


def _bounds(value):
    low, sep, high = value.partition(":")
    if not sep:
        raise ValueError(value)
    return float(low), float(high)


def _schema_from_codebook(args):
    from dpknn.schema._codebook import schema_from_codebook

    check_outputs([args.output], [args.codebook])
    if not args.known or not args.imputed:
        raise CLIError("--codebook needs --known and --imputed: which attributes match records and which are "
                       "imputed is the one choice a codebook cannot make.")
    made = schema_from_codebook(args.codebook, known=comma_list(args.known), imputed=comma_list(args.imputed),
                                label=args.label,
                                bounds=named_values(args.bounds, "--bounds", _bounds, value="LOW:HIGH",
                                                    example="INCTOT=-20000:100000") if args.bounds else {},
                                bin_widths=named_values(args.bin_width, "--bin-width", int, value="WIDTH",
                                                        example="AGE=5") if args.bin_width else {})
    write_files([(args.output, text_writer(made.to_toml()))])
    print(f"wrote {args.output}: {len(made.schema.known)} known and {len(made.schema.imputed)} imputed attributes, "
          f"every domain and code from the codebook {args.codebook}"
          + (f"; review {', '.join(made.review)} (comments at the top)" if made.review else ""))
    return 0


def _cmd_schema(args):
    from dpknn.schema._draft import draft_schema

    if args.codebook is not None:
        return _schema_from_codebook(args)
    if args.input is None:
        raise CLIError("give --input (a draft read from the data) or --codebook (a schema from a public codebook).")
    for option in ("known", "imputed", "bounds", "bin_width"):
        if getattr(args, option) is not None:
            raise CLIError(f"--{option.replace('_', '-')} applies with --codebook only.")
    check_outputs([args.output], [args.input])
    df = read_table(args.input, na_values=args.na_values)
    draft = draft_schema(df, label=args.label)   # its PrivacyLeakWarning reaches stderr as one line
    write_files([(args.output, text_writer(draft.to_toml(source=Path(args.input).name)))])
    print(f"drafted {len(draft.schema.known)} known and {len(draft.schema.imputed)} imputed attributes"
          + (f"; left out {', '.join(draft.left_out)}" if draft.left_out else "") + f"; wrote {args.output}")
    return 0


def _cmd_process(args):
    from dpknn.processing._pipeline import ProcessingPlan, run_plan

    side = Path(str(args.output) + ".json")
    check_outputs([args.output, side], [args.input, args.steps])
    with file_content(args.steps):
        plan = ProcessingPlan.from_file(args.steps)
    output_writer(None, args.output, input_is_coded(args))
    df, coded = read_input(args)
    result = run_plan(df, plan, rng=args.seed)
    # An imputed input stays imputed: its flag columns ride with the rows (run_plan), and its marker
    # goes on, so that release refuses the processed file as it refused the input.
    marked = is_marked_imputed(args.input)
    files = [(args.output, output_writer(result.data, args.output, coded, same_rows=result.resized is None,
                                         metadata={IMPUTED_MARKER: "1"} if marked else None))]
    sidecar = {}
    if marked:
        sidecar = {IMPUTED_MARKER: True, "imputed_note": "processed from a file written by dpknn impute: imputed "
                   "values are not observed values; dpknn release refuses this file."}
    if result.resized is not None:
        r = result.resized
        # c, s and the relation follow from the public n and p; the sampled rows do not go here.
        sidecar.update({"resize": {"n": len(result.data), "p": r.c * r.s, "c": r.c, "s": r.s,
                                   "privacy_unit": r.unit.value},
                        "note": "a mechanism that is (eps, delta)-DP on this resized file is (eps', delta')-DP on "
                                "the input with eps' = ln(1 + s (exp(c eps) - 1)), delta' = s sum_{i<c} exp(i eps) "
                                "delta (dpknn.processing.Resized.privacy_on_original); dpknn release does not apply "
                                "it."})
    if sidecar:
        files.append((side, text_writer(to_json(sidecar))))
    write_files(files)
    steps = [s for s, t in (("clamp", plan.clamp), ("impute", plan.impute)) if t]
    if plan.resize is not None:
        steps.append(f"resize to {len(result.data)} records (c={result.resized.c}, s={result.resized.s:.4g}; "
                     f"privacy accounting in {side})")
    print(f"processed {len(df)} records ({', '.join(steps)}); wrote {args.output}")
    return 0




def add_census_parser(sub):
    """Add the ``census`` command to the subparsers ``sub``."""
    p = sub.add_parser("census", help="draw a synthetic 1940-style census extract and summarise it",
                       description="Draw a synthetic census extract (dpknn.datasets.make_census), print "
                       "its size, missingness, equivalence classes and the bias of ignoring missing "
                       "wages; optionally write it to CSV or Parquet.")
    p.add_argument("--n", type=int, default=200_000, help="number of records (default 200000)")
    p.add_argument("--missing", default="mar", choices=["mar", "mnar", "mcar", "none"],
                   help="missingness model of INCWAGE (default mar)")
    p.add_argument("--missing-rate", type=float, default=0.2, help="share of records missing INCWAGE")
    add_seed(p)
    p.add_argument("--output", type=Path, default=None, help="write the data to this .csv or .parquet")
    p.set_defaults(func=_cmd_census)


def add_schema_parser(sub):
    """Add the ``schema`` command to the subparsers ``sub``."""
    p = sub.add_parser("schema", help="a schema from a public codebook (--codebook), or a draft from a data file "
                       "(domains read from the data: NOT public)",
                       description="Draft a TOML schema from a table: columns with missing values become imputed "
                       "attributes, integer columns Ordinal, other numbers Continuous, strings Categorical. The "
                       "bounds and categories are read from the data, so they are NOT public: replace them by public "
                       "domains before any release (docs/schema.md). The file holds the line draft = true; impute, "
                       "release and synth refuse it until you delete that line, after replacing the domains. "
                       "With --codebook (an IPUMS DDI .xml, or a .dta, .sav or .sas7bdat file) nothing is read "
                       "from the data: domains, gap codes and not-applicable codes come from the codebook, --known "
                       "and --imputed say the roles, and the file is not a draft (docs/agency.md).")
    p.add_argument("--input", type=Path, default=None,
                   help=".csv or .parquet to draft from (domains read from the data)")
    p.add_argument("--output", type=Path, required=True, help="TOML schema to write")
    p.add_argument("--label", default=None, help="column of unique integer record labels")
    p.add_argument("--known", default=None, metavar="A,B", help="with --codebook: the known (matching) attributes")
    p.add_argument("--imputed", default=None, metavar="C,D", help="with --codebook: the imputed attributes")
    p.add_argument("--bounds", default=None, metavar="NAME=LOW:HIGH,...",
                   help="with --codebook: public ranges narrower than the codebook's (a published top code)")
    p.add_argument("--bin-width", default=None, metavar="NAME=W,...", help="with --codebook: bins of known ordinals")
    add_na_values(p)
    p.set_defaults(func=_cmd_schema)


def _cmd_convert(args):
    from dpknn.schema._fixed_width import fixed_width_to_parquet

    if args.rows_per_partition < 1:
        raise CLIError(f"--rows-per-partition must be at least 1, got {args.rows_per_partition}.")
    name = Path(args.input).name.lower()
    if not (name.endswith(".dat") or name.endswith(".dat.gz")):
        raise CLIError(f"--input {str(args.input)!r}: convert streams a fixed-width extract (.dat or .dat.gz); other "
                       "files are read whole by every command (--input X.sav), or written to Parquet by dpknn process.")
    check_outputs([args.output], [args.input, args.codebook])
    if Path(args.output).exists():
        raise CLIError(f"output {str(args.output)!r} exists; choose a new folder.")
    attributes = ()
    if args.schema is not None:
        schema = read_schema(args.schema)
        attributes = (*schema.known, *schema.imputed)
    done = fixed_width_to_parquet(args.input, args.codebook, args.output, rows_per_partition=args.rows_per_partition,
                                  record_type=args.record_type, attributes=attributes, progress=args.progress)
    print(f"converted {done.rows:,} records into {done.partitions} Parquet partitions in {args.output} "
          f"({done.seconds:.1f} s); coded missing values mapped by {args.codebook}")
    return 0


def add_convert_parser(sub):
    """Add the ``convert`` command to the subparsers ``sub``."""
    p = sub.add_parser("convert", help="stream a fixed-width IPUMS extract into Parquet partitions (out of core)",
                       description="Stream a fixed-width extract (an IPUMS .dat or .dat.gz) into a new folder of "
                       "Parquet partitions in bounded memory, its coded missing values mapped by its DDI codebook "
                       "(gaps missing, not-applicable codes missing with the indicator NAME_niu). The folder is "
                       "what dpknn impute, release and rwn read out of core (docs/agency.md).")
    p.add_argument("--input", type=Path, required=True, help="the fixed-width extract (.dat or .dat.gz)")
    p.add_argument("--codebook", type=Path, required=True, help="its DDI codebook (.xml)")
    p.add_argument("--output", type=Path, required=True, help="a new folder of Parquet partitions")
    p.add_argument("--schema", type=Path, default=None,
                   help="the schema the folder is for: a known categorical that lists a not-applicable code keeps it "
                   "as a value (as reading the extract with the schema does)")
    p.add_argument("--rows-per-partition", type=int, default=1_000_000,
                   help="records per Parquet file (default 1000000)")
    p.add_argument("--record-type", default="P",
                   help="of a hierarchical extract: the records to write, with their household's variables "
                   "(default P)")
    add_progress(p)
    p.set_defaults(func=_cmd_convert)


def add_process_parser(sub):
    """Add the ``process`` command to the subparsers ``sub``."""
    p = sub.add_parser("process", help="clamp, impute (data-independent) and resize a file with public parameters",
                       description="Run the steps of a TOML file (docs/processing.md) on a table: clamp each column "
                       "to its public domain, fill missing values by draws that ignore the data (integers for "
                       "integer columns or integer = true), then optionally resize to a public number of records. "
                       "Use it to complete known attributes before dpknn impute or release.")
    p.add_argument("--input", type=Path, required=True,
                   help=f".csv or .parquet; or {AGENCY_INPUT}")
    p.add_argument("--steps", type=Path, required=True, help="TOML file of [clamp.COLUMN], [impute.COLUMN], [resize]")
    p.add_argument("--output", type=Path, required=True,
                   help=".csv or .parquet; .dta or .sav for an agency input (its labels and missing "
                        "codes)")
    add_seed(p)
    add_na_values(p)
    p.set_defaults(func=_cmd_process)
