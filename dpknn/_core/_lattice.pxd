# cython: language_level=3
"""Shared inline helpers of the kernels: binary searches, and the walk over the cells of a
lattice ball {c : d2(centre, c) <= r} with a caller-supplied action at each cell."""

from libc.stdint cimport int64_t
from libc.math cimport sqrt, floor


cdef inline Py_ssize_t upper_bound(const int64_t* a, Py_ssize_t lo, Py_ssize_t hi, int64_t value) noexcept nogil:
    """First index in a[lo:hi] (sorted) whose value is > value; hi if none."""
    cdef Py_ssize_t mid
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if a[mid] <= value:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline Py_ssize_t find(const int64_t* a, Py_ssize_t n, int64_t value) noexcept nogil:
    """Index of ``value`` in a[:n] (sorted), or -1."""
    cdef Py_ssize_t lo = 0, hi = n, mid
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if a[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    if lo < n and a[lo] == value:
        return lo
    return -1


ctypedef void (*leaf_fn)(void* owner, int64_t cost, int64_t key) noexcept nogil


cdef struct Ball:
    Py_ssize_t p
    const int64_t* center
    int64_t r                # cells with squared distance <= r are visited
    const int64_t* weights
    const char* is_cat
    const int64_t* n_codes
    bint stop                # set by the leaf action to end the walk
    leaf_fn leaf             # called with the cell's squared distance and mixed-radix key
    void* owner


cdef inline void walk_ball(Ball* b, Py_ssize_t j, int64_t cost, int64_t key) noexcept nogil:
    """Visit every cell of the ball in key order, calling ``b.leaf`` at each."""
    cdef int64_t rem, w, t, lo, hi, v, x, nc
    if b.stop:
        return
    if j == b.p:
        b.leaf(b.owner, cost, key)
        return
    rem = b.r - cost
    w = b.weights[j]
    x = b.center[j]
    nc = b.n_codes[j]
    if b.is_cat[j]:
        if 2 * w > rem:
            walk_ball(b, j + 1, cost, key * nc + x)
            return
        for v in range(nc):
            walk_ball(b, j + 1, cost + (0 if v == x else 2 * w), key * nc + v)
        return
    t = <int64_t>floor(sqrt(<double>rem / <double>w))
    # The floating square root can be off by one either way: correct it exactly.
    while w * (t + 1) * (t + 1) <= rem:
        t += 1
    while t > 0 and w * t * t > rem:
        t -= 1
    lo = x - t if x - t > 0 else 0
    hi = x + t if x + t < nc - 1 else nc - 1
    for v in range(lo, hi + 1):
        walk_ball(b, j + 1, cost + w * (v - x) * (v - x), key * nc + v)
