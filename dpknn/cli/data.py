"""Commands on data files: ``census`` (a synthetic extract), ``schema`` (a draft) and ``process``."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from dpknn.cli.common import (
    add_na_values,
    add_seed,
    file_content,
    to_json,
)
from dpknn.utils.io import (
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


def _cmd_schema(args):
    from dpknn.schema.draft import draft_schema

    check_outputs([args.output], [args.input])
    df = read_table(args.input, na_values=args.na_values)
    draft = draft_schema(df, label=args.label)   # its PrivacyLeakWarning reaches stderr as one line
    write_files([(args.output, text_writer(draft.to_toml(source=Path(args.input).name)))])
    print(f"drafted {len(draft.schema.known)} known and {len(draft.schema.imputed)} imputed attributes"
          + (f"; left out {', '.join(draft.left_out)}" if draft.left_out else "") + f"; wrote {args.output}")
    return 0


def _cmd_process(args):
    from dpknn.processing.pipeline import ProcessingPlan, run_plan

    side = Path(str(args.output) + ".json")
    check_outputs([args.output, side], [args.input, args.steps])
    with file_content(args.steps):
        plan = ProcessingPlan.from_file(args.steps)
    table_writer(None, args.output)
    df = read_table(args.input, na_values=args.na_values)
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
    p = sub.add_parser("schema", help="draft a schema from a data file (domains read from the data: NOT public)",
                       description="Draft a TOML schema from a table: columns with missing values become imputed "
                       "attributes, integer columns Ordinal, other numbers Continuous, strings Categorical. The "
                       "bounds and categories are read from the data, so they are NOT public: replace them by public "
                       "domains before any release (docs/schema.md). The file holds the line draft = true; impute, "
                       "release and synth refuse it until you delete that line, after replacing the domains.")
    p.add_argument("--input", type=Path, required=True, help=".csv or .parquet")
    p.add_argument("--output", type=Path, required=True, help="TOML schema to write")
    p.add_argument("--label", default=None, help="column of unique integer record labels")
    add_na_values(p)
    p.set_defaults(func=_cmd_schema)


def add_process_parser(sub):
    """Add the ``process`` command to the subparsers ``sub``."""
    p = sub.add_parser("process", help="clamp, impute (data-independent) and resize a file with public parameters",
                       description="Run the steps of a TOML file (docs/processing.md) on a table: clamp each column "
                       "to its public domain, fill missing values by draws that ignore the data (integers for "
                       "integer columns or integer = true), then optionally resize to a public number of records. "
                       "Use it to complete known attributes before dpknn impute or release.")
    p.add_argument("--input", type=Path, required=True, help=".csv or .parquet")
    p.add_argument("--steps", type=Path, required=True, help="TOML file of [clamp.COLUMN], [impute.COLUMN], [resize]")
    p.add_argument("--output", type=Path, required=True, help=".csv or .parquet")
    add_seed(p)
    add_na_values(p)
    p.set_defaults(func=_cmd_process)
