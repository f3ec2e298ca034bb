"""Out-of-core imputation on Dask: dpknn.impute.impute_parquet on census partitions of 2.5·10^5 rows.

The 10^8-row run (100 partitions of 10^6, two workers) is too long for asv; it is
``benchmarks/impute_out_of_core.py``. ``peakmem`` here is the asv process, which holds the
client; the workers' memory is reported by that script.
"""

import shutil
import tempfile
from pathlib import Path

from dpknn.datasets import census_schema, make_census
from dpknn.impute import impute_parquet


class ImputeParquet:
    params = [10**6, 4 * 10**6]
    param_names = ["n"]
    timeout = 900
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self, n):
        from dask.distributed import Client, LocalCluster

        self.dir = Path(tempfile.mkdtemp())
        rows = 250_000
        (self.dir / "in").mkdir()
        for p in range(n // rows):
            make_census(rows, rng=p).to_parquet(self.dir / "in" / f"part.{p}.parquet")
        self.cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
        self.client = Client(self.cluster)
        self.runs = 0

    def teardown(self, n):
        self.client.close()
        self.cluster.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _run(self):
        self.runs += 1
        impute_parquet(self.dir / "in", self.dir / f"out{self.runs}", census_schema(), client=self.client)

    def time_impute_parquet(self, n):
        self._run()

    def peakmem_impute_parquet_client(self, n):
        self._run()
