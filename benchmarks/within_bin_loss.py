"""Where a synthetic slope is lost at a given ε: across the model's bins, or inside them (issue 48).

Fits the default synthesiser told the table's analysis (``AutoSynthesizer(analyses=...)``) at ``--epsilon`` and
separates the two places a regression of an amount can lose its slope:

1. **Across the bins.** For the response and each covariate with more than two value codes, the correlation of
   their bin indices (value codes only) in the fitted model's two-way marginal against the real table's under the
   same bins: what the noisy tables and the estimator keep of the association.
2. **Inside the bins.** The real table refitted with the values of the response, of the covariates that are
   amounts with released quantile bins, or of both, permuted at random among the records of the same model bin (a
   value drawn inside its bin independently of everything else, which is what the sampler does without rank sums),
   or among those of the same (own bin, other's bin) cell (a value inside its bin that follows the other's bin).
   No noise: this is the real data with the fitted model's bins.

Beside them the synthetic file's coefficients (the same fit, sampled). When the across-bins correlation is the
real one's and the "both inside own bins" row matches the synthetic row, the loss is inside the bins:

    python benchmarks/within_bin_loss.py --table yrbss --epsilon 1 --seed 0
    python benchmarks/within_bin_loss.py --table yrbss --epsilon 1 --seed 0 --more-seeds 1,2,3,4
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_synthesis import ANALYSIS, table
from regression_ceiling import ols

from dpknn.schema import Categorical
from dpknn.synth import AutoSynthesizer


def permuted_within(values, *keys, rng):
    """``values`` permuted at random among the records that share every one of the integer ``keys``."""
    g = np.zeros(len(values), dtype=np.int64)
    for k in keys:
        k = np.asarray(k, dtype=np.int64)
        g = g * (int(k.max()) + 2) + (k + 1)
    home = np.argsort(g, kind="stable")
    shuffled = np.lexsort((rng.random(len(values)), g))
    out = np.asarray(values).copy()
    out[home] = np.asarray(values)[shuffled]
    return out


def bin_correlation(table2):
    """Pearson correlation of the two bin indices under the joint counts ``table2`` (value codes only)."""
    p = table2 / table2.sum()
    i, j = np.arange(p.shape[0]), np.arange(p.shape[1])
    pi, pj = p.sum(1), p.sum(0)
    mi, mj = i @ pi, j @ pj
    cov = ((i[:, None] - mi) * (j[None, :] - mj) * p).sum()
    return cov / np.sqrt(((i - mi) ** 2 @ pi) * ((j - mj) ** 2 @ pj))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default="yrbss")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--more-seeds", default="", help="comma-separated: also fit and sample with these seeds and print "
                    "the synthetic coefficients of every seed with their mean and standard deviation")
    args = ap.parse_args()
    df, attrs, _, _ = table(args.table)
    train = df[np.random.default_rng(0).random(len(df)) < 0.8].reset_index(drop=True)
    formula = ANALYSIS[args.table]
    categorical = {a.name for a in attrs if isinstance(a, Categorical)}
    y, xs = formula.split("~")[0].strip(), [t.strip() for t in formula.split("~")[1].split("+")]
    t0 = time.perf_counter()
    auto = AutoSynthesizer(attrs, epsilon=args.epsilon, rng=args.seed, analyses=[formula]).fit(train)
    synthetic = auto.sample(len(train), rng=args.seed + 1)
    seconds = time.perf_counter() - t0
    fit = auto.synthesizer_
    disc = fit.discretization_
    codes = disc.encode(train).astype(np.int64)
    names = disc.names
    shaped = [a for a in [y, *xs] if fit.shapes_[names.index(a)] is not None]
    model_bins = {a: disc.value_codes(disc.attributes[names.index(a)]) for a in [y, *xs]}
    print(f"{args.table}, epsilon {args.epsilon}, seed {args.seed}: {auto.method_}, fit + sample {seconds:.1f} s "
          f"(load average {os.getloadavg()[0]:.1f}); model bins {model_bins}; amounts with quantile bins {shaped}\n")

    for r in fit.rank_sums_:
        cells = r.sums.size
        print(f"rank sums of {names[r.amount]} by {names[r.partner]}: {cells} cells, noise sd {r.sigma:.1f} ranks a "
              f"cell, {len(train) / cells:.0f} records a cell on average")
    print("\n1. across the model's bins: correlation of the bin indices (value codes)")
    j = names.index(y)
    for x in xs:
        i = names.index(x)
        kj, ki = disc.value_codes(disc.attributes[j]), disc.value_codes(disc.attributes[i])
        if ki < 3:
            continue
        seen = (codes[j] >= 0) & (codes[j] < kj) & (codes[i] >= 0) & (codes[i] < ki)
        real = np.zeros((kj, ki))
        np.add.at(real, (codes[j][seen], codes[i][seen]), 1)
        model = np.asarray(fit.model_.marginal((j, i)))[:kj, :ki]
        print(f"   {y} x {x}: real {bin_correlation(real):.4f}, model {bin_correlation(model):.4f}")

    rng = np.random.default_rng(args.seed)
    own = {a: codes[names.index(a)] for a in shaped}

    def redrawn(keys):
        """The real table with each amount of ``keys`` permuted among the records of its bin and of the bins of
        the amounts it maps to."""
        d = train.copy()
        for a, others in keys.items():
            d[a] = permuted_within(train[a].to_numpy(), own[a], *[own[b] for b in others], rng=rng)
        return d

    covs = [a for a in shaped if a != y]
    variants = []
    if y in shaped:
        variants.append((f"{y} inside its own bins", {y: []}))
        if covs:
            variants.append((f"{y} inside (own bin, {', '.join(covs)} bins)", {y: covs}))
    for c in covs:
        variants.append((f"{c} inside its own bins", {c: []}))
        if y in shaped:
            variants.append((f"{c} inside (own bin, {y} bin)", {c: [y]}))
    if len(shaped) > 1:
        variants.append(("all inside their own bins", {a: [] for a in shaped}))
        variants.append(("all inside (own bin, the others' bins)", {a: [b for b in shaped if b != a] for a in shaped}))
    rows = {"real": train, **{label: redrawn(keys) for label, keys in variants}}
    rows["synthetic"] = synthetic
    for seed in [int(v) for v in args.more_seeds.split(",") if v]:
        more = AutoSynthesizer(attrs, epsilon=args.epsilon, rng=seed, analyses=[formula]).fit(train)
        rows[f"synthetic, seed {seed}"] = more.sample(len(train), rng=seed + 1)
    print(f"\n2. inside the bins: OLS {formula} on the real table with values permuted inside the model's bins "
          "(no noise), and on the synthetic file")
    out = []
    for label, data in rows.items():
        data = data.copy()
        for col in data.columns:
            if data[col].dtype.name in ("Int64", "Float64"):
                data[col] = data[col].astype(float)
            elif col in categorical:   # the same reference level in every file: the first in sorted order
                data[col] = data[col].astype(object)
        params, r2 = ols(data, formula, categorical)
        out.append({"file": label, **params.round(3).to_dict(), "R2": round(r2, 4)})
    table_out = pd.DataFrame(out).set_index("file")
    synthetic_rows = table_out[table_out.index.str.startswith("synthetic")]
    if len(synthetic_rows) > 1:
        table_out.loc["synthetic, mean over seeds"] = synthetic_rows.mean()
        table_out.loc["synthetic, sd over seeds"] = synthetic_rows.std()
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table_out.round(4).to_string())


if __name__ == "__main__":
    main()
