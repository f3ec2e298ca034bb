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


def l1_by_definition(cells, labels, complete, k, n_codes, weights, is_cat):
    """L1(D) straight from the definition of a capture, over every cell of a wide domain.

    Equal to :func:`l1_bruteforce` (checked on small domains in the tests), but it does not
    recompute donor sets per neighbour, so domains of 10^5 cells stay cheap. Donors come from
    :func:`donor_sets`; then

    - deleting a complete record y changes the donor sets of the records y serves;
    - deleting or adding an incomplete record changes its own set only (value 1);
    - adding a complete record t = (cell c, label L) changes x's set iff t precedes x's k-th donor
      in x's order (every x when fewer than k records are complete), which is checked for every
      cell of the domain with numpy, and for every label gap at the k-th donors' cells.

    Returns (L1, value of the worst complete addition, value of the worst deletion of a complete
    record).
    """
    import numpy as np

    records = [(tuple(int(v) for v in c), int(l), bool(d)) for c, l, d in zip(cells, labels, complete)]
    lab = sorted(l for _, l, _ in records)
    circle = (lab[-1] - lab[0] + 2) if lab else 2
    base = donor_sets(records, k, weights, is_cat, circle)
    n_inc = len(base)
    if n_inc == 0:
        return 1, 0, 0
    served = {}
    for ds in base.values():
        for d in ds:
            served[d] = served.get(d, 0) + 1
    worst_delete = max(served.values(), default=0)
    n_complete = sum(1 for r in records if r[2])
    if n_complete < k:
        return max(1, worst_delete, n_inc), n_inc, worst_delete
    cell_of = {l: c for c, l, _ in records}
    x_cells = np.array([cell_of[x] for x in base], dtype=np.int64).reshape(n_inc, -1)
    kth = [ds[-1] for ds in base.values()]
    kth_cells = np.array([cell_of[y] for y in kth], dtype=np.int64).reshape(n_inc, -1)
    w = np.asarray(weights, dtype=np.int64)
    cat = np.asarray(is_cat, dtype=bool)

    def d2(a, b):
        diff = a - b
        return (np.where(cat, 2 * (diff != 0), diff * diff) * w).sum(axis=-1)

    radix = np.asarray(n_codes, dtype=np.int64)

    def key(c):
        out = np.zeros(c.shape[:-1], dtype=np.int64)
        for j in range(c.shape[-1]):
            out = out * radix[j] + c[..., j]
        return out

    r = d2(x_cells, kth_cells)
    ck = key(kth_cells)
    domain = np.stack(np.meshgrid(*[np.arange(v) for v in n_codes], indexing="ij"), -1).reshape(-1, len(n_codes))
    best = 0
    for start in range(0, domain.shape[0], 4096):
        block = domain[start:start + 4096]
        d = d2(block[:, None, :], x_cells[None, :, :])
        kb = key(block)[:, None]
        strict = (d < r) | ((d == r) & (kb < ck))
        best = max(best, int(strict.sum(axis=1).max()))
    # At a k-th donor's cell the label decides: t precedes y_k iff (L - lx) < (l_yk - lx) mod circle.
    strict_at = {}
    for c in {tuple(v) for v in kth_cells}:
        cc = np.asarray(c, dtype=np.int64)
        dd = d2(cc[None, :], x_cells)
        strict_at[c] = int(((dd < r) | ((dd == r) & (key(cc) < ck))).sum())
    gaps = [l + 0.5 for l in lab]
    xs = list(base)
    for c, count in strict_at.items():
        tied = [i for i in range(n_inc) if tuple(kth_cells[i]) == c]
        for g in gaps:
            extra = sum(1 for i in tied if (g - xs[i]) % circle < (kth[i] - xs[i]) % circle)
            best = max(best, count + extra)
    return max(1, worst_delete, best), best, worst_delete


def l1_with_universes(cells, labels, complete, inside, k, n_codes, weights, is_cat):
    """L1 of each universe by brute force over the whole data (docs/imputation.md, "Universes").

    ``complete[g][i]``: record i has every attribute of group g observed; ``inside[g]``: a
    predicate on a cell, true when a record of that cell belongs to group g's universe. Records
    outside a universe are ignored by its imputation. Every neighbour is tried: each deletion,
    and each addition of a record in any cell of the whole domain, any label gap and any
    combination of complete / incomplete per group. Returns (list of L1 per group, list per group
    of the worst addition of a record complete in that group, list of donor sets per group).
    """
    groups = range(len(inside))
    records = [(tuple(int(v) for v in c), int(l)) for c, l in zip(cells, labels)]
    lab = sorted(l for _, l in records)
    circle = (lab[-1] - lab[0] + 2) if lab else 2

    def sets(recs, flags):
        return [donor_sets([(c, l, f[g]) for (c, l), f in zip(recs, flags) if inside[g](c)], k, weights, is_cat,
                           circle) for g in groups]

    flags = [tuple(complete[g][i] for g in groups) for i in range(len(records))]
    base = sets(records, flags)
    worst = [1] * len(inside)   # adding an incomplete record inside a universe changes its own set
    worst_add = [0] * len(inside)

    def account(after, added=None):
        for g in groups:
            c = changed(base[g], after[g])
            worst[g] = max(worst[g], c)
            if added is not None and added[g]:
                worst_add[g] = max(worst_add[g], c)

    for i in range(len(records)):
        account(sets(records[:i] + records[i + 1:], flags[:i] + flags[i + 1:]))
    gaps = [l + 0.5 for l in lab] if lab else [0.5]
    for cell in itertools.product(*[range(r) for r in n_codes]):
        for gap in gaps:
            for f in itertools.product((True, False), repeat=len(inside)):
                account(sets([*records, (cell, gap)], [*flags, f]), added=f)
    return worst, worst_add, base
