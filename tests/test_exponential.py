"""The exponential mechanism: its sampler against the exact softmax law, and its privacy on
worst-case neighbouring scores with a negative control."""

import numpy as np
import pytest
from privacy_check import discrete_worst_log_ratio
from scipy import stats

from dpknn.mechanisms._selection import ExponentialMechanism


def exact_law(scores, epsilon, sensitivity):
    w = np.exp(epsilon * np.asarray(scores, dtype=float) / (2 * sensitivity))
    return w / w.sum()


@pytest.mark.parametrize("scores, eps, sens", [
    ([0.0, 1.0, 2.5, 3.0], 1.5, 1.0),
    ([5.0, 5.0, 5.0], 0.3, 2.0),
    ([0.0, 40.0, 39.0, -3.0, 10.0], 0.5, 1.0),   # large gaps: rare candidates must stay rare
])
def test_sampler_follows_the_exact_law(scores, eps, sens):
    em = ExponentialMechanism(epsilon=eps, sensitivity=sens)
    assert em.probabilities(scores) == pytest.approx(exact_law(scores, eps, sens))
    rng = np.random.default_rng(0)
    n = 20_000
    counts = np.bincount([em.select(scores, rng=rng) for _ in range(n)], minlength=len(scores))
    law = exact_law(scores, eps, sens)
    keep = law * n >= 5
    expected = np.r_[law[keep], law[~keep].sum()] * n
    observed = np.r_[counts[keep], counts[~keep].sum()]
    if expected[-1] == 0:
        assert observed[-1] == 0
        expected, observed = expected[:-1], observed[:-1]
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def _draws(em, scores, n, rng):
    return np.array([em.select(scores, rng=rng) for _ in range(n)])


class _FloatEM:
    """A careless exponential mechanism: weights exp(ε s/Δ), the 2 forgotten (negative control)."""

    def __init__(self, epsilon, sensitivity):
        self.epsilon, self.sensitivity = epsilon, sensitivity

    def select(self, scores, *, rng):
        s = np.asarray(scores, dtype=float)
        w = np.exp(self.epsilon * (s - s.max()) / self.sensitivity)
        return int(rng.choice(s.size, p=w / w.sum()))


@pytest.mark.slow   # CI runs it in its second step (pytest -m slow); the README's command stays within 5 min
def test_privacy_on_worst_case_neighbours_with_a_negative_control():
    # 20 candidates; one score rises by Δ while the others fall by Δ: the ratio for candidate 0
    # approaches e^ε as the number of candidates grows (here log ratio 0.92 at ε = 1).
    eps, sens, r = 1.0, 1.0, 20
    s = np.zeros(r)
    s2 = np.r_[sens, np.full(r - 1, -sens)]
    rng = np.random.default_rng(1)
    em = ExponentialMechanism(epsilon=eps, sensitivity=sens)
    n = 40_000
    worst, kept = discrete_worst_log_ratio(_draws(em, s, n, rng), _draws(em, s2, n, rng))
    assert kept >= 2
    assert worst <= eps
    law, law2 = exact_law(s, eps, sens), exact_law(s2, eps, sens)
    assert np.max(np.abs(np.log(law / law2))) <= eps + 1e-12
    bad = _FloatEM(eps, sens)
    worst_bad, _ = discrete_worst_log_ratio(_draws(bad, s, n, rng), _draws(bad, s2, n, rng))
    assert worst_bad > eps


def test_validation_and_seeding():
    em = ExponentialMechanism(epsilon=1.0, sensitivity=1.0)
    assert [em.select([0, 1, 2], rng=5) for _ in range(3)] == [em.select([0, 1, 2], rng=5) for _ in range(3)]
    assert em.select([0.0, 1.0]) in (0, 1)   # the OS CSPRNG
    with pytest.raises(ValueError, match="scores"):
        em.select([])
    with pytest.raises(ValueError, match="finite"):
        em.select([0.0, np.inf])
    with pytest.raises(ValueError, match="epsilon"):
        ExponentialMechanism(epsilon=0.0, sensitivity=1.0)
