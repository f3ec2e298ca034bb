"""``demo`` (the main job) and ``experiment`` (the papers' experiments)."""

from __future__ import annotations

import logging
import math
from pathlib import Path

from dpknn.cli._common import (
    CLIError,
    add_diagnostics,
    add_seed,
    comma_list,
)

logger = logging.getLogger(__name__)


def _cmd_demo(args):
    from dpknn.experiments._demo import run_demo

    return run_demo(n=args.n, k=args.k, epsilon=args.epsilon, count_epsilon=args.count_epsilon,
                    seed=args.seed, out=args.out, diagnostics=args.diagnostics, progress=not args.quiet)


def _cmd_experiment(args):
    from dpknn.experiments._demo import run_census_experiment

    for flag, value in (("--runs", args.runs), ("--n", args.n), ("--population", args.population), ("--k", args.k)):
        if value < 1:
            raise CLIError(f"{flag} must be at least 1, got {value}.")
    if args.jobs == 0:
        raise CLIError("--jobs must be a number of workers >= 1, or -1 for all cores; got 0.")
    queries = None if args.queries is None else comma_list(args.queries)
    return run_census_experiment(runs=args.runs, n=args.n, population=args.population, k=args.k,
                                 epsilon=args.epsilon, count_epsilon=args.count_epsilon, queries=queries,
                                 jobs=args.jobs, seed=args.seed, out=args.out, progress=not args.quiet)


def _cmd_amplification(args):
    from dpknn.experiments._amplification import run_amplification_experiment

    rates = [float(r) for r in comma_list(args.rates)]
    for r in rates:
        if not 0 <= r < 1:
            raise CLIError(f"--rates must be missing rates in [0, 1), got {r!r}.")
    return run_amplification_experiment(rates=rates, epsilon=args.epsilon, out=args.out)


def _cmd_synthesis_experiment(args):
    from dpknn.experiments._synthesis import run_synthesis_experiment

    rates = [float(r) for r in comma_list(args.rates)]
    for r in rates:
        if not 0 < r < 0.7:
            raise CLIError(f"--rates must be missing rates in (0, 0.7), got {r!r}.")
    mechs = comma_list(args.mechanisms)
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


def _add_census_run_options(p):
    """Options shared by ``demo`` and ``experiment census``."""
    p.add_argument("--k", type=int, default=1, help="donors per incomplete record (default 1)")
    p.add_argument("--epsilon", type=float, default=6 * math.log(2),
                   help="budget of each mean / proportion numerator (default 6 ln 2)")
    p.add_argument("--count-epsilon", type=float, default=math.log(2),
                   help="budget of each subpopulation count / denominator (default ln 2)")
    add_seed(p)


def add_demo_parser(sub):
    """Add the ``demo`` command to the subparsers ``sub``."""
    p = sub.add_parser("demo", help="the main job: DP releases on imputed synthetic census data",
                       description="Draw a synthetic census extract, impute INCWAGE by exact 1-NN, report "
                       "L1(D) and the equivalence classes, and release the paper's queries with smooth "
                       "sensitivity, ignoring missing data, and the paper's global-sensitivity comparison, "
                       "next to the true values. Writes report.md, results.json and demo.png to --out.")
    p.add_argument("--n", type=int, default=200_000, help="records (default 200000)")
    _add_census_run_options(p)
    p.add_argument("--out", type=Path, default=Path("dpknn-demo"), help="output folder (default ./dpknn-demo)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_diagnostics(p)
    p.set_defaults(func=_cmd_demo)


def add_experiment_parser(sub):
    """Add the ``experiment`` command to the subparsers ``sub``."""
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
    add_seed(p)
    p.add_argument("--out", type=Path, default=Path("dpknn-synthesis"), help="output folder")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_synthesis_experiment)
