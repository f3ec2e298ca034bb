import numpy as np
import pytest

from dpknn import check_rng
from dpknn.utils.validation import check_positive_int, check_positive_real


def test_check_rng_passes_generator_through():
    g = np.random.default_rng(3)
    assert check_rng(g) is g


def test_check_rng_seed_is_reproducible():
    assert check_rng(7).random() == check_rng(7).random()
    assert isinstance(check_rng(None), np.random.Generator)


@pytest.mark.parametrize(("bad", "exc"), [(np.random.RandomState(0), TypeError), ("1", TypeError),
                                          (1.0, TypeError), (True, TypeError), (-1, ValueError)])
def test_check_rng_rejects(bad, exc):
    with pytest.raises(exc, match="rng"):
        check_rng(bad)


def test_positive_int_and_finite_real():
    assert check_positive_int(3, "k") == 3
    with pytest.raises(ValueError, match="k must be an integer >= 1, got 0"):
        check_positive_int(0, "k")
    with pytest.raises(TypeError, match="k must be an integer, got the float 2.0"):
        check_positive_int(2.0, "k")
    assert check_positive_real(2, "eps") == 2.0
    with pytest.raises(ValueError, match="eps must be a finite number > 0"):
        check_positive_real(float("inf"), "eps")
    with pytest.raises(ValueError, match="eps must be a finite number > 0, got 0.0"):
        check_positive_real(0, "eps")
    with pytest.raises(TypeError, match="eps must be a real number"):
        check_positive_real("1", "eps")
    assert check_positive_real(0, "w", allow_zero=True) == 0.0
    with pytest.raises(ValueError, match="w must be a finite number >= 0, got -0.1"):
        check_positive_real(-0.1, "w", allow_zero=True)
    with pytest.raises(ValueError, match="w must be a finite number >= 0"):
        check_positive_real(float("nan"), "w", allow_zero=True)
