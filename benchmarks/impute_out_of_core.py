"""Out-of-core exact k-NN imputation: a partitioned Parquet census extract on a local Dask cluster.

Writes ``--partitions`` Parquet files of ``--rows`` synthetic census records each (the columns of
``make_census``: nine known attributes, INCWAGE with gaps, INCWAGE_TRUE) unless they exist, runs
``dpknn.impute.impute_parquet`` on two single-threaded workers with ``--memory-limit`` each
and prints the time of each pass, the throughput (rows/s) and each worker's and the client's peak
resident memory. With ``--in-memory`` it also reads the whole folder into one process, fits
``KNNImputer`` and writes one Parquet file, and prints the ratio of the two (the peer the issue
names). Ends with the arithmetic for 10^9 rows from the measured per-worker throughput. With
``--universe`` INCWAGE gets the universe AGE >= 10 (younger records not applicable), so the run takes
the universes' path (each partition encoded again by the universe's schema, the universe's records
staged apart) and the in-memory fit its restricted imputation.

Usage:
  python benchmarks/impute_out_of_core.py --dir /tmp/census-impute --partitions 100 --rows 1000000
  python benchmarks/impute_out_of_core.py --dir /tmp/census-1e7 --partitions 10 --rows 1000000 --in-memory
  python benchmarks/impute_out_of_core.py --dir /tmp/census-1e7 --partitions 10 --rows 1000000 --in-memory --universe
"""

import argparse
import dataclasses
import resource
import shutil
import time
from pathlib import Path

import pandas as pd

from dpknn import Schema
from dpknn.datasets import census_schema, make_census
from dpknn.impute import KNNImputer, impute_parquet
from dpknn.impute._distributed import parquet_partitions


def schema_of(universe):
    """The census schema, with INCWAGE's universe AGE >= 10 if ``universe``."""
    schema = census_schema()
    if not universe:
        return schema
    (wage,) = schema.imputed
    return Schema(known=schema.known, imputed=[dataclasses.replace(wage, universe={"AGE": (10, 99)})])


def peak_rss_gib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def build(src, partitions, rows):
    src.mkdir(parents=True)
    t = time.perf_counter()
    for p in range(partitions):
        df = make_census(rows, rng=p)
        df.index = df.index + p * rows
        df.to_parquet(src / f"part.{p:05d}.parquet")
    print(f"wrote {partitions} x {rows:,} rows in {time.perf_counter() - t:.0f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/census-impute"))
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="1GiB", help="per worker (Dask pauses and restarts workers past it)")
    ap.add_argument("--in-memory", action="store_true", help="also time the in-memory fit and print the ratio")
    ap.add_argument("--universe", action="store_true", help="INCWAGE's universe AGE >= 10 (the universes' path)")
    args = ap.parse_args()
    schema = schema_of(args.universe)
    src = args.dir / "input"
    if not src.exists():
        build(src, args.partitions, args.rows)
    out = args.dir / "output"
    shutil.rmtree(out, ignore_errors=True)
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, memory_limit=args.memory_limit,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        t = time.perf_counter()
        fit = impute_parquet(src, out, schema, k=args.k, client=client, staging_dir=args.dir)
        dt = time.perf_counter() - t
        peaks = client.run(peak_rss_gib)
    rows = fit.n_records_
    where = f", INCWAGE's universe AGE >= 10 ({fit.groups_[0].n_records:,} records)" if args.universe else ""
    print(f"{rows:,} rows in {fit.n_partitions_} partitions, k={args.k}{where}: {dt:.1f} s end to end, "
          f"{rows / dt:,.0f} rows/s; L1 = {fit.l1_}, {fit.n_classes_:,} classes, {fit.n_incomplete_:,} imputed")
    print("  passes: " + ", ".join(f"{name} {sec:.1f} s" for name, sec in fit.seconds_.items()))
    for worker, gib in peaks.items():
        print(f"  worker {worker}: peak RSS {gib:.2f} GiB")
    print(f"  client: peak RSS {peak_rss_gib():.2f} GiB")
    per_worker = rows / dt / len(peaks)
    print(f"10^9 rows at {per_worker:,.0f} rows/s per single-threaded worker: {1e9 / per_worker / 3600:.2f} "
          f"worker-hours, e.g. {1e9 / per_worker / 64:.0f} s on 64 workers if the shared file system keeps up "
          f"(each needing about {max(peaks.values()):.1f} GiB for {args.rows:,}-row partitions)")
    if args.in_memory:
        t = time.perf_counter()
        df = pd.concat([pd.read_parquet(f) for f in parquet_partitions(src)])
        t_read = time.perf_counter() - t
        t = time.perf_counter()
        imp = KNNImputer(schema, k=args.k)
        filled = imp.fit_transform(df)
        t_fit = time.perf_counter() - t
        t = time.perf_counter()
        filled.to_parquet(args.dir / "in-memory.parquet")
        t_write = time.perf_counter() - t
        assert imp.l1_ == fit.l1_ and imp.l1_cases_ == fit.l1_cases_
        total = t_read + t_fit + t_write
        print(f"in memory: read {t_read:.1f} s, fit_transform {t_fit:.1f} s, write {t_write:.1f} s "
              f"(peak RSS {peak_rss_gib():.1f} GiB)")
        print(f"ratio Dask / in-memory: {dt / t_fit:.2f}x the fit alone, {dt / total:.2f}x read+fit+write")
        (args.dir / "in-memory.parquet").unlink()
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
