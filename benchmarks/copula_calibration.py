"""Whether the within-bin copula's correlation, fitted to within-bin rank sums instead, removes its overshoot.

``within_bin="copula"`` (``dpknn.synth._copula``) draws the analysis' two amounts inside their bins from a Gaussian
copula whose correlation is the polychoric correlation of the fitted model's two-way table. Where the amounts go
together inside their bins less than that, the slope comes out steeper than the data's. This script asks whether
the rank sums could set the correlation instead: for the response y and the other amount x it takes the table of
y's centred within-bin ranks by (y's bin, x's bin), once without noise (the real data's table: the best any release
could do) and once with the noise of the default's release of that table, and picks the correlation on a grid of
20 whose copula, drawn on the model's synthetic codes, predicts the table best (least squares). It then samples
with each correlation, and with none (y's rank sums by its other covariates only), and prints the analysis' OLS
coefficients, mean and sd over the seeds:

    python benchmarks/copula_calibration.py --table gss-wages --epsilon 4 --seeds 0,1,2

A prototype of a calibration, not the package's method (the package's copula uses the polychoric correlation).
"""

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_synthesis import ANALYSIS, table
from regression_ceiling import ols

from dpknn.schema import Categorical
from dpknn.schema._discretization import slot_middles
from dpknn.schema._marginals import extended_codes
from dpknn.synth import AutoSynthesizer
from dpknn.synth._copula import WithinBinCopula, copula_ranks
from dpknn.synth._marginal import blank_at_rates
from dpknn.synth._ranks import conditional_ranks, within_bin_ranks

GRID = np.linspace(0.0, 0.95, 20)


def coefficients(data, formula, categorical):
    data = data.copy()
    for col in data.columns:
        if data[col].dtype.name in ("Int64", "Float64"):
            data[col] = data[col].astype(float)
        elif col in categorical:
            data[col] = data[col].astype(object)
    params, r2 = ols(data, formula, categorical)
    return {**params.to_dict(), "R2": r2}


def predicted(ranks, codes, y, x, k, both, cells, held):
    """The table of y's centred within-bin ranks by (y's bin, x's bin) that the synthetic rows' ``ranks`` give,
    scaled to the model's count of each cell."""
    out = np.zeros((k[y], k[x]))
    np.add.at(out, (codes[y][both], codes[x][both]), ranks[both] - 0.5)
    return out * cells / np.maximum(held, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default="gss-wages")
    ap.add_argument("--epsilon", type=float, default=4.0)
    ap.add_argument("--seeds", default="0,1,2")
    args = ap.parse_args()
    df, attrs, _, _ = table(args.table)
    train = df[np.random.default_rng(0).random(len(df)) < 0.8].reset_index(drop=True)
    formula = ANALYSIS[args.table]
    categorical = {a.name for a in attrs if isinstance(a, Categorical)}
    print(f"{args.table}, epsilon {args.epsilon}, seeds {args.seeds}, load average {os.getloadavg()[0]:.1f}")
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        fit = AutoSynthesizer(attrs, epsilon=args.epsilon, rng=seed, analyses=[formula],
                              within_bin="copula").fit(train).synthesizer_
        disc, sizes, cop = fit.discretization_, fit.discretization_.sizes, fit.copula_
        y = disc.names.index(formula.split("~")[0].strip())
        x = next(a for a in cop.amounts if a != y)
        k = [disc.value_codes(a) for a in disc.attributes]
        # The real table of y's centred within-bin ranks by (y's bin, x's bin): data, never released here.
        real_codes = disc.encode(train).astype(np.int64)
        attr = disc.attributes[y]
        values, _ = attr.read_column(train)
        lo, hi = disc.bounds(attr)
        ranks = within_bin_ranks(slot_middles(attr, values), real_codes[y], lo, hi, fit.shapes_[y])
        seen = ~np.isnan(ranks) & (real_codes[x] >= 0) & (real_codes[x] < k[x])
        true = np.zeros((k[y], k[x]))
        np.add.at(true, (real_codes[y][seen], real_codes[x][seen]), ranks[seen] - 0.5)
        # The default's release of that table shares the rank budget with one more table than the copula's.
        sigma = fit.rank_sums_[0].sigma * np.sqrt((len(fit.rank_sums_) + 1) / len(fit.rank_sums_))
        noisy = true + np.random.default_rng(100 + seed).normal(0.0, sigma, true.shape)
        # The model's synthetic codes, as sample() draws them.
        gen = np.random.default_rng(seed + 1)
        cliques = fit.model_.clique_marginals()
        codes = fit.model_.sample_codes(len(train), gen, cliques=cliques)
        codes[codes >= sizes[:, None]] = -1
        blank_at_rates(codes, fit.observed_rates_, gen)
        nodes = fit.model_.attribute_marginals(cliques)
        ext = extended_codes(codes, sizes)
        both = (codes[y] >= 0) & (codes[y] < k[y]) & (codes[x] >= 0) & (codes[x] < k[x])
        held = np.zeros((k[y], k[x]))
        np.add.at(held, (codes[y][both], codes[x][both]), 1)
        cells = fit.model_.total * np.asarray(fit.model_.marginal((y, x), cliques))[:k[y], :k[x]]

        def drawn(rho, cop=cop, codes=codes, seed=seed):
            pair = WithinBinCopula(cop.amounts, np.array([[1.0, rho], [rho, 1.0]]), cop.thresholds)
            return copula_ranks(pair, codes, np.random.default_rng(seed + 5))

        tables = [predicted(drawn(r)[y], codes, y, x, k, both, cells, held) for r in GRID]
        fitted = {name: float(GRID[np.argmin([((t - p) ** 2).sum() for p in tables])])
                  for name, t in (("fitted to the real table", true), ("fitted to the noisy table", noisy))}
        choices = {"polychoric (the package)": float(cop.correlation[0, 1]), **fitted, "none (rho = 0)": 0.0}
        print(f"seed {seed}: " + ", ".join(f"{name} {rho:.3f}" for name, rho in choices.items())
              + f"; noise sd {sigma:.1f} ranks a cell")
        counts = {s.amount: fit.model_.total * np.asarray(nodes[s.amount])[:k[s.amount]] for s in fit.rank_sums_}
        for name, rho in choices.items():
            joint = drawn(rho)
            shifted = conditional_ranks(codes, ext, fit.rank_sums_, counts, np.random.default_rng(seed + 6),
                                        uniforms=joint) if fit.rank_sums_ else {}
            ranks_by = [shifted.get(j, joint.get(j)) for j in range(len(sizes))]
            syn = disc.decode(codes.copy(), rng=np.random.default_rng(seed + 7), masses=nodes, shapes=fit.shapes_,
                              ranks=ranks_by)
            rows.append({"correlation": name, **coefficients(syn, formula, categorical)})
    rows.append({"correlation": "real", **coefficients(train, formula, categorical)})
    out = pd.DataFrame(rows).groupby("correlation", sort=False)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print("\nmean over seeds\n" + out.mean().round(3).to_string())
        print("\nsd over seeds\n" + out.std().round(3).to_string())


if __name__ == "__main__":
    main()
