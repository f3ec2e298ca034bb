"""Brute-force references for MCAR amplification (obviously correct, slow)."""

import itertools
import math


def exact_by_masks(eps, sets, rates):
    """ln Σ_O P(O) exp(Σ_{j: S_j ⊆ O} ε_j), enumerating every observed set O of the union."""
    universe = sorted(set().union(*sets), key=str)
    total = 0.0
    for bits in itertools.product([0, 1], repeat=len(universe)):
        observed = {a for a, b in zip(universe, bits) if b}
        prob = math.prod((1 - rates[a]) if a in observed else rates[a] for a in universe)
        total += prob * math.exp(sum(e for e, s in zip(eps, sets) if set(s) <= observed))
    return math.log(total)


def best_partition_by_enumeration(eps, sets, rates):
    """Smallest valid-partition cost: each mechanism picks a non-empty subset of its set (its group's
    amplification set) or nothing; picked sets must be equal or disjoint; a group with set B costs
    ln(1 + p_B (e^{Σ ε} - 1))."""
    options = []
    for s in sets:
        items = sorted(s, key=str)
        subs = [frozenset(c) for r in range(1, len(items) + 1) for c in itertools.combinations(items, r)]
        options.append([None, *subs])
    best = math.inf
    for pick in itertools.product(*options):
        chosen = [b for b in pick if b is not None]
        if any(a != b and a & b for a in chosen for b in chosen):
            continue
        loads, cost = {}, 0.0
        for e, b in zip(eps, pick):
            if b is None:
                cost += e
            else:
                loads[b] = loads.get(b, 0.0) + e
        for b, load in loads.items():
            p = math.prod(1 - rates[a] for a in b)
            cost += math.log1p(p * math.expm1(load))
        best = min(best, cost)
    return best
