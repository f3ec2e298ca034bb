"""Issue 48: point masses, quantile model bins, analyses and within-bin rank sums of the marginal synthesisers.

The privacy of the two new releases rests on their sensitivity: one noisy histogram of candidate values per
amount (one record moves one cell by one) and one table of rank sums per (amount, covariate) pair (one record
moves one cell by at most RANK_STEPS). Both are checked against brute force on neighbouring data sets, each
with a negative control; what they buy is checked on the things an analyst looks at: exact zeros, a
regression's coefficients.
"""

import itertools
import math
from dataclasses import replace
from fractions import Fraction
from unittest import mock

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from dpknn import Categorical, Continuous, Ordinal
from dpknn.accounting import BudgetAccountant
from dpknn.exceptions import DomainError
from dpknn.mechanisms import DiscreteGaussian, Geometric
from dpknn.mechanisms._noise import discrete_laplace_survival
from dpknn.mechanisms._randomness import as_source
from dpknn.schema import Discretization
from dpknn.schema._discretization import ValueShape
from dpknn.schema._marginals import extended_codes
from dpknn.synth import AIMSynthesizer, AutoSynthesizer, MSTSynthesizer
from dpknn.synth._bins import (
    FALSE_MASS,
    OrdinalHeaps,
    QuantileEdges,
    bin_candidates,
    false_mass_threshold,
    mass_candidates,
    point_masses,
    quantile_edges,
    value_histogram,
)
from dpknn.synth._data import RankPlan, frame_rank_tables
from dpknn.synth._marginal import PureBudget, ZCDPBudget, measure_quantiles
from dpknn.synth._ranks import RANK_STEPS, conditional_ranks, rank_tables, release_ranks, within_bin_ranks


class _Exact:
    """A mechanism without noise: the released table is the true one (for sensitivity checks)."""

    def release_array(self, values, rng=None):
        return np.asarray(values)

    def variance(self):
        return 0.0


def _income_table(n, rng, zeros=0.4):
    age = rng.integers(18, 80, n)
    sex = rng.choice(["F", "M"], n)
    hours = rng.integers(0, 60, n)
    income = np.exp(8 + 0.03 * (age - 18) + 0.4 * (sex == "M") + 0.02 * hours + rng.normal(0, 0.6, n))
    income = np.where(rng.random(n) < zeros, 0.0, np.round(np.minimum(income, 400_000), 2))
    income[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({"income": income, "age": age, "sex": sex, "hours": hours})


ATTRS = [Continuous("income", 0, 500_000), Ordinal("age", 18, 89), Categorical("sex", ["F", "M"]),
         Ordinal("hours", 0, 99)]


# --- point masses ------------------------------------------------------------------------------------
def test_the_candidates_are_public_values_of_the_domain():
    """The range's ends, 0 inside it, and its round values: multiples of the smallest of 1, 2, 5 times a power of
    ten that cuts the range in at most MASS_GRID = 50 steps."""
    assert mass_candidates(Continuous("x", 0, 500_000)) == tuple(10_000.0 * k for k in range(51))
    assert mass_candidates(Continuous("x", -5, 5)) == tuple(np.round(np.arange(-25, 26) * 0.2, 1))
    assert mass_candidates(Continuous("x", 0, 20))[:4] == (0.0, 0.5, 1.0, 1.5) and 12.0 in mass_candidates(
        Continuous("x", 0, 20))
    assert mass_candidates(Continuous("x", 1.0, 2.2))[:3] == (1.0, 1.05, 1.1)   # 1.05, not 1.0500000000000003
    assert mass_candidates(Ordinal("x", 1, 9)) == tuple(range(1, 10))
    assert mass_candidates(Ordinal("x", 0, 200)) == tuple(range(0, 201, 5))
    assert mass_candidates(Ordinal("x", 3, 203)) == (3, *range(5, 201, 5), 203)   # the ends, whatever they are
    assert bin_candidates(Continuous("x", -5, 5)) == (-5.0, 0.0, 5.0) and bin_candidates(Ordinal("x", 1, 9)) == (1, 9)


def test_the_point_mass_histogram_moves_by_two_in_l1_and_root_two_in_l2_on_every_neighbour():
    """Adding or removing any one record moves its candidate's cell and the "at a candidate" cell by one, or the
    others' cell by one: L1 at most 2, L2 at most √2, the sensitivities its mechanism is calibrated to (the
    mechanism of sensitivity 1 at half the cost). Negative control: two records move it by more."""
    rng = np.random.default_rng(0)
    a = Continuous("x", 0, 100)
    base = np.where(rng.random(60) < 0.4, 0.0, np.round(rng.uniform(0, 100, 60), 1))
    base[:3] = 100.0

    def hist(values):
        return point_masses(values, a, _Exact(), None)[1]

    h = hist(base)
    moves = [hist(np.r_[base, extra]) - h for extra in [0.0, 100.0, 37.5, 0.1, 50.0]]
    moves += [hist(np.delete(base, i)) - h for i in range(base.size)]
    assert max(np.abs(m).sum() for m in moves) == 2 and max(np.sqrt((m**2).sum()) for m in moves) == np.sqrt(2)
    assert {np.abs(m).sum() for m in moves} == {1, 2}   # a value off the round grid moves one cell
    assert np.abs(hist(np.r_[base, 0.0, 0.0]) - h).sum() == 4
    # The last two cells count every counted value.
    assert h[-2] + h[-1] == base.size


def test_false_mass_threshold_bounds_the_noise_of_an_empty_cell():
    """The count noise alone exceeds on one empty cell with probability at most FALSE_MASS/candidates: exactly
    for the discrete Laplace, by summing the discrete Gaussian's exact law. Negative control: three deviations,
    the rule before round values were candidates, exceed it on 51 cells."""
    for mech in [Geometric(epsilon=0.5), Geometric(epsilon=0.05), DiscreteGaussian(rho=0.01),
                 DiscreteGaussian(rho=0.0004)]:
        t = false_mass_threshold(mech, 51)
        if isinstance(mech, Geometric):
            tail = discrete_laplace_survival(math.ceil(t) - 1, 1 / mech.epsilon)
            below = discrete_laplace_survival(math.ceil(t) - 2, 1 / mech.epsilon)
            assert tail <= FALSE_MASS / 51 < below   # the least such count
        else:
            z = np.arange(0, int(40 * mech.sigma))
            law = np.exp(-(z**2) / (2 * mech.sigma**2))
            law = law / (2 * law.sum() - law[0])
            tail = law[z >= t].sum()
            assert tail <= FALSE_MASS / 51
        three = 3 * math.sqrt(mech.variance())
        assert 51 * (discrete_laplace_survival(math.ceil(three) - 1, 1 / mech.epsilon) if isinstance(mech, Geometric)
                     else law[z >= three].sum()) > FALSE_MASS


def test_heaps_are_drawn_at_their_values_and_keep_the_model_bins():
    """A Continuous amount recorded mostly on whole numbers (years of schooling: 30 % at 12, 15 % at 16): the heaps
    are released as atoms of the shape, so the synthetic values sit on them in the same shares, while the model's
    bins are the quantiles' (no bin of its own: on a covariate that cost the regressions, issue 48). Negative
    control: without round candidates no synthetic value is exactly 12."""
    rng = np.random.default_rng(4)
    n = 20_000
    x = rng.choice([12.0, 16.0, 10.0], n, p=[0.5, 0.25, 0.25])
    x = np.where(rng.random(n) < 0.4, np.round(rng.uniform(0, 20, n), 2), x)
    age = rng.integers(20, 70, n)
    df = pd.DataFrame({"educ": x, "age": age})
    attrs = [Continuous("educ", 0, 20), Ordinal("age", 20, 69)]
    model = MSTSynthesizer(attrs, epsilon=1.0, n_rows=n, never_missing=["educ", "age"], rng=0).fit(df)
    heaps = dict(model.public_params()["released_heaps"]["educ"])
    assert set(heaps) >= {10.0, 12.0, 16.0} and model.point_masses_ == {}
    q = model.quantile_edges_["educ"]
    assert model.discretization_.inner_edges(attrs[0]) == q.model_edges(attrs[0], min(q.levels, 4))
    syn = model.sample(n, rng=1).educ
    for v in (10.0, 12.0, 16.0):
        assert abs((syn == v).mean() - (x == v).mean()) < 0.03
    plain = mock.patch("dpknn.synth._marginal.mass_candidates", lambda a: bin_candidates(a))
    with plain, mock.patch("dpknn.synth._bins.mass_candidates", lambda a: bin_candidates(a)):
        flat = MSTSynthesizer(attrs, epsilon=1.0, n_rows=n, never_missing=["educ", "age"], rng=0).fit(df)
    assert (flat.sample(n, rng=1).educ == 12.0).mean() < 0.01



def test_heaps_of_a_float32_column_are_found_at_their_decimals():
    """A Stata ``float`` or Parquet ``float`` column holds 0.3 as 0.30000001192...: read as the decimals they print
    as (``float32_as_decimals``), its heaps at 0.3 and 1.5 are found and drawn at 0.3 and 1.5, and the top code 2.2
    passes the domain check. Negative control: the same values widened to float64 as they are miss the heap at 0.3
    (only the dyadic 1.5 is equal to its round value)."""
    rng = np.random.default_rng(7)
    n = 20_000
    x = rng.choice([0.3, 1.5, 2.2], n, p=[0.4, 0.3, 0.3])
    x = np.where(rng.random(n) < 0.4, rng.uniform(0, 2.2, n), x).astype(np.float32)
    df = pd.DataFrame({"h": x, "g": rng.integers(0, 5, n)})
    attrs = [Continuous("h", 0, 2.2), Ordinal("g", 0, 4)]
    model = MSTSynthesizer(attrs, epsilon=1.0, n_rows=n, never_missing=["h", "g"], rng=0).fit(df)
    heaps = dict(model.public_params()["released_heaps"]["h"])
    assert {0.3, 1.5} <= set(heaps) and model.point_masses_ == {"h": [2.2]}
    syn = model.sample(n, rng=1).h
    assert abs((syn == 0.3).mean() - (x == np.float32(0.3)).mean()) < 0.03
    widened = df.assign(h=np.minimum(x.astype(np.float64), 2.2))   # clipped: 2.2f is above the public 2.2
    plain = MSTSynthesizer(attrs, epsilon=1.0, n_rows=n, never_missing=["h", "g"], rng=0).fit(widened)
    assert 0.3 not in dict(plain.public_params()["released_heaps"].get("h", []))
    with pytest.raises(DomainError, match="outside its public range"):
        MSTSynthesizer(attrs, epsilon=1.0, n_rows=n, never_missing=["h", "g"], rng=0).fit(
            df.assign(h=x.astype(np.float64)))

def test_a_point_mass_is_found_and_given_a_bin_of_its_own():
    rng = np.random.default_rng(1)
    values = np.where(rng.random(5000) < 0.44, 0.0, np.minimum(rng.lognormal(10, 1, 5000), 500_000))
    a = Continuous("income", 0, 500_000)
    found, noisy = point_masses(values, a, Geometric(epsilon=0.5), rng)
    assert found == (0.0,) and noisy[0] == pytest.approx(0.44 * 5000, rel=0.05)
    # 0.5 % of zeros is noise, not a mass.
    few = np.where(rng.random(5000) < 0.005, 0.0, np.minimum(rng.lognormal(10, 1, 5000), 500_000))
    assert point_masses(few, a, Geometric(epsilon=0.5), rng)[0] == ()
    q = quantile_edges(values, a, levels=4, epsilon=1.0, src=rng, masses=found)
    edges = q.model_edges(a, 2)
    assert edges[0] == np.nextafter(0.0, 1.0) and len(edges) == 1 + 3   # the zero's bin, then 4 quantile bins
    # The quantiles leave the zeros out: the median edge is near the median of the positive values.
    median = q.edges[list(q.ranks).index(0.5)]
    assert median == pytest.approx(np.median(values[values > 0]), rel=0.1)
    codes = Discretization([a], 10, {"income": edges}).encode(pd.DataFrame({"income": values}))[0]
    assert set(values[codes == 0]) == {0.0} and (codes == 0).sum() == (values == 0).sum()


def test_zero_inflated_income_keeps_its_zeros_and_median():
    """The issue's ACS case: 44 % exact zeros. Equal bins gave no synthetic zero and a median off by 52-65 %."""
    df = _income_table(20_000, np.random.default_rng(2), zeros=0.44)
    real = df.income.dropna()
    for seed in range(2):
        model = AutoSynthesizer(ATTRS, epsilon=1.0, never_missing=["age", "sex", "hours"], rng=seed).fit(df)
        syn = model.sample(20_000, rng=seed + 10).income.dropna()
        assert abs((syn == 0).mean() - (real == 0).mean()) < 0.03
        assert abs(syn.median() / real.median() - 1) < 0.10
        assert model.public_params()["released_point_masses"] == {"income": [0.0]}


def test_point_masses_are_released_when_no_quantile_level_is_worth_its_budget():
    """acs12 at ε = 1: 1,600 rows and four wide amounts bought no quantile level in 2 of 3 seeds, yet 35 % zeros
    are a histogram's worth (here 1,600 rows at ε = 0.5). The zeros keep a bin of their own beside the equal
    bins; the budget spent is one part of levels + 1 for income's histogram, and one such part more for each
    narrow Ordinal's (age, hours), taken from the model's."""
    df = _income_table(1600, np.random.default_rng(8), zeros=0.4)
    model = MSTSynthesizer(ATTRS, epsilon=0.5, n_rows=1600, never_missing=["age", "sex", "hours"], rng=0).fit(df)
    plan = model.plan()
    assert plan.levels == 0 and model.quantile_levels_ == 0
    assert plan.quantiles == Fraction(model.quantile_share) * 3 / (model.quantile_levels + 1) * plan.budget.total
    assert [a.name for a in plan.heaped] == ["age", "hours"]
    assert model.point_masses_ == {"income": [0.0]}
    inner = model.discretization_.inner_edges(ATTRS[0])
    assert inner[0] == np.nextafter(0.0, 1.0) and 50_000.0 in inner and len(inner) == 10
    syn = model.sample(20_000, rng=1).income.dropna()
    real = df.income.dropna()
    assert abs((syn == 0).mean() - (real == 0).mean()) < 0.06
    # Negative control: equal bins without a point mass lose the zeros.
    flat = MSTSynthesizer(ATTRS, epsilon=0.5, bins=10, never_missing=["age", "sex", "hours"], rng=0).fit(df)
    assert (flat.sample(20_000, rng=1).income == 0).mean() < 0.01


def _weight_table(n, rng):
    """Weight depends on height only; height on sex (the youth survey's shape)."""
    sex = rng.choice(["F", "M"], n)
    h = np.clip(1.62 + 0.13 * (sex == "M") + rng.normal(0, 0.07, n), 1.2, 2.1)
    w = np.clip(-80 + 85 * h + rng.normal(0, 9, n), 30, 150)
    return pd.DataFrame({"w": w, "h": h, "sex": sex, "g": rng.choice(["a", "b", "c"], n)})


WEIGHT_ATTRS = [Continuous("w", 25, 200), Continuous("h", 1.0, 2.2), Categorical("sex", ["F", "M"]),
                Categorical("g", ["a", "b", "c"])]


def test_mst_measures_the_covariates_pairs_so_a_mediated_effect_is_not_misplaced(monkeypatch):
    """The analysis joins w to h and to sex in MST's tree, where h and sex are then independent given w: OLS on
    the synthetic file gives sex much of h's effect. Measuring the pair (h, sex) beside the tree puts it back.
    The pair is one more table of the edges' share; the analysis' tables get three times a chosen edge's."""
    import dpknn.synth._marginal as marginal

    n = 20_000
    df = _weight_table(n, np.random.default_rng(9))
    real = smf.ols("w ~ h + sex", df).fit().params
    assert abs(real["sex[T.M]"]) < 0.3
    kw = dict(epsilon=1e4, analyses=["w ~ h + sex"], never_missing=["w", "h", "sex", "g"], rng=0)
    model = MSTSynthesizer(WEIGHT_ATTRS, **kw).fit(df)
    assert model.covariate_pairs_ == (("h", "sex"),)
    pub = model.public_params()
    assert pub["covariate_pairs"] == [["h", "sex"]] and len(model.measurements_) == 4 + 3 + 1
    rest = Fraction(pub["rho"]) * (1 - Fraction(pub["quantile_share"])) * (1 - Fraction(pub["rank_share"]))
    # three analysis tables (w with h and with sex, the pair h, sex) at weight 3 and one chosen edge at 1: Σw = 10
    assert pub["sigma_two_way"] == pytest.approx(float(10 / (2 * rest * Fraction(7, 10))) ** 0.5, rel=1e-6)
    assert pub["sigma_analysis_tables"] == pytest.approx(float(10 / (3 * 2 * rest * Fraction(7, 10))) ** 0.5,
                                                         rel=1e-6)
    fit = smf.ols("w ~ h + sex", model.sample(n, rng=1)).fit().params
    assert abs(fit["sex[T.M]"]) < 2.5 and fit["h"] == pytest.approx(real["h"], rel=0.15)
    # Negative control: without the pair (no analysis is paired) the effect moves to sex.
    monkeypatch.setattr(marginal, "MAX_PAIRED_COVARIATES", 0)
    star = MSTSynthesizer(WEIGHT_ATTRS, **kw).fit(df)
    assert star.covariate_pairs_ == ()
    assert smf.ols("w ~ h + sex", star.sample(n, rng=1)).fit().params["sex[T.M]"] > 5
    monkeypatch.undo()
    # MCAR amplification holds for a tree's tables only: no pair is measured with mcar_rates.
    gaps = df.assign(w=df.w.mask(np.random.default_rng(1).random(n) < 0.1))
    mcar = MSTSynthesizer(WEIGHT_ATTRS, epsilon=1.0, noise="laplace", analyses=["w ~ h + sex"],
                          mcar_rates={"w": 0.1}, never_missing=["h", "sex", "g"], rng=0).fit(gaps)
    assert mcar.covariate_pairs_ == ()


def test_auto_noise_keeps_the_gaussian_currency_when_quantiles_are_released():
    """Four attributes: by the tables alone pure DP wins, but the quantiles that cut the amounts' bins are
    2.6 times finer in zCDP; with them the weight-on-height slope holds at ε = 1. Negative control: Laplace."""
    n = 20_000
    df = _weight_table(n, np.random.default_rng(10))
    real = smf.ols("w ~ h + sex", df).fit().params["h"]
    kw = dict(epsilon=1.0, analyses=["w ~ h + sex"], never_missing=["w", "h", "sex", "g"], rng=0)
    auto = MSTSynthesizer(WEIGHT_ATTRS, **kw).fit(df)
    assert auto.noise_ == "gaussian"
    assert MSTSynthesizer(WEIGHT_ATTRS, **{**kw, "bins": 10, "analyses": ()}).plan().budget.noise == "laplace"
    slope = smf.ols("w ~ h + sex", auto.sample(n, rng=1)).fit().params["h"]
    laplace = MSTSynthesizer(WEIGHT_ATTRS, noise="laplace", **kw).fit(df)
    worse = smf.ols("w ~ h + sex", laplace.sample(n, rng=1)).fit().params["h"]
    assert slope == pytest.approx(real, rel=0.2) and worse < 0.75 * real


# --- rank sums ---------------------------------------------------------------------------------------
def _rank_tables(df, disc, shape, pairs, *, broken=False):
    codes = disc.encode(df)
    ext = extended_codes(codes, disc.sizes)
    lo, hi = disc.bounds(disc.attributes[0])
    values, _ = disc.attributes[0].read_column(df)
    ranks = {0: within_bin_ranks(values, codes[0], lo, hi, shape)}
    if broken:   # negative control: the position in the bin by value, unbounded past the bin's end
        ranks = {0: np.where(np.isnan(ranks[0]), np.nan, (values - lo[np.maximum(codes[0], 0)]) / 1000.0)}
    tables = release_ranks(rank_tables(ranks, codes, ext, [disc.value_codes(a) for a in disc.attributes],
                                       disc.sizes + 1, pairs), pairs, _Exact(), None)
    return [t.sums * RANK_STEPS for t in tables]


def test_rank_sums_have_sensitivity_rank_steps_on_every_neighbour():
    """Adding or removing one record (with any value, missing included) moves one cell of each (amount,
    covariate) table by at most RANK_STEPS and nothing else: the sensitivity the mechanism is calibrated to.
    The shape and bins are released values, fixed between neighbours. Negative control: a record counted with
    its rank unquantised and unbounded (its value) moves a cell by far more."""
    rng = np.random.default_rng(3)
    df = _income_table(80, rng)
    q = quantile_edges(df.income.dropna().to_numpy(), ATTRS[0], levels=3, epsilon=5.0, src=rng)
    disc = Discretization(ATTRS, 10, {"income": q.edges})
    shape = q.shape(ATTRS[0])
    pairs = [(0, 1), (0, 2), (0, 3)]
    base = _rank_tables(df, disc, shape, pairs)
    others = _income_table(30, np.random.default_rng(4))
    for i in range(len(df)):
        for t, b in zip(_rank_tables(df.drop(index=i), disc, shape, pairs), base):
            diff = np.abs(t - b)
            assert diff.sum() <= RANK_STEPS and (diff > 0).sum() <= 1
    for j in range(len(others)):
        plus = pd.concat([df, others.iloc[[j]]], ignore_index=True)
        for t, b in zip(_rank_tables(plus, disc, shape, pairs), base):
            assert np.abs(t - b).sum() <= RANK_STEPS
    # Negative control: a summand not bounded to [0, 1] fails the same check.
    broken = _rank_tables(df, disc, shape, pairs, broken=True)
    worst = max(np.abs(t - b).sum() for i in range(len(df))
                for t, b in zip(_rank_tables(df.drop(index=i), disc, shape, pairs, broken=True), broken))
    assert worst > RANK_STEPS


def test_released_rank_sums_make_values_inside_a_bin_follow_a_covariate():
    """Noise-free sums, a model that knows only the bin: the drawn ranks of rows whose covariate says "high"
    are higher, as in the data; with a flat table (the negative control) they are not."""
    rng = np.random.default_rng(5)
    n = 4000
    codes = np.vstack([np.zeros(n, dtype=np.int64), rng.integers(0, 2, n)])   # one bin; a binary covariate
    ext = codes.copy()
    # In the data, the covariate's 1s sit high in the bin (mean rank 0.75) and its 0s low (0.25).
    sums = np.array([[0.25 * (codes[1] == 0).sum(), 0.75 * (codes[1] == 1).sum(), 0.0]])
    from dpknn.synth._ranks import RankSums

    drawn = conditional_ranks(codes, ext, [RankSums(0, 1, sums, 0.0)], {0: np.array([float(n)])}, rng)[0]
    assert drawn[codes[1] == 1].mean() == pytest.approx(0.75, abs=0.03)
    assert drawn[codes[1] == 0].mean() == pytest.approx(0.25, abs=0.03)
    flat = np.array([[0.5 * (codes[1] == 0).sum(), 0.5 * (codes[1] == 1).sum(), 0.0]])
    drawn = conditional_ranks(codes, ext, [RankSums(0, 1, flat, 0.0)], {0: np.array([float(n)])}, rng)[0]
    assert abs(drawn[codes[1] == 1].mean() - drawn[codes[1] == 0].mean()) < 0.03


# --- analyses: what an analyst fits -------------------------------------------------------------------
def test_an_analysis_keeps_the_regression_it_names():
    """log-income style amounts on age, sex and hours: with the analysis named, the synthetic OLS coefficients
    stay near the real ones (each within 4 real standard errors, or 25 %); the tables it names are measured."""
    df = _income_table(30_000, np.random.default_rng(6), zeros=0.0)
    formula = "income ~ age + sex + hours"
    fit = smf.ols(formula, df.dropna()).fit()
    model = AIMSynthesizer(ATTRS, epsilon=4.0, never_missing=["age", "sex", "hours"], analyses=[formula],
                           rng=0).fit(df)
    syn = model.sample(30_000, rng=1)
    got = smf.ols(formula, syn.dropna()).fit().params
    for name in ("age", "sex[T.M]", "hours"):
        assert abs(got[name] - fit.params[name]) < max(4 * fit.bse[name], 0.25 * abs(fit.params[name])), name
    assert {("income", x) for x in ("age", "sex", "hours")} <= set(model.structure_)
    rec = model.public_params()
    assert {tuple(r[:2]) for r in rec["rank_sums"]} == {("income", "age"), ("income", "sex"), ("income", "hours")}
    assert rec["analyses"] == [formula]


@pytest.mark.parametrize("budget", [ZCDPBudget(Fraction(1, 10)), PureBudget(Fraction(1, 2))])
def test_the_point_mass_histogram_is_released_at_half_its_part(budget):
    """Its L1 sensitivity is 2 and its L2 sensitivity √2, so the mechanism of sensitivity 1 gets half the part:
    ρ/2 in zCDP (σ² = 1/ρ, cost (√2)²/(2σ²) = ρ), ε/2 in pure DP (scale 2/ε). The whole part would spend twice
    the budget."""
    a = Continuous("x", 0.0, 100.0)
    values = np.r_[np.zeros(300), np.linspace(1.3, 99.7, 700)]
    seen = []

    def spy(hist, attribute, mechanism, src):
        seen.append(mechanism)
        return point_masses(hist, attribute, mechanism, src)

    with mock.patch("dpknn.synth._marginal.point_masses", spy):
        measure_quantiles({"x": value_histogram(values, a)}, [a], 3, budget, as_source(0), masses=True)
    part = budget.total / 4   # one attribute, three levels and the histogram
    (mech,) = seen
    if isinstance(budget, ZCDPBudget):
        assert isinstance(mech, DiscreteGaussian) and mech.sigma2 == 1 / part and mech.sensitivity == 1
    else:
        assert isinstance(mech, Geometric) and mech.epsilon == pytest.approx(float(part / 2)) and mech.sensitivity == 1



@pytest.mark.parametrize("budget", [ZCDPBudget(Fraction(1, 10)), PureBudget(Fraction(1, 2))])
def test_a_narrow_ordinals_histogram_takes_one_part_and_the_parts_add_up_to_the_budget(budget):
    """One wide amount with three levels (four parts of a quarter of the quantile share) and one narrow Ordinal
    (``heaped``) whose histogram takes ``narrow``, one part more: each histogram's mechanism at half a part (L1 2,
    L2 √2), each level's exponential mechanism at one part; what they spend adds up to the budget exactly (zCDP:
    √2² / (2σ²) per histogram, ε²/8 per choice; pure DP: 2·ε per histogram, ε per choice), and the wide amount's
    mechanisms are those of a table without the narrow Ordinal."""
    a, h = Continuous("x", 0.0, 100.0), Ordinal("h", 0, 99)
    values = np.r_[np.zeros(300), np.linspace(1.3, 99.7, 700)]
    hours = np.r_[np.full(400, 40), np.arange(600) % 100]
    hists = {"x": value_histogram(values, a), "h": value_histogram(hours, h)}
    part = budget.total / 5

    def spent(heaped, total, narrow):
        seen, chosen = [], []

        def spy(hist, attribute, mechanism, src):
            seen.append(mechanism)
            return point_masses(hist, attribute, mechanism, src)

        def spy_edges(hist, attribute, *, epsilon, **kw):
            chosen.append(epsilon)
            return quantile_edges(hist, attribute, epsilon=epsilon, **kw)

        with mock.patch("dpknn.synth._marginal.point_masses", spy), \
                mock.patch("dpknn.synth._marginal.quantile_edges", spy_edges):
            _q, heaps = measure_quantiles(hists, [a], 3, replace(budget, total=total), as_source(0), masses=True,
                                         heaped=heaped, narrow=narrow)
        zcdp = isinstance(budget, ZCDPBudget)
        costs = [Fraction(1) / Fraction(m.sigma2) if zcdp else 2 * Fraction(m.epsilon) for m in seen]
        costs += [Fraction(e) ** 2 / 8 if zcdp else Fraction(e) for e in chosen * 3]   # one choice per level
        assert all(m.sensitivity == 1 for m in seen)
        return costs, seen, heaps

    costs, seen, heaps = spent([h], budget.total, part)
    assert [v for v, _ in heaps[0].heaps] == [40] and heaps[0].name == "h" and len(seen) == 2
    assert float(sum(costs)) == pytest.approx(float(budget.total), rel=1e-9)
    assert all(float(c) == pytest.approx(float(part), rel=1e-9) for c in costs)
    _alone, seen_alone, _ = spent([], budget.total - part, 0)
    assert seen_alone[0].variance() == seen[0].variance() and len(seen_alone) == 1


def test_a_narrow_ordinals_heap_is_drawn_on_its_value_and_keeps_the_public_bins():
    """Hours of work, Ordinal 0-99 in public bins of 10 (too narrow for quantiles): 43 % at 40. The heap is released
    (``released_heaps``) and drawn at 40 in its share while the model's bins stay the public ones; the other values
    of its bin keep the rest. Negative control: equal bins (no histogram) draw 40 as one value of ten in its bin."""
    rng = np.random.default_rng(3)
    n = 20_000
    hours = np.where(rng.random(n) < 0.43, 40, rng.integers(0, 80, n))
    sex = rng.choice(["F", "M"], n)
    df = pd.DataFrame({"hours": hours, "sex": sex})
    attrs = [Ordinal("hours", 0, 99), Categorical("sex", ["F", "M"])]
    model = MSTSynthesizer(attrs, epsilon=1.0, n_rows=n, never_missing=["hours", "sex"], rng=0).fit(df)
    assert [v for v, _ in model.public_params()["released_heaps"]["hours"]] == [40]
    assert model.discretization_.inner_edges(attrs[0]) is None or list(
        model.discretization_.bounds(attrs[0])[0]) == list(range(0, 100, 10))
    syn = model.sample(n, rng=1).hours.to_numpy()
    assert abs((syn == 40).mean() - (hours == 40).mean()) < 0.03
    assert abs(((syn >= 41) & (syn < 50)).mean() - ((hours >= 41) & (hours < 50)).mean()) < 0.03
    equal = MSTSynthesizer(attrs, epsilon=1.0, bins=10, n_rows=n, never_missing=["hours", "sex"], rng=0).fit(df)
    assert (equal.sample(n, rng=1).hours.to_numpy() == 40).mean() < 0.1


def test_a_narrow_ordinals_even_values_found_as_heaps_keep_the_share_of_their_neighbours():
    """Ages 20-60 uniform (2.4 % each) in bins of 8 values: the even ages are candidates and hold 2 %, so they are
    found; the bins' law still covers their slots, so each atom is its share less what that law gives its slot
    (``OrdinalHeaps.shape``), which leaves them less than the histogram's noise floor: no atom, and every age, even
    or odd, keeps about 2.4 %. Negative control: atoms at their whole share beside the law (this change's first
    draw) put the even ages above the odd ones (GSS ages, ``benchmarks/narrow_heaps.py``)."""
    rng = np.random.default_rng(5)
    n = 40_000
    df = pd.DataFrame({"age": rng.integers(20, 61, n), "sex": rng.choice(["F", "M"], n)})
    attrs = [Ordinal("age", 18, 89), Categorical("sex", ["F", "M"])]

    def shares(model):
        syn = model.sample(n, rng=1).age.to_numpy()
        got = np.array([(syn == v).mean() for v in range(26, 55)])   # away from the data's ends, 20 and 60
        return got, got[::2].mean() - got[1::2].mean()

    found = []

    def spy(*args, **kw):
        found.append(OrdinalHeaps(*args, **kw))
        return found[-1]

    with mock.patch("dpknn.synth._marginal.OrdinalHeaps", spy):
        model = MSTSynthesizer(attrs, epsilon=2.0, n_rows=n, never_missing=["age", "sex"], rng=0).fit(df)
    assert len(found[0].heaps) >= 10   # found by the histogram, ...
    # ... but not drawn as atoms inside the data, so not published as heaps (near its ends, 20 and 60, the law
    # falls and a value may stand out)
    published = {v for v, _ in model.public_params()["released_heaps"].get("age", [])}
    assert not published & set(range(26, 55))
    assert published == {p - 0.5 for p, _ in (model.shapes_[0].atoms if model.shapes_[0] else ())}
    got, parity = shares(model)
    assert np.abs(got - 1 / 41).max() < 0.006 and abs(parity) < 0.002
    def whole_shares(self, attribute, lo, hi, masses):   # each heap an atom at its whole share, the law besides
        m = np.asarray(masses, dtype=np.float64) / np.sum(masses)
        atoms = [(v + 0.5, w) for v, w in self.shares()]
        where = np.searchsorted(hi, [p for p, _ in atoms], side="right")
        left = m - np.bincount(where, weights=[w for _, w in atoms], minlength=lo.size)
        return ValueShape(lo, hi, np.maximum(left, 0.0), atoms=tuple(atoms))

    with mock.patch.object(OrdinalHeaps, "shape", whole_shares):
        whole = MSTSynthesizer(attrs, epsilon=2.0, n_rows=n, never_missing=["age", "sex"], rng=0).fit(df)
    assert shares(whole)[1] > 0.01

def test_an_ordinal_value_on_a_heap_ranks_inside_the_heaps_jump():
    """An Ordinal's value v spans [v, v + 1) of its shape and a heap's atom sits at v + 1/2: the rank sums read a
    value on the heap in the middle of the heap's jump, where drawing it back gives v (read at v, it ranked below
    the whole jump)."""
    a = Ordinal("educ", 0, 20)
    q = QuantileEdges("educ", (8, 14), (0.25, 0.75), 1, 1.0, heaps=((12, 200),), rest=1000)
    shape = q.shape(a)
    disc = Discretization([a], 10, {"educ": (8, 14)})
    df = pd.DataFrame({"educ": pd.array([12] * 50, dtype="Int64")})
    codes = disc.encode(df)
    tables = frame_rank_tables(df, codes, extended_codes(codes, disc.sizes), disc, RankPlan(((0, 0),), (shape,)))
    mean_rank = tables[(0, 0)].sum() / (50 * RANK_STEPS)
    lo, hi = disc.bounds(a)
    inside = shape.cdf_at(hi[1]) - shape.cdf_at(lo[1])
    jump = (shape.cdf_at(12.5, "left") - shape.cdf_at(lo[1])) / inside, (shape.cdf_at(12.5, "right") -
                                                                         shape.cdf_at(lo[1])) / inside
    assert jump[0] < mean_rank < jump[1] and abs(mean_rank - sum(jump) / 2) <= 1 / RANK_STEPS
    assert int(np.floor(shape.draw_between(lo[1:2], hi[1:2], np.array([mean_rank]))[0])) == 12


def test_budgets_add_up_with_point_masses_and_rank_sums():
    df = _income_table(5000, np.random.default_rng(7))
    for cls in (AIMSynthesizer, MSTSynthesizer):
        acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
        model = cls(ATTRS, epsilon=1.0, analyses=["income ~ age + hours"], never_missing=["age", "sex", "hours"],
                    rng=0).fit(df, accountant=acc)
        assert acc.spent()[0] == pytest.approx(1.0)
        plan = model.plan()
        rest = plan.budget.total - plan.quantiles - plan.ranks
        assert plan.ranks == Fraction(model.rank_share) * (plan.budget.total - plan.quantiles) and rest > 0
        with pytest.raises(ValueError, match="not attributes"):
            cls(ATTRS, epsilon=1.0, analyses=["income ~ agee"]).plan()
        with pytest.raises(TypeError, match="list of"):
            cls(ATTRS, epsilon=1.0, analyses="income ~ age").plan()


def test_model_edges_keep_the_first_levels_and_isolate_masses():
    q = QuantileEdges("x", (10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0), (0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875),
                      3, 1.0, (0.0, 100.0))
    a = Continuous("x", 0, 100)
    assert q.model_edges(a, 1) == (math.nextafter(0.0, 1.0), 40.0, 100.0)
    assert q.model_edges(a, 2) == (math.nextafter(0.0, 1.0), 20.0, 40.0, 60.0, 100.0)
    o = QuantileEdges("y", (5, 9), (0.5, 0.75), 2, 1.0, (3,))
    assert o.model_edges(Ordinal("y", 0, 20), 1) == (3, 4, 5)
    for x, y in itertools.pairwise(q.model_edges(a, 3)):
        assert x < y
