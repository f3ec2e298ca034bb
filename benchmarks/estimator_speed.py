"""Seconds of the marginal synthesisers' estimator (``dpknn.synth._graphical_model.fit_model``) on fixed tables.

The tables are the true one- and two-way tables of ``benchmarks/benchmarks/wide_table.py``'s table (20,000 rows,
10 attributes, a gap its own code) with Gaussian noise of a fixed seed: every one-way table and the pairs
(i, i + 1), (i, i + 2) and (i, i + 3), close to the sets AIM measures on that table at ε = 4. No privacy is at stake
here, only time, and fixed inputs let two versions of the code be timed on the same problem, which AIM's own
rounds do not give (a change in the last bits of a fit can change the rounds' choices). Each fit runs ``--repeats``
times; the first and the fastest are printed, with the steps taken and the loss reached. The estimator caches the
sparse matrices of its tables' queries across fits (AIM's rounds refit the same tables), so the first L-BFGS repeat
is the one that builds them; the mirror-descent fit reuses them, as AIM's final fit reuses its rounds':

    python benchmarks/estimator_speed.py
    PYTHONPATH=/path/to/an/older/checkout python benchmarks/estimator_speed.py

Not run by CI.
"""

import argparse
import datetime
import logging
import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchmarks.wide_table import wide_table

from dpknn.synth._graphical_model import Measurement, fit_model, junction_tree


def problem(rows, d, sigma, seed):
    """(sizes, noisy measurements) of the wide table (module docstring)."""
    df, attrs = wide_table(rows, d=d)
    sizes = [len(a.categories) + 1 for a in attrs]   # a gap: the last code
    x = np.column_stack([np.where(df[a.name].isna(), len(a.categories), df[a.name].fillna(0)).astype(int)
                         for a in attrs])
    rng = np.random.default_rng(seed)
    sets = [(i,) for i in range(d)] + [(i, i + k) for k in (1, 2, 3) for i in range(d - k)]
    out = []
    for s in sets:
        counts = np.zeros([sizes[v] for v in s])
        np.add.at(counts, tuple(x[:, v] for v in s), 1)
        out.append(Measurement(s, counts + rng.normal(0, sigma, counts.shape), sigma))
    return sizes, out


class _Steps(logging.Handler):
    """The steps of the last fit, from the estimator's debug line ("... N steps, ...")."""

    steps = None

    def emit(self, record):
        if record.msg.startswith("estimator"):
            self.steps = record.args[3]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--sigma", type=float, default=20.0, help="noise sd of every table (default 20 records)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    sizes, ms = problem(args.rows, args.d, args.sigma, seed=0)
    cells = junction_tree(sizes, [m.attributes for m in ms]).size(sizes)
    load = os.getloadavg()
    print(f"{datetime.datetime.now():%Y-%m-%d %H:%M}, {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f}; {len(ms)} tables, a model of {cells:,} cells; dpknn from "
          f"{os.path.dirname(fit_model.__code__.co_filename)}")
    print()
    steps = _Steps()
    log = logging.getLogger("dpknn.synth._graphical_model")
    log.setLevel(logging.DEBUG)
    log.addHandler(steps)
    print("| fit | seconds, first repeat | seconds, fastest | steps | ms a step (fastest) | loss |")
    print("|---|---|---|---|---|---|")
    for method, iterations in (("lbfgs", 300), ("mirror", 300)):
        spent = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            with threadpool_limits(limits=1, user_api="blas"):   # as the synthesisers' fits run it
                model = fit_model(sizes, [m.attributes for m in ms], ms, iterations=iterations, method=method)
            spent.append(time.perf_counter() - t)
        loss = sum(float(((model.total * model.marginal(m.attributes) - m.counts) ** 2).sum()) / (2 * m.sigma**2)
                   for m in ms)
        print(f"| {method}, {iterations} steps at most | {spent[0]:.2f} | {min(spent):.2f} | {steps.steps} | "
              f"{1000 * min(spent) / steps.steps:.2f} | {loss:.6g} |", flush=True)


if __name__ == "__main__":
    main()
