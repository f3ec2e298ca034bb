"""The Dask cluster of the out-of-core paths (imputation, releases, RWN and synthesis on a folder of Parquet
partitions): the cluster, the partitions in order, and the results of a pass as they complete."""

import contextlib
import os
from pathlib import Path

from dpknn.utils._io import partition_files
from dpknn.utils._progress import progress_bar

__all__ = ["completed_results", "dask_client", "parquet_partitions"]


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


def parquet_partitions(input_dir):
    """The Parquet files of a folder in the order that defines row positions (natural sort of
    their paths, as Dask reads them), skipping names that start with '.' or '_'.

    Parameters
    ----------
    input_dir : str or Path
        The folder; it must exist and hold at least one ``.parquet`` file (subfolders are searched).
    """
    from dask.utils import natural_sort_key

    root = Path(input_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"input_dir {str(input_dir)!r} is not a folder of Parquet files.")
    files = partition_files(root)
    if not files:
        raise ValueError(f"input_dir {str(input_dir)!r} holds no .parquet file.")
    return sorted(files, key=lambda p: natural_sort_key(str(p.relative_to(root))))


def completed_results(futures, progress, desc):
    """The futures' results in completion order, with a progress bar; on the first failure the
    others are cancelled (their files are about to be removed) and the error is raised.

    Each finished future is taken out of ``futures`` (the caller's list) as its result is
    yielded: a worker keeps a task's result in its memory while any future of it lives, and a
    pass of 10^3 partitions would otherwise hold all their class tables at once (2.2 GiB per
    worker at 10^9 census rows, 0.5 GiB at 10^8)."""
    from dask.distributed import as_completed

    bar = progress_bar(total=len(futures), desc=desc, unit="task", progress=progress)
    try:
        done = as_completed(futures, with_results=True)
        for future, result in done:
            futures.remove(future)
            del future
            bar.update()
            yield result
    except BaseException:
        if futures:
            futures[0].client.cancel(futures)
        raise
    finally:
        bar.close()
