"""Test-session settings.

The README's ``pytest`` runs the suite on every core (pytest-xdist, ``-n auto`` in pyproject.toml). Each
worker then keeps BLAS and OpenMP to one thread: a worker's numpy, scipy and scikit-learn would otherwise
start a pool per core too, and on two cores two workers' pools oversubscribe them (an MST fit took 14 s
instead of 0.3 s). The package's own ``n_jobs`` threads are left as the tests set them.
"""

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_blas_thread_per_worker():
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


@pytest.fixture(scope="module")
def client():
    """An in-process Dask client of two single-threaded workers, for a test module (the out-of-core tests)."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None) as c:
        yield c
