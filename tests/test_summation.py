"""dpknn.releases.exact_moments against brute-force sums of Fractions (hypothesis)."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpknn.releases._summation import Moments, exact_moments

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, max_size=60))
def test_exact_moments_equal_fraction_sums(values):
    m = exact_moments(np.array(values, dtype=np.float64))
    assert m.n == len(values)
    assert m.total == sum((Fraction(v) for v in values), Fraction(0))
    assert m.squares == sum((Fraction(v) ** 2 for v in values), Fraction(0))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=40), finite.filter(lambda c: abs(c) < 1e6))
def test_squared_deviations_and_parts_add_exactly(values, center):
    a, b = values[: len(values) // 2], values[len(values) // 2:]
    whole = exact_moments(values)
    assert exact_moments(a) + exact_moments(b) == whole      # partitions add up (the Parquet path)
    assert whole.squared_deviations(center) == sum((Fraction(v) - Fraction(center)) ** 2 for v in values)


def test_large_arrays_and_extreme_values():
    rng = np.random.default_rng(0)
    v = np.round(rng.lognormal(9, 1, 100_000), 2)
    m = exact_moments(v)
    assert float(m.total) == pytest.approx(float(np.sum(v)), rel=1e-12)
    extremes = np.array([1.7976931348623157e308, -1.7976931348623157e308, 5e-324, -(2.0**53 - 1)] * 50)
    assert exact_moments(extremes).total == sum(Fraction(x) for x in extremes)
    assert exact_moments([]) == Moments(0, Fraction(0), Fraction(0))
    with pytest.raises(ValueError, match="finite"):
        exact_moments([1.0, np.nan])
