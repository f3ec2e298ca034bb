# cython: language_level=3
"""Contingency tables of many attribute sets, counted in one kernel.

The codes are stored attribute by attribute (shape (d, n), C-contiguous), so counting the table
of one set streams its few columns while the table itself, a few thousand cells, stays in the
L1/L2 cache. Codes are non-negative (a missing cell has already been given its own code by the
caller). Sets are independent, so callers run disjoint ranges of sets on several threads; the
loop releases the GIL.
"""

import numpy as np
cimport numpy as cnp
from libc.stdint cimport int16_t, int64_t, uint32_t

cnp.import_array()


def count_sets(const int16_t[:, ::1] codes, const int64_t[:, ::1] columns, const int64_t[:, ::1] strides,
               const int64_t[::1] offsets, uint32_t[::1] out, Py_ssize_t first, Py_ssize_t last):
    """Add the counts of sets ``first..last-1`` into ``out``.

    Set t has ``r`` attributes ``columns[t, :]`` with mixed-radix ``strides[t, :]`` (a padding
    slot has stride 0); a row with codes c adds one to ``out[offsets[t] + sum_j c_j * strides[t, j]]``.
    ``out`` must hold zeros (or earlier counts) on each set's block; blocks are disjoint, so
    threads may share ``out`` when their ranges of sets are disjoint.
    """
    cdef Py_ssize_t n = codes.shape[1], r = columns.shape[1], t, i
    cdef const int16_t* c0
    cdef const int16_t* c1
    cdef const int16_t* c2
    cdef const int16_t* c3
    cdef int64_t s0, s1, s2, s3
    cdef uint32_t* block
    if r > 4:
        raise ValueError(f"sets of at most 4 attributes are supported, got {r}")
    with nogil:
        for t in range(first, last):
            block = &out[offsets[t]]
            # Unused slots point at column 0 with stride 0: one code of padding costs less than a branch.
            c0 = &codes[columns[t, 0], 0]
            s0 = strides[t, 0]
            c1 = &codes[columns[t, 1], 0] if r > 1 else c0
            s1 = strides[t, 1] if r > 1 else 0
            c2 = &codes[columns[t, 2], 0] if r > 2 else c0
            s2 = strides[t, 2] if r > 2 else 0
            c3 = &codes[columns[t, 3], 0] if r > 3 else c0
            s3 = strides[t, 3] if r > 3 else 0
            for i in range(n):
                block[c0[i] * s0 + c1[i] * s1 + c2[i] * s2 + c3[i] * s3] += 1
