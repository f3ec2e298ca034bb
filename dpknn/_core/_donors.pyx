# cython: language_level=3
"""Donor assignment by the fixed order, and maximum stabbing of cyclic label arcs.

The order of complete records y for an incomplete record x is
``(d2(cell x, cell y), cell y, (label y - label x) mod circle)``: classes come in the order the
caller lists them (by (d2, key)), and inside a class the donors are taken cyclically, starting
at the first donor whose label is higher than x's.
"""

import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t
from libc.stdlib cimport qsort, malloc, free

from ._lattice cimport upper_bound

cnp.import_array()


def assign_donors(int64_t k,
                  const int64_t[::1] inc_classes,
                  const int64_t[::1] list_ptr, const int64_t[::1] list_cls,
                  const int64_t[::1] donor_ptr, const int64_t[::1] donor_rows,
                  const int64_t[::1] donor_labels,
                  const int64_t[::1] inc_ptr, const int64_t[::1] inc_rows,
                  const int64_t[::1] labels, const int64_t[::1] out_pos,
                  int64_t[:, ::1] donors_out, int64_t[::1] donee,
                  int64_t[::1] kth_row, int64_t[::1] kth_class):
    """Fill the donors of every incomplete row.

    For the t-th class with incomplete rows, ``list_cls[list_ptr[t]:list_ptr[t + 1]]`` are the
    donor classes in order, enough to hold k donors. ``donor_labels`` is ``labels[donor_rows]``.
    Writes ``donors_out[out_pos[x]]`` (row positions, first donor first), adds one to ``donee``
    per use, and records the k-th donor's row and class of every incomplete row x.
    """
    cdef Py_ssize_t t, c, ix, x, li, q, base, d, start, s, col, take, need, row = -1
    cdef int64_t lx
    with nogil:
        for t in range(inc_classes.shape[0]):
            c = inc_classes[t]
            for ix in range(inc_ptr[c], inc_ptr[c + 1]):
                x = inc_rows[ix]
                lx = labels[x]
                need = k
                col = 0
                for li in range(list_ptr[t], list_ptr[t + 1]):
                    q = list_cls[li]
                    base = donor_ptr[q]
                    d = donor_ptr[q + 1] - base
                    start = upper_bound(&donor_labels[0], base, base + d, lx) - base
                    if start == d:
                        start = 0
                    take = need if need < d else d
                    for s in range(take):
                        row = donor_rows[base + (start + s) % d]
                        donors_out[out_pos[x], col] = row
                        col += 1
                        donee[row] += 1
                    need -= take
                    if need == 0:
                        kth_row[x] = row
                        kth_class[x] = q
                        break


cdef int _cmp_i64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0], y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


def max_stabbing(const int64_t[::1] group_ptr, const int64_t[::1] starts, const int64_t[::1] ends):
    """Largest number of cyclic arcs of each group that one label gap lies in.

    Arc i covers the gaps ``starts[i], starts[i] + 1, ..., ends[i] - 1`` modulo the number of
    gaps (gap g lies between the g-th and (g+1)-th smallest label); ``starts[i] != ends[i]``.
    Arcs are grouped in CSR form by ``group_ptr``. With W the number of wrapping arcs
    (start > end), the cover of gap g is ``W + #{start <= g} - #{end <= g}``, which only rises
    at a start, so the maximum is at gap 0 or at some start.

    Returns ``(best, best_gap)`` per group.
    """
    cdef Py_ssize_t n_groups = group_ptr.shape[0] - 1, gi, lo, hi, m, i, js, je
    cdef int64_t wrap, cover, g, best_v, best_g
    best_a = np.zeros(n_groups, dtype=np.int64)
    gap_a = np.zeros(n_groups, dtype=np.int64)
    cdef int64_t[::1] best = best_a, best_gap = gap_a
    cdef Py_ssize_t maxm = 0
    for gi in range(n_groups):
        if group_ptr[gi + 1] - group_ptr[gi] > maxm:
            maxm = group_ptr[gi + 1] - group_ptr[gi]
    cdef int64_t* sa = <int64_t*>malloc((maxm + 1) * sizeof(int64_t))
    cdef int64_t* ea = <int64_t*>malloc((maxm + 1) * sizeof(int64_t))
    if sa == NULL or ea == NULL:
        free(sa)
        free(ea)
        raise MemoryError()
    try:
        with nogil:
            for gi in range(n_groups):
                lo = group_ptr[gi]
                hi = group_ptr[gi + 1]
                m = hi - lo
                if m == 0:
                    continue
                wrap = 0
                for i in range(m):
                    sa[i] = starts[lo + i]
                    ea[i] = ends[lo + i]
                    if sa[i] > ea[i]:
                        wrap += 1
                qsort(sa, m, sizeof(int64_t), _cmp_i64)
                qsort(ea, m, sizeof(int64_t), _cmp_i64)
                # Gap 0 first, then every start.
                js = 0
                je = 0
                while js < m and sa[js] <= 0:
                    js += 1
                while je < m and ea[je] <= 0:
                    je += 1
                best_v = wrap + js - je
                best_g = 0
                i = 0
                while i < m:
                    g = sa[i]
                    while js < m and sa[js] <= g:
                        js += 1
                    while je < m and ea[je] <= g:
                        je += 1
                    cover = wrap + js - je
                    if cover > best_v:
                        best_v = cover
                        best_g = g
                    i = js
                best[gi] = best_v
                best_gap[gi] = best_g
    finally:
        free(sa)
        free(ea)
    return best_a, gap_a


def cyclic_take(const int64_t[::1] donor_ptr, const int64_t[::1] donor_labels,
                const int64_t[::1] q_class, const int64_t[::1] q_label, const int64_t[::1] q_take,
                const int64_t[::1] out_ptr, int64_t[::1] out):
    """The first ``q_take[i]`` donors of class ``q_class[i]`` after label ``q_label[i]``, cyclically.

    The same walk as :func:`assign_donors`, one donor class at a time: query i writes the
    positions (into the donor arrays, ``donor_ptr[c] <= pos < donor_ptr[c + 1]``) of its donors,
    first donor first, to ``out[out_ptr[i]:out_ptr[i] + q_take[i]]``. ``q_take[i]`` must not
    exceed the number of donors of its class.
    """
    cdef Py_ssize_t i, base, d, start, s
    with nogil:
        for i in range(q_class.shape[0]):
            base = donor_ptr[q_class[i]]
            d = donor_ptr[q_class[i] + 1] - base
            start = upper_bound(&donor_labels[0], base, base + d, q_label[i]) - base
            if start == d:
                start = 0
            for s in range(q_take[i]):
                out[out_ptr[i] + s] = base + (start + s) % d
