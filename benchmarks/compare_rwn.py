"""RWN neighbourhoods side by side with raw-row kNN peers on tied census-like data.

dpknn's exact RWN groups identical rows into classes and searches neighbours class by class
(within the categorical signature first), so its cost follows the number of classes. The peers
(scikit-learn ``NearestNeighbors(n_jobs=-1)`` and scipy ``cKDTree.query(workers=-1)``) search raw
rows, where identical rows make KD-trees slow; they are timed on a subset of the queries and
extrapolated linearly when they would take longer than --budget seconds (the script says so).
The peers only find k nearest rows; dpknn also includes ties and perturbs the data.

Usage: python benchmarks/compare_rwn.py [--n 1000000] [--k 5] [--budget 120]
"""

import argparse
import time

from scipy.spatial import cKDTree

from dpknn.sdc._rwn import RWN, _design

KNOWN = ["AGE", "SCHOOL", "SEX", "RACE", "RELATE", "MARST", "EMPSTAT", "CLASSWKR", "URBAN"]
CATEGORICAL = ["SEX", "RACE", "RELATE", "MARST", "EMPSTAT", "CLASSWKR", "URBAN"]


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--budget", type=float, default=120.0)
    args = ap.parse_args()
    from dpknn.datasets import make_census

    df = make_census(args.n, rng=0)[KNOWN]
    df[CATEGORICAL] = df[CATEGORICAL].astype(str)
    rwn = RWN(k=args.k, rng=1)
    t_dp = timed(lambda: rwn.fit_transform(df))
    print(f"n={args.n:,}, k={args.k}: {rwn.n_classes_:,} classes")
    X = _design(df, KNOWN, {}, {})
    rows = [("dpknn RWN exact (classes, ties, perturbation)", t_dp, "all rows")]
    tree = cKDTree(X)
    query = lambda q: tree.query(q, k=args.k + 1, workers=-1)  # noqa: E731
    rows.append(("scipy cKDTree.query(workers=-1), raw rows", *extrapolate(query, X, args.budget)))
    from sklearn.neighbors import NearestNeighbors
    nn = NearestNeighbors(n_neighbors=args.k + 1, n_jobs=-1).fit(X)
    rows.append(("sklearn NearestNeighbors(n_jobs=-1), raw rows", *extrapolate(nn.kneighbors, X, args.budget)))
    print(f"\n{'method':52s} {'seconds':>9s} {'x dpknn':>8s}  note")
    for name, t, note in rows:
        print(f"{name:52s} {t:9.1f} {t / t_dp:8.1f}  {note}")


def extrapolate(query, X, budget):
    n = len(X)
    size = min(n, 5000)
    while True:
        dt = timed(lambda size=size: query(X[:size]))
        if size == n:
            return dt, "all rows"
        projected = dt * n / size
        if projected > budget or size * 4 > n:
            if projected <= budget:
                return timed(lambda: query(X)), "all rows"
            return projected, f"{size:,} of {n:,} queries timed, extrapolated x{n / size:.0f}"
        size *= 4


if __name__ == "__main__":
    main()
