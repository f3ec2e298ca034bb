"""Compiled, deterministic kernels (Cython). They never import the Python layer of dpknn."""

try:
    from dpknn._core import _grouping
except ImportError as exc:  # pragma: no cover - only without a build
    raise ImportError(
        "dpknn's compiled kernels (dpknn._core) are not built. Install the package with "
        "`pip install .` (or `pip install -e .` for development), or build them in place with "
        "`python setup.py build_ext --inplace`; this needs Cython>=3, numpy and a C compiler. "
        f"Original error: {exc}"
    ) from exc

__all__ = ["_grouping"]
