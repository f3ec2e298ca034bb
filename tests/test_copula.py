"""Issue 48: the amounts an analysis names, drawn together inside their bins (dpknn.synth._copula).

The copula is post-processing of the fitted model, so what is checked is its arithmetic against brute force
(rectangle masses against SciPy's bivariate normal, the polychoric estimate against the correlation that made
the table, the drawn ranks against ranks of real bivariate normal draws cut into the same bins, with a negative
control) and what it buys an analyst (a slope inside the bins, with the copula switched off as the control), and
that the rank sums it replaces are no longer bought.
"""

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy.special import ndtr
from scipy.stats import multivariate_normal

from dpknn import Categorical, Continuous
from dpknn.synth import AutoSynthesizer
from dpknn.synth._copula import WithinBinCopula, copula_ranks, polychoric, rectangle_masses, thresholds
from dpknn.synth._marginal import useful_rank_sums


def _brute_rectangle(ta, tb, rho, i, j):
    """P(X in bin i, Y in bin j) by inclusion-exclusion of SciPy's bivariate normal CDF."""
    mvn = multivariate_normal(mean=[0, 0], cov=[[1, rho], [rho, 1]])
    big = 12.0

    def cdf(x, y):
        return mvn.cdf([min(x, big), min(y, big)]) if x > -big and y > -big else 0.0

    return cdf(ta[i + 1], tb[j + 1]) - cdf(ta[i], tb[j + 1]) - cdf(ta[i + 1], tb[j]) + cdf(ta[i], tb[j])


@pytest.mark.parametrize("rho", [-0.4, 0.0, 0.6, 0.9])
def test_rectangle_masses_match_the_bivariate_normal_cdf(rho):
    ta = thresholds([0.1, 0.2, 0.4, 0.3])
    tb = thresholds([0.5, 0.05, 0.45])
    got = rectangle_masses(ta, tb, rho)
    assert got.sum() == pytest.approx(1.0, abs=1e-6)
    for i in range(4):
        for j in range(3):
            assert got[i, j] == pytest.approx(_brute_rectangle(ta, tb, rho, i, j), abs=2e-5)


@pytest.mark.parametrize("rho", [-0.3, 0.2, 0.57, 0.85])
def test_polychoric_recovers_the_correlation_that_made_the_table(rho):
    ta = thresholds([0.05, 0.15, 0.3, 0.3, 0.15, 0.05])
    tb = thresholds([0.3, 0.3, 0.2, 0.1, 0.1])
    table = 100_000 * rectangle_masses(ta, tb, rho)
    assert polychoric(table, ta, tb) == pytest.approx(rho, abs=1e-3)


def _cut_normals(rho, n, rng, masses_a, masses_b):
    """n draws of a bivariate normal with correlation rho, their bins under the thresholds of the masses, and the
    true ranks inside the bins (what the copula should reproduce)."""
    z = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n).T
    ts = (thresholds(masses_a), thresholds(masses_b))
    codes, ranks = [], []
    for zz, t in zip(z, ts):
        c = np.searchsorted(t, zz, side="right") - 1
        codes.append(c)
        ranks.append((ndtr(zz) - ndtr(t[c])) / (ndtr(t[c + 1]) - ndtr(t[c])))
    return np.vstack(codes), ranks, ts


MIN_CELL = 3000
# Four standard errors of a correlation estimated on MIN_CELL rows.
CORRELATION_TOLERANCE = 4 / np.sqrt(MIN_CELL)


def _mean_tolerance(rows):
    """Four standard errors of the difference of two independent means of ``rows`` ranks (variance at most 1/12
    each): two draws of one cell's ranks, the data's and the copula's."""
    return 4 * np.sqrt(2 / 12 / rows)


def _cell_means(codes, ranks):
    out = {}
    for b in np.unique(codes[0]):
        for c in np.unique(codes[1]):
            rows = (codes[0] == b) & (codes[1] == c)
            if rows.sum() >= MIN_CELL:
                out[(b, c)] = (ranks[0][rows].mean(), ranks[1][rows].mean(),
                               np.corrcoef(ranks[0][rows], ranks[1][rows])[0, 1], int(rows.sum()))
    return out


def test_copula_ranks_are_those_of_a_cut_bivariate_normal():
    """Rows whose bins come from real bivariate normal draws: per cell, the drawn ranks' means (within four
    standard errors of the difference) and their correlation are those of the draws themselves; with ρ = 0 (the
    negative control) neither is."""
    rng = np.random.default_rng(3)
    rho = 0.7
    masses_a, masses_b = [0.2, 0.3, 0.3, 0.2], [0.25, 0.5, 0.25]
    codes, true_ranks, ts = _cut_normals(rho, 400_000, rng, masses_a, masses_b)
    want = _cell_means(codes, true_ranks)
    assert len(want) >= 6

    def drawn(r):
        copula = WithinBinCopula((0, 1), np.array([[1.0, r], [r, 1.0]]), ts)
        got = copula_ranks(copula, codes, np.random.default_rng(4))
        return _cell_means(codes, [got[0], got[1]])

    got = drawn(rho)
    for key, (ma, mb, corr, rows) in want.items():
        tol = _mean_tolerance(rows)
        assert got[key][0] == pytest.approx(ma, abs=tol) and got[key][1] == pytest.approx(mb, abs=tol), key
        assert got[key][2] == pytest.approx(corr, abs=CORRELATION_TOLERANCE), key
    flat = drawn(0.0)
    assert max(max(abs(flat[k][0] - want[k][0]), abs(flat[k][1] - want[k][1])) for k in want) > 0.05
    assert max(abs(flat[k][2] - want[k][2]) for k in want) > CORRELATION_TOLERANCE


@pytest.mark.parametrize("held", [0, 1])
def test_a_row_without_the_other_amount_draws_its_rank_uniformly_and_a_missing_amount_gets_none(held):
    """Strongly correlated amounts (ρ = 0.9), one missing on every row: the other's rank is uniform in its bin
    (the missing one is integrated out), whichever of the two it is."""
    ts = (thresholds([0.5, 0.5]), thresholds([0.5, 0.5]))
    copula = WithinBinCopula((0, 1), np.array([[1.0, 0.9], [0.9, 1.0]]), ts)
    n = 50_000
    codes = np.full((2, n), -1)
    codes[held] = 1
    got = copula_ranks(copula, codes, np.random.default_rng(0))
    assert np.isnan(got[1 - held]).all()
    assert np.histogram(got[held], bins=5, range=(0, 1))[0] / n == pytest.approx(np.full(5, 0.2), abs=0.01)


def _two_amounts(n, rng):
    """Height-and-weight-like amounts: the slope lives partly inside any coarse bins; a category goes with both."""
    sex = rng.choice(["F", "M"], n)
    height = 1.62 + 0.12 * (sex == "M") + rng.normal(0, 0.08, n)
    weight = -80 + 85 * height + 2.0 * (sex == "M") + rng.normal(0, 9, n)
    return pd.DataFrame({"weight": np.clip(weight, 25, 180), "height": np.clip(height, 1.2, 2.2), "sex": sex})


AMOUNTS = [Continuous("weight", 20, 200), Continuous("height", 1.0, 2.3), Categorical("sex", ["F", "M"])]


def _fit(df, formula, **kwargs):
    kwargs = {"within_bin": "copula", **kwargs}
    return AutoSynthesizer(AMOUNTS, epsilon=4.0, never_missing=["weight", "height", "sex"], analyses=[formula],
                           rng=0, **kwargs).fit(df)


def test_an_analysis_of_two_amounts_keeps_the_slope_inside_the_bins():
    """weight ~ height + sex at ε = 4 without rank sums, so that only the copula carries what lies inside the
    bins: the synthetic height slope and sex gap stay at the real ones (within 3 % and 0.25); without the copula
    (the control, ``within_bin="ranks"``) the slope flattens by more than 4 % and the sex gap takes up the rest."""
    df = _two_amounts(20_000, np.random.default_rng(8))
    formula = "weight ~ height + sex"
    real = smf.ols(formula, df).fit().params
    got = smf.ols(formula, _fit(df, formula, rank_share=0.0).sample(20_000, rng=1)).fit().params
    assert got["height"] == pytest.approx(real["height"], rel=0.03)
    assert got["sex[T.M]"] == pytest.approx(real["sex[T.M]"], abs=0.25)
    model = _fit(df, formula, rank_share=0.0, within_bin="ranks")
    assert model.public_params()["within_bin_copula"] is None
    off = smf.ols(formula, model.sample(20_000, rng=1)).fit().params
    assert off["height"] < 0.96 * real["height"]
    assert off["sex[T.M]"] - real["sex[T.M]"] > 0.3


def test_the_record_names_the_copula_and_buys_no_rank_sums_for_its_pairs():
    """The public record holds the copula's amounts and correlation (post-processing of the model); the response's
    rank sums are bought for the covariate outside the copula only. The default draws by rank sums, for every
    covariate, and has no copula, when the rank sums are drawn by."""
    df = _two_amounts(3_000, np.random.default_rng(9))
    rec = _fit(df, "weight ~ height + sex").public_params()
    assert rec["within_bin"] == "copula"
    copula = rec["within_bin_copula"]
    assert sorted(copula["amounts"]) == ["height", "weight"] and 0.3 < copula["correlation"][0][1] < 0.95
    assert {tuple(r[:2]) for r in rec["rank_sums"]} == {("weight", "sex")}
    # An analysis whose only covariate is the other amount buys none: the copula draws the pair for free.
    rec = _fit(df, "weight ~ height").public_params()
    assert rec["rank_sums"] == [] and rec["rank_share"] == 0.0
    rec = AutoSynthesizer(AMOUNTS, epsilon=4.0, never_missing=["weight", "height", "sex"], within_bin="ranks",
                          analyses=["weight ~ height + sex"], rng=0).fit(df).public_params()
    assert rec["within_bin_chosen"] == "ranks" and rec["within_bin_copula"] is None
    assert {tuple(r[:2]) for r in rec["rank_sums"]} == {("weight", "height"), ("weight", "sex")}
    # With no analysis neither is drawn: the record says "shape", not "ranks" beside empty rank sums.
    rec = AutoSynthesizer(AMOUNTS, epsilon=4.0, rng=0).fit(df).public_params()
    assert rec["within_bin_chosen"] == "shape" and rec["rank_sums"] == [] and rec["within_bin_copula"] is None


def test_rank_sums_are_readable_when_a_cell_holds_theta_noises_of_rank_spread():
    # rows / cells · 1/√12 ≥ 2.5 σ: 10 cells with noise 2 ranks a cell need 173.2 rows.
    assert useful_rank_sums(174, 10, 2.0) and not useful_rank_sums(173, 10, 2.0)
    assert useful_rank_sums(1800, 10, 20.0) and not useful_rank_sums(1800, 100, 20.0)


def test_the_default_draws_by_the_copula_where_the_rank_sums_would_be_noise():
    """within_bin="auto" (the default) plans the copula where the response's rank sums by the other amount would be
    noise for the (released) row count, and the rank sums where a cell can be read; without a row count, or with
    "ranks", the rank sums; with "copula", the copula. Public: the plan reads no data."""
    from dpknn.synth import MSTSynthesizer

    def joint(**kwargs):
        return MSTSynthesizer(AMOUNTS, epsilon=4.0, analyses=["weight ~ height + sex"], **kwargs).plan().joint

    assert joint(n_rows=3_000) == (0, 1)
    assert joint(n_rows=10_000_000) == ()
    assert joint() == ()
    assert joint(n_rows=3_000, within_bin="ranks") == ()
    assert joint(n_rows=10_000_000, within_bin="copula") == (0, 1)
    # One amount in the analysis: nothing to draw together, the rank sums whatever the rows.
    assert MSTSynthesizer(AMOUNTS, epsilon=4.0, analyses=["weight ~ sex"], n_rows=3_000).plan().joint == ()
    # The fit records what it chose: AutoSynthesizer hands its released count to the synthesiser it runs.
    rec = AutoSynthesizer(AMOUNTS, epsilon=4.0, never_missing=["weight", "height", "sex"],
                          analyses=["weight ~ height + sex"], rng=0).fit(_two_amounts(3_000, np.random.default_rng(9)))
    rec = rec.public_params()
    assert rec["within_bin"] == "auto" and rec["within_bin_chosen"] == "copula"
    assert sorted(rec["within_bin_copula"]["amounts"]) == ["height", "weight"]


def test_an_unknown_within_bin_is_refused_before_anything_is_read():
    df = _two_amounts(100, np.random.default_rng(1))
    with pytest.raises(ValueError, match="within_bin"):
        _fit(df, "weight ~ height", within_bin="gaussian")


def test_an_analysis_whose_covariates_are_all_in_the_copula_plans_no_rank_budget():
    """The plan (before any data are read) gives the rank sums nothing when every covariate is in the copula, so
    the model keeps that share; with another covariate, or by default, the share is planned."""
    def planned(formula, within_bin):
        from dpknn.synth import MSTSynthesizer
        return MSTSynthesizer(AMOUNTS, epsilon=4.0, analyses=[formula], within_bin=within_bin, n_rows=5000).plan().ranks

    assert planned("weight ~ height", "copula") == 0
    assert planned("weight ~ height + sex", "copula") > 0
    assert planned("weight ~ height", "ranks") > 0


def test_auto_draws_by_the_copula_when_no_rank_sums_are_bought():
    """rank_share=0 (allowed) buys no rank sums, so "auto" has none to read and takes the copula; it had sized the
    noise of a zero budget and failed ("rho must be ... > 0") before anything was released."""
    from dpknn.synth import MSTSynthesizer

    plan = MSTSynthesizer(AMOUNTS, epsilon=4.0, analyses=["weight ~ height + sex"], rank_share=0,
                          n_rows=5000).plan()
    assert plan.joint and plan.ranks == 0


def test_three_amounts_are_drawn_like_cut_trivariate_normals():
    """Three amounts (the conditionals of a 3 x 3 correlation, the sweeps it sets): per cell of the first two, the
    drawn mean ranks of all three are those of real trivariate normal draws cut into the same bins, within four
    standard errors of the difference."""
    rng = np.random.default_rng(11)
    corr = np.array([[1.0, 0.8, 0.5], [0.8, 1.0, 0.6], [0.5, 0.6, 1.0]])
    z = rng.multivariate_normal(np.zeros(3), corr, size=300_000).T
    ts = tuple(thresholds(m) for m in ([0.3, 0.4, 0.3], [0.5, 0.5], [0.2, 0.6, 0.2]))
    codes = np.vstack([np.searchsorted(t, zz, side="right") - 1 for t, zz in zip(ts, z)])
    true = [(ndtr(zz) - ndtr(t[c])) / (ndtr(t[c + 1]) - ndtr(t[c])) for t, zz, c in zip(ts, z, codes)]
    got = copula_ranks(WithinBinCopula((0, 1, 2), corr, ts), codes, np.random.default_rng(12))
    for b in range(3):
        for c in range(2):
            rows = (codes[0] == b) & (codes[1] == c)
            if rows.sum() < MIN_CELL:
                continue
            for j in range(3):
                assert got[j][rows].mean() == pytest.approx(true[j][rows].mean(),
                                                            abs=_mean_tolerance(rows.sum())), (b, c, j)


def test_rows_missing_one_amount_mix_with_complete_rows():
    """Half the rows lack the second amount: the complete rows still follow the other's bin, the others are
    uniform in their bin, and the missing amount's ranks are NaN exactly where it is missing."""
    ts = (thresholds([0.5, 0.5]), thresholds([0.5, 0.5]))
    copula = WithinBinCopula((0, 1), np.array([[1.0, 0.7], [0.7, 1.0]]), ts)
    n = 100_000
    rng = np.random.default_rng(2)
    codes = np.vstack([np.zeros(n, dtype=np.int64), np.where(rng.random(n) < 0.5, 1, -1)])
    got = copula_ranks(copula, codes, np.random.default_rng(3))
    lacking = codes[1] < 0
    assert np.isnan(got[1]).sum() == lacking.sum() and not np.isnan(got[1][~lacking]).any()
    assert got[0][lacking].mean() == pytest.approx(0.5, abs=0.01)
    # The lower half of amount 0 with the upper half of amount 1: amount 0 sits high in its bin.
    assert got[0][~lacking].mean() > 0.6


def test_rank_sums_read_with_copula_ranks_keep_their_mean_shift_and_the_copula_order():
    """A group of rows whose copula ranks are far from uniform (mean 0.7) and a released mean rank of 0.4: the
    matched exponents give the group mean 0.4 (the plain U^(1/r - 1) would give about 0.55, counting the copula's
    shift twice) and keep the rows' order."""
    from dpknn.synth._ranks import matched_powers

    rng = np.random.default_rng(4)
    u = rng.beta(2.33, 1.0, 5000)           # mean 0.7
    target = np.full(u.size, 0.4)
    k = matched_powers(u, target, np.ones(u.size, dtype=bool))
    drawn = u ** k
    assert drawn.mean() == pytest.approx(0.4, abs=1e-3)
    assert (u ** (1 / 0.4 - 1)).mean() > 0.5
    assert np.array_equal(np.argsort(drawn, kind="stable"), np.argsort(u, kind="stable"))
    # A group under MATCHED_GROUP rows keeps the plain exponent.
    small = matched_powers(u[:5], target[:5], np.ones(5, dtype=bool))
    assert small == pytest.approx(np.full(5, 1 / 0.4 - 1))
