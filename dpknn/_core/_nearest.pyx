# cython: language_level=3
"""Nearest donor classes on the integer lattice of cells, in the exact order (d2, key).

For a class centre x, the closed ball {c : d2(x, c) <= R} is enumerated for R = 1, 2, 4, ...
and each cell is looked up among the donor classes (sorted keys, binary search). Once the
donors found hold at least k records, every class with d2 <= r (r the squared distance of the
class holding the k-th donor, r <= R) has been seen, so ranking the hits by (d2, key) gives the
exact donor-class list. A class whose ball would pass ``budget`` cells is reported as not done;
the caller finishes it another way (a KD-tree).
"""

import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, realloc, free, qsort

from ._lattice cimport Ball, find, walk_ball

cnp.import_array()


cdef struct Hit:
    int64_t d2
    int64_t key
    int64_t cls
    int64_t cnt


cdef int _cmp_hit(const void* a, const void* b) noexcept nogil:
    cdef const Hit* x = <const Hit*>a
    cdef const Hit* y = <const Hit*>b
    if x.d2 != y.d2:
        return -1 if x.d2 < y.d2 else 1
    if x.key != y.key:
        return -1 if x.key < y.key else 1
    return 0


cdef struct Search:
    Ball ball
    const int64_t* dkeys
    const int64_t* dcnt
    const int64_t* dcls
    Py_ssize_t nd
    Hit* hits
    Py_ssize_t nh
    Py_ssize_t cap
    int64_t cells
    int64_t budget
    int64_t found
    bint over
    bint oom


cdef void _look_up(void* owner, int64_t cost, int64_t key) noexcept nogil:
    """At each cell of the ball: count it against the budget, record it if it holds donors."""
    cdef Search* s = <Search*>owner
    cdef Py_ssize_t at
    cdef Hit* grown
    s.cells += 1
    if s.cells > s.budget:
        s.over = True
        s.ball.stop = True
        return
    at = find(s.dkeys, s.nd, key)
    if at < 0:
        return
    if s.nh == s.cap:
        grown = <Hit*>realloc(s.hits, 2 * s.cap * sizeof(Hit))
        if grown == NULL:
            s.oom = True
            s.ball.stop = True
            return
        s.hits = grown
        s.cap *= 2
    s.hits[s.nh].d2 = cost
    s.hits[s.nh].key = key
    s.hits[s.nh].cls = s.dcls[at]
    s.hits[s.nh].cnt = s.dcnt[at]
    s.nh += 1
    s.found += s.dcnt[at]


def nearest_donor_classes(const int64_t[:, ::1] centers, int64_t k,
                          const int64_t[::1] dkeys, const int64_t[::1] dcnt,
                          const int64_t[::1] dcls, const int64_t[::1] weights,
                          const cnp.npy_bool[::1] is_cat, const int64_t[::1] n_codes,
                          int64_t diameter, int64_t budget):
    """Donor classes of each centre in (d2, key) order, up to the one holding the k-th donor.

    ``dkeys`` (ascending), ``dcnt`` and ``dcls`` describe the classes with donors;
    ``diameter`` is the largest squared distance in the domain. Returns
    ``(ptr, cls, radius, boundary, done)``: the list of centre i is ``cls[ptr[i]:ptr[i + 1]]``
    (empty when ``done[i]`` is false), ``radius[i]`` the squared distance of its k-th donor and
    ``boundary[i]`` the class holding it.
    """
    cdef Py_ssize_t m = centers.shape[0], i, h, t
    cdef int64_t cum
    cdef Search s
    ptr_a = np.zeros(m + 1, dtype=np.int64)
    radius_a = np.zeros(m, dtype=np.int64)
    boundary_a = np.full(m, -1, dtype=np.int64)
    done_a = np.zeros(m, dtype=bool)
    cdef int64_t[::1] ptr = ptr_a, radius = radius_a, boundary = boundary_a
    cdef cnp.npy_bool[::1] done = done_a
    cdef Py_ssize_t out_n = 0, out_cap = 1024
    cdef int64_t* out = <int64_t*>malloc(out_cap * sizeof(int64_t))
    cdef int64_t* grown
    s.ball.p = centers.shape[1]
    s.ball.weights = &weights[0]
    s.ball.is_cat = <const char*>&is_cat[0]
    s.ball.n_codes = &n_codes[0]
    s.ball.leaf = _look_up
    s.ball.owner = &s
    s.dkeys = &dkeys[0]
    s.dcnt = &dcnt[0]
    s.dcls = &dcls[0]
    s.nd = dkeys.shape[0]
    s.cap = 256
    s.hits = <Hit*>malloc(s.cap * sizeof(Hit))
    s.budget = budget
    s.oom = out == NULL or s.hits == NULL
    try:
        with nogil:
            for i in range(m):
                if s.oom:
                    break
                s.ball.center = &centers[i, 0]
                s.ball.r = 1
                s.over = False
                s.cells = 0
                while True:
                    s.nh = 0
                    s.found = 0
                    s.ball.stop = False
                    walk_ball(&s.ball, 0, 0, 0)
                    if s.over or s.oom or s.found >= k or s.ball.r >= diameter:
                        break
                    s.ball.r = 2 * s.ball.r
                if s.over or s.oom or s.found < k:
                    ptr[i + 1] = out_n
                    continue
                qsort(s.hits, s.nh, sizeof(Hit), _cmp_hit)
                cum = 0
                t = 0
                for h in range(s.nh):
                    cum += s.hits[h].cnt
                    if cum >= k:
                        t = h
                        break
                if out_n + t + 1 > out_cap:
                    while out_n + t + 1 > out_cap:
                        out_cap *= 2
                    grown = <int64_t*>realloc(out, out_cap * sizeof(int64_t))
                    if grown == NULL:
                        s.oom = True
                        break
                    out = grown
                for h in range(t + 1):
                    out[out_n] = s.hits[h].cls
                    out_n += 1
                ptr[i + 1] = out_n
                radius[i] = s.hits[t].d2
                boundary[i] = s.hits[t].cls
                done[i] = True
        if s.oom:
            raise MemoryError("out of memory in the nearest-donor search")
        cls_a = np.empty(out_n, dtype=np.int64)
        if out_n:
            cls_a[:] = <int64_t[:out_n]>out
    finally:
        free(out)
        free(s.hits)
    return ptr_a, cls_a, radius_a, boundary_a, done_a
