# cython: language_level=3
"""Enumeration of the cells of strict lattice balls.

The strict ball of an incomplete class C (centre cell x_C, squared radius r_C, key κ_C of the
cell of its k-th donor) is the set of cells c of the public domain with
``(d2(x_C, c), key c) < (r_C, κ_C)`` lexicographically: a complete record added in such a cell
enters the donor set of every record of C whatever its label. Summing the weights m_C of the
balls per cell key gives the depth of every cell.
"""

import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t
from ._lattice cimport ordinal_range
from libc.stdlib cimport malloc, realloc, free

cnp.import_array()


cdef struct Ctx:
    Py_ssize_t p
    const int64_t* center
    int64_t r
    int64_t ck
    const int64_t* weights
    const char* is_cat
    const int64_t* n_codes
    int64_t* out
    Py_ssize_t size
    Py_ssize_t capacity
    int64_t max_cells
    bint exceeded
    bint oom


cdef void _push(Ctx* ctx, int64_t key) noexcept nogil:
    cdef int64_t* grown
    if ctx.size == ctx.capacity:
        grown = <int64_t*>realloc(ctx.out, 2 * ctx.capacity * sizeof(int64_t))
        if grown == NULL:
            ctx.oom = True
            return
        ctx.out = grown
        ctx.capacity *= 2
    ctx.out[ctx.size] = key
    ctx.size += 1


cdef void _walk(Ctx* ctx, Py_ssize_t j, int64_t cost, int64_t key) noexcept nogil:
    cdef int64_t rem, w, lo, hi, v, x, nc
    if ctx.exceeded or ctx.oom:
        return
    if j == ctx.p:
        if cost < ctx.r or (cost == ctx.r and key < ctx.ck):
            if ctx.size >= ctx.max_cells:
                ctx.exceeded = True
                return
            _push(ctx, key)
        return
    rem = ctx.r - cost
    w = ctx.weights[j]
    x = ctx.center[j]
    nc = ctx.n_codes[j]
    if ctx.is_cat[j]:
        if 2 * w > rem:
            _walk(ctx, j + 1, cost, key * nc + x)
            return
        for v in range(nc):
            _walk(ctx, j + 1, cost + (0 if v == x else 2 * w), key * nc + v)
        return
    ordinal_range(x, w, rem, nc, &lo, &hi)
    for v in range(lo, hi + 1):
        _walk(ctx, j + 1, cost + w * (v - x) * (v - x), key * nc + v)


def enumerate_balls(const int64_t[:, ::1] centers, const int64_t[::1] r, const int64_t[::1] ck,
                    const int64_t[::1] weights, const cnp.npy_bool[::1] is_cat,
                    const int64_t[::1] n_codes, int64_t max_cells):
    """Keys of the cells of each strict ball, concatenated, with per-ball counts.

    Returns ``(keys, counts, exceeded_at)``: ``keys[sum(counts[:i]):sum(counts[:i + 1])]`` are
    the cells of ball i in key order. When the total would pass ``max_cells`` the enumeration
    stops and ``exceeded_at`` is the index of the ball being enumerated (else -1); the partial
    output must then not be used.
    """
    cdef Ctx ctx
    cdef Py_ssize_t q = r.shape[0], i, before
    counts_a = np.zeros(q, dtype=np.int64)
    cdef int64_t[::1] counts = counts_a
    cdef Py_ssize_t exceeded_at = -1
    ctx.p = centers.shape[1]
    ctx.weights = &weights[0]
    ctx.is_cat = <const char*>&is_cat[0]
    ctx.n_codes = &n_codes[0]
    ctx.capacity = 1024
    ctx.size = 0
    ctx.out = <int64_t*>malloc(ctx.capacity * sizeof(int64_t))
    ctx.max_cells = max_cells
    ctx.exceeded = False
    ctx.oom = False
    if ctx.out == NULL:
        raise MemoryError()
    try:
        with nogil:
            for i in range(q):
                before = ctx.size
                ctx.center = &centers[i, 0]
                ctx.r = r[i]
                ctx.ck = ck[i]
                if ctx.r >= 0:
                    _walk(&ctx, 0, 0, 0)
                counts[i] = ctx.size - before
                if ctx.exceeded or ctx.oom:
                    exceeded_at = i
                    break
        if ctx.oom:
            raise MemoryError("out of memory while enumerating the cells of the L1 balls")
        keys_a = np.empty(ctx.size, dtype=np.int64)
        if ctx.size:
            keys_a[:] = <int64_t[:ctx.size]>ctx.out
    finally:
        free(ctx.out)
    return keys_a, counts_a, exceeded_at
