"""Side-by-side timing of dpknn's exact imputation against peers on the same census data.

Peers (as the issue names them), all on raw rows with one-hot encoded categoricals and the
same weights as the schema's distance:
- scikit-learn ``KNNImputer`` (imputes INCWAGE; the known attributes as features);
- scikit-learn ``NearestNeighbors(n_jobs=-1)`` queried for the incomplete rows;
- scipy ``cKDTree.query`` over the complete rows;
- a plain grouped numpy pipeline: pack codes, factorize, cKDTree over classes, a random donor
  in the nearest class (no exact order, no L1).
None of the peers breaks distance ties by a rule that survives reordering the rows.
Peers that would take too long are timed on a subset of the incomplete rows and the time is
extrapolated linearly; the script says so.

Usage: python benchmarks/compare_peers.py [--n 1000000] [--k 1] [--budget 120]
"""

import argparse
import time

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from dpknn.datasets import census_schema, make_census
from dpknn.impute import KNNImputer
from dpknn.schema._geometry import embed


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def subset_time(fn, queries, budget, label):
    """Time fn on growing prefixes of the queries; extrapolate if the whole would pass budget."""
    m = queries.shape[0]
    size = min(m, 2000)
    while True:
        dt, _ = timed(lambda size=size: fn(queries[:size]))
        if size == m:
            return dt, f"{label}: all {m} queries"
        projected = dt * m / size
        if projected > budget or size * 4 > m:
            if projected <= budget:
                dt, _ = timed(lambda: fn(queries))
                return dt, f"{label}: all {m} queries"
            return projected, f"{label}: {size} of {m} queries timed, extrapolated x{m / size:.1f}"
        size *= 4


def _cells_embedding(cells, schema):
    return embed(cells, schema.weights, schema.is_categorical, schema.n_codes)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=1)
    ap.add_argument("--budget", type=float, default=120.0, help="seconds a peer may run before extrapolating")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    schema = census_schema()
    df = make_census(args.n, rng=args.seed)
    enc = schema.encode(df)
    X = _cells_embedding(enc.cells, schema)
    inc = enc.incomplete
    Xc, Xi = X[~inc], X[inc]
    print(f"n={args.n:,} rows, {inc.sum():,} incomplete, k={args.k}, {X.shape[1]} one-hot dimensions")

    rows = []
    t_dp, imp = timed(lambda: KNNImputer(schema, k=args.k).fit(df))
    rows.append(("dpknn KNNImputer.fit (exact order + L1)", t_dp, f"L1={imp.l1_}, {imp.n_classes_} classes"))

    def grouped():
        from dpknn._core._grouping import pack_cells
        keys = pack_cells(enc.cells, schema.n_codes)
        cid, _ = pd.factorize(keys)
        donor_cls = np.unique(cid[~inc])
        cells = enc.cells[np.unique(cid, return_index=True)[1]]
        tree = cKDTree(_cells_embedding(cells[donor_cls], schema))
        inc_cls = np.unique(cid[inc])
        _, nearest = tree.query(_cells_embedding(cells[inc_cls], schema), k=1)
        rng = np.random.default_rng(0)
        return nearest, rng.integers(0, 1 << 30, inc.sum())
    t, _ = timed(grouped)
    rows.append(("grouped numpy pipeline (random donor in nearest class, no L1)", t, "all rows"))

    tree_build, tree = timed(lambda: cKDTree(Xc))
    t, note = subset_time(lambda q: tree.query(q, k=args.k, workers=-1), Xi, args.budget, "cKDTree.query")
    rows.append(("scipy cKDTree.query on raw rows", t + tree_build, note))

    from sklearn.neighbors import NearestNeighbors
    nn_fit, nn = timed(lambda: NearestNeighbors(n_neighbors=args.k, n_jobs=-1).fit(Xc))
    t, note = subset_time(lambda q: nn.kneighbors(q), Xi, args.budget, "NearestNeighbors.kneighbors")
    rows.append(("sklearn NearestNeighbors(n_jobs=-1) on raw rows", t + nn_fit, note))

    from sklearn.impute import KNNImputer as SkKNNImputer
    y = df["INCWAGE"].to_numpy()
    full = np.column_stack([X, y])
    sk = SkKNNImputer(n_neighbors=args.k)
    fit_t, _ = timed(lambda: sk.fit(full[~inc]))
    t, note = subset_time(lambda q: sk.transform(q), full[inc], args.budget, "KNNImputer.transform")
    rows.append(("sklearn KNNImputer on raw rows", t + fit_t, note))

    print(f"\n{'method':62s} {'seconds':>9s} {'x dpknn':>9s}  note")
    for name, t, note in rows:
        print(f"{name:62s} {t:9.2f} {t / t_dp:9.1f}  {note}")


if __name__ == "__main__":
    main()
