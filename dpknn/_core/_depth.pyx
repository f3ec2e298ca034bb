# cython: language_level=3
"""Depth of a cell in an arrangement of strict lattice balls, maximised over one ball.

The strict ball of an incomplete class C (centre cell x_C, squared radius r_C, k-th donor cell
key κ_C) is the set of cells c of the public domain with
``(d2(x_C, c), key c) < (r_C, κ_C)`` lexicographically: a complete record added in such a cell
enters the donor set of every record of C whatever its label. The depth of a cell is the
summed weight m_C of the balls that hold it.
"""

import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t
from libc.math cimport sqrt, floor

cnp.import_array()


cdef struct Ctx:
    Py_ssize_t p
    Py_ssize_t q
    const int64_t* center
    int64_t r
    int64_t ck
    const int64_t* nb_centers      # q x p
    const int64_t* nb_r
    const int64_t* nb_ck
    const int64_t* nb_m
    const int64_t* weights
    const char* is_cat
    const int64_t* n_codes
    int64_t* cur
    int64_t max_work
    int64_t work
    int64_t n_cells
    int64_t best
    int64_t best_key
    bint exceeded


cdef inline int64_t _d2_to(Ctx* ctx, const int64_t* other) noexcept nogil:
    cdef Py_ssize_t j
    cdef int64_t s = 0, diff
    for j in range(ctx.p):
        diff = ctx.cur[j] - other[j]
        if ctx.is_cat[j]:
            if diff != 0:
                s += 2 * ctx.weights[j]
        else:
            s += ctx.weights[j] * diff * diff
    return s


cdef void _leaf(Ctx* ctx, int64_t d2c, int64_t key) noexcept nogil:
    cdef Py_ssize_t b
    cdef int64_t depth = 0, d2
    if not (d2c < ctx.r or (d2c == ctx.r and key < ctx.ck)):
        return
    ctx.n_cells += 1
    ctx.work += ctx.q
    for b in range(ctx.q):
        d2 = _d2_to(ctx, ctx.nb_centers + b * ctx.p)
        if d2 < ctx.nb_r[b] or (d2 == ctx.nb_r[b] and key < ctx.nb_ck[b]):
            depth += ctx.nb_m[b]
    if depth > ctx.best:
        ctx.best = depth
        ctx.best_key = key


cdef void _walk(Ctx* ctx, Py_ssize_t j, int64_t cost, int64_t key) noexcept nogil:
    cdef int64_t rem, w, t, lo, hi, v, x, nc
    if ctx.exceeded:
        return
    if ctx.work > ctx.max_work:
        ctx.exceeded = True
        return
    if j == ctx.p:
        _leaf(ctx, cost, key)
        return
    rem = ctx.r - cost
    w = ctx.weights[j]
    x = ctx.center[j]
    nc = ctx.n_codes[j]
    if ctx.is_cat[j]:
        ctx.cur[j] = x
        if 2 * w > rem:
            _walk(ctx, j + 1, cost, key * nc + x)
            return
        for v in range(nc):
            ctx.cur[j] = v
            _walk(ctx, j + 1, cost + (0 if v == x else 2 * w), key * nc + v)
        return
    t = <int64_t>floor(sqrt(<double>rem / <double>w))
    while w * (t + 1) * (t + 1) <= rem:
        t += 1
    while t > 0 and w * t * t > rem:
        t -= 1
    lo = x - t if x - t > 0 else 0
    hi = x + t if x + t < nc - 1 else nc - 1
    for v in range(lo, hi + 1):
        ctx.cur[j] = v
        _walk(ctx, j + 1, cost + w * (v - x) * (v - x), key * nc + v)


def ball_max_depth(const int64_t[::1] center, int64_t r, int64_t ck,
                   const int64_t[:, ::1] nb_centers, const int64_t[::1] nb_r,
                   const int64_t[::1] nb_ck, const int64_t[::1] nb_m,
                   const int64_t[::1] weights, const cnp.npy_bool[::1] is_cat,
                   const int64_t[::1] n_codes, int64_t max_work):
    """Largest depth over the cells of one strict ball, by enumerating its cells.

    ``nb_*`` describe every ball that can meet this one (this one included). Returns
    ``(best_depth, best_key, n_cells, work, exceeded)`` where work counts membership tests and
    ``exceeded`` is true when the enumeration stopped at ``max_work`` (the result is then not
    a certified maximum and must not be used as one).
    """
    cdef Ctx ctx
    cdef Py_ssize_t p = center.shape[0]
    cur_a = np.zeros(p, dtype=np.int64)
    cdef int64_t[::1] cur = cur_a
    ctx.p = p
    ctx.q = nb_r.shape[0]
    ctx.center = &center[0]
    ctx.r = r
    ctx.ck = ck
    ctx.nb_centers = &nb_centers[0, 0] if ctx.q > 0 else NULL
    ctx.nb_r = &nb_r[0] if ctx.q > 0 else NULL
    ctx.nb_ck = &nb_ck[0] if ctx.q > 0 else NULL
    ctx.nb_m = &nb_m[0] if ctx.q > 0 else NULL
    ctx.weights = &weights[0]
    ctx.is_cat = <const char*>&is_cat[0]
    ctx.n_codes = &n_codes[0]
    ctx.cur = &cur[0]
    ctx.max_work = max_work
    ctx.work = 0
    ctx.n_cells = 0
    ctx.best = 0
    ctx.best_key = -1
    ctx.exceeded = False
    if r >= 0:
        with nogil:
            _walk(&ctx, 0, 0, 0)
    return ctx.best, ctx.best_key, ctx.n_cells, ctx.work, bool(ctx.exceeded)
