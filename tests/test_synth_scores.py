"""The PrivBayes score n·I(X; Π): against a plain formula, and its add/remove sensitivity by brute
force over many small tables (tight), with the normalised score's failure as a control."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpknn.synth._scores import mutual_information_score, score_sensitivity


def reference_score(t):
    """n·I from the definition: Σ_{x,π} p(x,π) ln(p(x,π)/(p(x)p(π))), times n."""
    t = np.asarray(t, dtype=float).reshape(len(t), -1)
    n = t.sum()
    total = 0.0
    for x, p in itertools.product(range(t.shape[0]), range(t.shape[1])):
        if t[x, p]:
            total += t[x, p] / n * math.log((t[x, p] / n) / (t[x].sum() / n * t[:, p].sum() / n))
    return n * total


def g(n):
    return (n + 1) * math.log(n + 1) - n * math.log(n) if n else 0.0


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 3), st.integers(1, 3), st.integers(1, 2), st.data())
def test_score_matches_the_definition(a, b, c, data):
    t = np.array(data.draw(st.lists(st.integers(0, 6), min_size=a * b * c, max_size=a * b * c))).reshape(a, b, c)
    assert mutual_information_score(t) == pytest.approx(reference_score(t), rel=1e-9, abs=1e-9)


def test_sensitivity_by_brute_force_is_tight():
    """Every table of up to 14 rows in a 2-3 by 2-4 grid, grown by one row in every cell: the change
    is at most g(n) (n the smaller table's rows), and some change comes within 1% of it."""
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(4000):
        a, b = rng.integers(2, 4), rng.integers(2, 5)
        n = int(rng.integers(1, 15))
        t = np.zeros((a, b), dtype=np.int64)
        np.add.at(t, (rng.integers(0, a, n), rng.integers(0, b, n)), 1)
        s = mutual_information_score(t)
        for x, p in itertools.product(range(a), range(b)):
            u = t.copy()
            u[x, p] += 1
            change = abs(mutual_information_score(u) - s)
            assert change <= score_sensitivity(n + 1)  # N bounds both tables
            worst = max(worst, change / g(n))
    assert 0.99 < worst <= 1 + 1e-9


def test_normalised_score_has_no_such_bound():
    """Control: I itself (the TODS'17 score divided by n) moves by more than g(N)/N when n is small
    and N large, which is why PrivBayesE cannot use the Lemma 4.1 sensitivity with public N."""
    t = np.array([[1, 0], [0, 0]])
    u = np.array([[1, 0], [0, 1]])
    change = abs(mutual_information_score(u) / 2 - mutual_information_score(t) / 1)
    assert change > score_sensitivity(1000) / 1000


def test_sensitivity_margin_and_checks():
    assert score_sensitivity(10**6) == pytest.approx(g(10**6), rel=1e-6)
    assert score_sensitivity(10**6) > g(10**6)
    for bad in (0, -1, 2.5, True, 2**41):
        with pytest.raises(ValueError, match="max_rows"):
            score_sensitivity(bad)
    with pytest.raises(ValueError, match="axes"):
        mutual_information_score([1, 2])
    with pytest.raises(ValueError, match="non-negative"):
        mutual_information_score([[1, -1], [0, 0]])
    assert mutual_information_score(np.zeros((2, 2), dtype=int)) == 0.0
