"""AIM on incomplete data: the workload's candidates, the score's sensitivity on neighbours (with a
negative control), the size filter, the exact budget, universes, never_missing and the public record."""

import itertools
import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from people import ATTRS, people

from dpknn import Categorical, Continuous, Ordinal
from dpknn.accounting import BudgetAccountant, zcdp_rho
from dpknn.exceptions import BudgetExceededError
from dpknn.metrics._fidelity import tvd
from dpknn.schema._discretization import Discretization
from dpknn.schema._marginals import extended_codes
from dpknn.synth import AIMSynthesizer, AutoSynthesizer, MSTSynthesizer
from dpknn.synth import _aim as aim_module
from dpknn.synth._aim import affordable, auto_model_size, candidate_scores, workload_candidates
from dpknn.synth._data import Counts
from dpknn.synth._graphical_model import Measurement, fit_model, junction_tree, model_cells
from dpknn.synth._marginal import analysis_texts, auto_analyses, beside_tree


def test_candidates_are_the_downward_closure_weighted_by_overlap():
    workload = [(0, 1), (1, 2), (0, 2, 3)]
    got = workload_candidates(workload)
    closure = {r for w in workload for k in range(1, len(w) + 1) for r in itertools.combinations(w, k)}
    assert set(got) == closure
    for r, w in got.items():
        assert w == sum(len(set(r) & set(x)) for x in workload)
    assert got[(0,)] == 2 and got[(0, 2, 3)] == 1 + 1 + 3


def _counts(frame, disc):
    ext_sizes = disc.sizes + 1
    return Counts(extended_codes(disc.encode(frame), disc.sizes), disc.sizes, ext_sizes, n_jobs=1)


def _scores(frame, disc, model, candidates, noise_abs):
    return candidate_scores(candidates, _counts(frame, disc), model, noise_abs)


def test_scores_move_by_at_most_the_weight_on_neighbours_and_the_control_fails():
    disc = Discretization(ATTRS, 10)
    sizes = tuple(int(s) for s in disc.sizes + 1)
    rng = np.random.default_rng(1)
    model = fit_model(sizes, [(0, 3), (1, 2)], [Measurement((0, 3), rng.integers(0, 30, (sizes[0], sizes[3])), 4.0),
                                                Measurement((1, 2), rng.integers(0, 90, (sizes[1], sizes[2])), 4.0)])
    candidates = workload_candidates(list(itertools.combinations(range(4), 2)))
    df = people(300, seed=2)
    base = _scores(df, disc, model, candidates, noise_abs=3.0)
    weights = np.array(list(candidates.values()), dtype=float)
    worst = 0.0
    for i in range(0, 300, 23):
        for neighbour in (df.drop(index=i), pd.concat([df, df.iloc[[i]]], ignore_index=True)):
            moved = np.abs(_scores(neighbour, disc, model, candidates, noise_abs=3.0) - base) / weights
            worst = max(worst, moved.max())
    assert worst <= 1 + 1e-9
    assert worst == pytest.approx(1.0)     # attained: the bound is tight, not loose
    # Negative control: a score of sensitivity 2 (the counts doubled) fails the same check.
    doubled = candidate_scores(candidates, _DoubledCounts(_counts(df, disc)), model, 3.0)
    neighbour = candidate_scores(candidates, _DoubledCounts(_counts(df.drop(index=0), disc)), model, 3.0)
    assert (np.abs(neighbour - doubled) / weights).max() > 1


class _DoubledCounts:
    def __init__(self, counts):
        self.counts = counts

    def tables(self, sets):
        return [2 * t for t in self.counts.tables(sets)]


def test_size_filter_keeps_free_candidates_and_refuses_large_ones():
    sizes = (10, 10, 10, 3)
    candidates = workload_candidates(list(itertools.combinations(range(4), 2)))
    cliques = [(0, 1), (2,), (3,)]
    allowed = affordable(candidates, cliques, sizes, limit=130)
    assert (0, 1) in allowed and (0,) in allowed          # inside a clique: free
    assert (1, 2) not in allowed                          # 100 + 100 cells > 130
    assert (2, 3) in allowed                              # 100 + 30 cells
    for r in allowed:
        assert junction_tree(sizes, [*cliques, r]).size(sizes) <= 130 or r in [(0, 1), (0,), (1,), (2,), (3,)]


def test_size_filter_sizes_the_model_the_fit_builds():
    # Measured pairs of a wide table at eps = 4 (seed 8; sizes with the gap codes): the current model has 8,649
    # cells, and its cliques with (1, 4) triangulate to 10,959, but the fit triangulates the measured sets with it,
    # which gives 90,924. The filter must size the latter: it had let (1, 4) in under a limit of 20,000 (in the
    # whole run, a model of 271,872 cells under a limit of 79,200).
    sizes = (15, 12, 10, 7, 7, 3, 4, 3, 5, 15)
    cliques = [(v,) for v in range(10)] + [(0, 1), (0, 2), (0, 5), (1, 3), (1, 7), (2, 3), (2, 4), (2, 7), (3, 5),
                                          (4, 6), (5, 8), (6, 8)]
    assert model_cells(sizes, [*junction_tree(sizes, cliques).cliques, (1, 4)]) <= 20_000
    assert model_cells(sizes, [*cliques, (1, 4)]) == junction_tree(sizes, [*cliques, (1, 4)]).size(sizes) > 80_000
    candidates = {(1, 4): 1.0, (0, 3): 1.0, (0, 1): 1.0, (1,): 1.0}
    allowed = affordable(candidates, cliques, sizes, limit=20_000)
    assert (1, 4) not in allowed
    assert (0, 1) in allowed and (1,) in allowed   # measured already: free
    for r in allowed:
        assert model_cells(sizes, [*cliques, r]) <= 20_000 or r in [(0, 1), (1,)]


def test_fit_spends_exactly_the_budget_and_keeps_universes_and_gaps():
    df = people(4000)
    before = df.copy()
    model = AIMSynthesizer(ATTRS, epsilon=1.0, never_missing=["AGE", "SEX", "WORK"], rng=0).fit(df)
    pd.testing.assert_frame_equal(df, before)
    rho = Fraction(zcdp_rho(1.0, 1e-9))
    spent = sum(r.cost_select + r.cost_measure for r in model.rounds_)
    # quantile_share 0.1 of rho goes to the quantiles first, and one part of its 7 more to AGE's point-mass
    # histogram (a narrow Ordinal); AIM spends the rest, never more.
    rest = 1 - Fraction(1, 10) * 8 / 7
    assert rho * rest * Fraction(999, 1000) < spent <= rho * rest
    # The universe's edge is measured first, with the one-way tables.
    assert model.rounds_[4].attributes == (0, 3) and model.rounds_[4].cost_select == 0
    out = model.sample(3000, rng=1)
    assert list(out.columns) == [a.name for a in ATTRS] and len(out) == 3000
    assert out[["AGE", "SEX", "WORK"]].notna().all().all()
    assert out.loc[out["AGE"] < 15, "INCOME"].isna().all()
    assert 0.1 < out.loc[out["AGE"] >= 15, "INCOME"].isna().mean() < 0.3
    pub = model.public_params()
    assert pub["workload"] == 2 and pub["never_missing"] == ["AGE", "SEX", "WORK"]
    assert len(pub["rounds"]) == len(model.rounds_) == len(pub["measured"])
    assert "4000" not in json.dumps({k: v for k, v in pub.items() if k != "released_bin_edges"})
    json.dumps(pub)


def test_analysis_tables_are_measured_first_with_their_weight_and_the_budget_is_exact():
    df = people(4000)
    model = AIMSynthesizer(ATTRS, epsilon=1.0, analyses=["INCOME ~ AGE + SEX"], rng=0).fit(df)
    names = [a.name for a in ATTRS]
    analysis = {tuple(sorted((names.index("INCOME"), names.index(x)))) for x in ("AGE", "SEX")}
    first = [r for r in model.rounds_ if r.cost_select == 0]
    plain = {r.cost_measure for r in first if tuple(sorted(r.attributes)) not in analysis}
    weighted = [r for r in first if tuple(sorted(r.attributes)) in analysis]
    assert len(plain) == 1 and len(weighted) == 2
    assert all(r.cost_measure == aim_module.ANALYSIS_WEIGHT * min(plain) for r in weighted)
    # The noise they got: σ² = 1/(2ρ), so ANALYSIS_WEIGHT times ρ is √ANALYSIS_WEIGHT times less noise.
    sigma = {tuple(sorted(m.attributes)): m.sigma for m in model.measurements_[:len(first)]}
    one = sigma[(names.index("AGE"),)]
    for pair in analysis:
        assert sigma[pair] == pytest.approx(one / np.sqrt(aim_module.ANALYSIS_WEIGHT), rel=1e-9)
    assert sum(r.cost_select + r.cost_measure for r in model.rounds_) <= Fraction(zcdp_rho(1.0, 1e-9))


def test_accuracy_with_a_large_budget_and_a_named_workload():
    df = people(5000, seed=2)
    model = AIMSynthesizer(ATTRS, epsilon=1000.0, workload=[("AGE", "INCOME"), ("WORK", "INCOME", "AGE")],
                           rng=0).fit(df)
    out = model.sample(5000, rng=0)
    assert tvd(df, out, ATTRS) < 0.03
    assert all(set(r.attributes) <= {0, 2, 3} for r in model.rounds_[4:])   # only the workload's sets


def test_refusals():
    df = people(300)
    with pytest.raises(ValueError, match=r"unknown: \['age'\]"):
        AIMSynthesizer(ATTRS, epsilon=1.0, workload=[("age", "SEX")]).fit(df)
    with pytest.raises(ValueError, match=r"workload must be in \[1, 4\]"):
        AIMSynthesizer(ATTRS, epsilon=1.0, workload=5).fit(df)
    with pytest.raises(ValueError, match="must exceed the 5 round shares of the first tables"):
        AIMSynthesizer(ATTRS, epsilon=1.0, rounds=5, rng=0).fit(df)
    # An analysis table is measured first with ANALYSIS_WEIGHT shares: the 4 one-way tables, then INCOME with AGE
    # (also the universe's edge) and with SEX, 3 each, and the complete-case table of INCOME's status, AGE and SEX.
    with pytest.raises(ValueError, match="must exceed the 11 round shares"):
        AIMSynthesizer(ATTRS, epsilon=1.0, rounds=10, analyses=["INCOME ~ AGE + SEX"], rng=0).fit(df)
    with pytest.raises(ValueError, match="max_model_size"):
        AIMSynthesizer(ATTRS, epsilon=1.0, max_model_size=0).fit(df)
    acc = BudgetAccountant(epsilon=0.5, delta=1e-6)
    with pytest.raises(BudgetExceededError):
        AIMSynthesizer(ATTRS, epsilon=1.0, rng=0).fit(df.drop(columns="AGE"), accountant=acc)   # refused first


def test_auto_model_size_grows_with_epsilon_and_bounds_every_round(monkeypatch):
    assert auto_model_size(0.5) == auto_model_size(1.0) == 20_000 and auto_model_size(4.0) == 80_000
    assert auto_model_size(10.0) == auto_model_size(1e6) == 200_000
    with pytest.raises(ValueError, match="epsilon"):
        auto_model_size(float("nan"))
    limits = []

    def spy(candidates, cliques, sizes, limit):
        limits.append(limit)
        return affordable(candidates, cliques, sizes, limit)

    monkeypatch.setattr(aim_module, "affordable", spy)
    model = AIMSynthesizer(ATTRS, epsilon=3.0, rng=0).fit(people(500))
    assert model.max_model_size_ == 60_000 and model.released_params()["max_model_size"] == 60_000
    # The limit grows with the share of the budget spent and reaches "auto"'s value in the last round.
    assert limits == sorted(limits) and limits[-1] == pytest.approx(60_000)
    with pytest.raises((TypeError, ValueError), match="'auto'"):
        AIMSynthesizer(ATTRS, epsilon=1.0, max_model_size="big").fit(people(300))
    with pytest.raises(TypeError, match="got bool True"):
        AIMSynthesizer(ATTRS, epsilon=1.0, max_model_size=True).fit(people(300))


def test_seeds_reproduce():
    a = AIMSynthesizer(ATTRS, epsilon=1.0, rng=5).fit(people(500)).sample(50, rng=1)
    b = AIMSynthesizer(ATTRS, epsilon=1.0, rng=5).fit(people(500)).sample(50, rng=1)
    pd.testing.assert_frame_equal(a, b)


def test_pure_dp_spends_exactly_epsilon_with_doubling_rounds():
    df = people(4000)
    model = AIMSynthesizer(ATTRS, epsilon=1.0, noise="laplace", rng=0).fit(df)
    spent = sum(r.cost_select + r.cost_measure for r in model.rounds_)
    rest = 1 - Fraction(1, 10) * 8 / 7   # ε, after the quantiles' 0.1 and AGE's histogram, one part of its 7
    assert rest * Fraction(999, 1000) < spent <= rest
    assert (model.epsilon_, model.delta_, model.public_params()["noise"]) == (1.0, 0.0, "laplace")
    # A choice costs its ε itself (not ε²/8), and annealing doubles the costs of later rounds.
    chosen = [r for r in model.rounds_ if r.cost_select > 0]
    # (ε_s is the float just below ε_m/9)
    assert all(r.cost_measure / 9 * (1 - Fraction(1, 10**12)) < r.cost_select <= r.cost_measure / 9
               for r in chosen[:-1])
    assert all(b.cost_measure / a.cost_measure in (1, 2) for a, b in itertools.pairwise(chosen[:-1]))
    out = model.sample(2000, rng=1)
    assert out.loc[out["AGE"] < 15, "INCOME"].isna().all()


def test_auto_noise_takes_the_smaller_expected_table_error():
    from dpknn.accounting import zcdp_rho

    chosen = set()
    for epsilon, rounds, delta in itertools.product([0.3, 1.0, 4.0], [8, 20, 40, 80], [1e-9, 1e-5]):
        pick = AIMSynthesizer(ATTRS, epsilon=epsilon, delta=delta, noise="auto", rounds=rounds, bins=10).plan()
        # Each round's table: ρ_m = 0.9ρ/T (σ² = 1/(2ρ_m)) against ε_m = 0.9ε/T (discrete Laplace).
        sigma = (2 * 0.9 * zcdp_rho(epsilon, delta) / rounds) ** -0.5
        a = np.exp(-0.9 * epsilon / rounds)
        gaussian, laplace = np.sqrt(2 / np.pi) * sigma, 2 * a / (1 - a * a)
        if abs(gaussian / laplace - 1) > 1e-6:
            assert pick.budget.noise == ("gaussian" if gaussian < laplace else "laplace"), (epsilon, rounds, delta)
            assert pick.delta == (delta if gaussian < laplace else 0.0)
        chosen.add(pick.budget.noise)
    assert chosen == {"gaussian", "laplace"}   # the grid crosses the boundary


def test_auto_noise_fits_with_what_it_chose_and_publishes_it():
    df = people(2000)
    # bins=10: no quantiles to release, so the tables decide (with them "auto" keeps the Gaussian currency).
    few = AIMSynthesizer(ATTRS, epsilon=1.0, noise="auto", rounds=8, bins=10, rng=0).fit(df)
    many = AIMSynthesizer(ATTRS, epsilon=1.0, noise="auto", rounds=200, bins=10, rng=0).fit(df)
    assert AIMSynthesizer(ATTRS, epsilon=1.0, noise="auto", rounds=8).plan().budget.noise == "gaussian"
    assert (few.noise_, few.delta_, few.public_params()["noise"]) == ("laplace", 0.0, "laplace")
    assert (many.noise_, many.delta_, many.public_params()["noise"]) == ("gaussian", 1e-9, "gaussian")


# --- complete-case tables (issue 48) ---------------------------------------------------------------------
def test_complete_case_tables_are_measured_first_by_the_responses_status_and_the_budget_is_exact():
    df = people(4000)
    model = AIMSynthesizer(ATTRS, epsilon=1.0, analyses=["INCOME ~ AGE + SEX + WORK"], rng=0).fit(df)
    names = [a.name for a in ATTRS]
    y = names.index("INCOME")
    disc = model.discretization_
    k = disc.value_codes(disc.attributes[y])
    coarse = [m for m in model.measurements_ if m.groups is not None]
    assert sorted(tuple(names[v] for v in m.attributes[1:]) for m in coarse) == [
        ("AGE", "SEX"), ("AGE", "WORK"), ("SEX", "WORK")]
    for m in coarse:
        # every value of INCOME one group, not applicable (its universe) and missing one each
        assert m.attributes[0] == y and m.groups[0] == (0,) * k + (1, 2) and m.groups[1:] == (None, None)
        assert m.counts.shape[0] == 3
    first = [r for r in model.rounds_ if r.cost_select == 0]
    assert [r.groups for r in first if r.groups is not None] == [m.groups for m in coarse]
    one_way = min(r.cost_measure for r in first)
    assert all(r.cost_measure == one_way for r in first if r.groups is not None)
    assert sum(r.cost_select + r.cost_measure for r in model.rounds_) <= Fraction(zcdp_rho(1.0, 1e-9))
    pub = model.public_params()
    assert [e[2] for e in pub["measured"] if len(e) == 3] == [{"status_of": "INCOME"}] * 3
    assert [e[3] for e in pub["rounds"] if len(e) == 4] == [{"status_of": "INCOME"}] * 3
    # A response never missing and without a universe has one status: no such table.
    plain = AIMSynthesizer(ATTRS, epsilon=1.0, analyses=["AGE ~ SEX + WORK"], never_missing=["AGE"], rng=0).fit(df)
    assert all(m.groups is None for m in plain.measurements_)
    # One covariate alone selecting (SEX does not, AGE and WORK do): no table; also where two analyses of INCOME
    # each have one selective covariate, since the rule counts within an analysis.
    strengths = model.selection_strengths_
    assert strengths[(y, names.index("SEX"))] < 0.1 <= min(strengths[(y, names.index(x))] for x in ("AGE", "WORK"))
    one = AIMSynthesizer(ATTRS, epsilon=1.0, analyses=["INCOME ~ AGE + SEX"], rng=0).fit(df)
    assert all(m.groups is None for m in one.measurements_)
    apart = AIMSynthesizer(ATTRS, epsilon=1.0, analyses=["INCOME ~ AGE + SEX", "INCOME ~ WORK + SEX"], rng=0).fit(df)
    assert sum(v >= 0.1 for v in apart.selection_strengths_.values()) == 2
    assert all(m.groups is None for m in apart.measurements_)
    # Only the tables whose model fits the size limit are measured.
    small = AIMSynthesizer(ATTRS, epsilon=1.0, analyses=["INCOME ~ AGE + SEX + WORK"], max_model_size=800,
                           rng=0).fit(df)
    assert 0 < sum(m.groups is not None for m in small.measurements_) < 3


def test_a_complete_case_table_moves_one_cell_by_one_on_every_neighbour_and_the_control_fails():
    """A record counts in exactly one cell of (INCOME's status, AGE, WORK): L1 and L2 sensitivity 1, the noise's
    calibration. Negative control: a grouping that counts a missing INCOME as observed too moves two cells."""
    from dpknn.synth._graphical_model import coarsen
    from dpknn.synth._marginal import response_status

    disc = Discretization(ATTRS, 10)
    ext = disc.sizes + 1
    groups = (response_status(disc, ext, 3), None, None)

    def table(frame, *, broken=False):
        t = _counts(frame, disc)[(3, 0, 2)]
        if not broken:
            return coarsen(t, groups)
        out = coarsen(t, groups)
        out[0] += t[-1]    # the missing code counted in the observed group as well
        return out

    df = people(300, seed=4)
    base = table(df)
    for i in range(0, 300, 7):
        for neighbour in (df.drop(index=i), pd.concat([df, df.iloc[[i]]], ignore_index=True)):
            diff = np.abs(table(neighbour) - base)
            assert diff.sum() == 1 and diff.max() == 1
    missing = int(np.flatnonzero(df.INCOME.isna() & (df.AGE >= 15))[0])
    assert np.abs(table(df.drop(index=missing), broken=True) - table(df, broken=True)).sum() == 2


def test_complete_case_tables_keep_the_covariates_law_among_the_observed_responses(monkeypatch):
    """y (independent of a and b) is missing where exactly one of a and b is high or either is below 2: both
    select the complete cases (y's gap rate from 0.5 to 1 across each one's values), and a and b correlate among
    them (0.64) and not at all in all rows. Which records are complete is not additive in a and b, so no model of
    the pairs' tables draws it: at ε = 1 AIM measures no three-way table, and without the complete-case tables the
    correlation is lost. Negative control: the same fit without them."""
    from dpknn import Ordinal

    rng = np.random.default_rng(0)
    n = 6000
    a, b = rng.integers(0, 10, n), rng.integers(0, 10, n)
    y = rng.integers(0, 28, n).astype(float)
    y[((a >= 5) != (b >= 5)) | (a < 2) | (b < 2)] = np.nan
    df = pd.DataFrame({"y": y, "a": a, "b": b})
    attrs = [Ordinal("y", 0, 27), Ordinal("a", 0, 9), Ordinal("b", 0, 9)]

    def complete_case_correlation(frame):
        cc = frame.dropna()
        return float(np.corrcoef(cc.a, cc.b)[0, 1])

    real = complete_case_correlation(df)
    fit = AIMSynthesizer(attrs, epsilon=1.0, analyses=["y ~ a + b"], rng=0).fit(df)
    kept = complete_case_correlation(fit.sample(n, rng=1))
    monkeypatch.setattr(aim_module, "complete_case_tables", lambda *args: [])
    pairs = AIMSynthesizer(attrs, epsilon=1.0, analyses=["y ~ a + b"], rng=0).fit(df)
    assert all(m.groups is None for m in pairs.measurements_)
    lost = complete_case_correlation(pairs.sample(n, rng=1))
    assert all(len(r.attributes) < 3 for r in pairs.rounds_)
    assert min(fit.selection_strengths_.values()) > 0.15
    assert fit.public_params()["selection_strengths"][0][:2] == ["y", "a"]
    assert real > 0.6 and kept > 0.25 and abs(lost) < 0.1


def test_auto_analyses_read_the_amounts_from_the_domain():
    # Amounts: every Continuous and every Ordinal of at least SHAPED_WIDTH values a bin (days: 37 a bin); a narrow
    # Ordinal (age: 10 a bin) and a Categorical are covariates only. Public: the domain, not the data.
    attrs = [Ordinal("age", 0, 99), Ordinal("days", 0, 365), Categorical("sex", [1, 2]), Continuous("pay", 0, 1e5)]
    disc = Discretization(attrs, 10)
    assert analysis_texts(auto_analyses(disc), disc.names) == ["days ~ age + sex + pay", "pay ~ age + days + sex"]
    assert auto_analyses(Discretization(attrs[:1] + attrs[2:3], 10)) == []


@pytest.mark.parametrize("cls", [AIMSynthesizer, MSTSynthesizer, AutoSynthesizer])
def test_auto_analyses_are_the_analyses_they_name(cls):
    # "auto" buys exactly what naming each amount on every other attribute buys: the same tables, budget and draws,
    # and the record lists them; without analyses the file differs.
    df = people(2000)
    # within_bin given: by default "auto" draws its amounts by the copula and buys no rank sums (the next test)
    auto = cls(ATTRS, epsilon=1.0, analyses="auto", within_bin="ranks", rng=0).fit(df)
    named = cls(ATTRS, epsilon=1.0, analyses=["INCOME ~ AGE + SEX + WORK"], within_bin="ranks", rng=0).fit(df)
    pd.testing.assert_frame_equal(auto.sample(400, rng=1), named.sample(400, rng=1))
    inner = getattr(auto, "synthesizer_", auto)
    rec = inner.public_params()
    assert rec["analyses"] == ["INCOME ~ AGE + SEX + WORK"] and rec["analyses_rule"] == "auto"
    assert "analyses_rule" not in getattr(named, "synthesizer_", named).public_params()
    assert not cls(ATTRS, epsilon=1.0, within_bin="ranks", rng=0).fit(df).sample(400, rng=1).equals(
        auto.sample(400, rng=1))
    with pytest.raises(TypeError, match="or 'auto'"):
        cls(ATTRS, epsilon=1.0, analyses="every", rng=0).fit(df)


@pytest.mark.parametrize("cls", [AIMSynthesizer, MSTSynthesizer])
def test_auto_analyses_draw_their_amounts_by_the_copula_and_buy_no_rank_sums(cls):
    # Every attribute a covariate: rank sums split over all of them are noise (docs/synthesis.md); named analyses
    # keep theirs.
    attrs = [Continuous("h", 1.0, 2.2), Continuous("w", 25, 200), Categorical("sex", ["f", "m"]),
             Ordinal("age", 12, 18)]
    auto = cls(attrs, epsilon=4.0, analyses="auto", n_rows=10_000).plan()
    assert auto.joint == (0, 1) and auto.ranks == 0
    named = cls(attrs, epsilon=4.0, analyses=["w ~ h + sex + age"], n_rows=10_000).plan()
    assert named.ranks > 0
    assert cls(attrs, epsilon=4.0, analyses="auto", within_bin="ranks", n_rows=10_000).plan().ranks > 0


@pytest.mark.parametrize("cls", [AIMSynthesizer, MSTSynthesizer])
def test_analysis_tables_a_tree_cannot_hold_are_still_measured(cls):
    # Three analyses whose tables close a cycle: (INCOME, AGE), (WORK, AGE), (INCOME, WORK). A tree of fixed edges
    # held the first two and the third, no covariate pair, was measured nowhere; MST now measures it beside the tree
    # and AIM among its first tables (before any choice), each weighed as an analysis table.
    df = people(2000)
    model = cls(ATTRS, epsilon=1.0, analyses=["INCOME ~ AGE", "WORK ~ AGE", "INCOME ~ WORK"], rng=0).fit(df)
    names = model.discretization_.names
    if cls is MSTSynthesizer:
        assert [sorted(p) for p in model.public_params()["covariate_pairs"]] == [["INCOME", "WORK"]]
        (beside,) = [m for m in model.measurements_ if {names[v] for v in m.attributes} == {"INCOME", "WORK"}]
        assert beside.sigma == model.public_params()["sigma_analysis_tables"]
    else:
        first = [{names[v] for v in r.attributes} for r in model.rounds_ if r.cost_select == 0]
        assert {"INCOME", "WORK"} in first


def test_tables_beside_the_tree_stay_within_the_size_limit():
    # Four amounts of 17 codes each joined to a fifth attribute: every cycle-closing table joins the cliques, so only
    # those the limit affords are forced; the covariate pairs are not sized (as before).
    sizes = np.array([17, 17, 17, 17, 5])
    analyses = [(y, [x for x in range(5) if x != y]) for y in range(4)]
    fixed = [(0, x) for x in range(1, 5)]
    every = beside_tree(analyses, fixed, sizes, 10**9, pairs=False)
    assert len(every) == 6 and model_cells(sizes, fixed + every) == 17**4 * 5
    some = beside_tree(analyses, fixed, sizes, 20_000, pairs=False)
    assert 0 < len(some) < 6 and model_cells(sizes, fixed + some) <= 20_000
    # analyses="auto"'s covariate pairs (MST's) are held to the limit too: with them every pair of amounts would be
    # joined; a named analysis' are measured whatever the size, as before.
    assert model_cells(sizes, fixed + beside_tree(analyses, fixed, sizes, 20_000)) <= 20_000
    assert beside_tree([(0, [1, 2])], [(0, 1), (0, 2)], sizes, 1000) == []
    assert beside_tree([(0, [1, 2])], [(0, 1), (0, 2)], sizes, 1000, sized_pairs=False) == [(1, 2)]


def test_mst_holds_auto_analyses_to_its_size_limit():
    # Four amounts each joined to every attribute: without the limit MST's model would join them all (417,605 cells).
    rng = np.random.default_rng(0)
    attrs = [Continuous(f"a{i}", 0, 1) for i in range(4)] + [Categorical("c", [0, 1, 2, 3])]
    df = pd.DataFrame({**{f"a{i}": rng.random(400) for i in range(4)}, "c": rng.integers(0, 4, 400)})
    model = MSTSynthesizer(attrs, epsilon=1.0, analyses="auto", rng=0).fit(df)
    assert model.model_.tree.size(model.model_.sizes) <= auto_model_size(1.0)
    assert len(model.public_params()["analyses"]) == 4


@pytest.mark.parametrize("cls", [AIMSynthesizer, MSTSynthesizer])
def test_an_analysis_written_as_a_formula_is_the_analysis_of_its_variables(cls):
    # The workload reads which attributes an analysis names; how the analyst transforms them is hers.
    df = people(2000)
    fits = [cls(ATTRS, epsilon=1.0, analyses=[a], rng=0).fit(df).sample(400, rng=1)
            for a in ("INCOME ~ AGE + SEX", "np.log1p(INCOME) ~ AGE + I(AGE ** 2) + C(SEX)")]
    pd.testing.assert_frame_equal(*fits)
    formula = "np.log1p(INCOME) ~ AGE + I(AGE ** 2) + C(SEX)"   # the record keeps what was named, as written
    assert cls(ATTRS, epsilon=1.0, analyses=[formula], rng=0).fit(df).public_params()["analyses"] == [formula]
    with pytest.raises(ValueError, match="not attributes"):
        cls(ATTRS, epsilon=1.0, analyses=["np.log(INCOME) ~ HEIGHT"], rng=0).fit(df)
