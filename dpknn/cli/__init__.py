"""The ``dpknn`` command line: argument handling only, one module per command family; the work is done
by the library."""

from dpknn.cli._main import build_parser, main

__all__ = ["build_parser", "main"]
