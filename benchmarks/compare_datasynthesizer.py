"""Side-by-side: dpknn's PrivBayes(E) against DataSynthesizer's correlated mode on the same table.

The table is ``benchmarks/benchmarks/wide_table.py``: 15 categorical attributes, domains 2-16,
chained dependence, 20% MCAR gaps (DataSynthesizer gets the same CSV; it treats a gap as its own
bin). Both use degree k = 2 and epsilon = 1. DataSynthesizer runs in its own Python (it pins old
libraries; install it in a separate virtual environment) under a time limit, and the script
prints the ratio, or a lower bound on it when DataSynthesizer does not finish.

DataSynthesizer is not a like-for-like privacy peer: it reads domains, min/max and binary-ness
from the data and mixes substitution sensitivities with add/remove counts (docs/synthesis.md).

Usage:
    python -m venv /tmp/dsvenv && /tmp/dsvenv/bin/pip install DataSynthesizer==0.1.13
    python benchmarks/compare_datasynthesizer.py --n 32561 --peer-python /tmp/dsvenv/bin/python --budget 900
"""

import argparse
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "benchmarks"))
from wide_table import wide_table

from dpknn.synth import ColumnwiseSynthesizer, PrivBayes

PEER = textwrap.dedent("""
    import sys, time
    from DataSynthesizer.DataDescriber import DataDescriber
    from DataSynthesizer.DataGenerator import DataGenerator
    path, n, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    t = time.perf_counter()
    desc = DataDescriber(category_threshold=20)
    desc.describe_dataset_in_correlated_attribute_mode(dataset_file=path, epsilon=1.0, k=2,
        attribute_to_is_categorical={f"A{j}": True for j in range(d)})
    desc.save_dataset_description_to_file(path + ".json")
    gen = DataGenerator()
    gen.generate_dataset_in_correlated_attribute_mode(n, path + ".json")
    print(time.perf_counter() - t)
""")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=32_561)
    ap.add_argument("--peer-python", default=None, help="python with DataSynthesizer installed")
    ap.add_argument("--budget", type=float, default=900.0, help="seconds allowed to DataSynthesizer")
    args = ap.parse_args()
    df, attrs = wide_table(args.n)
    rows = []
    for label, make in [("dpknn PrivBayesE k=2", lambda: PrivBayes(attrs, epsilon=1.0, rng=0)),
                        ("dpknn PrivBayes k=2 (complete rows)",
                         lambda: PrivBayes(attrs, epsilon=1.0, missing="complete_rows", rng=0)),
                        ("dpknn PrivBayes k=2 (missing as value)",
                         lambda: PrivBayes(attrs, epsilon=1.0, missing="value", rng=0)),
                        ("dpknn PrivBayesE k=3", lambda: PrivBayes(attrs, epsilon=1.0, degree=3, rng=0)),
                        ("dpknn Columnwise", lambda: ColumnwiseSynthesizer(attrs, epsilon=1.0, rng=0))]:
        t = time.perf_counter()
        make().fit(df).sample(args.n, rng=1)
        rows.append((label, time.perf_counter() - t))
        print(f"{label:45s} {rows[-1][1]:8.2f} s", flush=True)
    ours = rows[0][1]
    if args.peer_python is None:
        print("DataSynthesizer: not run (pass --peer-python)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "wide.csv")
        df.to_csv(path, index=False)
        script = Path(tmp) / "peer.py"
        script.write_text(PEER)
        t = time.perf_counter()
        try:
            res = subprocess.run([args.peer_python, str(script), path, str(args.n), str(len(attrs))],
                                 capture_output=True, text=True, timeout=args.budget)
        except subprocess.TimeoutExpired:
            print(f"{'DataSynthesizer 0.1.13 correlated mode k=2':45s} unfinished after {args.budget:.0f} s: "
                  f"ratio > {args.budget / ours:.0f}x")
            return
        if res.returncode != 0:
            print("DataSynthesizer failed:\n" + res.stderr[-2000:])
            return
        peer = time.perf_counter() - t
        print(f"{'DataSynthesizer 0.1.13 correlated mode k=2':45s} {peer:8.2f} s  ratio {peer / ours:.0f}x")


if __name__ == "__main__":
    main()
