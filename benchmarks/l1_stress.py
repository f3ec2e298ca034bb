"""Exact L1(D) on random wide schemas: up to 12 attributes, ordinal widths up to 1000, n >= 10^4.

Draws schemas and data unlike the census (uniform, clustered, skewed columns; up to 12 known
attributes), fits ``KNNImputer`` with the default ``max_work`` and prints, per case, the fit time,
the work of the L1 search against ``max_work``, and L1. The goal of the exact-L1 issue is that no
case ends in WorkLimitError.

    python benchmarks/l1_stress.py [--cases 40] [--seed 0] [--n 10000,100000]
"""

import argparse
import time

import numpy as np
import pandas as pd

from dpknn import Categorical, Continuous, Ordinal, Schema, WorkLimitError
from dpknn.impute._knn import DEFAULT_MAX_WORK, KNNImputer


def draw_case(rng, n):
    p = int(rng.integers(2, 13))
    attrs, cols = [], {}
    for j in range(p):
        if rng.random() < 0.5:
            width = int(rng.choice([10, 100, 1000]))
            attrs.append(Ordinal(f"o{j}", 0, width - 1, weight=int(rng.integers(1, 4))))
            kind = rng.choice(["uniform", "normal", "lognormal"])
            if kind == "uniform":
                v = rng.integers(0, width, n)
            elif kind == "normal":
                v = rng.normal(width * rng.uniform(0.2, 0.8), width * rng.uniform(0.02, 0.2), n)
            else:
                v = rng.lognormal(np.log(width * rng.uniform(0.05, 0.3)), rng.uniform(0.3, 1.2), n)
            cols[f"o{j}"] = np.clip(np.rint(v), 0, width - 1).astype(np.int64)
        else:
            n_cat = int(rng.choice([2, 5, 12, 50]))
            attrs.append(Categorical(f"c{j}", list(range(n_cat)), weight=int(rng.integers(1, 4))))
            prob = rng.dirichlet(np.full(n_cat, rng.choice([0.3, 1.0, 5.0])))
            cols[f"c{j}"] = rng.choice(n_cat, n, p=prob)
    cols["y"] = np.where(rng.random(n) < rng.uniform(0.05, 0.5), np.nan, 1.0)
    return Schema(known=attrs, imputed=[Continuous("y", 0, 2)]), pd.DataFrame(cols)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n", default="10000,100000")
    parser.add_argument("--k", type=int, default=1)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    sizes = [int(v) for v in args.n.split(",")]
    rows, refused = [], 0
    for case in range(args.cases):
        n = sizes[case % len(sizes)]
        schema, df = draw_case(rng, n)
        widths = "x".join(str(int(c)) for c in schema.n_codes)
        cells = float(np.prod(schema.n_codes.astype(float)))
        t = time.perf_counter()
        try:
            imp = KNNImputer(schema, k=args.k).fit(df)
            status, l1, work = "ok", imp.l1_, imp.l1_work_
        except WorkLimitError:
            status, l1, work = "WorkLimitError", -1, DEFAULT_MAX_WORK
            refused += 1
        dt = time.perf_counter() - t
        rows.append((case, n, len(schema.known), widths, status, l1, work, dt))
        print(f"case {case:3d} n={n:>7} p={len(schema.known):2d} codes={widths:<50} cells={cells:8.1e} "
              f"{status:<14} L1={l1:<5} work={work / DEFAULT_MAX_WORK:7.2%} of max_work  {dt:6.2f} s", flush=True)
    times = np.array([r[-1] for r in rows])
    works = np.array([r[-2] for r in rows])
    print(f"\n{len(rows)} cases, {refused} WorkLimitError; fit time median {np.median(times):.2f} s, max "
          f"{times.max():.2f} s; L1 work median {np.median(works):.3g}, max {works.max():.3g} "
          f"(max_work {DEFAULT_MAX_WORK:.3g})")


if __name__ == "__main__":
    main()
