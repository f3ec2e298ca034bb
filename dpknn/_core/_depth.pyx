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
from libc.stdlib cimport malloc, realloc, free

from ._lattice cimport Ball, walk_ball

cnp.import_array()


cdef struct Ctx:
    Ball ball
    int64_t strict_r         # the strict ball: d2 < r, or d2 == r and key < ck
    int64_t ck
    int64_t* out
    Py_ssize_t size
    Py_ssize_t capacity
    int64_t max_cells
    bint exceeded
    bint oom


cdef void _keep_cell(void* owner, int64_t cost, int64_t key) noexcept nogil:
    cdef Ctx* ctx = <Ctx*>owner
    cdef int64_t* grown
    if not (cost < ctx.strict_r or (cost == ctx.strict_r and key < ctx.ck)):
        return
    if ctx.size >= ctx.max_cells:
        ctx.exceeded = True
        ctx.ball.stop = True
        return
    if ctx.size == ctx.capacity:
        grown = <int64_t*>realloc(ctx.out, 2 * ctx.capacity * sizeof(int64_t))
        if grown == NULL:
            ctx.oom = True
            ctx.ball.stop = True
            return
        ctx.out = grown
        ctx.capacity *= 2
    ctx.out[ctx.size] = key
    ctx.size += 1


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
    ctx.ball.p = centers.shape[1]
    ctx.ball.weights = &weights[0]
    ctx.ball.is_cat = <const char*>&is_cat[0]
    ctx.ball.n_codes = &n_codes[0]
    ctx.ball.stop = False
    ctx.ball.leaf = _keep_cell
    ctx.ball.owner = &ctx
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
                ctx.ball.center = &centers[i, 0]
                ctx.ball.r = r[i]
                ctx.strict_r = r[i]
                ctx.ck = ck[i]
                if r[i] >= 0:
                    walk_ball(&ctx.ball, 0, 0, 0)
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
