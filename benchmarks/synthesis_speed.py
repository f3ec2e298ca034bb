"""Fit + sample time of the marginal synthesisers (MST, AIM and the default) on a wide table with gaps.

The table is ``benchmarks/benchmarks/wide_table.py``'s: d categorical attributes of 2-16 codes, each
following the previous one 60 % of the time, 20 % MCAR gaps. Each cell of the output is one fit on n rows
and a sample of n rows, in a fresh process (so that no cache or thread pool of an earlier cell helps),
with wall and CPU seconds; the header gives the date, the machine's cores and its load average before
the run, since every figure depends on them. The table of ``docs/synthesis.md`` ("Speed") is printed by

    python benchmarks/synthesis_speed.py --rows 20000 --epsilons 0.5,1,2,4
    python benchmarks/synthesis_speed.py --rows 1000000 --epsilons 1,4

A fit's time depends on its seed (AIM's rounds choose other tables, and a model of other size), so
``--seeds 0:30`` runs each cell once per seed and prints the median, the largest (with its seed), and how
many seeds took at most ``--within`` seconds:

    python benchmarks/synthesis_speed.py --rows 20000 --epsilons 4 --methods auto --seeds 0:30

Not run by CI (tens of seconds per cell at 10^6 rows).
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

ONE = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {bench!r})
from benchmarks.wide_table import wide_table
from dpknn.synth import AIMSynthesizer, AutoSynthesizer, MSTSynthesizer
df, attrs = wide_table({rows}, d={d})
cls = {{"mst": MSTSynthesizer, "aim": AIMSynthesizer, "auto": AutoSynthesizer}}[{method!r}]
wall, cpu = time.perf_counter(), time.process_time()
model = cls(attrs, epsilon={eps}, rng={seed}).fit(df)
model.sample({rows}, rng={seed} + 1)
inner = getattr(model, "synthesizer_", model)
print(json.dumps({{"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                  "chosen": getattr(model, "method_", None), "tables": len(inner.measurements_),
                  "cells": inner.model_.tree.size(inner.model_.sizes)}}))
"""


def cell(method, rows, d, eps, seed):
    code = ONE.format(bench=os.path.dirname(os.path.abspath(__file__)), rows=rows, d=d, method=method, eps=eps,
                      seed=seed)
    # -P: the working directory does not go first on sys.path, so PYTHONPATH can choose another checkout's dpknn.
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def dpknn_location():
    """The folder of the dpknn the cells import (the same interpreter and flags)."""
    code = "import os, dpknn; print(os.path.dirname(dpknn.__file__))"
    return subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--d", type=int, default=10, help="attributes (default 10)")
    ap.add_argument("--epsilons", default="0.5,1,2,4")
    ap.add_argument("--methods", default="mst,aim,auto")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", default=None, help="first:end, one run per seed (overrides --seed)")
    ap.add_argument("--within", type=float, default=5.0, help="seconds counted against with --seeds (default 5)")
    args = ap.parse_args()
    if args.seeds is not None:
        return over_seeds(args)
    epsilons = [float(e) for e in args.epsilons.split(",")]
    methods = args.methods.split(",")
    load = os.getloadavg()
    print(f"{datetime.date.today()}, {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"fit + sample of {args.rows:,} x {args.d} (wide_table, 20 % MCAR gaps), seed {args.seed}; "
          f"seconds wall / CPU; dpknn from {dpknn_location()}")
    print()
    print("| method | " + " | ".join(f"ε = {e:g}" for e in epsilons) + " |")
    print("|---|" + "---|" * len(epsilons))
    names = {"mst": "MST", "aim": "AIM", "auto": "default (auto)"}
    for method in methods:
        row = []
        for eps in epsilons:
            r = cell(method, args.rows, args.d, eps, args.seed)
            chosen = f" ({r['chosen']})" if r["chosen"] else ""
            row.append(f"{r['wall']:.1f} / {r['cpu']:.1f}{chosen}")
        print(f"| {names.get(method, method)} | " + " | ".join(row) + " |", flush=True)


def over_seeds(args):
    first, end = (int(x) for x in args.seeds.split(":"))
    seeds = range(first, end)
    load = os.getloadavg()
    print(f"{datetime.datetime.now():%Y-%m-%d %H:%M}, {os.cpu_count()} cores, load average {load[0]:.2f} "
          f"{load[1]:.2f} {load[2]:.2f}; fit + sample of {args.rows:,} x {args.d}, seeds {first}-{end - 1}; wall "
          f"seconds; dpknn from {dpknn_location()}")
    print()
    print(f"| method | ε | median | largest (seed: tables, model cells) | seeds within {args.within:g} s | "
          "model cells, median (range) |")
    print("|---|---|---|---|---|---|")
    for method in args.methods.split(","):
        for eps in (float(e) for e in args.epsilons.split(",")):
            runs = [cell(method, args.rows, args.d, eps, seed) for seed in seeds]
            walls, cells = [r["wall"] for r in runs], [r["cells"] for r in runs]
            worst = max(range(len(walls)), key=walls.__getitem__)
            print(f"| {method} | {eps:g} | {statistics.median(walls):.1f} | {walls[worst]:.1f} ({seeds[worst]}: "
                  f"{runs[worst]['tables']}, {cells[worst]:,}) | {sum(w <= args.within for w in walls)} of "
                  f"{len(walls)} | {statistics.median(cells):,.0f} ({min(cells):,}-{max(cells):,}) |", flush=True)


if __name__ == "__main__":
    main()
