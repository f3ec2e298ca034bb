"""Privacy amplification by MCAR missingness, valid and exact.

Model: each cell of attribute a is missing independently with a **public, fixed** rate φ_a
(MCAR as an independent Bernoulli draw per cell; a rate estimated from the data, or missingness
whose probability depends on other rows or values, voids these bounds). Mechanism j is ε_j-DP
(pure) on the incomplete data and reads only the rows observed on its attribute set S_j.
Neighbouring relation: add or remove one record of the ground-truth data. A row is then seen by
mechanism j with probability p_{S_j} = Π_{a ∈ S_j} (1 - φ_a), and the events for different j are
dependent when their sets overlap.

Bounds offered by :func:`mcar_cost` (``docs/amplification.md`` has the derivations):

- ``"exact"``: ln E_O[exp(Σ_j ε_j 1{S_j ⊆ O})], O the random set of observed attributes of the
  differing row. The likelihood ratio of any output of the (possibly adaptive) pure-DP mechanisms
  is at most this expectation, and the removal direction follows from E[e^Z] E[e^-Z] >= 1. It is
  attained by randomized response, so it is the tightest bound from the ε_j alone.
- ``"partition"``: the best valid partition (Mohapatra et al. 2024, Def. 5.9) with the valid group
  cost ln(1 + p_{A_G}(e^{Σ_{j∈G} ε_j} - 1)) (Balle et al. 2018, Theorem 8, for the group's shared
  sample), groups with disjoint amplification sets A_G ⊆ ∩_{j∈G} S_j adding up. Never below
  ``"exact"``; searched exactly.
- ``"paper"``: Algorithm 4 of the paper, whose cost is linear (p·ε) and which amplifies
  mechanisms of one group separately. **Not a valid bound** (ln(1 + p(e^ε - 1)) >= pε, and grouping
  is superadditive); kept only to reproduce the paper's figures.

:func:`child_bound` is the a-priori bound for PrivBayes whose structure is chosen from the data,
:func:`tree_bound` the one for MST's tables on a spanning tree chosen from the data.

References
----------
.. [1] Mohapatra, Zong, Kerschbaum, He (2024). "Differentially private data generation with
   missing data", §5 (Prop. 5.4, Thm 5.6, Def. 5.9, Alg. 4, Thm 5.12).
.. [2] Balle, Barthe, Gaboardi (2018). "Privacy amplification by subsampling: tight analyses via
   couplings and divergences", Theorem 8.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from dpknn.utils._validation import NON_NEGATIVE

__all__ = ["McarCost", "amplify_mcar", "child_bound", "mcar_cost", "observed_probability", "tree_bound"]

_METHODS = ("exact", "partition", "paper")
#: Largest number of attributes in the union of the sets for the exact bound (2^22 masks).
MAX_EXACT_ATTRIBUTES = 22
#: Largest number of attributes for the exhaustive searches of "partition" and "paper".
MAX_SEARCH_ATTRIBUTES = 10


def _check_rate(p, name):
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}.")
    return float(p)


def amplify_mcar(epsilon, p, delta=0.0):
    """(ln(1 + p(e^ε - 1)), p·δ): an (ε, δ)-DP mechanism run on a Poisson sample with rate p.

    Valid under add/remove one record (Balle et al. 2018, Theorem 8); with MCAR, p is the
    probability that a row is observed on the attributes the mechanism needs (Prop. 5.4 of the
    paper, whose p·ε is replaced by the valid bound).

    Parameters
    ----------
    epsilon : float
        ε of the mechanism on the sample, at least 0.
    p : float
        The sampling (observation) probability, in [0, 1]; 0 costs nothing.
    delta : float, default 0
        δ of the mechanism on the sample, in [0, 1].
    """
    epsilon = NON_NEGATIVE.check(epsilon, "epsilon")
    p = _check_rate(p, "p")
    delta = _check_rate(delta, "delta")
    if p == 0:
        return 0.0, 0.0
    if epsilon > 700:   # e^ε overflows: ln(1 + p(e^ε - 1)) = ε + ln p + ln(1 + (1-p)/p e^-ε)
        return epsilon + math.log(p) + math.log1p((1 - p) / p * math.exp(-epsilon)), p * delta
    return math.log1p(p * math.expm1(epsilon)), p * delta


def _rates(missing_rates, attributes):
    if not isinstance(missing_rates, dict):
        raise TypeError(f"missing_rates must be a dict attribute -> public MCAR rate, got {missing_rates!r}.")
    unknown = sorted(set(attributes) - set(missing_rates), key=str)
    if unknown:
        raise ValueError(f"missing_rates has no public rate for attributes {unknown}; rates are public inputs, "
                         "never estimated from the data.")
    return {a: _check_rate(missing_rates[a], f"missing_rates[{a!r}]") for a in attributes}


def observed_probability(attributes, missing_rates):
    """p_A = Π_{a ∈ A} (1 - φ_a): a row is observed on every attribute of A.

    Parameters
    ----------
    attributes : iterable
        The attribute set A (names that key ``missing_rates``); empty: p_A = 1.
    missing_rates : dict
        Attribute -> public MCAR missing rate φ_a in [0, 1]; every attribute of A needs one.
    """
    rates = _rates(missing_rates, list(attributes))
    return math.prod(1.0 - rates[a] for a in attributes)


@dataclass(frozen=True)
class McarCost:
    """The privacy cost of a set of pure-DP mechanisms under MCAR missingness.

    Attributes
    ----------
    epsilon : float
        The cost on the ground-truth data (add/remove one record).
    raw_epsilon : float
        Σ ε_j, the cost without amplification.
    method : str
    valid : bool
        False only for ``"paper"`` (the paper's linear cost, not a DP bound).
    groups : tuple
        For ``"partition"`` and ``"paper"``: (amplification attribute set, mechanism indices) per
        group; mechanisms in no group are not amplified.
    """

    epsilon: float
    raw_epsilon: float
    method: str
    valid: bool
    groups: tuple = field(default=())


def _prepare(epsilons, attribute_sets, missing_rates):
    eps = [NON_NEGATIVE.check(e, f"epsilons[{i}]") for i, e in enumerate(epsilons)]
    sets = [frozenset(s) for s in attribute_sets]
    if len(eps) != len(sets):
        raise ValueError(f"epsilons and attribute_sets must have the same length, got {len(eps)} and {len(sets)}.")
    universe = sorted(set().union(*sets), key=str) if sets else []
    rates = _rates(missing_rates, universe)
    index = {a: i for i, a in enumerate(universe)}
    masks = [sum(1 << index[a] for a in s) for s in sets]
    return eps, sets, universe, rates, masks


def _exact(eps, masks, universe, rates):
    d = len(universe)
    if d > MAX_EXACT_ATTRIBUTES:
        raise ValueError(f"the exact bound enumerates 2^{d} observed sets; it is limited to "
                         f"{MAX_EXACT_ATTRIBUTES} attributes. Use method='partition' (valid, looser).")
    size = 1 << d
    # f[S] = Σ ε_j with S_j == S; the zeta transform g[O] = Σ_{S ⊆ O} f[S] = Σ_{j: S_j ⊆ O} ε_j.
    g = np.zeros(size)
    for e, m in zip(eps, masks):
        g[m] += e
    idx = np.arange(size)
    for bit in range(d):
        has = (idx >> bit) & 1 == 1
        g[has] += g[idx[has] ^ (1 << bit)]
    # ln P(O) = Σ_{a ∈ O} ln(1 - φ_a) + Σ_{a ∉ O} ln φ_a.
    logp = np.zeros(size)
    with np.errstate(divide="ignore"):
        for bit, a in enumerate(universe):
            has = (idx >> bit) & 1 == 1
            logp += np.where(has, np.log1p(-rates[a]) if rates[a] < 1 else -np.inf, np.log(rates[a]))
    return float(special.logsumexp(logp + g))


def _group_cost(load, p):
    return amplify_mcar(load, p)[0] if p < 1 else load


def _subsets(mask):
    """Non-empty sub-masks of ``mask``."""
    sub = mask
    while sub:
        yield sub
        sub = (sub - 1) & mask


def _best_partition(eps, masks, universe, rates):
    """Exact search over valid partitions: each mechanism picks an amplification set B_j ⊆ S_j
    (or none); chosen sets must be equal (one group) or disjoint (different groups)."""
    d = len(universe)
    if d > MAX_SEARCH_ATTRIBUTES:
        raise ValueError(f"the exact partition search is limited to {MAX_SEARCH_ATTRIBUTES} attributes "
                         f"(got {d}); use method='exact', which is valid and never looser.")
    pmask = {}

    def p_of(m):
        if m not in pmask:
            pmask[m] = math.prod(1 - rates[universe[b]] for b in range(d) if (m >> b) & 1)
        return pmask[m]

    n = len(eps)
    cands = []
    for m in masks:
        opts = [(b, p_of(b)) for b in _subsets(m) if p_of(b) < 1]
        opts.sort(key=lambda t: t[1])
        cands.append(opts)
    # Mechanisms with the most to gain first; superadditivity gives each alone as a lower bound.
    alone = [min([e] + [_group_cost(e, p) for _, p in opts]) for e, opts in zip(eps, cands)]
    order = sorted(range(n), key=lambda j: -(eps[j] - alone[j]))
    rest = [0.0] * (n + 1)
    for i in range(n - 1, -1, -1):
        rest[i] = rest[i + 1] + alone[order[i]]
    best = [math.fsum(eps) + 1e-12, {}]
    loads = {}          # block mask -> summed ε of its group
    members = {}        # block mask -> number of mechanisms in its group
    choice = [0] * n

    def cost_now():
        return math.fsum(_group_cost(load, p_of(b)) for b, load in loads.items())

    def dfs(i, unamplified):
        current = cost_now() + unamplified
        if current + rest[i] >= best[0]:
            return
        if i == n:
            best[0], best[1] = current, dict(zip(order, choice))
            return
        j = order[i]
        for b, _ in cands[j]:
            if b in loads or all(b & other == 0 for other in loads):
                loads[b] = loads.get(b, 0.0) + eps[j]
                members[b] = members.get(b, 0) + 1
                choice[i] = b
                dfs(i + 1, unamplified)
                members[b] -= 1
                if members[b] == 0:
                    del loads[b], members[b]
                else:
                    loads[b] -= eps[j]
        choice[i] = 0
        dfs(i + 1, unamplified + eps[j])

    dfs(0, 0.0)
    groups = {}
    for j, b in (best[1] or {}).items():
        if b:
            groups.setdefault(b, []).append(j)
    out = tuple((frozenset(universe[k] for k in range(d) if (b >> k) & 1), tuple(sorted(js)))
                for b, js in sorted(groups.items()))
    return best[0], out


def _set_partitions(items):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _set_partitions(rest):
        for i in range(len(part)):
            yield [*part[:i], [first, *part[i]], *part[i + 1:]]
        yield [[first], *part]


def _paper_alg4(eps, sets, universe, rates):
    """Algorithm 4 of the paper: linear cost, best block per mechanism, over attribute partitions."""
    d = len(universe)
    if d > MAX_SEARCH_ATTRIBUTES:
        raise ValueError(f"the paper's Algorithm 4 enumerates attribute partitions; limited to "
                         f"{MAX_SEARCH_ATTRIBUTES} attributes (got {d}).")
    best, best_groups = math.inf, ()
    for part in _set_partitions(list(universe)):
        blocks = [(frozenset(b), math.prod(1 - rates[a] for a in b)) for b in part]
        total, groups = 0.0, {}
        for j, (e, s) in enumerate(zip(eps, sets)):
            fits = [(p, b) for b, p in blocks if b <= s]
            if fits:
                p, b = min(fits, key=lambda t: t[0])
                total += p * e
                groups.setdefault(b, []).append(j)
            else:
                total += e
        if total < best:
            best, best_groups = total, tuple((b, tuple(js)) for b, js in groups.items())
    return best, best_groups


def mcar_cost(epsilons, attribute_sets, missing_rates, *, method="exact"):
    """Privacy cost of pure-DP mechanisms j reading the rows observed on their sets S_j.

    Parameters
    ----------
    epsilons : sequence of float
        ε_j of each mechanism on the incomplete data.
    attribute_sets : sequence of sets
        S_j: mechanism j reads only the rows observed on every attribute of S_j (∅: all rows).
    missing_rates : dict
        Public MCAR rate φ_a of every attribute in the sets (never estimated from the data).
    method : {"exact", "partition", "paper"}
        See the module docstring. ``"paper"`` is not a valid bound.

    Returns
    -------
    McarCost

    Notes
    -----
    ``"exact"`` handles up to 22 attributes in the union of the sets (2^22 observed sets, about
    1 s); ``"partition"`` and ``"paper"`` search exhaustively up to 10 attributes and refuse more
    (``"exact"`` is valid and never looser, so use it beyond 10).
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}.")
    eps, sets, universe, rates, masks = _prepare(epsilons, attribute_sets, missing_rates)
    raw = math.fsum(eps)
    if method == "exact":
        return McarCost(epsilon=_exact(eps, masks, universe, rates), raw_epsilon=raw, method=method, valid=True)
    if method == "partition":
        value, groups = _best_partition(eps, masks, universe, rates)
        return McarCost(epsilon=value, raw_epsilon=raw, method=method, valid=True, groups=groups)
    value, groups = _paper_alg4(eps, sets, universe, rates)
    return McarCost(epsilon=value, raw_epsilon=raw, method=method, valid=False, groups=groups)


def child_bound(epsilons, children, missing_rates):
    """Σ_i ln(1 + (1 - φ_{X_i})(e^{ε_i} - 1)): the a-priori MCAR cost of PrivBayes marginals.

    Marginal i of PrivBayes reads the rows observed on its child X_i and parents Π_i. Whatever
    structure is chosen from the data, the children are distinct attributes and each marginal
    reads only rows observed on its own child, so amplifying marginal i by its child alone gives
    disjoint amplification sets: a valid bound chosen before the data are seen. The structure
    search itself is not amplified and must be charged separately. A figure computed from a
    realised structure (exact or partition) is after the fact and must be labelled so.

    Parameters
    ----------
    epsilons : sequence of float
        ε_i of each marginal (pure DP), at least 0.
    children : sequence
        The child attribute X_i of each marginal, as many as ``epsilons`` and all distinct.
    missing_rates : dict
        Attribute -> public MCAR missing rate φ in [0, 1]; every child needs one.
    """
    eps = [NON_NEGATIVE.check(e, f"epsilons[{i}]") for i, e in enumerate(epsilons)]
    children = list(children)
    if len(children) != len(eps):
        raise ValueError("epsilons and children must have the same length.")
    if len(set(children)) != len(children):
        raise ValueError(f"children must be distinct attributes, got {children}.")
    rates = _rates(missing_rates, children)
    return math.fsum(amplify_mcar(e, 1 - rates[c])[0] for e, c in zip(eps, children))


def tree_bound(one_way, edge, rates):
    """The a-priori MCAR cost of one table per attribute at ε₁ = ``one_way`` each and the d − 1
    edge tables of *any* spanning tree at ε₃ = ``edge`` each (pure DP), every table reading only
    the rows observed on its attributes; ``rates`` the public φ_a of the d attributes (0: always
    observed, no amplification).

    Root whatever tree the data choose at an attribute r fixed in advance: every other attribute
    is then the child of exactly one edge, and 1{S ⊆ O} ≤ 1{child ∈ O} for the edge's set S. The
    exponent of the exact bound is therefore at most Σ_a c_a 1{a ∈ O} with c_a = ε₁ + ε₃ (a ≠ r)
    and c_r = ε₁, and as the cells are missing independently,
    E_O[exp(Σ_a c_a 1{a ∈ O})] = Π_a (1 + (1 − φ_a)(e^{c_a} − 1)). The bound holds for every
    tree, so also for one chosen adaptively from earlier releases (``docs/amplification.md``); r
    is the attribute where the bound is smallest. Without amplification (all φ = 0) it is
    d·ε₁ + (d − 1)·ε₃.

    Parameters
    ----------
    one_way : float
        ε₁ of each one-way table, at least 0.
    edge : float
        ε₃ of each edge table, at least 0.
    rates : sequence of float
        The public MCAR missing rate φ_a of each of the d attributes, in [0, 1) (at least one).
    """
    one_way = NON_NEGATIVE.check(one_way, "one_way")
    edge = NON_NEGATIVE.check(edge, "edge")
    rates = [_check_rate(p, f"rates[{i}]") for i, p in enumerate(rates)]
    if not rates:
        raise ValueError("rates must name at least one attribute.")
    if any(p >= 1 for p in rates):
        raise ValueError(f"rates must be below 1 (an attribute that is never observed has no table), got {rates}.")
    full = [amplify_mcar(one_way + edge, 1 - p)[0] for p in rates]
    root = [amplify_mcar(one_way, 1 - p)[0] for p in rates]
    total = math.fsum(full)
    return min(total - f + r for f, r in zip(full, root))
