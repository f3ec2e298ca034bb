"""A synthetic census out of core: DP synthesis of up to 10^9 census rows with gaps on Dask, measured.

Writes ``--n`` census records (``dpknn.datasets.make_census``, INCWAGE missing for about a fifth) as Parquet
partitions of ``--rows`` records with ``benchmarks/billion.py``'s writer (resumable; ``--keep-input`` keeps them),
then runs the steps asked for:

- ``prefix``: :func:`dpknn.synth._distributed.synthesize_parquet` on the first 10^7 rows (a folder of hard links)
  and ``AutoSynthesizer.fit`` of the same rows in memory, same seed: the released tables, quantiles, point masses,
  the fitted model and the published record must be equal (the run stops otherwise). Prints both fits' times
  and the in-memory sample of 10^7 rows, and what an analyst sees on the real and the synthetic prefix (the OLS
  of wage on age, sex and schooling, the share of zero and of missing wages, the 90th percentile), also for the
  default told that regression (``--analysis``).
- ``memory``: the in-memory path's scale: fit + sample at 10^6 rows (10^7 is the prefix step's).
- ``folder``: ``dpknn synth`` on the whole folder into a folder of as many synthetic rows, on a fresh local
  cluster of ``--workers`` single-threaded worker processes: wall time, each pass's time (the command's
  ``--diagnostics``), peak resident memory of each worker and of the client, and the output's size on disk.
- ``peers``: private-pgm's MST and AIM (``benchmarks/peers/pgm_peer.py``, in the peers' own Python) on the
  first 10^4, 10^5, 10^6 ... rows of the same table (or ``--peer-sizes``) until each does not finish in
  ``--peer-timeout`` seconds (default 30 min); their time and peak memory at each size.

Usage:
  python benchmarks/census_synth.py --n 1000000000 --keep-input
  python benchmarks/census_synth.py --n 10000000 --steps prefix,memory
  python benchmarks/census_synth.py --n 10000000 --steps peers --peer-python /tmp/peervenv/bin/python \\
      --pgm-dir /tmp/pgmsrc/mechanisms
"""

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from billion import build, census_parser, dpknn, folder_size, gib, peak_rss, run_command

from dpknn.datasets import census_schema
from dpknn.schema import Discretization
from dpknn.synth import AutoSynthesizer
from dpknn.utils._cluster import parquet_partitions

logger = logging.getLogger("census_synth")

STEPS = ("prefix", "memory", "folder", "peers")
PREFIX_ROWS = 10**7
ATTRS = [*census_schema().known, *census_schema().imputed]
KNOWN = [a.name for a in census_schema().known]
NAMES = [a.name for a in ATTRS]
# Input Parquet (billion.py) and the synthetic output, bytes per row (measured at 10^7).
BYTES_PER_ROW = {"input": 5.2, "output": 4.0}
PEER = Path(__file__).resolve().parent / "peers" / "pgm_peer.py"


def synthesizer(args):
    return AutoSynthesizer(ATTRS, epsilon=args.epsilon, never_missing=KNOWN, rng=args.seed)


def read_rows(files, n):
    return pd.concat([pd.read_parquet(f, columns=NAMES) for f in files], ignore_index=True).iloc[:n]


#: The regression an analyst fits on a census extract (wage on age, sex and schooling, where the wage is observed).
ANALYSIS = "INCWAGE ~ AGE + SEX + SCHOOL"


def what_analysts_see(df):
    """OLS of INCWAGE on AGE, SEX (a dummy) and SCHOOL over the rows with a wage, its R², the share of exact
    zero wages among them, the wages' 90th percentile and the share of missing wages."""
    import statsmodels.api as sm

    d = df.dropna(subset=["INCWAGE"])
    x = sm.add_constant(np.column_stack([d["AGE"].astype(float), (d["SEX"].astype(float) == 2).astype(float),
                                         d["SCHOOL"].astype(float)]))
    fit = sm.OLS(d["INCWAGE"].to_numpy(dtype=float), x).fit()
    return {"age": round(float(fit.params[1]), 2), "female": round(float(fit.params[2]), 1),
            "school": round(float(fit.params[3]), 2), "r2": round(float(fit.rsquared), 3),
            "zero_wage_share": round(float((d["INCWAGE"] == 0).mean()), 4),
            "p90_wage": round(float(d["INCWAGE"].quantile(0.9)), 1),
            "missing_wage_share": round(float(df["INCWAGE"].isna().mean()), 4)}


def check_prefix(args, work):
    """The folder fit of the first 10^7 rows against the in-memory fit of the same rows, same seed."""
    from dask.distributed import Client, LocalCluster

    from dpknn.synth import synthesize_parquet

    files = parquet_partitions(args.dir / "input")
    take = max(1, min(len(files), PREFIX_ROWS // args.rows))
    prefix = work / "prefix-input"
    prefix.mkdir()
    for f in files[:take]:
        os.link(f, prefix / f.name)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \
            Client(c) as client:
        t = time.perf_counter()
        done = synthesize_parquet(prefix, work / "prefix-synth", synthesizer(args), rows=take * args.rows,
                                  client=client, rng=args.seed + 1)
        folder_seconds = time.perf_counter() - t
    df = read_rows(files[:take], take * args.rows)
    t = time.perf_counter()
    memory = synthesizer(args).fit(df)
    fit_seconds = time.perf_counter() - t
    t = time.perf_counter()
    synthetic = memory.sample(len(df), rng=args.seed + 1)
    sample_seconds = time.perf_counter() - t
    analyses = {"real": what_analysts_see(df), "synthetic": what_analysts_see(synthetic)}
    told = AutoSynthesizer(ATTRS, epsilon=args.epsilon, never_missing=KNOWN, analyses=[ANALYSIS], rng=args.seed)
    analyses["synthetic, --analysis"] = what_analysts_see(told.fit(df).sample(len(df), rng=args.seed + 1))
    for name, seen in analyses.items():
        logger.info("prefix, %s: %s", name, seen)
    a, b = memory.synthesizer_, done.synthesizer.synthesizer_
    checks = {
        "record": json.dumps(memory.public_params(), default=str) == json.dumps(done.synthesizer.public_params(),
                                                                               default=str),
        "tables": len(a.measurements_) == len(b.measurements_) and all(
            x.attributes == y.attributes and np.array_equal(x.counts, y.counts)
            for x, y in zip(a.measurements_, b.measurements_)),
        "quantiles": a.bin_edges_ == b.bin_edges_ and a.point_masses_ == b.point_masses_,
        "model": all(np.array_equal(x, y) for x, y in zip(a.model_.clique_marginals(),
                                                           b.model_.clique_marginals())),
    }
    shutil.rmtree(prefix)
    shutil.rmtree(work / "prefix-synth")
    if not all(checks.values()):
        raise SystemExit(f"the folder fit of the prefix differs from the in-memory fit: {checks}")
    logger.info("prefix: %s rows, folder fit equal to in-memory (%s); folder %.1f s (%s), in memory fit %.1f s + "
                "sample %.1f s", f"{len(df):,}", ", ".join(checks), folder_seconds,
                {k: round(v, 1) for k, v in done.seconds.items()}, fit_seconds, sample_seconds)
    return {"step": "prefix", "rows": len(df), "equal": checks, "method": memory.method_,
            "tables": len(a.measurements_), "folder_seconds": round(folder_seconds, 1),
            "folder_passes": {k: round(v, 1) for k, v in done.seconds.items()},
            "memory_fit_seconds": round(fit_seconds, 1), "memory_sample_seconds": round(sample_seconds, 1),
            "analyses": analyses}


def in_memory(args, n):
    files = parquet_partitions(args.dir / "input")
    df = read_rows(files[:max(1, -(-n // args.rows))], n)
    t = time.perf_counter()
    model = synthesizer(args).fit(df)
    fit = time.perf_counter() - t
    t = time.perf_counter()
    model.sample(n, rng=1)
    sample = time.perf_counter() - t
    logger.info("in memory at %s rows: fit %.1f s (%s), sample %.1f s", f"{n:,}", fit, model.method_, sample)
    return {"step": "memory", "rows": n, "fit_seconds": round(fit, 1), "sample_seconds": round(sample, 1),
            "method": model.method_}


def folder(args, work):
    out = work / "synth"
    diag = work / "synth-diagnostics.json"
    argv = dpknn("synth", "--attributes", str(work / "census.toml"), "--input", str(args.dir / "input"),
                 "--output", str(out), "--epsilon", str(args.epsilon), "--rows", str(args.n),
                 "--seed", str(args.seed), "--diagnostics", str(diag))
    figures = run_command("synth", argv, args, work)
    d = json.loads(diag.read_text())
    figures.update(rows=d["input_rows"], passes={k: round(v, 1) for k, v in d["seconds"].items()},
                   output_gib=round(gib(folder_size(out)), 2), partitions=d["partitions"],
                   chosen=json.loads((work / "synth.json").read_text())["chosen"])
    shutil.rmtree(out)
    return figures


def peers(args):
    """private-pgm's MST and AIM on growing prefixes, until one does not finish in --peer-timeout."""
    files = parquet_partitions(args.dir / "input")
    disc = Discretization(ATTRS, 10)
    results, alive = [], dict.fromkeys(args.peers.split(","), True)
    sizes = [int(float(v)) for v in args.peer_sizes.split(",")] if args.peer_sizes else [
        10**k for k in range(4, 20) if 10**k <= args.n]
    for n in sizes:
        if not any(alive.values()):
            break
        df = read_rows(files[:max(1, -(-n // args.rows))], n)
        codes = disc.encode(df).astype(np.int64)
        codes = np.where(codes < 0, disc.sizes[:, None], codes)
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            pd.DataFrame(codes.T, columns=disc.names).to_csv(tmp / "codes.csv", index=False)
            (tmp / "domain.json").write_text(json.dumps({c: int(s) + 1 for c, s in zip(disc.names, disc.sizes)}))
            for which in [w for w, ok in alive.items() if ok]:
                cmd = [args.peer_python, str(PEER), args.pgm_dir, which, str(tmp / "codes.csv"),
                       str(tmp / "domain.json"), str(args.epsilon), "0", str(tmp / "out.csv")]
                t = time.perf_counter()
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                peak = 0
                while proc.poll() is None and time.perf_counter() - t < args.peer_timeout:
                    peak = max(peak, peak_rss(proc.pid))
                    time.sleep(0.5)
                finished = proc.poll() is not None
                if not finished:
                    proc.kill()
                _, err = proc.communicate()
                seconds = time.perf_counter() - t
                row = {"step": "peer", "peer": f"private-pgm {which.upper()}", "rows": n,
                       "seconds": round(seconds, 1), "peak_gib": round(gib(peak), 2),
                       "finished": finished and proc.returncode == 0}
                if finished and proc.returncode != 0:
                    row["error"] = err.strip().splitlines()[-1][:200] if err.strip() else f"exit {proc.returncode}"
                logger.info("peer: %s", row)
                results.append(row)
                alive[which] = row["finished"]
    return results


def main():
    ap = census_parser(__doc__)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", default="prefix,memory,folder", help=f"comma-separated, of {','.join(STEPS)}")
    ap.add_argument("--peer-python", default=None, help="the peers' Python (steps peers)")
    ap.add_argument("--pgm-dir", default=None, help="private-pgm's mechanisms folder (steps peers)")
    ap.add_argument("--peer-timeout", type=float, default=1800.0)
    ap.add_argument("--peers", default="mst,aim", help="which of private-pgm's mechanisms (steps peers)")
    ap.add_argument("--peer-sizes", default=None,
                    help="comma-separated row counts (default 10^4, 10^5, ... up to --n); a peer stops at its first "
                         "size that does not finish")
    ap.add_argument("--keep-input", action="store_true", help="keep the partitions for another run")
    ap.add_argument("--results", type=Path, help="also write the figures to this JSON file")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    if set(steps) - set(STEPS):
        ap.error(f"unknown steps {sorted(set(steps) - set(STEPS))}; choose from {STEPS}")
    if "peers" in steps and not (args.peer_python and args.pgm_dir):
        ap.error("the peers step needs --peer-python and --pgm-dir (benchmarks/README.md)")
    if args.n % args.rows:
        ap.error("--n must be a multiple of --rows")
    args.dir.mkdir(parents=True, exist_ok=True)
    have = folder_size(args.dir / "input") if (args.dir / "input").exists() else 0
    need = args.n * (BYTES_PER_ROW["input"] + (BYTES_PER_ROW["output"] if "folder" in steps else 0)) * 1.1 - have
    free = shutil.disk_usage(args.dir).free
    logger.info("%s rows: this run needs about %.1f GiB more free disk in %s; %.1f GiB free", f"{args.n:,}",
                gib(need), args.dir, gib(free))
    if need > free:
        raise SystemExit(f"not enough free disk: about {gib(need):.1f} GiB needed, {gib(free):.1f} GiB free.")
    t = time.perf_counter()
    build(args.dir / "input", args.n // args.rows, args.rows, args.workers)
    logger.info("input ready in %.0f s", time.perf_counter() - t)
    work = args.dir / "synth-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    (work / "census.toml").write_text(census_schema().to_toml())
    results = []
    try:
        if "prefix" in steps:
            results.append(check_prefix(args, work))
        if "memory" in steps:
            results.append(in_memory(args, min(10**6, args.n)))
        if "folder" in steps:
            results.append(folder(args, work))
        if "peers" in steps:
            results += peers(args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not args.keep_input:
            shutil.rmtree(args.dir / "input", ignore_errors=True)
    for r in results:
        if r["step"] == "synth":
            print(f"dpknn synth on {r['rows']:,} rows -> {args.n:,} synthetic rows ({r['chosen']}): "
                  f"{r['seconds']:.0f} s; passes {r['passes']}; peak RSS per worker "
                  f"{max(r['worker_peak_gib']):.2f} GiB, client {r['client_peak_gib']:.2f} GiB; output "
                  f"{r['output_gib']:.2f} GiB in {r['partitions']} partitions")
        elif r["step"] == "prefix":
            print(f"prefix of {r['rows']:,} rows: folder fit equal to in memory ({', '.join(r['equal'])}); folder "
                  f"{r['folder_seconds']:.1f} s {r['folder_passes']}; in memory fit {r['memory_fit_seconds']:.1f} s "
                  f"+ sample {r['memory_sample_seconds']:.1f} s ({r['method']})")
            for name, seen in r["analyses"].items():
                print(f"  {ANALYSIS} on the prefix, {name}: {seen}")
        elif r["step"] == "memory":
            print(f"in memory at {r['rows']:,} rows: fit {r['fit_seconds']:.1f} s + sample "
                  f"{r['sample_seconds']:.1f} s ({r['method']})")
        else:
            print(f"{r['peer']} at {r['rows']:,} rows: " + (f"{r['seconds']:.0f} s, peak {r['peak_gib']:.2f} GiB"
                  if r["finished"] else f"did not finish ({r.get('error') or f'over {args.peer_timeout:.0f} s'}), "
                  f"peak {r['peak_gib']:.2f} GiB"))
    if args.results:
        args.results.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
