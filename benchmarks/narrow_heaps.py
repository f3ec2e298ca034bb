"""The heaps of narrow Ordinals: drawn on their values, or evenly inside their public bins (issue 48).

An Ordinal whose public bins hold 2-15 values (hours of work 0-99 in bins of 10, years of schooling 0-20 in bins
of 2) buys no quantiles; ``bins="auto"`` releases its point-mass histogram and draws every value found as an atom
inside its public bin (``dpknn.synth._bins.OrdinalHeaps``). For each table and each narrow Ordinal whose most
frequent real value holds at least 2 %, this prints, on the training split that ``compare_synthesis.py`` uses:
the real share of its three most frequent values, the synthetic share with the default, and with the same fit
drawn evenly inside its bins (``OrdinalHeaps.shape`` patched out: the draw before, at the same budget), averaged
over ``--seeds``; and the mean error of its p10, p25, p50, p75 and p90 in real interquartile ranges
(``dpknn.metrics``' quantile measure, overall).

    python benchmarks/narrow_heaps.py --tables acs,gss,cps-mar,gss-wages --epsilons 1,4 --seeds 5
"""

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_synthesis import table

from dpknn.synth import AutoSynthesizer, MSTSynthesizer
from dpknn.synth._bins import OrdinalHeaps

QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


def narrow_ordinals(attrs):
    """The Ordinals that ``bins="auto"`` gives a point-mass histogram and no quantiles: the plan's own choice
    (public)."""
    return MSTSynthesizer(attrs, epsilon=1.0).plan().heaped


def quantile_error(real, synthetic):
    """Mean |synthetic − real| of the quantiles, in real interquartile ranges."""
    q_real, q_syn = np.quantile(real, QUANTILES), np.quantile(synthetic, QUANTILES)
    iqr = max(q_real[3] - q_real[1], 1.0)
    return float(np.mean(np.abs(q_syn - q_real)) / iqr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="acs,gss,cps-mar,gss-wages")
    ap.add_argument("--epsilons", default="1,4")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; "
          f"{args.seeds} seeds; shares in %, quantile error in real IQRs (heaps drawn / drawn evenly)")
    print("| table, ε | attribute | value: real, heaps drawn, drawn evenly | quantile error |")
    print("|---|---|---|---|")
    for name in args.tables.split(","):
        df, attrs, _, _ = table(name)
        df = df[[a.name for a in attrs]]
        train = df[np.random.default_rng(0).random(len(df)) < 0.8].reset_index(drop=True)
        cols = [a.name for a in narrow_ordinals(attrs)]
        real = {c: pd.to_numeric(train[c]).dropna().to_numpy(dtype=float) for c in cols}
        tops = {c: pd.Series(v).value_counts(normalize=True).head(3) for c, v in real.items()}
        cols = [c for c in cols if tops[c].iloc[0] >= 0.02]
        for eps in [float(e) for e in args.epsilons.split(",")]:
            drawn = {"heaps": {c: [] for c in cols}, "even": {c: [] for c in cols}}
            for seed in range(args.seeds):
                for how in drawn:
                    patch = mock.patch.object(OrdinalHeaps, "shape", lambda *a, **k: None) if how == "even" \
                        else contextlib.nullcontext()
                    with patch:
                        model = AutoSynthesizer(attrs, epsilon=eps, rng=seed).fit(train)
                    syn = model.sample(len(train), rng=seed + 1)
                    for c in cols:
                        drawn[how][c].append(pd.to_numeric(syn[c]).dropna().to_numpy(dtype=float))
            for c in cols:
                cells = []
                for v, share in tops[c].items():
                    got = [np.mean([np.mean(s == v) for s in drawn[h][c]]) for h in ("heaps", "even")]
                    cells.append(f"{v:g}: {100 * share:.1f}, {100 * got[0]:.1f}, {100 * got[1]:.1f}")
                errs = [np.mean([quantile_error(real[c], s) for s in drawn[h][c]]) for h in ("heaps", "even")]
                print(f"| {name}, {eps:g} | {c} | {'; '.join(cells)} | {errs[0]:.3f} / {errs[1]:.3f} |", flush=True)


if __name__ == "__main__":
    main()
