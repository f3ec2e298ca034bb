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


def group_rows(const int64_t[::1] class_id, const cnp.npy_bool[::1] incomplete,
               const int64_t[::1] order, Py_ssize_t n_classes):
    """Counting sort of the rows by (class, complete/incomplete), stable in ``order``.

    ``order`` lists the row positions by increasing label, so within each class the complete
    rows (donors) and the incomplete rows come out sorted by label. Returns
    ``(donor_ptr, donor_rows, inc_ptr, inc_rows)`` in CSR form: the donors of class c are
    ``donor_rows[donor_ptr[c]:donor_ptr[c + 1]]``.
    """
    cdef Py_ssize_t n = order.shape[0], i, c, row
    donor_ptr_a = np.zeros(n_classes + 1, dtype=np.int64)
    inc_ptr_a = np.zeros(n_classes + 1, dtype=np.int64)
    cdef int64_t[::1] donor_ptr = donor_ptr_a, inc_ptr = inc_ptr_a
    with nogil:
        for i in range(n):
            c = class_id[i]
            if incomplete[i]:
                inc_ptr[c + 1] += 1
            else:
                donor_ptr[c + 1] += 1
        for c in range(n_classes):
            donor_ptr[c + 1] += donor_ptr[c]
            inc_ptr[c + 1] += inc_ptr[c]
    donor_rows_a = np.empty(donor_ptr[n_classes], dtype=np.int64)
    inc_rows_a = np.empty(inc_ptr[n_classes], dtype=np.int64)
    fill_d_a = donor_ptr_a[:n_classes].copy()
    fill_i_a = inc_ptr_a[:n_classes].copy()
    cdef int64_t[::1] donor_rows = donor_rows_a, inc_rows = inc_rows_a
    cdef int64_t[::1] fill_d = fill_d_a, fill_i = fill_i_a
    with nogil:
        for i in range(n):
            row = order[i]
            c = class_id[row]
            if incomplete[row]:
                inc_rows[fill_i[c]] = row
                fill_i[c] += 1
            else:
                donor_rows[fill_d[c]] = row
                fill_d[c] += 1
    return donor_ptr_a, donor_rows_a, inc_ptr_a, inc_rows_a
