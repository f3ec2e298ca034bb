"""The ``dpknn`` command line."""

from dpknn.cli.main import main

__all__ = ["main"]
