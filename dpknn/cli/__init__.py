"""The ``dpknn`` command line: argument handling only, one module per command family; the work is done
by the library."""

import sys

from dpknn.cli._main import build_parser, main
from dpknn.utils._lazy import ProtectedPackage

__all__ = ["build_parser", "main"]

# `main` is the command's entry point and the old path of its module (dpknn.cli._main), which console scripts of
# earlier installs import: importing that path must not rebind the name to the module.
sys.modules[__name__].__class__ = ProtectedPackage
