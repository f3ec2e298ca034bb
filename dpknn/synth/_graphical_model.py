"""One consistent distribution from noisy marginals: the estimation step of MST and AIM.

Input: released count tables y_m of attribute sets S_m, with public noise standard deviations
σ_m, and a set of cliques covering every S_m. Output: the distribution μ that is Markov with
respect to a triangulation of the cliques' graph (a decomposable model) minimising

    L(μ) = Σ_m ‖n̂ A_m μ_{S_m} − y_m‖² / (2 σ_m²),

n̂ the total released by the tables (their inverse-variance weighted sums), A_m the identity or, for a
table of coarsened attributes (:func:`coarsen`: public groups of an attribute's codes), the sum over each
group, a linear query whose gradient goes back through A_mᵀ (McKenna, Sheldon, Miklau 2019 take any linear
measurement). This is
private-pgm's estimator (McKenna, Sheldon, Miklau 2019, §4), which minimises the same L by
entropic mirror descent on the potentials of a Markov random field with marginals from belief
propagation on a junction tree. Here the model is parametrised directly by its junction tree:

**Why a directed factorisation reaches the same family.** A distribution that is Markov with
respect to a chordal graph with junction tree J factorises as μ = Π_C μ_C / Π_S μ_S (cliques C,
separators S; Lauritzen 1996, Prop. 2.17), which, rooted, is μ_root · Π_{C ≠ root} μ(C∖S | S)
with S the separator to C's parent. Every choice of a root marginal and row-stochastic
conditionals gives such a distribution and every such distribution arises, so minimising L over
softmax-parametrised conditionals (L-BFGS, exact gradient by reverse-mode differentiation
through the forward pass μ_C = μ_S · μ(C∖S | S)) reaches the minimum over the decomposable
family. ``method="mirror"`` runs their entropic mirror descent instead (Algorithm 1, with their
Armijo steps) on log-potentials of the junction tree's cliques, whose conditionals come exactly
from one pass of sum-product up the tree. It reaches a lower L in as many steps (0.2-0.97x
L-BFGS's on the public tables of ``benchmarks/compare_estimators.py``, as low as PyPI mbi's), and
fitted marginals as close to the data or closer (GSSvocab at ε = 4: half as far), where L-BFGS on
the softmax stalls on cells the fit wants near zero. AIM's final fit uses it; AIM's rounds
(warm-started, their estimate only scores the next candidates) and MST keep L-BFGS, which was as
good or better there (``benchmarks/README.md``).
For a chordal graph the clique marginals that agree on separators are exactly the
marginals of such distributions (the local polytope equals the marginal polytope; Wainwright
and Jordan 2008, Prop. 2.1 and §4.1), so the minimiser is one distribution whose every marginal
agrees with every other, unlike tables clipped and normalised one by one.

The triangulation is a greedy elimination order (each step eliminates the attribute whose
clique has the fewest cells, Kjærulff 1990); a junction tree is a maximum-weight spanning tree
of the maximal cliques under separator size (Jensen and Jensen 1994). Both read the cliques
only, which are public or released.

Everything here reads released tables and public parameters only (post-processing). Sampling
uses controlled rounding down the junction tree (the expected count of every value of a
clique's new attributes within every separator group is rounded, randomly and without bias, to
an integer), so a synthetic table of n rows matches the model's marginals up to rounding rather
than up to multinomial error.

References
----------
.. [1] McKenna, Sheldon, Miklau (2019). "Graphical-model based estimation and inference for
   differential privacy", ICML, §4.
.. [2] Lauritzen (1996). "Graphical models", Oxford, Prop. 2.17 (decomposable factorisation).
.. [3] Wainwright, Jordan (2008). "Graphical models, exponential families, and variational
   inference", Prop. 2.1 and §4.1.
.. [4] Kjærulff (1990). "Triangulation of graphs: algorithms giving small total state space",
   Aalborg University R 90-09.
.. [5] Jensen, Jensen (1994). "Optimal junction trees", UAI.
"""

from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import optimize, sparse
from scipy.sparse.csgraph import minimum_spanning_tree

__all__ = [
    "GraphicalModel",
    "JunctionTree",
    "Measurement",
    "coarsen",
    "estimate_total",
    "fit_model",
    "junction_tree",
    "marginal_table",
    "model_cells",
    "project_simplex",
    "round_counts",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Measurement:
    """A released count table: ``attributes`` (indices, axes in that order), the noisy integer
    ``counts`` and the public standard deviation ``sigma`` of their noise (for the estimator,
    both may be divided by a public observation probability: :func:`~dpknn.synth._marginal.rescaled`).
    ``groups``, when given, holds per attribute None (kept) or the public group of each of its codes: the
    table then counts the coarsened attributes (:func:`coarsen`)."""

    attributes: tuple
    counts: np.ndarray
    sigma: float
    groups: tuple | None = None

    def __post_init__(self):
        if self.groups is not None and len(self.groups) != len(self.attributes):
            raise ValueError(f"groups must give one grouping (or None) per attribute of {self.attributes}.")


def coarsen(table, groups):
    """``table`` summed over the groups of codes of each axis: ``groups`` holds per axis None (kept) or the group
    (0, 1, ...) of each of its codes, so the result counts the coarsened attributes. A linear map, applied alike to a
    table of counts (the query) and to the model's marginal (the estimate); None: the table itself."""
    for axis, g in enumerate(groups or ()):
        if g is not None:
            table = np.moveaxis(np.tensordot(_group_matrix(tuple(g), table.dtype), table, axes=([1], [axis])), 0, axis)
    return table


def _group_matrix(g, dtype=np.float64):
    """The 0/1 matrix (groups, codes) of the grouping ``g``, in ``dtype`` (integer counts stay integers)."""
    g = np.asarray(g, dtype=np.int64)
    out = np.zeros((int(g.max()) + 1, g.size), dtype=dtype)
    out[g, np.arange(g.size)] = 1
    return out


def project_simplex(v):
    """The Euclidean projection of ``v`` onto the probability simplex (Duchi et al. 2008, Fig. 1)."""
    v = np.asarray(v, dtype=np.float64)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, v.size + 1)
    r = np.flatnonzero(u - css / k > 0)[-1]
    return np.maximum(v - css[r] / (r + 1), 0.0)


def estimate_total(measurements):
    """n̂: the inverse-variance weighted mean of the tables' sums (each sum's variance is
    cells·σ²), at least 1."""
    w = np.array([1.0 / (m.counts.size * m.sigma**2) for m in measurements])
    s = np.array([float(m.counts.sum()) for m in measurements])
    return max(float((w * s).sum() / w.sum()), 1.0)


def round_counts(p, m, rng):
    """Integer counts summing to ``m`` whose expectation is m·p (p normalised): the floors, plus
    one for each of m − Σ floors cells drawn by systematic sampling with probability equal to
    their remainders."""
    p = np.maximum(np.asarray(p, dtype=np.float64), 0.0)
    e = m * p / p.sum()
    f = np.floor(e)
    k = round(m - f.sum())
    out = f.astype(np.int64)
    if k > 0:
        cum = np.cumsum(e - f)
        cum *= k / cum[-1]
        picks = np.searchsorted(cum, rng.random() + np.arange(k), side="right")
        np.add.at(out, np.minimum(picks, p.size - 1), 1)
    return out


def marginal_table(table, variables, keep):
    """The sum of ``table`` (axes ``variables``) over the axes not in ``keep``, axes in ``keep``'s order."""
    rest = [v for v in variables if v in keep]
    axes = tuple(i for i, v in enumerate(variables) if v not in keep)
    return np.transpose(table.sum(axis=axes), tuple(rest.index(v) for v in keep))


def _broadcast_to(table, keep, variables, sizes):
    """``table`` (axes ``keep``, a subset of ``variables``) reshaped to broadcast against a table on ``variables``."""
    keep = tuple(keep)
    order = tuple(keep.index(v) for v in variables if v in keep)
    return np.transpose(table, order).reshape(tuple(sizes[v] if v in keep else 1 for v in variables))


def _contract(factors, out):
    """Σ over every variable not in ``out`` of the product of ``factors`` ((array, variables) pairs)."""
    labels = {}
    args = []
    for arr, variables in factors:
        args += [arr, [labels.setdefault(v, len(labels)) for v in variables]]
    return np.einsum(*args, [labels[v] for v in out], optimize=len(factors) > 2)


@dataclass(frozen=True)
class JunctionTree:
    """A rooted junction tree: ``cliques`` (each a tuple of attributes, its separator with the
    parent first), ``separator`` lengths, ``parent`` (−1 at the root) and a breadth-first ``order``."""

    cliques: tuple
    separator: tuple
    parent: tuple
    order: tuple

    def size(self, sizes):
        """The model's cells: Σ over cliques of the product of their attributes' sizes."""
        return sum(math.prod(sizes[v] for v in c) for c in self.cliques)

    def covering(self, attributes):
        """The index of a clique holding every one of ``attributes``, or None."""
        s = set(attributes)
        return next((i for i, c in enumerate(self.cliques) if s <= set(c)), None)


def _triangulate(sizes, cliques):
    """The maximal cliques of a greedy triangulation of the graph joining attributes that share a clique."""
    nbrs = {v: set() for v in range(len(sizes))}
    for c in cliques:
        for v in c:
            nbrs[v].update(w for w in c if w != v)
    found = []
    while nbrs:
        v = min(nbrs, key=lambda u: (math.prod(sizes[w] for w in nbrs[u]) * sizes[u], len(nbrs[u]), u))
        clique = frozenset(nbrs[v] | {v})
        for w in nbrs[v]:
            nbrs[w] |= nbrs[v] - {w}
            nbrs[w].discard(v)
        del nbrs[v]
        found.append(clique)
    return [c for c in found if not any(c < o for o in found)]


def model_cells(sizes, cliques):
    """The cells of :func:`junction_tree` (``sizes``, ``cliques``), its :meth:`JunctionTree.size`, without
    building the tree: the size is a sum over the triangulation's maximal cliques, which the tree's spanning
    tree only orders. AIM asks it of every candidate in every round (``_aim.affordable``), where the spanning
    tree took about two thirds of the time."""
    return sum(math.prod(sizes[v] for v in c) for c in set(_triangulate(sizes, cliques)))


def junction_tree(sizes, cliques):
    """A junction tree of a triangulation of ``cliques`` (attribute tuples) over ``len(sizes)``
    attributes (module docstring), rooted at its largest clique. Attributes in no clique get one of their own."""
    maximal = list(dict.fromkeys(sorted(tuple(sorted(c)) for c in _triangulate(sizes, cliques))))
    k = len(maximal)
    # Weight −(|C ∩ D| + 1) < 0 for every pair: a complete graph, so the spanning tree also joins
    # independent components (through empty separators).
    w = np.array([[0 if i == j else -(len(set(a) & set(b)) + 1) for j, b in enumerate(maximal)]
                  for i, a in enumerate(maximal)], dtype=np.float64)
    tree = minimum_spanning_tree(w).toarray() if k > 1 else np.zeros((1, 1))
    adj = [[j for j in range(k) if tree[i, j] != 0 or tree[j, i] != 0] for i in range(k)]
    root = max(range(k), key=lambda i: (math.prod(sizes[v] for v in maximal[i]), -i))
    parent, order = [-2] * k, [root]
    parent[root] = -1
    for i in order:
        for j in adj[i]:
            if parent[j] == -2:
                parent[j] = i
                order.append(j)
    ordered, sep = [], []
    for i, c in enumerate(maximal):
        s = [] if parent[i] < 0 else [v for v in c if v in maximal[parent[i]]]
        ordered.append(tuple(s) + tuple(v for v in c if v not in s))
        sep.append(len(s))
    return JunctionTree(tuple(ordered), tuple(sep), tuple(parent), tuple(order))


@dataclass(frozen=True)
class GraphicalModel:
    """A decomposable distribution on the product of the attributes' codes (module docstring).

    Attributes
    ----------
    sizes : tuple of int
        Number of codes of each attribute.
    tree : JunctionTree
    conditionals : tuple of ndarray
        μ(C∖S | S) of each clique C, shape (cells of S, cells of C∖S), rows summing to one; the
        root's has one row (its marginal).
    total : float
        n̂, the total released by the tables.
    """

    sizes: tuple
    tree: JunctionTree
    conditionals: tuple
    total: float

    def clique_marginals(self):
        """The marginal of every clique, axes in the clique's order (a forward pass)."""
        return _forward(self.tree, self.sizes, self.conditionals)[0]

    def marginal(self, attributes, cliques=None):
        """The marginal of ``attributes`` (axes in that order); ``cliques``: :meth:`clique_marginals`."""
        cliques = self.clique_marginals() if cliques is None else cliques
        attributes = tuple(attributes)
        c = self.tree.covering(attributes)
        if c is not None:
            return marginal_table(cliques[c], self.tree.cliques[c], attributes)
        return _contract(self._steiner_factors(attributes, cliques), attributes)

    def attribute_marginals(self, cliques=None):
        """The one-way marginal of every attribute."""
        cliques = self.clique_marginals() if cliques is None else cliques
        return [self.marginal((v,), cliques) for v in range(len(self.sizes))]

    def _steiner_factors(self, attributes, cliques):
        """Factors whose product is the joint of the smallest subtree holding ``attributes``: the
        marginal of its top clique and the conditionals of the others."""
        tree = self.tree
        paths = []
        for v in attributes:
            # The cliques holding v form a subtree; its top gives the shortest path up.
            i = next(i for i, c in enumerate(tree.cliques)
                     if v in c and (tree.parent[i] < 0 or v not in tree.cliques[tree.parent[i]]))
            path = []
            while i >= 0:
                path.append(i)
                i = tree.parent[i]
            paths.append(path)
        common = set.intersection(*(set(p) for p in paths))
        keep = set()
        for path in paths:
            keep.update(path[: next(j for j, i in enumerate(path) if i in common) + 1])
        top = next(i for i in paths[0] if i in common)
        factors = [(cliques[top], tree.cliques[top])]
        for i in keep - {top}:
            c = tree.cliques[i]
            shape = [self.sizes[v] for v in c]
            factors.append((self.conditionals[i].reshape(shape), c))
        return factors

    def sample_codes(self, n, rng, *, cliques=None):
        """Codes of shape (d, n) by controlled rounding down the junction tree (module docstring);
        ``cliques``: :meth:`clique_marginals` when the caller has it already."""
        cliques = self.clique_marginals() if cliques is None else cliques
        tree = self.tree
        codes = np.empty((len(self.sizes), n), dtype=np.int64)
        for c in tree.order:
            clique, s = tree.cliques[c], tree.separator[c]
            sep, new = clique[:s], clique[s:]
            new_shape = [self.sizes[v] for v in new]
            cond = self.conditionals[c]
            if sep:
                # A separator value the model gives no mass falls back to the new attributes' marginal.
                fallback = marginal_table(cliques[c], clique, new).ravel()
                group = np.ravel_multi_index(codes[list(sep)], [self.sizes[v] for v in sep])
            else:
                group = np.zeros(n, dtype=np.int64)
            rows = np.argsort(group, kind="stable")
            ends = np.cumsum(np.bincount(group, minlength=cond.shape[0]))
            start = 0
            cells = np.empty(n, dtype=np.int64)
            for g, end in enumerate(ends):
                if end > start:
                    p = cond[g] if cond[g].sum() > 0 else fallback
                    vals = np.repeat(np.arange(cond.shape[1]), round_counts(p, end - start, rng))
                    cells[rows[start:end]] = rng.permutation(vals)
                start = end
            codes[list(new)] = np.unravel_index(cells, new_shape)
        return codes


def _forward(tree, sizes, conditionals):
    """(clique marginals, separator marginals): μ_C = μ_S · μ(C∖S | S) down the tree, μ_S flat."""
    mu, sep = [None] * len(tree.cliques), [None] * len(tree.cliques)
    for c in tree.order:
        p, clique = tree.parent[c], tree.cliques[c]
        sep[c] = np.ones(1) if p < 0 else marginal_table(mu[p], tree.cliques[p], clique[:tree.separator[c]]).ravel()
        mu[c] = (sep[c][:, None] * conditionals[c]).reshape([sizes[v] for v in clique])
    return mu, sep


def _shapes(tree, sizes):
    return [(math.prod(sizes[v] for v in c[:s]), math.prod(sizes[v] for v in c[s:]))
            for c, s in zip(tree.cliques, tree.separator)]


def _softmax_rows(theta, shapes):
    out, at = [], 0
    for r, k in shapes:
        z = theta[at:at + r * k].reshape(r, k)
        at += r * k
        e = np.exp(z - z.max(axis=1, keepdims=True))
        out.append(e / e.sum(axis=1, keepdims=True))
    return out


class _Pooled(NamedTuple):
    """The tables of one attribute set (and coarsening) pooled into their inverse-variance weighted mean: its
    ``attributes``, the mean ``counts`` (axes in the attributes' order), its ``weight`` in L and the ``groups`` of a
    coarsened table (None: not coarsened)."""

    attributes: tuple
    counts: np.ndarray
    weight: float
    groups: tuple | None


class _Queries(NamedTuple):
    """The pooled tables that one clique answers, as the estimator reads them (:func:`_queries`): the ``clique``'s
    index; ``matrix``, the 0/1 sparse map from its marginal (raveled in C order) to its tables' cells, stacked (each
    table's A_m after the sum onto its attributes); ``transpose``, that map's adjoint (the gradient's way back); the
    stacked ``counts`` and each cell's ``weight``. One sparse product per clique instead of a sum over axes per
    table: the loss runs some 10^3 times a fit, most of whose tables are small, where numpy's per-call overhead
    outweighed the sums (``benchmarks/estimator_speed.py`` prints the seconds a step)."""

    clique: int
    matrix: sparse.csr_array
    transpose: sparse.csr_array
    counts: np.ndarray
    weight: np.ndarray


_CACHED_CELLS = 100_000   # about 12 bytes a clique cell: 32 cached matrices of at most this many hold 40 MB


def _query_matrix(clique, sizes, attributes, shape, groups):
    """The 0/1 matrix (cells of a table of ``shape``, cells of ``clique``) that sums a marginal on ``clique`` onto
    ``attributes`` (a subset, axes in that order) and then over ``groups`` (:func:`coarsen`; None: none). Cached for
    cliques of up to ``_CACHED_CELLS`` cells, since AIM's rounds refit the same tables on mostly the same cliques;
    larger ones are built again, so that the cache's memory stays bounded whatever ``max_model_size`` is."""
    if math.prod(sizes[v] for v in clique) <= _CACHED_CELLS:
        return _cached_query_matrix(clique, sizes, attributes, shape, groups)
    return _build_query_matrix(clique, sizes, attributes, shape, groups)


def _build_query_matrix(clique, sizes, attributes, shape, groups):
    coords = np.indices([sizes[v] for v in clique]).reshape(len(clique), -1)
    index = [coords[clique.index(v)] if groups is None or groups[i] is None
             else np.asarray(groups[i], dtype=np.int64)[coords[clique.index(v)]] for i, v in enumerate(attributes)]
    n = coords.shape[1]
    out = sparse.csr_array((np.ones(n), (np.ravel_multi_index(index, shape), np.arange(n))),
                           shape=(math.prod(shape), n))
    for a in (out.data, out.indices, out.indptr):
        a.flags.writeable = False   # a cached matrix is shared by every fit that reads it
    return out


_cached_query_matrix = functools.lru_cache(maxsize=32)(_build_query_matrix)


def _queries(tree, sizes, tables):
    """:class:`_Queries` of ``tables`` (:class:`_Pooled`), one per clique answering any: a table goes to the first
    clique that covers its attributes."""
    by_clique = {}
    for t in tables:
        by_clique.setdefault(tree.covering(t.attributes), []).append(t)
    out = []
    for c, ts in sorted(by_clique.items()):
        m = sparse.vstack([_query_matrix(tree.cliques[c], sizes, t.attributes, t.counts.shape, t.groups) for t in ts],
                          format="csr")
        out.append(_Queries(c, m, m.T.tocsr(), np.concatenate([t.counts.ravel() for t in ts]),
                            np.concatenate([np.full(t.counts.size, float(t.weight)) for t in ts])))
    return out


def _loss(mu, queries, total):
    """L at the clique marginals ``mu`` and the residuals n̂·A μ_C − y of each clique's tables (:class:`_Queries`)."""
    loss, residuals = 0.0, []
    for q in queries:
        r = total * (q.matrix @ mu[q.clique].ravel()) - q.counts
        loss += 0.5 * float(np.dot(q.weight * r, r))
        residuals.append(r)
    return loss, residuals


def _gradient(mu, queries, total, residuals):
    """∂L/∂μ_C of each clique, from :func:`_loss`'s residuals (apart, so that a rejected step of a line
    search costs no gradient)."""
    g = [np.zeros(m.shape) for m in mu]
    for q, r in zip(queries, residuals):
        g[q.clique] = (q.transpose @ (total * q.weight * r)).reshape(mu[q.clique].shape)
    return g


def _loss_and_gradient(mu, queries, total):
    """L at the clique marginals ``mu`` and its gradient in each clique's marginal; ``queries``: :class:`_Queries`."""
    loss, residuals = _loss(mu, queries, total)
    return loss, _gradient(mu, queries, total, residuals)


def _objective(theta, tree, sizes, shapes, measured, total):
    """L and its gradient in the free parameters: forward down the junction tree, backward up it."""
    cond = _softmax_rows(theta, shapes)
    k = len(tree.cliques)
    mu, sep = _forward(tree, sizes, cond)
    loss, g_mu = _loss_and_gradient(mu, measured, total)
    grads = [None] * k
    for c in reversed(tree.order):
        g = g_mu[c].reshape(shapes[c])
        p = tree.parent[c]
        if p >= 0:
            s = tree.cliques[c][:tree.separator[c]]
            g_sep = (g * cond[c]).sum(axis=1).reshape([sizes[v] for v in s])
            g_mu[p] = g_mu[p] + _broadcast_to(g_sep, s, tree.cliques[p], sizes)
        gc = g * sep[c][:, None]
        grads[c] = cond[c] * (gc - (gc * cond[c]).sum(axis=1, keepdims=True))
    return loss, np.concatenate([g.ravel() for g in grads])


def _initial(tree, sizes, shapes, start, tables, total):
    """Free parameters of a first model: ``start``'s marginals on every clique where it can (a
    warm start; exact where ``start`` is in the new family), else the independence model of the
    one-way ``tables`` (:class:`_Pooled`) projected onto the simplex (uniform where an attribute has none)."""
    if start is None:
        one = {t.attributes[0]: project_simplex(t.counts / total) for t in tables
               if len(t.attributes) == 1 and t.groups is None}
        one = [one.get(v, np.full(sizes[v], 1.0 / sizes[v])) for v in range(len(sizes))]
    else:
        marginals = start.clique_marginals()
    parts = []
    for c, s, (r, k) in zip(tree.cliques, tree.separator, shapes):
        if start is None:
            joint = np.ones(1)
            for v in c[s:]:
                joint = np.multiply.outer(joint, one[v])
            joint = np.broadcast_to(joint.reshape(1, k), (r, k)) + 1e-12
        else:
            joint = start.marginal(c, marginals).reshape(r, k) + 1e-12
        parts.append(np.log(joint / joint.sum(axis=1, keepdims=True)).ravel())
    return np.concatenate(parts)


def _conditionals(tree, sizes, shapes, psi):
    """The conditionals μ(C∖S | S) of the distribution ∝ exp Σ_C ψ_C (log-potentials ``psi`` on
    the cliques, each (cells of S, cells of C∖S)): sum-product up the tree, each clique sending
    its separator's log-normaliser to its parent."""
    incoming = [np.zeros(sh) for sh in shapes]
    cond = [None] * len(tree.cliques)
    for c in reversed(tree.order):
        logits = psi[c] + incoming[c]
        top = logits.max(axis=1, keepdims=True)
        e = np.exp(logits - top)
        norm = e.sum(axis=1, keepdims=True)
        cond[c] = e / norm
        p = tree.parent[c]
        if p >= 0:
            s = tree.cliques[c][:tree.separator[c]]
            msg = (np.log(norm) + top).reshape([sizes[v] for v in s])
            full = np.broadcast_to(_broadcast_to(msg, s, tree.cliques[p], sizes), [sizes[v] for v in tree.cliques[p]])
            incoming[p] = incoming[p] + full.reshape(shapes[p])
    return cond


def _mirror_descent(psi, tree, sizes, shapes, measured, total, iterations, tol):
    """Entropic mirror descent on the log-potentials (McKenna, Sheldon, Miklau 2019, Algorithm 1):
    ψ_C ← ψ_C − α ∂L/∂μ_C multiplies the distribution by exp(−α ∇L) and renormalises, which
    stays in the family; α by their Armijo line search. Stops after ``iterations`` steps or when
    a step lowers L by less than ``tol`` of L."""
    cond = _conditionals(tree, sizes, shapes, psi)
    mu = _forward(tree, sizes, cond)[0]
    loss, grad = _loss_and_gradient(mu, measured, total)
    alpha, steps = 1.0, 0
    while steps < iterations:
        steps += 1
        alpha *= 2.0
        for _ in range(30):
            trial = [p - alpha * g.reshape(p.shape) for p, g in zip(psi, grad)]
            t_cond = _conditionals(tree, sizes, shapes, trial)
            t_mu = _forward(tree, sizes, t_cond)[0]
            t_loss, t_residuals = _loss(t_mu, measured, total)
            decrease = sum(float((g * (m - n)).sum()) for g, m, n in zip(grad, mu, t_mu))
            if t_loss <= loss and loss - t_loss >= 0.5 * decrease:   # Armijo, and never uphill
                t_grad = _gradient(t_mu, measured, total, t_residuals)
                break
            alpha *= 0.5
        else:
            break   # no step lowers L any more: at the minimum to machine precision
        done = loss - t_loss <= tol * loss
        psi, cond, mu, loss, grad = trial, t_cond, t_mu, t_loss, t_grad
        if done:
            break
    return cond, loss, steps


def fit_model(sizes, cliques, measurements, *, start=None, iterations=2000, tol=1e-13, method="lbfgs"):
    """The decomposable model closest to ``measurements`` (module docstring).

    Parameters
    ----------
    sizes : sequence of int
    cliques : sequence of tuple of int
        Attribute sets the model must join beyond the measurements' own (it is Markov with
        respect to a triangulation of both); may be empty.
    measurements : sequence of Measurement
    start : GraphicalModel or None
        A model to start from (warm start), such as the previous fit of an adaptive loop.
    iterations : int
        Most steps of the optimiser.
    tol : float
        Relative decrease of L in a step at which it stops.
    method : {"lbfgs", "mirror"}, default "lbfgs"
        L-BFGS on the softmax parametrisation of the conditionals, or entropic mirror descent on
        the cliques' log-potentials (module docstring says which fits better).

    Returns
    -------
    GraphicalModel
    """
    sizes = tuple(int(s) for s in sizes)
    tree = junction_tree(sizes, list(cliques) + [m.attributes for m in measurements])
    total = estimate_total(measurements)
    # Tables of one attribute set pool into their inverse-variance weighted mean: Σ_i w_i ‖n̂μ − y_i‖²
    # equals (Σ_i w_i) ‖n̂μ − ȳ‖² plus a constant, so L keeps its minimiser at a fraction of the cost.
    # A coarsened table is another query of its set: keyed apart.
    pooled = {}
    for m in measurements:
        order = sorted(range(len(m.attributes)), key=lambda i: m.attributes[i])
        key = (tuple(m.attributes[i] for i in order), None if m.groups is None else tuple(m.groups[i] for i in order))
        y = np.transpose(m.counts.astype(np.float64), order)
        w, acc = pooled.get(key, (0.0, 0.0))
        pooled[key] = (w + 1.0 / m.sigma**2, acc + y / m.sigma**2)
    scale = 1.0 / (total**2 * max(w for w, _ in pooled.values()))   # L of order the number of cells
    tables = [_Pooled(a, acc / w, w * scale, groups) for (a, groups), (w, acc) in pooled.items()]
    measured = _queries(tree, sizes, tables)
    shapes = _shapes(tree, sizes)
    theta = _initial(tree, sizes, shapes, start, tables, total)
    if method == "mirror":
        at = np.cumsum([0] + [r * k for r, k in shapes])
        psi = [theta[a:b].reshape(sh) for a, b, sh in zip(at[:-1], at[1:], shapes)]
        cond, loss, steps = _mirror_descent(psi, tree, sizes, shapes, measured, total, iterations, tol)
    elif method == "lbfgs":
        res = optimize.minimize(_objective, theta, args=(tree, sizes, shapes, measured, total), jac=True,
                                method="L-BFGS-B", options={"maxiter": iterations, "ftol": tol, "gtol": 1e-12,
                                                            "maxcor": 20})
        cond, loss, steps = _softmax_rows(res.x, shapes), res.fun, res.nit
    else:
        raise ValueError(f"method must be 'mirror' or 'lbfgs', got {method!r}.")
    logger.debug("estimator (%s): %d cliques, %d cells, %d steps, loss %.6g, total %.6g", method, len(tree.cliques),
                 tree.size(sizes), steps, loss / scale, total)
    return GraphicalModel(sizes, tree, tuple(cond), total)
