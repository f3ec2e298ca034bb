"""One consistent distribution from noisy marginals on a tree: the estimation step of MST.

Input: released count tables y_m, each of one attribute or of one edge of a spanning tree T of
the attributes, with public noise standard deviations σ_m. Output: the distribution μ of T's
exponential family (a Markov random field whose cliques are T's edges) minimising

    L(μ) = Σ_m ‖n̂ μ_{S_m} − y_m‖² / (2 σ_m²),

n̂ the total released by the tables (their inverse-variance weighted sums). This is private-pgm's
estimator (McKenna, Sheldon, Miklau 2019, §4: entropic mirror descent on the clique
potentials, marginals by belief propagation), written for the case MST needs, a tree, where
belief propagation is exact and the local polytope equals the marginal polytope, so every
vector of consistent edge marginals is reached and the minimiser is one distribution whose
every marginal agrees with every other. Unlike clipping and normalising each table on its own,
the fit pools the evidence of every table about an attribute.

Everything here reads released tables and public parameters only (post-processing). Sampling
uses controlled rounding (the expected count of every value within every parent group is
rounded, randomly and without bias, to an integer), so a synthetic table of n rows matches the
model's marginals up to rounding rather than up to multinomial error.

References
----------
.. [1] McKenna, Sheldon, Miklau (2019). "Graphical-model based estimation and inference for
   differential privacy", ICML, §4 (the estimator), Algorithm 1.
.. [2] McKenna, Miklau, Sheldon (2021). "Winning the NIST contest: a scalable and general
   approach to differentially private synthetic data", J. Priv. Confidentiality 11(3) (MST).
.. [3] Wainwright, Jordan (2008). "Graphical models, exponential families, and variational
   inference", Prop. 2.1 / §4.1 (belief propagation on trees is exact; local = marginal polytope).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy.special import logsumexp

__all__ = ["Measurement", "TreeModel", "estimate_total", "fit_tree", "project_simplex", "round_counts", "tree_order"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Measurement:
    """A released count table: ``attributes`` (one or two indices, axes in that order), the
    noisy integer ``counts`` and the public standard deviation ``sigma`` of their noise."""

    attributes: tuple
    counts: np.ndarray
    sigma: float


def tree_order(d, edges, root=0):
    """(order, parent) of a spanning tree of ``d`` nodes rooted at ``root``: breadth-first order
    and each node's parent (−1 for the root). ValueError when ``edges`` is not a spanning tree."""
    if len(edges) != d - 1:
        raise ValueError(f"a spanning tree of {d} attributes has {d - 1} edges, got {len(edges)}.")
    nbrs = [[] for _ in range(d)]
    for a, b in edges:
        nbrs[a].append(b)
        nbrs[b].append(a)
    parent = [-2] * d
    parent[root] = -1
    order, i = [root], 0
    while i < len(order):
        v = order[i]
        for w in nbrs[v]:
            if parent[w] == -2:
                parent[w] = v
                order.append(w)
        i += 1
    if len(order) != d:
        raise ValueError(f"the edges {edges} do not connect all {d} attributes.")
    return tuple(order), tuple(parent)


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


@dataclass(frozen=True)
class TreeModel:
    """A distribution on the product of the attributes' codes that factorises over a tree.

    Attributes
    ----------
    sizes : tuple of int
        Number of codes of each attribute.
    order, parent : tuple of int
        Breadth-first order of the tree and each node's parent (−1 for the root).
    node_log : tuple of ndarray
        Log-potential of each attribute, shape (sizes[v],).
    edge_log : tuple of ndarray or None
        Log-potential of the edge (parent[v], v), shape (sizes[parent[v]], sizes[v]); None at the root.
    total : float
        n̂, the total released by the tables.
    """

    sizes: tuple
    order: tuple
    parent: tuple
    node_log: tuple
    edge_log: tuple
    total: float

    def marginals(self):
        """(node marginals, edge marginals, log Z) by belief propagation (exact on a tree); the
        edge marginal of v has the parent on axis 0 (None at the root)."""
        d = len(self.sizes)
        up, below = [None] * d, [None] * d
        children = [[] for _ in range(d)]
        for v in self.order[1:]:
            children[self.parent[v]].append(v)
        for v in reversed(self.order):
            below[v] = self.node_log[v] + sum((up[k] for k in children[v]), np.zeros(self.sizes[v]))
            if self.parent[v] >= 0:
                up[v] = logsumexp(self.edge_log[v] + below[v][None, :], axis=1)
        full = [None] * d
        full[self.order[0]] = below[self.order[0]]
        outside = [None] * d
        for v in self.order[1:]:
            outside[v] = full[self.parent[v]] - up[v]
            full[v] = below[v] + logsumexp(self.edge_log[v] + outside[v][:, None], axis=0)
        log_z = float(logsumexp(full[self.order[0]]))
        nodes = [np.exp(f - log_z) for f in full]
        edges = [None if self.parent[v] < 0 else
                 np.exp(outside[v][:, None] + self.edge_log[v] + below[v][None, :] - log_z) for v in range(d)]
        return nodes, edges, log_z

    def sample_codes(self, n, rng, *, marginals=None):
        """Codes of shape (d, n) by controlled rounding down the tree (module docstring);
        ``marginals``: :meth:`marginals`'s result when the caller has it already."""
        nodes, edges, _ = self.marginals() if marginals is None else marginals
        codes = np.empty((len(self.sizes), n), dtype=np.int64)
        root = self.order[0]
        codes[root] = rng.permutation(np.repeat(np.arange(self.sizes[root]), round_counts(nodes[root], n, rng)))
        for v in self.order[1:]:
            p = self.parent[v]
            tot = edges[v].sum(axis=1, keepdims=True)
            cond = np.where(tot > 0, edges[v] / np.where(tot > 0, tot, 1.0), nodes[v][None, :])
            rows = np.argsort(codes[p], kind="stable")
            ends = np.cumsum(np.bincount(codes[p], minlength=self.sizes[p]))
            start = 0
            for x, end in enumerate(ends):
                if end > start:
                    vals = np.repeat(np.arange(self.sizes[v]), round_counts(cond[x], end - start, rng))
                    codes[v, rows[start:end]] = rng.permutation(vals)
                start = end
        return codes


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


def _oriented(m, parent):
    """(vertex, table) of a measurement: a node's table, or an edge's with the parent on axis 0."""
    if len(m.attributes) == 1:
        return m.attributes[0], m.counts.astype(np.float64)
    a, b = m.attributes
    if parent[b] == a:
        return b, m.counts.astype(np.float64)
    if parent[a] == b:
        return a, m.counts.astype(np.float64).T
    raise ValueError(f"the measurement of {m.attributes} is not on an edge of the tree.")


def _unpack(theta, sizes, order, parent):
    """Root marginal and row-stochastic conditionals P(v | parent) from free parameters (softmax)."""
    mats, at = [None] * len(sizes), 0
    for v in order:
        shape = (sizes[v],) if parent[v] < 0 else (sizes[parent[v]], sizes[v])
        k = int(np.prod(shape))
        z = theta[at:at + k].reshape(shape)
        at += k
        z = z - z.max(axis=-1, keepdims=True)
        e = np.exp(z)
        mats[v] = e / e.sum(axis=-1, keepdims=True)
    return mats


def _objective(theta, sizes, order, parent, measured, total):
    """L and its gradient in the free parameters: forward down the tree (μ_v = P_vᵀ μ_parent),
    backward up it (reverse-mode differentiation through the same products)."""
    cond = _unpack(theta, sizes, order, parent)
    mu, edge = [None] * len(sizes), [None] * len(sizes)
    for v in order:
        if parent[v] < 0:
            mu[v] = cond[v]
        else:
            edge[v] = mu[parent[v]][:, None] * cond[v]
            mu[v] = edge[v].sum(axis=0)
    g_mu = [np.zeros(s) for s in sizes]
    g_edge = [None if parent[v] < 0 else np.zeros((sizes[parent[v]], sizes[v])) for v in range(len(sizes))]
    loss = 0.0
    for kind, v, y, w in measured:
        r = total * (mu[v] if kind == 1 else edge[v]) - y
        loss += 0.5 * w * float((r * r).sum())
        if kind == 1:
            g_mu[v] += w * total * r
        else:
            g_edge[v] += w * total * r
    grads = [None] * len(sizes)
    for v in reversed(order):
        p = cond[v]
        if parent[v] < 0:
            g = g_mu[v]
            grads[v] = p * (g - (g * p).sum())
            continue
        ge = g_edge[v] + g_mu[v][None, :]
        g_mu[parent[v]] += (ge * p).sum(axis=1)
        gp = ge * mu[parent[v]][:, None]
        grads[v] = p * (gp - (gp * p).sum(axis=1, keepdims=True))
    return loss, np.concatenate([grads[v].ravel() for v in order])


def fit_tree(sizes, edges, measurements, *, iterations=2000, tol=1e-13):
    """The tree model closest to ``measurements`` (module docstring).

    A distribution that factorises over a tree is its root's marginal times one conditional per
    edge, so L is minimised over those, each a softmax of free parameters, by L-BFGS with the
    exact gradient. The same family as the mirror descent of private-pgm (a tree's Markov random
    fields are its directed factorisations), reached in far fewer steps.

    Parameters
    ----------
    sizes : sequence of int
    edges : sequence of (int, int)
        A spanning tree of the attributes.
    measurements : sequence of Measurement
        On single attributes and on edges of the tree.
    iterations : int
        Most L-BFGS steps.
    tol : float
        Relative decrease of L at which L-BFGS stops.

    Returns
    -------
    TreeModel
        Log-potentials log μ_root at the root, log P(v | parent) on the edges, zeros elsewhere.
    """
    sizes = tuple(int(s) for s in sizes)
    d = len(sizes)
    order, parent = tree_order(d, [tuple(e) for e in edges])
    total = estimate_total(measurements)
    measured = []
    for m in measurements:
        v, y = _oriented(m, parent)
        measured.append((len(m.attributes), v, y, 1.0 / m.sigma**2))
    scale = 1.0 / (total**2 * max(w for *_, w in measured))   # L of order the number of cells
    measured = [(k, v, y, w * scale) for k, v, y, w in measured]
    n_params = sum(sizes[v] * (1 if parent[v] < 0 else sizes[parent[v]]) for v in order)
    res = optimize.minimize(_objective, np.zeros(n_params), args=(sizes, order, parent, measured, total),
                            jac=True, method="L-BFGS-B",
                            options={"maxiter": iterations, "ftol": tol, "gtol": 1e-12, "maxcor": 20})
    logger.debug("tree estimator: %d steps, loss %.6g, total %.6g (%s)", res.nit, res.fun / scale, total, res.message)
    cond = _unpack(res.x, sizes, order, parent)
    with np.errstate(divide="ignore"):
        logs = [np.log(c) for c in cond]
    node_log = tuple(logs[v] if parent[v] < 0 else np.zeros(sizes[v]) for v in range(d))
    edge_log = tuple(None if parent[v] < 0 else logs[v] for v in range(d))
    return TreeModel(sizes, order, parent, node_log, edge_log, total)
