"""Optional dependencies: import one, or fail with the extra that installs it."""

import importlib

__all__ = ["require"]


def require(module, extra, what):
    """The imported ``module``, or an ImportError saying that ``what`` needs it and which extra installs it
    (``pip install 'dpknn[extra]'``)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"{what} needs {module.split('.')[0]}: pip install 'dpknn[{extra}]'") from None
