"""Helpers shared by the package: parameter validation, progress bars, file output, figures, lazy imports.

They are implementation modules (``dpknn.utils._validation`` and the rest), used by the subpackages and
not a user API: this package lists no public names. ``check_rng`` is public as :func:`dpknn.check_rng`.
"""

__all__ = []
