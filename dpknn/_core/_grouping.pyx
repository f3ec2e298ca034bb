# cython: language_level=3
"""Packing cells into int64 keys.

A cell is a row of small non-negative integer codes; with the public radices (domain sizes)
r_0..r_{p-1}, the mixed-radix key sum_j c_j * prod_{l>j} r_l is a bijection onto
[0, prod r_j), and comparing keys compares cells lexicographically. Callers check that the
product fits in int64 before calling.
"""

import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t, int32_t, int16_t, int8_t

cnp.import_array()

ctypedef fused code_t:
    int8_t
    int16_t
    int32_t
    int64_t


def pack_cells(const code_t[:, ::1] cells, const int64_t[::1] radices):
    """Mixed-radix int64 keys of the rows of ``cells`` (C-contiguous, shape (n, p))."""
    cdef Py_ssize_t n = cells.shape[0], p = cells.shape[1], i, j
    cdef int64_t key
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] keys = out
    with nogil:
        for i in range(n):
            key = 0
            for j in range(p):
                key = key * radices[j] + cells[i, j]
            keys[i] = key
    return out


def unpack_keys(const int64_t[::1] keys, const int64_t[::1] radices):
    """Inverse of :func:`pack_cells`: cells (int64, shape (n, p)) from their keys."""
    cdef Py_ssize_t n = keys.shape[0], p = radices.shape[0], i, j
    cdef int64_t key
    out = np.empty((n, p), dtype=np.int64)
    cdef int64_t[:, ::1] cells = out
    with nogil:
        for i in range(n):
            key = keys[i]
            for j in range(p - 1, -1, -1):
                cells[i, j] = key % radices[j]
                key = key // radices[j]
    return out
