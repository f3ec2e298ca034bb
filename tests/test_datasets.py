import numpy as np
import pytest

from dpknn.datasets._census import CENSUS_CODEBOOK, census_schema, make_census


@pytest.fixture(scope="module")
def census():
    return make_census(200_000, rng=12345)


def test_shape_columns_and_ranges(census):
    assert census.shape == (200_000, 11)
    assert list(census.columns) == ["AGE", "SCHOOL", "SEX", "RACE", "RELATE", "MARST", "EMPSTAT",
                                    "CLASSWKR", "URBAN", "INCWAGE", "INCWAGE_TRUE"]
    assert census.AGE.between(0, 99).all() and census.AGE.nunique() == 100
    assert census.SCHOOL.between(0, 17).all()
    assert (census.SCHOOL <= np.clip(census.AGE - 5, 0, 17)).all()
    for col, book in CENSUS_CODEBOOK.items():
        assert set(census[col].unique()) <= set(book), col
    assert census.RELATE.nunique() == 8
    assert census.INCWAGE_TRUE.between(0, 5001).all()
    assert (census.INCWAGE_TRUE == 5001).any()
    assert (census.INCWAGE_TRUE == 0).mean() > 0.5  # many zeros
    # Only wage workers earn wages; nobody under 14 works.
    assert (census.INCWAGE_TRUE[census.CLASSWKR != 2] == 0).all()
    assert (census.EMPSTAT[census.AGE < 14] == 0).all()


def test_missingness(census):
    miss = census.INCWAGE.isna()
    assert abs(miss.mean() - 0.2) < 0.01
    assert not miss[census.AGE < 14].any()
    obs = ~miss
    np.testing.assert_array_equal(census.INCWAGE[obs], census.INCWAGE_TRUE[obs])


def test_complete_case_mean_is_biased_down(census):
    adults = census[census.AGE.between(20, 59)]
    truth = adults.INCWAGE_TRUE.mean()
    complete_case = adults.INCWAGE.mean()  # pandas skips NaN: ignoring missing data
    assert complete_case < 0.9 * truth


def test_mcar_is_unbiased_and_none_has_no_missing():
    df = make_census(200_000, missing="mcar", rng=5)
    adults = df[df.AGE.between(20, 59)]
    se = adults.INCWAGE_TRUE.std() / np.sqrt(adults.INCWAGE.notna().sum())
    assert abs(adults.INCWAGE.mean() - adults.INCWAGE_TRUE.mean()) < 5 * se
    assert make_census(1000, missing="none", rng=5).INCWAGE.notna().all()


def test_mnar_depends_on_the_wage_within_cells():
    df = make_census(300_000, missing="mnar", rng=9)
    earners = df[(df.CLASSWKR == 2) & df.AGE.between(30, 39) & (df.URBAN == 2) & (df.SEX == 1)]
    high = earners.INCWAGE_TRUE > earners.INCWAGE_TRUE.median()
    assert earners.INCWAGE.isna()[high].mean() > earners.INCWAGE.isna()[~high].mean() + 0.05


def test_reproducible_and_encodes_against_its_schema():
    a, b = make_census(5000, rng=3), make_census(5000, rng=3)
    assert a.equals(b)
    enc = census_schema().encode(a)
    np.testing.assert_array_equal(enc.incomplete, a.INCWAGE.isna().to_numpy())
    assert enc.cells.shape == (5000, 9)


def test_bad_parameters():
    with pytest.raises(ValueError, match="missing must be one of"):
        make_census(10, missing="sometimes")
    with pytest.raises(ValueError, match="missing_rate"):
        make_census(10, missing_rate=0.9)
    with pytest.raises(ValueError, match="n must be"):
        make_census(-1)
    assert make_census(0, rng=1).shape == (0, 11)


def test_add_missingness_redraws_on_a_sample_without_touching_it():
    from dpknn.datasets._census import add_missingness

    population = make_census(50_000, missing="none", rng=8)
    before = population.copy()
    sample = population.sample(20_000, random_state=1)
    a = add_missingness(sample, missing="mar", rng=1)
    b = add_missingness(sample, missing="mar", rng=2)
    assert abs(a.INCWAGE.isna().mean() - 0.2) < 0.015
    assert not a.INCWAGE.isna().equals(b.INCWAGE.isna())
    assert population.equals(before) and sample.INCWAGE.notna().all()
