"""Side by side: dpknn's estimator (``dpknn.synth._graphical_model.fit_model``) against private-pgm's
(PyPI ``mbi`` 2.x, on JAX) on the same released tables.

For each public table (see ``compare_synthesis.py``) and ε, dpknn's AIM is fitted once; its
released noisy tables (``measurements_``) are then handed to both estimators, which minimise the
same loss over the same family (models Markov on a triangulation of the measured sets):

    L(μ) = Σ_m ‖n̂ μ_{S_m} − y_m‖² / (2 σ_m²),

with the same n̂. The script prints each estimator's seconds, L at its answer (lower is closer
to the exact minimiser) and the mean 2-way TVD between the fitted model's pair marginals and the
data's (on the same codes, a gap its own code): the fidelity that L stands in for. mbi runs in
its own environment, outside dpknn:

    python -m venv /tmp/mbivenv && /tmp/mbivenv/bin/pip install "mbi==2.0.0"
    python benchmarks/compare_estimators.py --mbi-python /tmp/mbivenv/bin/python
"""

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from compare_synthesis import table

from dpknn.synth import AIMSynthesizer
from dpknn.synth._graphical_model import estimate_total, fit_model

PEER = Path(__file__).resolve().parent / "peers" / "mbi_peer.py"


def loss(marginals, measurements):
    """L at a model whose marginals (count tables by attribute set, axes in the set's order) are ``marginals``."""
    return sum(float(((marginals[m.attributes] - m.counts) ** 2).sum()) / (2 * m.sigma**2) for m in measurements)


def pair_tvd(pairs, truth):
    """Mean total variation distance between fitted pair marginals and the data's, by pair."""
    return float(np.mean([0.5 * np.abs(pairs[k] / pairs[k].sum() - t / t.sum()).sum() for k, t in truth.items()]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="slid,chile,gss,cps-mar")
    ap.add_argument("--epsilons", default="1,4")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--mbi-python", required=True, help="python with mbi 2.x installed")
    ap.add_argument("--iters", default="1000,3000", help="mbi's iteration counts to try")
    args = ap.parse_args()
    for name in args.tables.split(","):
        df, attrs, _, _ = table(name)
        df = df[[a.name for a in attrs]]
        for eps, seed in itertools.product([float(e) for e in args.epsilons.split(",")],
                                           [int(s) for s in args.seeds.split(",")]):
            aim = AIMSynthesizer(attrs, epsilon=eps, rng=seed).fit(df)
            sizes = aim.model_.sizes
            codes = aim.discretization_.encode(df)
            codes = np.where(codes < 0, np.array(sizes)[:, None] - 1, codes)   # a gap: the last code
            truth = {}
            for i, j in itertools.combinations(range(len(sizes)), 2):
                truth[i, j] = np.zeros((sizes[i], sizes[j]))
                np.add.at(truth[i, j], (codes[i], codes[j]), 1)
            # Axes in increasing attribute order, as mbi reads them.
            ms = [type(m)(tuple(sorted(m.attributes)),
                          np.transpose(m.counts, np.argsort(m.attributes)).astype(np.float64), m.sigma)
                  for m in aim.measurements_]
            total = estimate_total(ms)
            for method in ("lbfgs", "mirror"):   # dpknn's default first: the ratios are to it
                t = time.perf_counter()
                fitted = fit_model(sizes, [m.attributes for m in ms], ms, iterations=aim.iterations, method=method)
                spent = time.perf_counter() - t
                cliques = fitted.clique_marginals()
                got_loss = loss({m.attributes: fitted.total * fitted.marginal(m.attributes, cliques) for m in ms}, ms)
                got_tvd = pair_tvd({k: fitted.marginal(k, cliques) for k in truth}, truth)
                if method == "lbfgs":
                    ours_loss, ours_tvd, seconds = got_loss, got_tvd, spent
                    print(f"{name} eps={eps:g} seed {seed}: {len(ms)} tables, model {fitted.tree.size(sizes):,} "
                          f"cells, n̂ {total:.1f}", flush=True)
                print(f"  dpknn {method:6s} {aim.iterations:5d} iters: L = {got_loss:.6g} "
                      f"(x{got_loss / ours_loss:.4f}), 2-way TVD {got_tvd:.4f} (x{got_tvd / ours_tvd:.3f}) "
                      f"in {spent:.2f} s", flush=True)
            with tempfile.TemporaryDirectory() as tmp:
                tmp = Path(tmp)
                np.savez(tmp / "tables.npz", **{f"t{i}": m.counts for i, m in enumerate(ms)})
                (tmp / "meta.json").write_text(json.dumps({
                    "sizes": [int(s) for s in sizes], "total": total,
                    "tables": [{"attributes": [int(v) for v in m.attributes], "sigma": m.sigma} for m in ms]}))
                for which in ("mirror", "lbfgs"):
                    for iters in args.iters.split(","):
                        cmd = [args.mbi_python, str(PEER), str(tmp / "tables.npz"), str(tmp / "meta.json"), which,
                               iters, str(tmp / "out.npz")]
                        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
                        if res.returncode != 0:
                            print(f"  mbi {which} {iters}: failed: {res.stderr[-600:]}")
                            continue
                        first, second = json.loads(res.stdout.strip().splitlines()[-1])
                        got = np.load(tmp / "out.npz")
                        peer_loss = loss({m.attributes: got[f"t{i}"] for i, m in enumerate(ms)}, ms)
                        peer_tvd = pair_tvd({(i, j): got[f"p{i}_{j}"] for i, j in truth}, truth)
                        print(f"  mbi {which:6s} {int(iters):5d} iters: L = {peer_loss:.6g} "
                              f"(x{peer_loss / ours_loss:.4f}), 2-way TVD {peer_tvd:.4f} "
                              f"(x{peer_tvd / ours_tvd:.3f}) in {second:.2f} s "
                              f"({first:.2f} s with JAX's compilation); x{second / seconds:.1f} dpknn's time",
                              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
