"""Streaming a large IPUMS fixed-width extract into Parquet partitions (``dpknn convert``): rows per second
and peak memory, against ipumspy's in-memory reader on the same file.

The extract is an IPUMS fixture (``usa_00172``, 33,057 ACS persons x 10 variables, or any DDI extract given
with ``--extract``) repeated to ``--rows`` lines, written gzip-compressed to a temporary folder (the
repetition changes no code or layout; the file is removed afterwards). Each reader runs in a fresh process
so that its peak resident memory (``ru_maxrss``) is its own. Not run by CI. Issue 50's goal: >= 10^6 rows/s
and <= 1 GiB at 10^7 rows on the 2-core development machine:

    python benchmarks/agency_convert.py --rows 10000000 --ipums ../shared/data/ipums

The IPUMS fixtures are not in the repository (IPUMS's conditions of use); ``--ipums`` names their folder.
"""

import argparse
import datetime
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ONE = """
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
t = time.perf_counter()
if {reader!r} == "dpknn":
    from dpknn.schema import fixed_width_to_parquet
    out = fixed_width_to_parquet({data!r}, {ddi!r}, {out!r}, rows_per_partition=1_000_000)
    rows = out.rows
else:
    from ipumspy import readers
    rows = len(readers.read_microdata(readers.read_ipums_ddi({ddi!r}), {data!r}))
print(json.dumps({{"seconds": time.perf_counter() - t, "rows": rows,
                  "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}}))
"""


def run(reader, data, ddi, out):
    code = ONE.format(reader=reader, data=str(data), ddi=str(ddi), out=str(out))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--ipums", type=Path, default=Path("../shared/data/ipums"), help="folder of the IPUMS fixtures")
    ap.add_argument("--extract", default="usa_00172", help="the fixture to repeat (default usa_00172)")
    ap.add_argument("--ipumspy-rows", type=int, default=1_000_000,
                    help="rows for ipumspy's in-memory reader (default 10^6: it holds the whole table)")
    args = ap.parse_args()
    ddi = args.ipums / f"{args.extract}.xml"
    lines = gzip.open(args.ipums / f"{args.extract}.dat.gz").read().splitlines(keepends=True)
    load = os.getloadavg()
    print(f"{datetime.date.today()}, {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"{args.extract} ({len(lines):,} lines, {len(lines[0]) - 1} columns) repeated")
    print()
    print("| reader | rows | seconds | rows/s | peak memory (GiB) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        for reader, n in (("ipumspy read_microdata (in memory)", args.ipumspy_rows),
                          ("dpknn convert (streamed to Parquet)", args.rows)):
            data = Path(tmp) / f"extract-{n}.dat.gz"
            if not data.exists():
                block = b"".join(lines)
                with gzip.open(data, "wb", compresslevel=1) as fh:
                    full, part = divmod(n, len(lines))
                    for _ in range(full):
                        fh.write(block)
                    fh.write(b"".join(lines[:part]))
            r = run("dpknn" if reader.startswith("dpknn") else "ipumspy", data, ddi, Path(tmp) / f"out-{n}")
            print(f"| {reader} | {r['rows']:,} | {r['seconds']:.1f} | {r['rows'] / r['seconds']:,.0f} | "
                  f"{r['peak_gib']:.2f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
