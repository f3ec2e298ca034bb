"""Which attribute a 2-way TVD on the public bins loses: each attribute's one-way TVD, real against synthetic.

``benchmarks/compare_synthesis.py`` scores the 2-way TVD on 10 equal public bins (a gap as one more code); this
prints, for one of its tables, ε and seed, the default's one-way TVD of each attribute on the same bins and the
two shares of each bin (the first cell: missing), and the default's released quantile edges, so a loss can be
traced to an attribute and to its bins (``benchmarks/README.md``, "The default's grid now").

    python benchmarks/one_way_tvd.py --table slid --epsilon 4 --seed 0
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_synthesis import table

from dpknn.schema import Discretization
from dpknn.synth import AutoSynthesizer


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default="slid")
    ap.add_argument("--epsilon", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bins", type=int, default=10)
    args = ap.parse_args()
    df, attrs, _, _ = table(args.table)
    df = df[[a.name for a in attrs]]
    train = df[np.random.default_rng(0).random(len(df)) < 0.8].reset_index(drop=True)   # compare_synthesis's split
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoSynthesizer(attrs, epsilon=args.epsilon, rng=args.seed).fit(train)
        out = model.sample(len(train), rng=args.seed + 1)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.2f}; table {args.table}, "
          f"epsilon {args.epsilon:g}, seed {args.seed}; the default ran {model.method_}; released quantile edges: "
          + "; ".join(f"{k} {np.round(v, 2).tolist()}" for k, v in model.synthesizer_.bin_edges_.items()))
    disc = Discretization(attrs, args.bins)
    real, syn = disc.encode(train), disc.encode(out)
    for j, name in enumerate(disc.names):
        size = int(disc.sizes[j]) + 1
        p = np.bincount(real[j] + 1, minlength=size) / real.shape[1]
        q = np.bincount(syn[j] + 1, minlength=size) / syn.shape[1]
        print(f"{name}: one-way TVD {0.5 * np.abs(p - q).sum():.4f}; real {np.round(p, 3).tolist()}; "
              f"synthetic {np.round(q, 3).tolist()}")


if __name__ == "__main__":
    main()
