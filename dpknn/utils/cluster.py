"""The Dask cluster of the out-of-core paths (imputation, releases and RWN on a folder of Parquet partitions)."""

import contextlib
import os

__all__ = ["dask_client"]


@contextlib.contextmanager
def dask_client(client=None):
    """``client`` itself, or a LocalCluster with one single-threaded worker process per core that
    is closed on exit (single-threaded: the kernels hold the GIL only briefly, and one process
    per core bounds each worker's memory by its own task)."""
    if client is not None:
        yield client
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("Dask execution needs dask.distributed: pip install 'dpknn[distributed,parquet]'") from exc
    with LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as own:
        yield own
