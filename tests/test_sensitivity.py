import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_knn import donor_sets

from dpknn import Continuous, Ordinal, Schema
from dpknn.impute._knn import KNNImputer
from dpknn.releases._sensitivity import (
    count_smooth,
    mean_smooth,
    variance_smooth,
)

# --- brute force over every neighbour -------------------------------------------------------
A, B = -2.0, 10.0      # public bounds of Y (a < 0 exercises the erratum of Theorem 5.4)
THRESHOLD = 4.0        # subpopulation "Y >= 4" depends on the imputed attribute


def impute(records, k, circle):
    """{label: (cell, y)} with missing y filled by the mean of the donors (reference order)."""
    donors = donor_sets([(c, l, y is not None) for c, l, y in records], k, [1], [False], circle)
    y_of = {l: y for _, l, y in records}
    return {l: (c, y if y is not None else float(np.mean([y_of[d] for d in donors[l]])))
            for c, l, y in records}


def queries(data, s, ybar):
    cell_sub = [y for c, y in data.values() if c[0] <= 1]       # independent of A
    a_sub = [y for c, y in data.values() if y >= THRESHOLD]     # determined by A
    return {
        "count_a": len(a_sub),
        "mean_a": sum(cell_sub) / s,
        "mean_b": sum(a_sub) / s,
        "var": sum((y - ybar) ** 2 for y in cell_sub) / (s - 1),
    }


def l1_of(records, k):
    df = pd.DataFrame({"x": [c[0] for c, _, _ in records], "id": [l for _, l, _ in records],
                       "y": [np.nan if y is None else y for _, _, y in records]})
    schema = Schema(known=[Ordinal("x", 0, 3)], imputed=[Continuous("y", A, B)], label="id")
    if df.y.notna().sum() < k:
        return None
    return KNNImputer(schema, k=k).fit(df).l1_


@st.composite
def datasets(draw):
    k = draw(st.integers(1, 2))
    n = draw(st.integers(k + 1, 8))
    cells = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    ys = draw(st.lists(st.one_of(st.none(), st.sampled_from([A, 0.0, 3.0, 5.0, B])), min_size=n, max_size=n))
    for i in range(k):
        ys[i] = ys[i] if ys[i] is not None else 5.0
    labels = draw(st.lists(st.integers(0, 30), min_size=n, max_size=n, unique=True))
    return k, [((c,), l, y) for c, l, y in zip(cells, labels, ys)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datasets(), st.floats(2.0, 9.0), st.floats(A, B))
def test_bounds_cover_every_neighbour_and_are_ln2_smooth(case, s, ybar):
    k, records = case
    labels = sorted(l for _, l, _ in records)
    circle = labels[-1] - labels[0] + 2
    base = queries(impute(records, k, circle), s, ybar)
    l1 = l1_of(records, k)
    bounds = {
        "count_a": count_smooth(l1),
        "mean_a": mean_smooth(l1, (A, B), s, depends_on_imputed=False),
        "mean_b": mean_smooth(l1, (A, B), s, depends_on_imputed=True),
        "var": variance_smooth(l1, (A, B), s, ybar),
    }
    neighbours = [records[:i] + records[i + 1:] for i in range(len(records))]
    for cell, gap, y in itertools.product(range(4), [l + 0.5 for l in labels], [None, A, 0.0, 5.0, B]):
        neighbours.append([*records, ((cell,), gap, y)])
    for other in neighbours:
        if sum(y is not None for _, _, y in other) < k:
            continue
        q = queries(impute(other, k, circle), s, ybar)
        for name, bound in bounds.items():
            assert abs(q[name] - base[name]) <= bound + 1e-9, (name, other)
        # Smoothness (β = ln 2): bound(D) <= 2 bound(D'), with L1(D') from the exact kernel.
        if all(float(l).is_integer() for _, l, _ in other):
            l1_other = l1_of(other, k)
            assert count_smooth(l1) <= 2 * count_smooth(l1_other)
            assert mean_smooth(l1, (A, B), s, depends_on_imputed=True) <= \
                2 * mean_smooth(l1_other, (A, B), s, depends_on_imputed=True) + 1e-12


def test_paper_formulas_for_nonnegative_bounds():
    assert count_smooth(7) == 8
    assert mean_smooth(3, (0, 10), 5, depends_on_imputed=False) == pytest.approx((10 + 3 * 10) / 5)
    assert mean_smooth(3, (0, 10), 5, depends_on_imputed=True) == pytest.approx(10 * 4 / 5)
    assert mean_smooth(3, (2, 10), 5, depends_on_imputed=False) == pytest.approx((10 + 3 * 8) / 5)
    assert variance_smooth(3, (0, 10), 5, 4) == pytest.approx(36 * 4 / 4)
    # Erratum: with a < 0 the leading term is max(|a|, |b|), not b.
    assert mean_smooth(0, (-20, 10), 5, depends_on_imputed=False) == pytest.approx(20 / 5)


def test_refusals():
    with pytest.raises(ValueError, match="low < high"):
        mean_smooth(1, (5, 5), 10, depends_on_imputed=False)
    with pytest.raises(ValueError, match="finite"):
        mean_smooth(1, (0, float("nan")), 10, depends_on_imputed=False)
    with pytest.raises(ValueError, match=r">= 2\.0 for a variance"):
        variance_smooth(1, (0, 1), 1.5, 0.5)
