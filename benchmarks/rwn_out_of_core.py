"""Out-of-core RWN: perturb a partitioned Parquet census extract on a local Dask cluster.

Writes ``--partitions`` Parquet files of ``--rows`` synthetic census records each (the known
attributes of ``make_census``, categoricals as pandas categories) unless they exist, runs
``dpknn.sdc.perturb_parquet`` (exact RWN per partition, one single-threaded worker per core) and
prints the throughput (rows/s) and each worker's peak resident memory.

Usage: python benchmarks/rwn_out_of_core.py --dir /tmp/census-parquet --partitions 100 --rows 1000000
"""

import argparse
import resource
import shutil
import time
from pathlib import Path

from dpknn.datasets import make_census
from dpknn.sdc import RWN, perturb_parquet

KNOWN = ["AGE", "SCHOOL", "SEX", "RACE", "RELATE", "MARST", "EMPSTAT", "CLASSWKR", "URBAN"]
CATEGORICAL = ["SEX", "RACE", "RELATE", "MARST", "EMPSTAT", "CLASSWKR", "URBAN"]


def peak_rss_gib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/census-parquet"))
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=5)
    args = ap.parse_args()
    src = args.dir / "input"
    if not src.exists():
        src.mkdir(parents=True)
        t = time.perf_counter()
        for p in range(args.partitions):
            df = make_census(args.rows, rng=p)[KNOWN]
            df[CATEGORICAL] = df[CATEGORICAL].astype("category")
            df.index = df.index + p * args.rows
            df.to_parquet(src / f"part.{p:05d}.parquet")
        print(f"wrote {args.partitions} x {args.rows:,} rows in {time.perf_counter() - t:.0f} s")
    out = args.dir / "output"
    shutil.rmtree(out, ignore_errors=True)
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="10GiB") as cluster, \
            Client(cluster) as client:
        t = time.perf_counter()
        info = perturb_parquet(src, out, RWN(k=args.k, rng=1), client=client)
        dt = time.perf_counter() - t
        peaks = client.run(peak_rss_gib)
    rows = info["partitions"] * args.rows
    print(f"{rows:,} rows in {info['partitions']} partitions: {dt:.0f} s, {rows / dt:,.0f} rows/s")
    for worker, gib in peaks.items():
        print(f"  worker {worker}: peak RSS {gib:.2f} GiB")
    per_worker = rows / dt / len(peaks)
    print(f"10^9 rows at {per_worker:,.0f} rows/s per single-threaded worker: "
          f"{1e9 / per_worker / 3600:.1f} worker-hours, e.g. {1e9 / per_worker / 3600 / 64 * 60:.0f} min on 64 workers "
          f"(each needing about {max(peaks.values()):.1f} GiB for {args.rows:,}-row partitions)")


if __name__ == "__main__":
    main()
