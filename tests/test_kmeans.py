"""DP k-means: budget first, noise law of each release, privacy of the released counts and sums
on worst-case neighbours (with a negative control), and clustering at a generous budget."""

import numpy as np
import pytest
from privacy_check import discrete_worst_log_ratio
from scipy import stats
from sklearn.base import clone

from dpknn.accounting import BudgetAccountant
from dpknn.exceptions import BudgetExceededError
from dpknn.mechanisms._noise import discrete_laplace_pmf
from dpknn.models._kmeans import DPKMeans

BOUNDS = ([0.0, 0.0], [10.0, 10.0])


def _blobs(seed, n=3000):
    rng = np.random.default_rng(seed)
    centres = np.array([[2.0, 2.0], [8.0, 3.0], [5.0, 8.0]])
    return np.vstack([rng.normal(c, 0.5, size=(n, 2)) for c in centres]), centres


def test_recovers_separated_clusters_at_a_generous_budget():
    x, centres = _blobs(0)
    km = DPKMeans(3, epsilon=5.0, bounds=BOUNDS, max_iter=6, rng=1).fit(x)
    found = km.cluster_centers_[np.argsort(km.cluster_centers_[:, 0])]
    assert found == pytest.approx(centres[np.argsort(centres[:, 0])], abs=0.1)
    assert np.bincount(km.predict(x), minlength=3).min() > 2500
    assert len(km.history_) == 6 and km.epsilon_ == 5.0
    assert set(km.curator_.values) == {"cluster_sizes", "clamped_rows", "rows"}


def test_budget_is_charged_before_the_data_are_read():
    acc = BudgetAccountant(1.0)
    with pytest.raises(BudgetExceededError):
        DPKMeans(2, epsilon=2.0, bounds=BOUNDS).fit(np.array([[np.nan, 1.0]]), accountant=acc)
    acc = BudgetAccountant(1.0)
    DPKMeans(2, epsilon=0.5, bounds=BOUNDS, rng=0).fit(_blobs(1, 50)[0], accountant=acc)
    assert acc.spent()[0] == pytest.approx(0.5)


def test_noise_of_each_release_has_the_stated_law():
    # One cluster, T iterations: the count noise is discrete Laplace of scale 2T/ε.
    eps, t = 1.0, 2
    x = np.full((40, 2), 5.0)
    diffs = []
    for seed in range(1500):
        km = DPKMeans(1, epsilon=eps, bounds=BOUNDS, max_iter=t, init=[[5.0, 5.0]], rng=seed).fit(x)
        diffs.append(int(km.history_[0]["counts"][0]) - 40)
    diffs = np.array(diffs)
    support = np.arange(-8, 9)
    expected = discrete_laplace_pmf(support, 2 * t / eps) * len(diffs)
    observed = np.array([(diffs == v).sum() for v in support])
    tail = len(diffs) - expected.sum()
    assert stats.chisquare(np.r_[observed, len(diffs) - observed.sum()], np.r_[expected, tail]).pvalue > 1e-3


class _NoSplit(DPKMeans):
    """Forgets to split ε between counts and sums (negative control): each gets ε/T."""

    def _split(self, epsilon, iterations):
        return epsilon / iterations, epsilon / iterations


def _released(cls, x, runs, eps):
    counts, sums = [], []
    for seed in range(runs):
        km = cls(1, epsilon=eps, bounds=([0.0], [1.0]), max_iter=1, init=[[0.5]], rng=seed).fit(x)
        counts.append(int(km.history_[0]["counts"][0]))
        sums.append(round(float(km.history_[0]["sums"][0, 0]) / km.grid_))
    return np.array(counts), np.array(sums)


# Issue 47, finding 13: among the suite's slowest statistical checks; runs in CI's slow step (pytest -m slow).
@pytest.mark.slow
def test_privacy_of_released_counts_and_sums_with_a_negative_control():
    # D: 30 records at the box's centre; D': plus one record at its edge, the largest change of a sum.
    eps, runs = 1.0, 12_000
    d = np.full((30, 1), 0.5)
    d2 = np.vstack([d, [[1.0]]])
    share = eps / 2   # one iteration: ε/2 for the counts, ε/2 for the sums
    c1, s1 = _released(DPKMeans, d, runs, eps)
    c2, s2 = _released(DPKMeans, d2, runs, eps)
    worst_count, _ = discrete_worst_log_ratio(c1, c2)
    assert worst_count <= share
    # The sums are on a fine grid: compare them coarsened (post-processing keeps the bound).
    step = max(1, int(np.std(s1) / 3))
    worst_sum, kept = discrete_worst_log_ratio(s1 // step, s2 // step)
    assert kept >= 2 and worst_sum <= share
    b1, _ = _released(_NoSplit, d, runs, eps)
    b2, _ = _released(_NoSplit, d2, runs, eps)
    assert discrete_worst_log_ratio(b1, b2)[0] > share


def test_validation_and_estimator_api():
    x, _ = _blobs(2, 30)
    with pytest.raises(ValueError, match="bounds"):
        DPKMeans(2, epsilon=1.0, bounds=([0, 0], [0, 1])).fit(x)
    with pytest.raises(ValueError, match="missing values"):
        DPKMeans(2, epsilon=1.0, bounds=BOUNDS).fit(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="init"):
        DPKMeans(2, epsilon=1.0, bounds=BOUNDS, init=[[1.0, 1.0]]).fit(x)
    with pytest.raises(ValueError, match="shape"):
        DPKMeans(2, epsilon=1.0, bounds=BOUNDS).fit(x[:, :1])
    with pytest.raises(TypeError, match="n_clusters"):
        DPKMeans(2.5, epsilon=1.0, bounds=BOUNDS).fit(x)
    km = DPKMeans(2, epsilon=1.0, bounds=BOUNDS, rng=4)
    assert clone(km).get_params() == km.get_params()
    before = x.copy()
    a = km.fit_predict(x)
    np.testing.assert_array_equal(x, before)
    np.testing.assert_array_equal(DPKMeans(2, epsilon=1.0, bounds=BOUNDS, rng=4).fit(x).cluster_centers_,
                                  km.cluster_centers_)
    assert a.shape == (len(x),)
    outside = np.array([[-5.0, 20.0]])
    assert DPKMeans(1, epsilon=1.0, bounds=BOUNDS, rng=0).fit(outside).curator_.values["clamped_rows"] == 1
