"""Obviously correct references for synthesis: counts by dictionary, greedy PrivBayes without noise."""

import itertools
import math
from collections import Counter


def usable(rows, attrs, mode):
    """Rows a table of ``attrs`` is counted on; None is a missing cell."""
    if mode == "value":
        return rows
    if mode == "complete_rows":
        return [r for r in rows if all(v is not None for v in r)]
    return [r for r in rows if all(r[a] is not None for a in attrs)]


def counts(rows, attrs, mode):
    """Counter of the cells of ``attrs`` (missing as the value None in mode 'value')."""
    return Counter(tuple(r[a] for a in attrs) for r in usable(rows, attrs, mode))


def score(rows, x, parents, mode):
    """n·I(X; Π) in nats, from its definition."""
    c = counts(rows, (x, *parents), mode)
    n = sum(c.values())
    cx, cp = Counter(), Counter()
    for cell, m in c.items():
        cx[cell[0]] += m
        cp[cell[1:]] += m
    return sum(m * math.log(m * n / (cx[cell[0]] * cp[cell[1:]])) for cell, m in c.items())


def candidates(d, inside, k):
    return [(x, pi) for x in range(d) if x not in inside
            for pi in itertools.combinations(sorted(inside), min(k, len(inside)))]
