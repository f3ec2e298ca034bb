"""Deprecated path: the imputation flags are :mod:`dpknn.schema.flags`.

Every DP entry point (releases, synthesis, processing, disclosure control, models) checks its input for
them, so they sit with the schema, below all of those, rather than in the imputation package (issue 49).
The names still load from here, with a DeprecationWarning.
"""

import warnings

from dpknn.schema import flags as _flags


def __getattr__(name):
    if name in _flags.__all__:
        warnings.warn(f"dpknn.impute.flags.{name} moved to dpknn.schema.flags.{name}; the old path will go.",
                      DeprecationWarning, stacklevel=2)
        return getattr(_flags, name)
    raise AttributeError(f"module 'dpknn.impute.flags' has no attribute {name!r}")
