# cython: language_level=3
"""The deepest cell of the lattice: exact branch and bound over boxes of cells.

The value of a cell c is

    value(c) = sum of w_i over the strict balls i that hold c  +  s(c),

where the strict ball of i (centre x_i, squared radius r_i, boundary cell k_i) is the set of
cells with ``(d2(x_i, c), c) < (r_i, k_i)``, cells compared lexicographically, and s(c) >= 0 is
a bonus that is nonzero only at a few given points (the label-arc counts at the k-th donors' cells, see
``docs/imputation.md``). The search returns the largest value(c) over the whole public domain
that beats a floor, and a cell that attains it. It is exact and never lists the cells of a ball.

A box is a product of code intervals (a categorical coordinate is an interval of category
codes, i.e. a subset of categories). For every ball the exact integer minimum and maximum of
d2 from its centre to the box are kept; a ball whose maximum is below r_i holds every cell of
the box (it is added to the box's *base*), one whose minimum is above r_i holds none (it is
dropped), the others are *partial*. Hence

    base + max s over points in the box  <=  max value in the box  <=  base + sum of w over partial balls + max s.

Boxes are split in two along their widest coordinate and searched depth first, the child with
the larger upper bound first; a box is pruned when its upper bound cannot beat the best value
found, and resolved exactly when no ball is partial (the value is then base plus the bonus) or
when it is a single cell (a partial ball then has d2 = r_i exactly and holds the cell iff the
cell is lexicographically below k_i). Cells are compared coordinate by coordinate, never packed
into integer keys, so the domain may have any number of cells. The two bounds make the cost
follow the answer: boxes are only opened where the balls that meet them could add up to more
than the best value found.
"""

import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, realloc, free

cnp.import_array()


cdef struct Entry:
    int64_t ball
    int64_t lo2               # min d2 from the ball's centre to the box
    int64_t hi2               # max d2


cdef struct Search:
    Py_ssize_t p
    const int64_t* centers
    const int64_t* r
    const int64_t* ck         # boundary cells k_i, row-major (m, p)
    const int64_t* w
    const int64_t* pts        # point cells, row-major (q, p)
    const int64_t* bonus
    const int64_t* weights
    const char* is_cat
    const int64_t* n_codes
    Entry* ent
    Py_ssize_t ent_n
    Py_ssize_t ent_cap
    int64_t* pidx
    Py_ssize_t pidx_n
    Py_ssize_t pidx_cap
    int64_t* lo               # box bounds per level, row-major (levels, p)
    int64_t* hi
    int64_t best
    bint has_best             # a cell beat the floor; best_cell holds it
    int64_t* best_cell
    int64_t best_point
    int64_t seen              # best value witnessed, even when it does not beat the floor
    int64_t* seen_cell
    int64_t seen_point
    int64_t work
    int64_t max_work
    int64_t boxes
    bint exceeded
    bint oom
    int64_t* split_count      # splits per coordinate, to name the attribute that costs most
    bint keep_full            # testing: treat balls that hold the whole box as partial
    bint natural_order        # testing: open the lower child first, whatever the bounds


cdef inline bint _below(Search* s, const int64_t* cell, Py_ssize_t b) noexcept nogil:
    """Whether ``cell`` precedes ball b's boundary cell lexicographically."""
    cdef Py_ssize_t j
    cdef const int64_t* k = s.ck + b * s.p
    for j in range(s.p):
        if cell[j] != k[j]:
            return cell[j] < k[j]
    return False


cdef inline void _extent(Search* s, Py_ssize_t j, int64_t x, int64_t lo, int64_t hi,
                         int64_t* near, int64_t* far) noexcept nogil:
    """Exact min and max contribution of coordinate j to d2 from code x to codes [lo, hi]."""
    cdef int64_t w = s.weights[j], g, a, b
    if s.is_cat[j]:
        near[0] = 0 if lo <= x <= hi else 2 * w
        far[0] = 0 if lo == hi == x else 2 * w
        return
    g = lo - x if x < lo else (x - hi if x > hi else 0)
    near[0] = w * g * g
    a = x - lo if x > lo else lo - x
    b = hi - x if hi > x else x - hi
    if b > a:
        a = b
    far[0] = w * a * a


cdef inline void _witness(Search* s, int64_t value, const int64_t* cell, int64_t point) noexcept nogil:
    cdef Py_ssize_t j
    if value > s.seen:
        s.seen = value
        s.seen_point = point
        for j in range(s.p):
            s.seen_cell[j] = cell[j]
    if value > s.best:
        s.best = value
        s.has_best = True
        s.best_point = point
        for j in range(s.p):
            s.best_cell[j] = cell[j]


cdef bint _grow(void** buf, Py_ssize_t* cap, Py_ssize_t used, Py_ssize_t need, size_t item) noexcept nogil:
    """Make room for ``need`` more items after ``used`` (doubling); False when out of memory."""
    cdef Py_ssize_t size = cap[0]
    cdef void* grown
    if used + need <= size:
        return True
    while used + need > size:
        size *= 2
    grown = realloc(buf[0], size * item)
    if grown == NULL:
        return False
    buf[0] = grown
    cap[0] = size
    return True


cdef inline bint _grow_entries(Search* s, Py_ssize_t need) noexcept nogil:
    if not _grow(<void**>&s.ent, &s.ent_cap, s.ent_n, need, sizeof(Entry)):
        s.oom = True
        return False
    return True


cdef inline bint _grow_points(Search* s, Py_ssize_t need) noexcept nogil:
    if not _grow(<void**>&s.pidx, &s.pidx_cap, s.pidx_n, need, sizeof(int64_t)):
        s.oom = True
        return False
    return True


cdef void _child(Search* s, Py_ssize_t level, Py_ssize_t e0, Py_ssize_t en, Py_ssize_t p0, Py_ssize_t pn,
                 int64_t base, Py_ssize_t j, int64_t clo, int64_t chi,
                 Py_ssize_t* ce0, Py_ssize_t* cen, Py_ssize_t* cp0, Py_ssize_t* cpn,
                 int64_t* cbase, int64_t* cpart, int64_t* cbonus, int64_t* cbonus_pt) noexcept nogil:
    """Entries and points of the child box that takes codes [clo, chi] on coordinate j."""
    cdef Py_ssize_t t, b
    cdef int64_t pnear, pfar, near, far, lo2, hi2, x
    cdef int64_t plo = s.lo[level * s.p + j], phi = s.hi[level * s.p + j]
    cdef Entry e
    ce0[0] = s.ent_n
    cbase[0] = base
    cpart[0] = 0
    if not _grow_entries(s, en):
        return
    for t in range(e0, e0 + en):
        e = s.ent[t]
        b = e.ball
        x = s.centers[b * s.p + j]
        _extent(s, j, x, plo, phi, &pnear, &pfar)
        _extent(s, j, x, clo, chi, &near, &far)
        lo2 = e.lo2 - pnear + near
        if lo2 > s.r[b]:
            continue
        hi2 = e.hi2 - pfar + far
        if hi2 < s.r[b] and not (s.keep_full and hi2 > lo2):
            cbase[0] += s.w[b]
            continue
        s.ent[s.ent_n].ball = b
        s.ent[s.ent_n].lo2 = lo2
        s.ent[s.ent_n].hi2 = hi2
        s.ent_n += 1
        cpart[0] += s.w[b]
    s.work += en
    cen[0] = s.ent_n - ce0[0]
    cp0[0] = s.pidx_n
    cbonus[0] = 0
    cbonus_pt[0] = -1
    if not _grow_points(s, pn):
        return
    for t in range(p0, p0 + pn):
        b = s.pidx[t]
        x = s.pts[b * s.p + j]
        if clo <= x <= chi:
            s.pidx[s.pidx_n] = b
            s.pidx_n += 1
            if s.bonus[b] > cbonus[0]:
                cbonus[0] = s.bonus[b]
                cbonus_pt[0] = b
    cpn[0] = s.pidx_n - cp0[0]


cdef void _search(Search* s, Py_ssize_t level, Py_ssize_t e0, Py_ssize_t en, Py_ssize_t p0, Py_ssize_t pn,
                  int64_t base, int64_t bonus, int64_t bonus_pt) noexcept nogil:
    """Resolve the box at ``level`` (its upper bound already beats s.best)."""
    cdef Py_ssize_t j, t, b, split = -1, saved_e, saved_p
    cdef int64_t span, widest = 0, mid, value
    cdef const int64_t* lo = s.lo + level * s.p
    cdef const int64_t* hi = s.hi + level * s.p
    cdef Py_ssize_t ae0, aen, ap0, apn, be0, ben, bp0, bpn
    cdef int64_t abase, apart, abonus, apt, bbase, bpart, bbonus, bpt, aub, bub
    if s.exceeded or s.oom:
        return
    s.boxes += 1
    # A cell of the box witnesses base plus the bonus of its best point (or base alone).
    _witness(s, base + bonus, s.pts + bonus_pt * s.p if bonus_pt >= 0 else lo, bonus_pt)
    if en == 0:
        return
    for j in range(s.p):
        if hi[j] > lo[j]:
            span = 2 * s.weights[j] if s.is_cat[j] else s.weights[j] * (hi[j] - lo[j]) * (hi[j] - lo[j])
            if span > widest:
                widest = span
                split = j
    if split < 0:
        # A single cell: each partial ball has d2 = r exactly and holds it iff the cell precedes
        # the ball's boundary cell.
        value = base + bonus
        for t in range(e0, e0 + en):
            b = s.ent[t].ball
            if _below(s, lo, b):
                value += s.w[b]
        _witness(s, value, lo, bonus_pt)
        return
    if s.work > s.max_work:
        s.exceeded = True
        return
    s.split_count[split] += 1
    saved_e = s.ent_n
    saved_p = s.pidx_n
    mid = lo[split] + (hi[split] - lo[split]) // 2
    _child(s, level, e0, en, p0, pn, base, split, lo[split], mid, &ae0, &aen, &ap0, &apn,
           &abase, &apart, &abonus, &apt)
    if s.oom:
        return
    _child(s, level, e0, en, p0, pn, base, split, mid + 1, hi[split], &be0, &ben, &bp0, &bpn,
           &bbase, &bpart, &bbonus, &bpt)
    if s.oom:
        return
    aub = abase + apart + abonus
    bub = bbase + bpart + bbonus
    if bub > aub and not s.natural_order:
        _open(s, level, split, mid + 1, hi[split], be0, ben, bp0, bpn, bbase, bbonus, bpt, bub)
        _open(s, level, split, lo[split], mid, ae0, aen, ap0, apn, abase, abonus, apt, aub)
    else:
        _open(s, level, split, lo[split], mid, ae0, aen, ap0, apn, abase, abonus, apt, aub)
        _open(s, level, split, mid + 1, hi[split], be0, ben, bp0, bpn, bbase, bbonus, bpt, bub)
    s.ent_n = saved_e
    s.pidx_n = saved_p


cdef inline void _open(Search* s, Py_ssize_t level, Py_ssize_t j, int64_t clo, int64_t chi,
                       Py_ssize_t e0, Py_ssize_t en, Py_ssize_t p0, Py_ssize_t pn,
                       int64_t base, int64_t bonus, int64_t bonus_pt, int64_t ub) noexcept nogil:
    cdef Py_ssize_t c
    cdef int64_t* lo
    cdef int64_t* hi
    if ub <= s.best:
        return
    lo = s.lo + (level + 1) * s.p
    hi = s.hi + (level + 1) * s.p
    for c in range(s.p):
        lo[c] = s.lo[level * s.p + c]
        hi[c] = s.hi[level * s.p + c]
    lo[j] = clo
    hi[j] = chi
    _search(s, level + 1, e0, en, p0, pn, base, bonus, bonus_pt)


def max_depth(const int64_t[:, ::1] centers, const int64_t[::1] r, const int64_t[:, ::1] ck,
              const int64_t[::1] w, const int64_t[:, ::1] points, const int64_t[::1] bonus,
              const int64_t[::1] weights, const cnp.npy_bool[::1] is_cat, const int64_t[::1] n_codes,
              int64_t floor, int64_t max_work, int mode=0):
    """Largest value(c) over the public domain, if it beats ``floor``.

    Parameters are the balls (``centers``, ``r``, boundary cells ``ck`` of shape (m, p), ``w``),
    the bonus points (cells and values, each value >= 0) and the schema's coordinates.
    ``max_work`` bounds the number of ball-box tests.

    Returns a dict with ``value``, ``cell`` and ``point`` (index of the bonus point attaining
    it, or -1) of the best cell found above ``floor`` (``value`` = ``floor`` and ``cell`` = None
    when no cell beats it); ``seen_value``, ``seen_cell``, ``seen_point``: the best cell
    witnessed at all (a lower bound of the maximum, exact when it beats the floor);
    ``work``, ``boxes``, ``exceeded`` (the search stopped at ``max_work`` and the result must
    not be used) and ``splits`` (splits per coordinate).

    ``mode`` exists for tests that force every path of the search: bit 1 keeps balls that hold
    a whole box partial (until the box is one cell), bit 2 opens the lower child first.
    """
    cdef Search s
    cdef Py_ssize_t m = r.shape[0], q = bonus.shape[0], p = n_codes.shape[0], i, j, levels
    cdef int64_t near, far, lo2, hi2, base = 0, part = 0, top = 0, top_pt = -1
    splits_a = np.zeros(p, dtype=np.int64)
    cdef int64_t[::1] splits = splits_a
    levels = 2
    for j in range(p):
        levels += 1
        i = 1
        while i < n_codes[j]:
            i *= 2
            levels += 1
    s.p = p
    s.centers = &centers[0, 0] if m else NULL
    s.r = &r[0] if m else NULL
    s.ck = &ck[0, 0] if m else NULL
    s.w = &w[0] if m else NULL
    s.pts = &points[0, 0] if q else NULL
    s.bonus = &bonus[0] if q else NULL
    s.weights = &weights[0]
    s.is_cat = <const char*>&is_cat[0]
    s.n_codes = &n_codes[0]
    s.ent_cap = 2 * m + 16
    s.ent_n = 0
    s.ent = <Entry*>malloc(s.ent_cap * sizeof(Entry))
    s.pidx_cap = 2 * q + 16
    s.pidx_n = 0
    s.pidx = <int64_t*>malloc(s.pidx_cap * sizeof(int64_t))
    s.lo = <int64_t*>malloc(levels * p * sizeof(int64_t))
    s.hi = <int64_t*>malloc(levels * p * sizeof(int64_t))
    best_cell_a = np.zeros(p, dtype=np.int64)
    seen_cell_a = np.zeros(p, dtype=np.int64)
    cdef int64_t[::1] best_cell = best_cell_a
    cdef int64_t[::1] seen_cell = seen_cell_a
    s.best = floor
    s.has_best = False
    s.best_cell = &best_cell[0]
    s.best_point = -1
    s.seen = -1
    s.seen_cell = &seen_cell[0]
    s.seen_point = -1
    s.work = 0
    s.max_work = max_work
    s.boxes = 0
    s.exceeded = False
    s.oom = s.ent == NULL or s.pidx == NULL or s.lo == NULL or s.hi == NULL
    s.split_count = &splits[0]
    s.keep_full = (mode & 1) != 0
    s.natural_order = (mode & 2) != 0
    try:
        if not s.oom:
            with nogil:
                for j in range(p):
                    s.lo[j] = 0
                    s.hi[j] = n_codes[j] - 1
                for i in range(m):
                    lo2 = 0
                    hi2 = 0
                    for j in range(p):
                        _extent(&s, j, centers[i, j], 0, n_codes[j] - 1, &near, &far)
                        lo2 += near
                        hi2 += far
                    if hi2 < r[i] and not (s.keep_full and hi2 > lo2):
                        base += w[i]
                    elif lo2 <= r[i]:
                        s.ent[s.ent_n].ball = i
                        s.ent[s.ent_n].lo2 = lo2
                        s.ent[s.ent_n].hi2 = hi2
                        s.ent_n += 1
                        part += w[i]
                for i in range(q):
                    s.pidx[i] = i
                    if bonus[i] > top:
                        top = bonus[i]
                        top_pt = i
                s.pidx_n = q
                s.work = m
                _witness(&s, base + top, s.pts + top_pt * p if top_pt >= 0 else s.lo, top_pt)
                if base + part + top > s.best:
                    _search(&s, 0, 0, s.ent_n, 0, q, base, top, top_pt)
        if s.oom:
            raise MemoryError("out of memory in the L1 search")
    finally:
        free(s.ent)
        free(s.pidx)
        free(s.lo)
        free(s.hi)
    return {"value": s.best, "cell": best_cell_a if s.has_best else None, "point": s.best_point,
            "seen_value": s.seen, "seen_cell": seen_cell_a, "seen_point": s.seen_point, "work": s.work,
            "boxes": s.boxes, "exceeded": bool(s.exceeded), "splits": splits_a}
