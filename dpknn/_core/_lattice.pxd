# cython: language_level=3
"""Shared inline helper for walking lattice balls (used by _depth and _nearest)."""

from libc.stdint cimport int64_t
from libc.math cimport sqrt, floor


cdef inline void ordinal_range(int64_t x, int64_t w, int64_t rem, int64_t nc,
                               int64_t* lo, int64_t* hi) noexcept nogil:
    """Codes v of an ordinal attribute (weight w, codes 0..nc-1) with w (v - x)^2 <= rem."""
    cdef int64_t t = <int64_t>floor(sqrt(<double>rem / <double>w))
    # The floating square root can be off by one either way: correct it exactly.
    while w * (t + 1) * (t + 1) <= rem:
        t += 1
    while t > 0 and w * t * t > rem:
        t -= 1
    lo[0] = x - t if x - t > 0 else 0
    hi[0] = x + t if x + t < nc - 1 else nc - 1
