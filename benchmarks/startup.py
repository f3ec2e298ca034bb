"""CPU seconds of ``python -m dpknn --help`` (the cost every command pays before it reads an argument), and
the heavy libraries that loading the parser imports (none should: the package's names load lazily,
``dpknn.utils._lazy``). Median of ``--runs`` fresh processes, with the date and the machine's load.

    python benchmarks/startup.py
"""

import argparse
import datetime
import os
import resource
import statistics
import subprocess
import sys
import tempfile


def cpu_of(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, capture_output=True, cwd=tempfile.gettempdir())   # the installed package
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    load = os.getloadavg()
    print(f"{datetime.date.today()}, {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    help_cpu = statistics.median(cpu_of([sys.executable, "-m", "dpknn", "--help"]) for _ in range(args.runs))
    bare = statistics.median(cpu_of([sys.executable, "-c", "pass"]) for _ in range(args.runs))
    probe = ("import sys; from dpknn.cli._main import build_parser; build_parser(); "
             "heavy = ('sklearn', 'scipy', 'pandas', 'pyarrow', 'dask', 'torch'); "
             "print(','.join(x for x in heavy if x in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True,
                            cwd=tempfile.gettempdir()).stdout.strip()
    print(f"python -m dpknn --help: {help_cpu:.2f} CPU-s (median of {args.runs}; a bare interpreter {bare:.2f})")
    print(f"heavy libraries imported by the parser: {loaded or 'none'}")


if __name__ == "__main__":
    main()
