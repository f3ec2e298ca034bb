"""Randomized response: the flip law (exact bounds, both sampler paths), the unbiased estimator,
and privacy on one record's two values with a negative control."""

import decimal
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from privacy_check import discrete_worst_log_ratio

from dpknn.mechanisms._randomized_response import RandomizedResponse
from dpknn.mechanisms._randomness import RandomSource


@pytest.mark.parametrize("eps", [1e-3, 0.5, math.log(3), 3.0, 40.0])
def test_bounds_bracket_the_flip_probability(eps):
    rr = RandomizedResponse(epsilon=eps)
    with decimal.localcontext() as ctx:
        ctx.prec = 120
        p = Fraction(1 / (1 + decimal.Decimal(eps).exp()))
    for prec in (64, 96, 200):
        lo, hi = rr._bounds(prec)
        assert lo <= p <= hi and hi - lo < Fraction(1, 2**prec)


@pytest.mark.parametrize("eps", [0.05, 1.0, 4.0])
def test_flip_frequency_is_the_law(eps):
    rr = RandomizedResponse(epsilon=eps)
    n = 400_000
    y = rr.randomize(np.ones(n, dtype=int), rng=int(eps * 100))
    p = rr.flip_probability
    flips = n - int(y.sum())
    assert abs(flips - n * p) < 4 * math.sqrt(n * p * (1 - p))
    z = rr.randomize(np.zeros(n, dtype=int), rng=7)
    assert abs(int(z.sum()) - n * p) < 4 * math.sqrt(n * p * (1 - p))


class _Band(RandomSource):
    """A source whose 64-bit words all fall in the undecided band, so every record takes the slow path."""

    def __init__(self, word, seed):
        super().__init__(np.random.default_rng(seed))
        self.word = word

    def words(self, n):
        return np.full(n, self.word, dtype=np.uint64)


def test_undecided_records_continue_the_same_uniform():
    # Given its first 64 bits u = floor(p·2^64), the uniform V falls below p with probability
    # frac(p·2^64): the slow path must reproduce that conditional law, not redraw from scratch.
    eps = 1.0
    rr = RandomizedResponse(epsilon=eps)
    lo, _ = rr._bounds(200)
    word = math.floor(lo * 2**64)
    frac = float(lo * 2**64 - word)
    n = 20_000
    y = rr.randomize(np.zeros(n, dtype=int), rng=_Band(word, 3))
    assert abs(y.mean() - frac) < 4 * math.sqrt(frac * (1 - frac) / n)
    assert abs(frac - rr.flip_probability) > 0.05   # a fresh draw would be told apart


def test_estimator_is_unbiased_and_its_interval_covers():
    rng = np.random.default_rng(11)
    rr = RandomizedResponse(epsilon=0.8)
    pi, n, reps = 0.3, 3000, 400
    x = (np.arange(n) < pi * n).astype(int)
    res = [rr.estimate(rr.randomize(x, rng=rng)) for _ in range(reps)]
    est = np.array([r.estimate for r in res])
    se = np.array([r.standard_error for r in res])
    assert abs(est.mean() - pi) < 4 * est.std() / math.sqrt(reps)
    assert est.std() == pytest.approx(se.mean(), rel=0.15)
    cover = np.mean([(r.lower <= pi <= r.upper) for r in res])
    assert abs(cover - 0.95) < 4 * math.sqrt(0.95 * 0.05 / reps)


def test_estimator_formula_by_hand():
    rr = RandomizedResponse(epsilon=math.log(3))   # e^ε = 3: π̂ = (4 ȳ − 1)/2
    assert rr.estimate([1, 0, 1, 0]).estimate == pytest.approx(0.5)
    assert rr.estimate([1, 1, 1, 0]).estimate == pytest.approx(1.0)
    assert rr.estimate([0, 0, 0, 0]).estimate == pytest.approx(-0.5)   # unbiased, so not clipped


class _FloatRR:
    """Randomized response at the wrong rate, keep probability e^{2ε}/(e^{2ε}+1) (negative control)."""

    def __init__(self, epsilon):
        self.keep = math.exp(2 * epsilon) / (math.exp(2 * epsilon) + 1)

    def randomize(self, bits, *, rng):
        return np.where(rng.random(len(bits)) < self.keep, bits, 1 - bits)


def test_privacy_of_one_record_with_a_negative_control():
    eps, n = 1.0, 400_000
    rr = RandomizedResponse(epsilon=eps)
    a = rr.randomize(np.ones(n, dtype=int), rng=1)
    b = rr.randomize(np.zeros(n, dtype=int), rng=2)
    worst, kept = discrete_worst_log_ratio(a, b)
    assert kept == 2 and eps - 0.1 < worst <= eps   # tight: RR attains e^ε
    rng = np.random.default_rng(3)
    bad = _FloatRR(eps)
    worst_bad, _ = discrete_worst_log_ratio(bad.randomize(np.ones(n, dtype=int), rng=rng),
                                            bad.randomize(np.zeros(n, dtype=int), rng=rng))
    assert worst_bad > eps


def test_records_keep_their_labels_and_inputs_are_not_mutated():
    bits = pd.Series([1, 0, 1, 1], index=["r7", "r2", "r9", "r1"], name="smoker")
    before = bits.copy()
    out = RandomizedResponse(epsilon=2.0).randomize(bits, rng=0)
    assert list(out.index) == ["r7", "r2", "r9", "r1"] and out.name == "smoker"
    pd.testing.assert_series_equal(bits, before)
    assert set(RandomizedResponse(epsilon=2.0).randomize(np.array([True, False])).tolist()) <= {0, 1}


def test_validation_names_the_parameter():
    with pytest.raises(ValueError, match="epsilon"):
        RandomizedResponse(epsilon=-1)
    with pytest.raises(ValueError, match="0/1"):
        RandomizedResponse(epsilon=1).randomize([0, 2])
    with pytest.raises(ValueError, match="0/1"):
        RandomizedResponse(epsilon=1).randomize(np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="level"):
        RandomizedResponse(epsilon=1).estimate([0, 1], level=2)
