"""The one Mechanism base: every concrete mechanism is a Mechanism, and every one passes the
same empirical privacy test on neighbours at its full sensitivity, through the interface that
the package draws noise with (``release`` for one value, ``release_array`` for vectors)."""

import fractions

import numpy as np
import pytest
from privacy_check import discrete_worst_log_ratio, worst_log_ratio

from dpknn.accounting import zcdp_rho
from dpknn.mechanisms import _base as mechanisms
from dpknn.mechanisms._additive import DiscreteGaussian, Gaussian, Geometric, Laplace
from dpknn.mechanisms._base import Mechanism
from dpknn.mechanisms._randomized_response import RandomizedResponse
from dpknn.mechanisms._randomness import as_source
from dpknn.mechanisms._selection import ExponentialMechanism, PermuteAndFlip, ScoreSelection
from dpknn.mechanisms._smooth import LN2, SmoothCauchy, SmoothPolyPlace

N = 20_000


def _scalar(mech, value, seed, n=N):
    src = as_source(seed)
    return np.array([float(mech.release(value, rng=src).value) for _ in range(n)])


def _vector(mech, values, seed, n=N):
    """The sum of the released coordinates (post-processing, so it must be private too)."""
    src = as_source(seed)
    return np.array([float(np.sum(mech.release_array(values, rng=src))) for _ in range(n)])


def _smooth(mech, data, seed, n=N):
    """Releases of q by the mechanism's kind with the smooth bound S of the data: data = (q, S)."""
    q, bound = data
    mech = type(mech)(epsilon=mech.epsilon, smooth_bound=bound, grid=mech.grid)
    return _scalar(mech, q, seed, n)


# name -> (mechanism at a given ε, draw(mech, data, seed), neighbour D, neighbour D', ε, discrete
#          outputs?). D and D' differ by the mechanism's sensitivity (for the smooth mechanisms: by
#          S(D), the largest local sensitivity the bound allows; scores by the selection's Δ; a
#          record's bit for randomized response).
CASES = {
    "laplace": (lambda e: Laplace(epsilon=e, sensitivity=2.0), _scalar, 0.0, 2.0, 1.0, False),
    "laplace_vector": (lambda e: Laplace(epsilon=e, sensitivity=1.0, coordinates=2), _vector,
                       np.zeros(2), np.full(2, 0.5), 1.0, False),
    "geometric": (lambda e: Geometric(epsilon=e, sensitivity=2), _scalar, 10, 12, 1.0, True),
    "geometric_vector": (lambda e: Geometric(epsilon=e), _vector, np.array([5, 3]), np.array([6, 3]),
                         fractions.Fraction(1, 2), True),
    "gaussian": (lambda e: Gaussian(epsilon=e, delta=1e-6, sensitivity=1.0), _scalar, 0.0, 1.0, 1.0, False),
    # ρ chosen so that the stand-alone guarantee is (ε, 1e-6): the log ratios seen stay below ε.
    "discrete_gaussian": (lambda e: DiscreteGaussian(rho=zcdp_rho(e, 1e-6), delta=1e-6), _scalar, 10, 11, 1.0, True),
    # Worst neighbours of a smooth release: the value moves by S(D) and S doubles (ln 2-smooth).
    "smooth_cauchy": (lambda e: SmoothCauchy(epsilon=e, smooth_bound=1.0, grid=2.0**-10), _smooth,
                      (0.0, 1.0), (1.0, 2.0), 2 * LN2 + 0.05, False),
    "smooth_polyplace": (lambda e: SmoothPolyPlace(epsilon=e, smooth_bound=1.0, grid=2.0**-10), _smooth,
                         (0.0, 1.0), (1.0, 2.0), 1.0, False),
    "permute_and_flip": (lambda e: PermuteAndFlip(epsilon=e, sensitivity=1.0), _scalar,
                         np.array([0.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0]), 1.0, True),
    "exponential": (lambda e: ExponentialMechanism(epsilon=e, sensitivity=1.0), _scalar,
                    np.array([0.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0]), 1.0, True),
    "randomized_response": (lambda e: RandomizedResponse(epsilon=e), _scalar, 0, 1, 1.0, True),
}


def _check(discrete):
    if discrete:
        return discrete_worst_log_ratio
    return lambda x1, x2, min_count=200: worst_log_ratio(x1, x2, n_bins=40, min_count=min_count)


def _concrete(cls):
    for sub in cls.__subclasses__():
        if not getattr(sub, "__abstractmethods__", None):
            yield sub
        yield from _concrete(sub)


def test_every_concrete_mechanism_is_covered_by_the_privacy_test():
    covered = {type(make(eps)) for make, _, _, _, eps, _ in CASES.values()}
    assert set(_concrete(Mechanism)) <= covered, "a Mechanism subclass lacks a case in CASES"
    assert covered >= {Laplace, Geometric, Gaussian, SmoothCauchy, SmoothPolyPlace, PermuteAndFlip,
                       ExponentialMechanism, RandomizedResponse}


# 4-20 s a case: they run in CI's slow step (pytest -m slow), so that the README's command stays within 5 min;
# test_every_concrete_mechanism_is_covered_by_the_privacy_test above keeps every mechanism in CASES.
@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_mechanism_is_private_on_neighbours_at_its_sensitivity(case):
    make, draw, d, d_prime, eps, discrete = CASES[case]
    check = _check(discrete)
    mech = make(eps)
    worst, used = check(draw(mech, d, 1), draw(mech, d_prime, 2))
    # The delta of the Gaussian is 1e-6: far below what 20,000 draws can see.
    assert used >= (2 if discrete else 8) and worst <= mech.epsilon
    # Negative control: less noise breaks ε: the mechanism calibrated for 4ε, or for a smooth
    # release the noise of S/10 (the bug of a smooth bound ten times too small).
    if draw is _smooth:
        light, d, d_prime = mech, (d[0], d[1] / 10), (d_prime[0], d_prime[1] / 10)
    else:
        light = make(4 * eps)
    assert check(draw(light, d, 3), draw(light, d_prime, 4), min_count=50)[0] > mech.epsilon


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_mechanism_has_a_readable_repr_of_public_parameters(case):
    make, *_, eps, _ = CASES[case]
    mech = make(eps)
    text = repr(mech)
    assert text.startswith(type(mech).__name__ + "(epsilon=")
    assert "smooth_bound" not in text       # data-dependent: never in the public parameters
    assert mech.public_params()
    if not isinstance(mech, ScoreSelection):
        assert mech.variance() > 0


def test_release_array_matches_the_scalar_noise_and_keeps_exact_budget_shares():
    # A Fraction budget share is kept exactly: the scale is 3/(1/7) = 21 steps, not a float's.
    geo = Geometric(epsilon=fractions.Fraction(1, 7), sensitivity=3)
    assert geo._scale == 21
    table = np.arange(12, dtype=np.int64).reshape(3, 4)
    out = geo.release_array(table, rng=5)
    assert out.shape == (3, 4) and out.dtype == np.int64
    with pytest.raises(TypeError, match="integers"):
        geo.release_array(table.astype(float), rng=0)
    lap = Laplace(epsilon=0.5, sensitivity=1.5, coordinates=3)
    # One record moves at most 3 coordinates, each adding a step of rounding.
    assert lap.steps == int(fractions.Fraction(1.5) / fractions.Fraction(lap.grid)) + 3
    values = np.array([[0.25, -1.0, 3.5]])
    released = lap.release_array(values, rng=1)
    assert released.shape == values.shape and np.all(released / lap.grid == np.round(released / lap.grid))
    with pytest.raises(ValueError, match="finite"):
        lap.release_array([np.nan], rng=0)
    with pytest.raises(NotImplementedError, match="one value at a time"):
        SmoothPolyPlace(epsilon=2.0, smooth_bound=1.0, grid=1.0).release_array([1.0], rng=0)
    assert Mechanism in type(lap).__mro__ and mechanisms.Mechanism is Mechanism


def test_every_estimator_says_not_fitted_the_same_way():
    from sklearn.exceptions import NotFittedError

    from dpknn import Categorical, KNNImputer
    from dpknn.datasets._census import census_schema
    from dpknn.models._kmeans import DPKMeans
    from dpknn.sdc._rwn import RWN
    from dpknn.synth import AIMSynthesizer, AutoSynthesizer, ColumnwiseSynthesizer, MSTSynthesizer, PrivBayes

    attrs = [Categorical("a", [0, 1])]
    calls = [lambda: DPKMeans(2, epsilon=1.0, bounds=([0], [1])).predict([[0.5]]),
             lambda: AIMSynthesizer(attrs, epsilon=1.0).sample(3),
             lambda: AutoSynthesizer(attrs, epsilon=1.0).sample(3),
             lambda: MSTSynthesizer(attrs, epsilon=1.0).public_params(),
             lambda: PrivBayes(attrs, epsilon=1.0).sample(3),
             lambda: ColumnwiseSynthesizer(attrs, epsilon=1.0).sample(3),
             lambda: ColumnwiseSynthesizer(attrs, epsilon=1.0).mcar_epsilon({"a": 0.1}),
             lambda: RWN().transform(None),
             lambda: KNNImputer(census_schema()).transform(None)]
    for call in calls:
        with pytest.raises(NotFittedError, match=r"^this \w+ is not fitted yet; call fit\(X\)"):
            call()


@pytest.mark.parametrize("make", [
    lambda: Geometric(epsilon=0.4),
    lambda: Laplace(epsilon=0.8, sensitivity=3.0),
    lambda: SmoothPolyPlace(epsilon=1.0, smooth_bound=4.0, grid=2.0**-10),
    lambda: SmoothCauchy(epsilon=3.0, smooth_bound=4.0, grid=2.0**-10),
], ids=["geometric", "laplace", "smooth_polyplace", "smooth_cauchy"])
def test_noise_survival_is_the_law_the_sampler_draws(make):
    """Issue 47, finding 2: the curator's tails come from each mechanism's noise_survival; it must be the law of
    the noise the mechanism draws (20,000 draws, every point within 4.5 binomial s.d.), and the check must fail
    for the same law at twice the scale (negative control)."""
    from dpknn.mechanisms._base import noise_survival

    mech = make()
    rel = mech.release(0, rng=1) if mech.name != "laplace" else mech.release(0.0, rng=1)
    z = np.asarray(mech.noise(20_000, rng=2), dtype=np.float64)
    scale = float(np.quantile(np.abs(z), 0.9))
    xs = scale * np.array([0.05, 0.3, 1.0, 3.0, 10.0])
    if mech.name == "geometric":
        xs = np.floor(xs) + 0.5   # between integers, where P(Z > x) is unambiguous
    law = noise_survival(rel, xs)
    emp = (z[:, None] > xs[None, :]).mean(axis=0)
    sd = np.sqrt(law * (1 - law) / z.size)
    assert np.all(np.abs(emp - law) <= 4.5 * sd + 1e-4), (emp, law)
    assert np.allclose(noise_survival(rel, -xs), 1 - law)   # symmetric
    # Negative control: the law of twice the noise misses the draws.
    wider = noise_survival(rel, xs / 2)
    assert np.any(np.abs(emp - wider) > 4.5 * np.sqrt(wider * (1 - wider) / z.size) + 1e-4)
