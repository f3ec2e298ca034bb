"""A billion census rows out of core on one machine: imputation, a release and RWN, measured.

Writes ``--n`` synthetic census records (``dpknn.datasets.make_census``: nine known attributes,
INCWAGE missing for about a fifth, INCWAGE_TRUE) as Parquet partitions of ``--rows`` records, in
parallel and resumably (a partition already in ``--dir/input`` is kept; each is written under a
hidden name and renamed when complete), then runs the three commands a statistician would run on
that folder, each on a fresh local Dask cluster of ``--workers`` single-threaded worker processes:

1. ``dpknn impute`` (exact donors and L1(D)); first on a 10^7-row prefix of the folder, whose
   output and L1(D) are checked against ``KNNImputer.fit_transform`` of the same rows in memory;
2. ``dpknn release`` of a count and a mean (INCWAGE of people aged 20-59, smooth PolyPlace);
3. ``dpknn rwn --method sampled_pairs`` (pairs drawn within each partition).

For each it prints the wall time, the peak resident memory of each worker (workers are restarted
between commands) and of the command's own process (the Dask client), and the peak size of what
it staged on disk. Before starting it states the free disk the run needs and stops if there is
not that much. Outputs and staging are removed after each command; ``--keep-input`` keeps the
partitions for another run (they are removed otherwise). Progress and figures go to the log.

Usage:
  python benchmarks/billion.py                       # 10^9 rows in /tmp/dpknn-billion
  python benchmarks/billion.py --n 100000000 --dir /tmp/dpknn-1e8 --keep-input
  python benchmarks/billion.py --n 10000000 --steps impute,release
"""

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
from joblib import Parallel, delayed

from dpknn.datasets import census_schema, make_census
from dpknn.impute import KNNImputer
from dpknn.impute._distributed import parquet_partitions

logger = logging.getLogger("billion")

KNOWN = ["AGE", "SCHOOL", "SEX", "RACE", "RELATE", "MARST", "EMPSTAT", "CLASSWKR", "URBAN"]
PREFIX_ROWS = 10**7
# Measured at 10^8 rows (bytes per record): input Parquet, the imputed output with its flag
# column, impute's staging (class key, row, incomplete flag, INCWAGE as float32) with the donors'
# inboxes, and RWN's output.
BYTES_PER_ROW = {"input": 5.2, "impute_out": 5.5, "staging": 19.0, "rwn_out": 9.5}
STEPS = ("prefix", "impute", "release", "rwn")

QUERIES = """\
[[query]]
name = "people aged 20-59"
type = "count"
where = { AGE = { low = 20, high = 59 } }
epsilon = 1.0

[[query]]
name = "mean wage, ages 20-59"
type = "mean"
column = "INCWAGE"
where = { AGE = { low = 20, high = 59 } }
bounds = [0, 5001]
epsilon = 1.0
count_epsilon = 1.0
"""


def gib(nbytes):
    return nbytes / 2**30


def write_partition(folder, p, rows):
    target = folder / f"part.{p:05d}.parquet"
    if target.exists():
        return 0
    df = make_census(rows, rng=p)
    df.index = df.index + p * rows
    tmp = folder / f".part.{p:05d}.parquet.partial"
    df.to_parquet(tmp)
    os.replace(tmp, target)
    return 1


def build(folder, partitions, rows, workers):
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(".part.*.partial"):
        stale.unlink()
    t = time.perf_counter()
    from tqdm.auto import tqdm

    new = sum(Parallel(n_jobs=workers, return_as="generator")(
        delayed(write_partition)(folder, p, rows) for p in tqdm(range(partitions), desc="write partitions")))
    logger.info("input: %d partitions of %s rows (%d new) in %.0f s, %.2f GiB", partitions, f"{rows:,}", new,
                time.perf_counter() - t, gib(folder_size(folder)))


def folder_size(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_size
            except FileNotFoundError:  # removed while walking
                pass
    return total


class StagingWatch:
    """The peak total size of the hidden folders (staging, partial outputs) under ``root``."""

    def __init__(self, root, every=2.0):
        self.root, self.every, self.peak = Path(root), every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(self.every):
            hidden = [p for p in self.root.iterdir() if p.name.startswith(".") and p.is_dir()]
            self.peak = max(self.peak, sum(folder_size(p) for p in hidden))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def peak_rss(pid="self"):
    """The peak resident memory of a process in bytes (VmHWM: unlike getrusage's maxrss, which a
    child inherits from the process that forked it, it counts this process's own pages only)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except FileNotFoundError:
        pass
    return 0


def run_command(name, argv, args, root):
    """Run one ``dpknn`` command on a fresh local cluster (so that each command's worker peaks
    are its own); its figures as a dict."""
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      memory_limit=args.memory_limit, dashboard_address=":0") as cluster, Client(cluster) as client:
        argv = [*argv, "--scheduler", client.scheduler.address]
        logger.info("%s: %s", name, " ".join(argv))
        t = time.perf_counter()
        client_peak = 0
        with StagingWatch(root) as watch:
            proc = subprocess.Popen(argv)
            while proc.poll() is None:
                client_peak = max(client_peak, peak_rss(proc.pid))
                time.sleep(0.5)
        seconds = time.perf_counter() - t
        if proc.returncode != 0:
            raise SystemExit(f"{name} failed with exit status {proc.returncode}")
        workers = client.run(peak_rss)
    out = {"step": name, "seconds": round(seconds, 1), "client_peak_gib": round(gib(client_peak), 2),
           "worker_peak_gib": sorted(round(gib(v), 2) for v in workers.values()),
           "staged_peak_gib": round(gib(watch.peak), 2)}
    logger.info("%s: %s", name, out)
    return out


def check_prefix(args, work):
    """``dpknn impute`` on the first 10^7 rows against the in-memory imputer on the same rows."""
    files = parquet_partitions(args.dir / "input")
    take = max(1, PREFIX_ROWS // args.rows)
    prefix = work / "prefix-input"
    prefix.mkdir()
    for f in files[:take]:
        os.link(f, prefix / f.name)
    out = work / "prefix-imputed"
    diag = work / "prefix-diagnostics.json"
    argv = dpknn("impute", "--schema", str(work / "census.toml"), "--input", str(prefix), "--output", str(out),
                 "--k", str(args.k), "--diagnostics", str(diag))
    figures = run_command("impute 10^7 prefix", argv, args, work)
    t = time.perf_counter()
    df = pd.concat([pd.read_parquet(f) for f in files[:take]])
    imp = KNNImputer(census_schema(), k=args.k)
    expected = imp.fit_transform(df)
    got = pd.concat([pd.read_parquet(out / f.name) for f in files[:take]])
    try:
        pd.testing.assert_frame_equal(got, expected, check_like=False)
    except AssertionError as err:
        raise SystemExit(f"the imputed prefix differs from the in-memory one: {err}") from None
    l1 = json.loads(diag.read_text())["l1"]
    if l1 != imp.l1_:
        raise SystemExit(f"L1(D) of the prefix: {l1} on Dask, {imp.l1_} in memory")
    logger.info("prefix: %s rows imputed on Dask equal the in-memory fit_transform (L1(D) = %d both); checked "
                "in %.0f s", f"{len(df):,}", l1, time.perf_counter() - t)
    shutil.rmtree(out)
    shutil.rmtree(prefix)
    diag.unlink()
    (work / "prefix-imputed.json").unlink(missing_ok=True)
    return {**figures, "rows": len(df), "l1": l1, "equal_to_in_memory": True}


def dpknn(*args):
    return [sys.executable, "-m", "dpknn", *args]


def disk_needed(n, steps):
    b = BYTES_PER_ROW
    per_row = b["input"] + max(b["impute_out"] + b["staging"] if "impute" in steps else 0,
                               b["staging"] if "release" in steps else 0,
                               b["rwn_out"] if "rwn" in steps else 0)
    return n * per_row * 1.1


def census_parser(doc):
    """The options of a run on the census partitions (this script's and ``census_synth.py``'s)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10**9, help="records (default 10^9)")
    ap.add_argument("--rows", type=int, default=10**6, help="records per partition")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/dpknn-billion"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="4GiB", help="per worker (Dask restarts a worker past it)")
    return ap


def main():
    ap = census_parser(__doc__)
    ap.add_argument("--k", type=int, default=1)
    ap.add_argument("--m", type=int, default=20, help="RWN sampled pairs: partners per record")
    ap.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated, of {','.join(STEPS)}")
    ap.add_argument("--keep-input", action="store_true", help="keep the partitions for another run")
    ap.add_argument("--results", type=Path, help="also write the figures to this JSON file")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = sorted(set(steps) - set(STEPS))
    if unknown:
        ap.error(f"unknown steps {unknown}; choose from {STEPS}")
    if args.n % args.rows:
        ap.error("--n must be a multiple of --rows")
    partitions = args.n // args.rows
    args.dir.mkdir(parents=True, exist_ok=True)
    have = folder_size(args.dir / "input") if (args.dir / "input").exists() else 0
    need = disk_needed(args.n, steps) - have
    free = shutil.disk_usage(args.dir).free
    logger.info("%s rows in %d partitions: this run needs about %.1f GiB of free disk in %s (input %.1f GiB, of "
                "which %.1f GiB are written already; the largest pass's staging and output on top); %.1f GiB free",
                f"{args.n:,}", partitions, gib(need), args.dir, gib(args.n * BYTES_PER_ROW["input"]), gib(have),
                gib(free))
    if need > free:
        raise SystemExit(f"not enough free disk: about {gib(need):.1f} GiB needed, {gib(free):.1f} GiB free; choose "
                         "a smaller --n or another --dir.")
    build(args.dir / "input", partitions, args.rows, args.workers)
    work = args.dir / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    (work / "census.toml").write_text(census_schema().to_toml())
    (work / "queries.toml").write_text(QUERIES)
    src = str(args.dir / "input")
    results = []
    try:
        if "prefix" in steps:
            results.append(check_prefix(args, work))
        if "impute" in steps:
            out = work / "imputed"
            results.append(run_command("impute", dpknn(
                "impute", "--schema", str(work / "census.toml"), "--input", src, "--output", str(out),
                "--k", str(args.k), "--diagnostics", str(work / "impute-diagnostics.json")), args, work))
            diag = json.loads((work / "impute-diagnostics.json").read_text())
            results[-1].update(rows=diag["n_records"], imputed=diag["n_incomplete"], l1=diag["l1"],
                               passes=diag["seconds"], output_gib=round(gib(folder_size(out)), 2))
            shutil.rmtree(out)
        if "release" in steps:
            results.append(run_command("release", dpknn(
                "release", "--schema", str(work / "census.toml"), "--queries", str(work / "queries.toml"),
                "--input", src, "--output", str(work / "release.json"), "--epsilon", "3", "--k", str(args.k)),
                args, args.dir))
            results[-1]["released"] = [{"name": r.get("name"), "value": r["value"]}
                                       for r in json.loads((work / "release.json").read_text())["releases"]]
        if "rwn" in steps:
            out = work / "rwn"
            results.append(run_command("rwn sampled_pairs", dpknn(
                "rwn", "--input", src, "--output", str(out), "--columns", ",".join(KNOWN), "--method",
                "sampled_pairs", "--m", str(args.m), "--k", "5", "--seed", "1"), args, work))
            results[-1]["output_gib"] = round(gib(folder_size(out)), 2)
            shutil.rmtree(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        for left in args.dir.glob(".dpknn-imputed-*"):   # a release killed outright
            shutil.rmtree(left, ignore_errors=True)
        if not args.keep_input:
            shutil.rmtree(args.dir / "input", ignore_errors=True)
    for r in results:
        rows = r.get("rows", args.n)
        print(f"{r['step']}: {r['seconds']:.0f} s ({rows / r['seconds']:,.0f} rows/s), peak RSS per worker "
              f"{max(r['worker_peak_gib']):.2f} GiB, client {r['client_peak_gib']:.2f} GiB, staged at most "
              f"{r['staged_peak_gib']:.2f} GiB" + (f"; passes {r['passes']}" if "passes" in r else ""))
    if args.results:
        args.results.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
