# cython: language_level=3
"""Deterministic kernels of RWN (Randomization Within Neighbourhoods).

All randomness is drawn by the caller (uniforms in [0, 1)); these kernels only map them to
pairs and to donor records.
"""

import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t, int32_t, uint32_t, uint64_t
from libc.math cimport sqrt, floor, INFINITY
from libc.stdlib cimport malloc, free, qsort
from libc.string cimport memcpy

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


cdef uint64_t _LOW32 = 0xFFFFFFFF
cdef uint64_t _EXPONENT = 0x7F800000


cdef inline uint64_t _edge(float d, int64_t v) noexcept nogil:
    """A partner and its distance as one word: the float's bits above the record's index.

    Non-negative floats order like their bit patterns, so these words sort by (distance, index),
    and the distance and the index share a cache line when the CSR is filled at random.
    """
    cdef uint32_t bits
    if d == 0:
        d = 0.0  # not -0.0, whose bits would sort last
    memcpy(&bits, &d, 4)  # the float's bits (a pointer cast would break strict aliasing)
    return (<uint64_t>bits << 32) | <uint64_t>(<uint32_t>v)


cdef inline float _edge_distance(uint64_t e) noexcept nogil:
    cdef uint32_t bits = <uint32_t>(e >> 32)
    cdef float d
    memcpy(&d, &bits, 4)
    return d


def fill_pairs(const int64_t[::1] pi, const int64_t[::1] pj, const float[:, ::1] X,
               int64_t[::1] fill, uint64_t[::1] edges):
    """Add a chunk of undirected pairs to a CSR graph being filled (both directions), each with
    the Euclidean distance of its rows of ``X`` (summed in double, stored as float).

    ``fill[v]`` is the next free slot of record v; the caller sized the CSR from the degrees.
    """
    cdef Py_ssize_t e, m = pi.shape[0], c, p = X.shape[1]
    cdef int64_t a, b
    cdef double s, t
    cdef float d
    with nogil:
        for e in range(m):
            a = pi[e]
            b = pj[e]
            s = 0.0
            for c in range(p):
                t = <double>X[a, c] - <double>X[b, c]
                s += t * t
            d = <float>sqrt(s)
            edges[fill[a]] = _edge(d, b)
            fill[a] += 1
            edges[fill[b]] = _edge(d, a)
            fill[b] += 1


cdef void _sort_edges(uint64_t* buf, Py_ssize_t cnt) noexcept nogil:
    """Ascending; insertion sort for the short lists of sampled partners, else qsort."""
    cdef Py_ssize_t t, u
    cdef uint64_t x
    if cnt > 64:
        qsort(buf, cnt, sizeof(uint64_t), _cmp_u64)
        return
    for t in range(1, cnt):
        x = buf[t]
        u = t
        while u > 0 and buf[u - 1] > x:
            buf[u] = buf[u - 1]
            u -= 1
        buf[u] = x


cdef int _cmp_u64(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = (<const uint64_t*>a)[0], y = (<const uint64_t*>b)[0]
    return -1 if x < y else (1 if x > y else 0)


cdef Py_ssize_t _neighbourhood(uint64_t* buf, Py_ssize_t cnt, int64_t k, double radius) noexcept nogil:
    """Sort one record's partners and keep its neighbourhood at the front: the larger of its k
    nearest (all ties at the k-th distance included) and those within ``radius`` (ignored when
    negative). Duplicate partners count once; partners at infinite distance are never chosen.
    Returns how many are kept."""
    cdef Py_ssize_t t, kk, take, nball
    _sort_edges(buf, cnt)
    # infinite (or NaN) distances mark unusable candidates (the record itself, overflowed
    # coordinates): their exponent bits are all ones, so their words sort last
    while cnt > 0 and ((buf[cnt - 1] >> 32) & _EXPONENT) == _EXPONENT:
        cnt -= 1
    # drop duplicate partners (same record drawn twice)
    kk = 0
    for t in range(cnt):
        if kk == 0 or buf[t] != buf[kk - 1]:
            buf[kk] = buf[t]
            kk += 1
    cnt = kk
    take = k if k < cnt else cnt
    while take > 0 and take < cnt and (buf[take] >> 32) == (buf[take - 1] >> 32):
        take += 1
    if radius >= 0:
        nball = 0
        while nball < cnt and _edge_distance(buf[nball]) <= radius:
            nball += 1
        if nball > take:
            take = nball
    return take


def select_neighbours(const int64_t[::1] ptr, const int32_t[::1] nbr, const float[::1] dist,
                      int64_t k, double radius):
    """Neighbourhood of each record among its partners (see ``_neighbourhood``); partner lists in
    (ptr, nbr) with their distances ``dist`` (non-negative). Returns a new CSR (ptr, nbr)."""
    cdef Py_ssize_t n = ptr.shape[0] - 1, v, t, cnt, take, maxdeg = 0
    for v in range(n):
        if ptr[v + 1] - ptr[v] > maxdeg:
            maxdeg = ptr[v + 1] - ptr[v]
    out_ptr_a = np.zeros(n + 1, dtype=np.int64)
    out_a = np.empty(ptr[n], dtype=np.int64)
    cdef int64_t[::1] out_ptr = out_ptr_a, out = out_a
    cdef uint64_t* buf = <uint64_t*>malloc((maxdeg + 1) * sizeof(uint64_t))
    if buf == NULL:
        raise MemoryError()
    try:
        with nogil:
            for v in range(n):
                cnt = 0
                for t in range(ptr[v], ptr[v + 1]):
                    buf[cnt] = _edge(dist[t], nbr[t])
                    cnt += 1
                take = _neighbourhood(buf, cnt, k, radius)
                out_ptr[v + 1] = out_ptr[v] + take
                for t in range(take):
                    out[out_ptr[v] + t] = <int64_t>(buf[t] & _LOW32)
    finally:
        free(buf)
    return out_ptr_a, out_a[:out_ptr_a[n]].copy()


def select_edges(const int64_t[::1] ptr, uint64_t[::1] edges, int64_t k, double radius):
    """:func:`select_neighbours` of the partner lists that :func:`fill_pairs` filled, sorted in
    place. Returns a new CSR (ptr, nbr)."""
    cdef Py_ssize_t n = ptr.shape[0] - 1, v, t, take
    out_ptr_a = np.zeros(n + 1, dtype=np.int64)
    out_a = np.empty(ptr[n], dtype=np.int64)
    cdef int64_t[::1] out_ptr = out_ptr_a, out = out_a
    with nogil:
        for v in range(n):
            take = 0 if ptr[v + 1] == ptr[v] else _neighbourhood(&edges[ptr[v]], ptr[v + 1] - ptr[v], k, radius)
            out_ptr[v + 1] = out_ptr[v] + take
            for t in range(take):
                out[out_ptr[v] + t] = <int64_t>(edges[ptr[v] + t] & _LOW32)
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
