# cython: language_level=3
"""Deterministic kernels of RWN (Randomization Within Neighbourhoods).

All randomness is drawn by the caller (uniforms in [0, 1)); these kernels only map them to
pairs and to donor records.
"""

import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t, int32_t
from libc.math cimport sqrt, floor, INFINITY
from libc.stdlib cimport malloc, free, qsort

from ._lattice cimport upper_bound

cnp.import_array()


cdef inline int64_t _tri(int64_t m) noexcept nogil:
    return m * (m + 1) // 2


def pairs_from_indices(const int64_t[::1] r, int64_t n):
    """Map 0-based indices r in [0, n(n-1)/2) to pairs (i, j), 0 <= i < j < n.

    Pairs are ordered (0,1), (0,2), (1,2), (0,3), ... With r' = r + 1, m is the smallest integer
    with m(m+1)/2 >= r' (a floating square root corrected by one step either way), j = m and
    i = r' - m(m-1)/2 - 1 (docs/rwn.md: the corrected mapping of Perry et al. 2022, §11.2).
    """
    cdef Py_ssize_t t, size = r.shape[0]
    cdef int64_t rp, m, total = n * (n - 1) // 2
    i_a = np.empty(size, dtype=np.int64)
    j_a = np.empty(size, dtype=np.int64)
    cdef int64_t[::1] iv = i_a, jv = j_a
    for t in range(size):
        if r[t] < 0 or r[t] >= total:
            raise ValueError(f"index {r[t]} is outside [0, n(n-1)/2) = [0, {total}) for n={n}.")
    with nogil:
        for t in range(size):
            rp = r[t] + 1
            m = <int64_t>floor((sqrt(8.0 * <double>rp + 1.0) - 1.0) / 2.0)
            while _tri(m) < rp:
                m += 1
            while m > 0 and _tri(m - 1) >= rp:
                m -= 1
            jv[t] = m
            iv[t] = rp - m * (m - 1) // 2 - 1
    return i_a, j_a


def fill_pairs(const int64_t[::1] pi, const int64_t[::1] pj, const float[::1] dist,
               int64_t[::1] fill, int32_t[::1] nbr, float[::1] dd):
    """Add a chunk of undirected pairs to a CSR graph being filled (both directions).

    ``fill[v]`` is the next free slot of record v; the caller sized the CSR from the degrees.
    """
    cdef Py_ssize_t e, m = pi.shape[0]
    with nogil:
        for e in range(m):
            nbr[fill[pi[e]]] = <int32_t>pj[e]
            dd[fill[pi[e]]] = dist[e]
            fill[pi[e]] += 1
            nbr[fill[pj[e]]] = <int32_t>pi[e]
            dd[fill[pj[e]]] = dist[e]
            fill[pj[e]] += 1


cdef struct Edge:
    double d
    int64_t v


cdef int _cmp_edge(const void* a, const void* b) noexcept nogil:
    cdef const Edge* x = <const Edge*>a
    cdef const Edge* y = <const Edge*>b
    if x.d != y.d:
        return -1 if x.d < y.d else 1
    if x.v != y.v:
        return -1 if x.v < y.v else 1
    return 0


def select_neighbours(const int64_t[::1] ptr, const int32_t[::1] nbr, const float[::1] dist,
                      int64_t k, double radius):
    """Neighbourhood of each record among its partners: the larger of its k nearest (all ties at
    the k-th distance included) and those within ``radius`` (ignored when negative). Duplicate
    partners count once; partners at infinite distance are never chosen. Returns a new CSR
    (ptr, nbr)."""
    cdef Py_ssize_t n = ptr.shape[0] - 1, v, a, b, t, cnt, kk, nball, take, maxdeg = 0
    for v in range(n):
        if ptr[v + 1] - ptr[v] > maxdeg:
            maxdeg = ptr[v + 1] - ptr[v]
    out_ptr_a = np.zeros(n + 1, dtype=np.int64)
    out_a = np.empty(ptr[n], dtype=np.int64)
    cdef int64_t[::1] out_ptr = out_ptr_a, out = out_a
    cdef Edge* buf = <Edge*>malloc((maxdeg + 1) * sizeof(Edge))
    if buf == NULL:
        raise MemoryError()
    try:
        with nogil:
            for v in range(n):
                a = ptr[v]
                b = ptr[v + 1]
                cnt = 0
                for t in range(a, b):
                    buf[cnt].d = dist[t]
                    buf[cnt].v = nbr[t]
                    cnt += 1
                qsort(buf, cnt, sizeof(Edge), _cmp_edge)
                # infinite distances mark unusable candidates (the record itself); they sort last
                while cnt > 0 and buf[cnt - 1].d == INFINITY:
                    cnt -= 1
                # drop duplicate partners (same record drawn twice)
                kk = 0
                for t in range(cnt):
                    if kk == 0 or buf[t].v != buf[kk - 1].v or buf[t].d != buf[kk - 1].d:
                        buf[kk] = buf[t]
                        kk += 1
                cnt = kk
                take = k if k < cnt else cnt
                while take > 0 and take < cnt and buf[take].d == buf[take - 1].d:
                    take += 1
                if radius >= 0:
                    nball = 0
                    while nball < cnt and buf[nball].d <= radius:
                        nball += 1
                    if nball > take:
                        take = nball
                out_ptr[v + 1] = out_ptr[v] + take
                for t in range(take):
                    out[out_ptr[v] + t] = buf[t].v
    finally:
        free(buf)
    return out_ptr_a, out_a[:out_ptr_a[n]].copy()


def gather_records(const int64_t[::1] ptr, const int64_t[::1] nbr, const double[::1] u,
                   const cnp.npy_bool[::1] modify):
    """Donor row of each record: ``nbr[ptr[i] + floor(u[i] * deg_i)]`` where modified, else i.

    A record with an empty neighbourhood keeps its own value.
    """
    cdef Py_ssize_t n = ptr.shape[0] - 1, i
    cdef int64_t deg, pick
    out_a = np.arange(n, dtype=np.int64)
    cdef int64_t[::1] out = out_a
    with nogil:
        for i in range(n):
            deg = ptr[i + 1] - ptr[i]
            if modify[i] and deg > 0:
                pick = <int64_t>(u[i] * deg)
                if pick >= deg:
                    pick = deg - 1
                out[i] = nbr[ptr[i] + pick]
    return out_a


def gather_classes(const int64_t[::1] cls, const int64_t[::1] pos,
                   const int64_t[::1] nb_ptr, const int64_t[::1] nb_cls, const int64_t[::1] nb_cum,
                   const int64_t[::1] mem_ptr, const int64_t[::1] mem_rows,
                   const double[::1] u, const cnp.npy_bool[::1] modify):
    """Donor row of each record when neighbourhoods are lists of whole classes.

    The neighbourhood of a record of class C is the union of the classes
    ``nb_cls[nb_ptr[C]:nb_ptr[C+1]]``, each contributing all its members, except that C itself
    (when listed) contributes its members other than the record. ``nb_cum`` holds the running
    member counts of each list (the own class counted without the record). ``pos[i]`` is the
    position of record i among its class's members ``mem_rows[mem_ptr[C]:mem_ptr[C+1]]``.
    """
    cdef Py_ssize_t n = cls.shape[0], i, lo, a, b
    cdef int64_t c, total, t, before, q, o
    out_a = np.arange(n, dtype=np.int64)
    cdef int64_t[::1] out = out_a
    with nogil:
        for i in range(n):
            if not modify[i]:
                continue
            c = cls[i]
            a = nb_ptr[c]
            b = nb_ptr[c + 1]
            if b == a:
                continue
            total = nb_cum[b - 1]
            if total <= 0:
                continue
            t = <int64_t>(u[i] * total)
            if t >= total:
                t = total - 1
            lo = upper_bound(&nb_cum[0], a, b, t)
            before = nb_cum[lo - 1] if lo > a else 0
            q = nb_cls[lo]
            o = t - before
            if q == c and o >= pos[i]:
                o += 1
            out[i] = mem_rows[mem_ptr[q] + o]
    return out_a
