"""Permute-and-flip: its exact output law (brute force over permutations), the sampler against it,
and its privacy on worst-case neighbouring scores, with negative controls."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpknn.mechanisms._selection import PermuteAndFlip


def exact_law(scores, epsilon, sensitivity):
    """P(output r) = mean over all visit orders of P(first acceptance is r)."""
    s = np.asarray(scores, dtype=float)
    p = np.exp(-epsilon * (s.max() - s) / (2 * sensitivity))
    law = np.zeros(s.size)
    perms = list(itertools.permutations(range(s.size)))
    for perm in perms:
        survive = 1.0
        for r in perm:
            law[r] += survive * p[r]
            survive *= 1 - p[r]
    return law / len(perms)


def neighbours(scores, sensitivity):
    """Every score vector whose entries move by -Δ, 0 or +Δ (the extremes of |s - s'| <= Δ)."""
    for shift in itertools.product((-sensitivity, 0.0, sensitivity), repeat=len(scores)):
        yield np.asarray(scores) + np.asarray(shift)


def test_exact_law_is_a_distribution_and_favours_high_scores():
    law = exact_law([0.0, 1.0, 3.0, 3.5], epsilon=2.0, sensitivity=1.0)
    assert law.sum() == pytest.approx(1.0) and np.all(np.diff(law) > 0)


def test_sampler_follows_the_exact_law():
    scores, eps, sens = [0.0, 1.0, 2.5, 3.0], 1.5, 1.0
    mech = PermuteAndFlip(epsilon=eps, sensitivity=sens)
    rng = np.random.default_rng(0)
    draws = np.bincount([mech.select(scores, rng=rng) for _ in range(20_000)], minlength=4)
    expected = exact_law(scores, eps, sens) * draws.sum()
    assert stats.chisquare(draws, expected).pvalue > 1e-3
    # Negative control: the law of a mechanism with twice the epsilon is rejected.
    assert stats.chisquare(draws, exact_law(scores, 2 * eps, sens) * draws.sum()).pvalue < 1e-6


@pytest.mark.parametrize("scores", [[0.0, 0.0, 0.0], [0.0, 0.5, 4.0], [1.0, 1.0, 2.0, 7.0]])
def test_exact_privacy_on_worst_case_neighbours(scores):
    eps, sens = 1.0, 1.0
    law = exact_law(scores, eps, sens)
    worst = max(np.max(np.maximum(law / q, q / law)) for q in
                (exact_law(t, eps, sens) for t in neighbours(scores, sens)))
    assert worst <= math.exp(eps) * (1 + 1e-12)


def test_exact_privacy_negative_control():
    """Without the factor 2 (acceptance exp(-ε gap/Δ)) the same check finds a violation."""
    scores, eps, sens = [0.0, 0.5, 4.0], 1.0, 1.0
    law = exact_law(scores, 2 * eps, sens)
    worst = max(np.max(np.maximum(law / q, q / law)) for q in
                (exact_law(t, 2 * eps, sens) for t in neighbours(scores, sens)))
    assert worst > math.exp(eps) * 1.05


@pytest.mark.slow   # CI runs it in its second step (pytest -m slow); the README's command stays within 5 min
def test_empirical_privacy_of_the_sampler():
    """Draws on the worst neighbouring pair: every output's frequency ratio stays within e^ε up to
    sampling error; a sampler calibrated to half the sensitivity shows the violation."""
    eps, sens = 1.0, 1.0
    a, b = np.array([0.0, 0.0, 3.0]), np.array([1.0, 1.0, 2.0])  # the low candidates rise, the high one falls
    n = 30_000

    def freqs(mech, scores, seed):
        rng = np.random.default_rng(seed)
        return np.bincount([mech.select(scores, rng=rng) for _ in range(n)], minlength=3) / n

    good = PermuteAndFlip(epsilon=eps, sensitivity=sens)
    pa, pb = freqs(good, a, 1), freqs(good, b, 2)
    slack = 4 * np.sqrt(np.maximum(pa, pb) / n)  # about 4 s.d. of a frequency
    assert np.all(pa <= math.exp(eps) * pb + slack) and np.all(pb <= math.exp(eps) * pa + slack)
    bad = PermuteAndFlip(epsilon=eps, sensitivity=sens / 2)
    qa, qb = freqs(bad, a, 3), freqs(bad, b, 4)
    slack = 4 * np.sqrt(np.maximum(qa, qb) / n)
    assert np.any(qa > math.exp(eps) * qb + slack) or np.any(qb > math.exp(eps) * qa + slack)


def test_parameters_and_scores_are_checked():
    with pytest.raises(ValueError, match="epsilon"):
        PermuteAndFlip(epsilon=0, sensitivity=1)
    with pytest.raises(ValueError, match="finite"):
        PermuteAndFlip(epsilon=math.inf, sensitivity=1)
    mech = PermuteAndFlip(epsilon=1, sensitivity=1)
    for bad in ([], [[1.0, 2.0]], [1.0, math.nan]):
        with pytest.raises(ValueError, match="scores"):
            mech.select(bad, rng=0)
    assert mech.select([5.0], rng=0) == 0
    np.testing.assert_allclose(mech.acceptance([0.0, 2.0]), [math.exp(-1.0), 1.0])
