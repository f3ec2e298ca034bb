"""The census 10^7 in-memory fit against a stable argsort of 10^7 int64 keys, in one process.

Draws ``make_census(n)`` and ``census_schema()``, then times (best of ``--repeat``)
``np.argsort(keys, kind="stable")`` of n random int64 keys and ``KNNImputer(census_schema(),
k=1).fit(df)``, and prints both and their ratio (the goal is <= 2.0 at n = 10^7). Not run by CI.

    python benchmarks/fit_vs_argsort.py [--n 10000000] [--repeat 3] [--seed 0] [--verbose]
"""

import argparse
import logging
import time

import numpy as np

from dpknn.datasets import census_schema, make_census
from dpknn.impute import KNNImputer


def best_of(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="log the fit's stage times")
    args = parser.parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.INFO, format="%(message)s")

    rng = np.random.default_rng(args.seed)
    df = make_census(args.n, rng=rng)
    schema = census_schema()
    keys = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=args.n, dtype=np.int64)

    t_sort = best_of(lambda: np.argsort(keys, kind="stable"), args.repeat)
    t_fit = best_of(lambda: KNNImputer(schema, k=1).fit(df), args.repeat)
    print(f"n={args.n}  argsort(stable, int64) {t_sort:.3f}s  KNNImputer.fit(k=1) {t_fit:.3f}s  "
          f"ratio {t_fit / t_sort:.2f}")


if __name__ == "__main__":
    main()
