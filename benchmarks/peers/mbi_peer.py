"""Fit private-pgm's estimator (PyPI ``mbi`` 2.x, JAX) to noisy tables dumped by
benchmarks/compare_estimators.py (run in the peer's own Python).

Usage: python mbi_peer.py TABLES.npz META.json ESTIMATOR ITERS OUT.npz

META.json holds the attribute sizes, the total n̂ and, per table, its attributes (indices, in
increasing order: the axes of its array in TABLES.npz) and its noise's standard deviation.
ESTIMATOR is ``mirror`` (MirrorDescent, private-pgm's default) or ``lbfgs``. Writes the fitted
model's marginal of every measured set (``t<i>``, counts, axes in the same order) and of every
pair of attributes (``p<i>_<j>``), and prints the seconds of the first fit (JAX compiles then)
and of a second, identical one. mbi is not part of dpknn.
"""

import itertools
import json
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402
from mbi import Domain, LinearMeasurement, estimation  # noqa: E402

tables_path, meta_path, which, iters, out_path = sys.argv[1:6]
tables = np.load(tables_path)
meta = json.loads(open(meta_path).read())
names = [f"a{i}" for i in range(len(meta["sizes"]))]
domain = Domain(names, meta["sizes"])
measured = [LinearMeasurement(tables[f"t{i}"].ravel(), tuple(names[v] for v in m["attributes"]), stddev=m["sigma"])
            for i, m in enumerate(meta["tables"])]
estimator = {"mirror": estimation.MirrorDescent, "lbfgs": estimation.LBFGS}[which]()
seconds = []
for _ in range(2):
    t = time.perf_counter()
    model = estimator.estimate(domain, measured, known_total=meta["total"], iters=int(iters))
    marginals = {f"t{i}": np.asarray(model.project(tuple(names[v] for v in m["attributes"])).datavector(flatten=False))
                 for i, m in enumerate(meta["tables"])}
    seconds.append(time.perf_counter() - t)
pairs = {f"p{i}_{j}": np.asarray(model.project((names[i], names[j])).datavector(flatten=False))
         for i, j in itertools.combinations(range(len(names)), 2)}
np.savez(out_path, **marginals, **pairs)
print(json.dumps(seconds))
