"""Brute-force reference for the imputation order, donor sets and L1(D) (docs/imputation.md).

Obviously correct and slow: donor sets are recomputed from scratch for every single deletion
and every single addition (every cell of the public domain, complete or incomplete, every label
gap), and L1(D) is the largest number of incomplete records whose donor set changes (plus the
incomplete record added or removed). Labels live on a circle; a new record takes a label in a
gap, represented by the existing label below it plus one half.
"""

import itertools


def squared_distance(a, b, weights, is_cat):
    total = 0
    for x, y, w, cat in zip(a, b, weights, is_cat):
        total += 2 * w * (x != y) if cat else w * (x - y) ** 2
    return total


def donor_sets(records, k, weights, is_cat, circle):
    """{label of incomplete record: tuple of donor labels in order} for records (cell, label, complete)."""
    complete = [(c, l) for c, l, done in records if done]
    out = {}
    for cell, label, done in records:
        if done:
            continue
        ranked = sorted(complete, key=lambda y: (squared_distance(cell, y[0], weights, is_cat),
                                                 tuple(y[0]), (y[1] - label) % circle))
        out[label] = tuple(l for _, l in ranked[:min(k, len(ranked))])
    return out


def changed(before, after):
    """|c(D, D')|: incomplete records added or removed plus those whose donor set differs."""
    keys = set(before) | set(after)
    return sum(1 for x in keys if x not in before or x not in after or set(before[x]) != set(after[x]))


def l1_bruteforce(cells, labels, complete, k, n_codes, weights, is_cat):
    """Return (L1, donors of D, list of (value, description) of every neighbour)."""
    records = [(tuple(int(v) for v in c), int(l), bool(d)) for c, l, d in zip(cells, labels, complete)]
    lab = sorted(l for _, l, _ in records)
    circle = (lab[-1] - lab[0] + 2) if lab else 2
    base = donor_sets(records, k, weights, is_cat, circle)
    cases = []
    for i in range(len(records)):
        other = records[:i] + records[i + 1:]
        cases.append((changed(base, donor_sets(other, k, weights, is_cat, circle)), ("delete", i)))
    gaps = [l + 0.5 for l in lab] if lab else [0.5]
    for cell in itertools.product(*[range(r) for r in n_codes]):
        for gap in gaps:
            for done in (True, False):
                plus = [*records, (cell, gap, done)]
                cases.append((changed(base, donor_sets(plus, k, weights, is_cat, circle)),
                              ("add", cell, gap, done)))
    return max(v for v, _ in cases), base, cases
