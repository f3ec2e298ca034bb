"""Lazy package namespaces (as SciPy's subpackages load): a package lists its public names and the modules
that define them, and a name's module is imported on first access. ``import dpknn`` and a command's
``--help`` then cost a fraction of a second instead of loading scikit-learn, SciPy and pandas."""

import importlib
import sys
import warnings

__all__ = ["lazy_exports"]


def lazy_exports(package, exports, *, moved=None):
    """``(__getattr__, __dir__)`` for the package ``package`` whose public names load on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : dict of str to str
        Public name -> the module that defines it. A name that is a submodule of the package
        (``dpknn.impute.knn`` as ``dpknn.impute.knn``) is imported on access as well.
    moved : dict of str to str, optional
        Names that left the package: name -> their module now. They still load, with a
        DeprecationWarning naming the new path, and are not listed by ``dir()``.

    Returns
    -------
    tuple of callables
        To assign to the package's ``__getattr__`` and ``__dir__`` (PEP 562).
    """

    moved = dict(moved or {})

    def __getattr__(name):
        module = exports.get(name)
        if name in moved:
            warnings.warn(f"{package}.{name} moved to {moved[name]}.{name}; the old path will go.",
                          DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(moved[name]), name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        else:
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        setattr(sys.modules[package], name, value)   # later accesses are plain lookups
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
