"""AutoSynthesizer: AIM or MST chosen on a released row count; the rule by hand, the budget and
the public record."""

import itertools
import json
import math

import numpy as np
import pytest
from people import ATTRS, people

from dpknn.accounting import BudgetAccountant, zcdp_rho
from dpknn.exceptions import BudgetExceededError
from dpknn.synth import AIMSynthesizer, AutoSynthesizer, MSTSynthesizer
from dpknn.synth._aim import auto_model_size
from dpknn.synth._auto import aim_usefulness


@pytest.mark.parametrize("epsilon", [0.5, 4.0])
def test_usefulness_is_rows_per_two_way_cell_over_the_first_tables_noise(epsilon):
    aim = AIMSynthesizer(ATTRS, epsilon=epsilon, noise="gaussian", bins=10)
    # By hand: sizes with the missing code (AGE 10 bins plus the universe's edge at 15, SEX 2, WORK 2,
    # INCOME 10 and its "not applicable" code, each + 1); AIM's first tables get ρ_m = 0.9ρ/T with
    # T = 16·4 rounds, σ = 1/√(2ρ_m).
    sizes = [12, 3, 3, 12]
    cells = np.mean([a * b for a, b in itertools.combinations(sizes, 2)])
    sigma = 1 / math.sqrt(2 * 0.9 * zcdp_rho(epsilon, 1e-9) / 64)
    for rows in (0, 1000, 123_456):
        assert aim_usefulness(rows, aim, aim.plan()) == pytest.approx(rows / cells / sigma, rel=1e-9)


def test_few_rows_take_mst_many_take_aim_and_the_record_says_which():
    small = AutoSynthesizer(ATTRS, epsilon=1.0, rng=0).fit(people(800))
    large = AutoSynthesizer(ATTRS, epsilon=4.0, rng=0).fit(people(40_000))
    assert (small.method_, large.method_) == ("mst", "aim")
    # "auto" sizes AIM's model for the epsilon AIM gets, what is left after the count.
    assert large.synthesizer_.max_model_size_ == auto_model_size(0.99 * 4.0) == 79_200
    for model, n, eps in ((small, 800, 1.0), (large, 40_000, 4.0)):
        pub = model.public_params()
        assert pub["chosen"] == model.method_ and pub["theta"] == 2.5 and pub["count_share"] == 0.01
        # ñ = n + discrete Laplace of scale 1/(0.01 ε): within 20 scales of n.
        assert abs(pub["released_rows"] - n) < 20 / (0.01 * eps)
        assert model.epsilon_ == pytest.approx(eps) and model.epsilon_ <= eps
        # δ is AIM's even where MST (pure DP here) ran: which one runs depends on the data.
        assert model.delta_ == 1e-9 and pub["delta"] == 1e-9
        assert pub["method_epsilon"] == pytest.approx(0.99 * eps)
        json.dumps(pub)
        out = model.sample(500, rng=1)
        assert list(out.columns) == [a.name for a in ATTRS] and out.loc[out["AGE"] < 15, "INCOME"].isna().all()
    # θ moves the boundary: a θ of 0 always takes AIM, a huge one always MST.
    assert AutoSynthesizer(ATTRS, epsilon=1.0, theta=1e-9, rng=0).fit(people(800)).method_ == "aim"
    assert AutoSynthesizer(ATTRS, epsilon=4.0, theta=1e9, rng=0).fit(people(2000)).method_ == "mst"


def test_budget_is_checked_before_the_data_and_refusals():
    df = people(500)
    acc = BudgetAccountant(epsilon=0.5, delta=1e-6)
    with pytest.raises(BudgetExceededError):
        AutoSynthesizer(ATTRS, epsilon=1.0, rng=0).fit(df.drop(columns="AGE"), accountant=acc)   # refused first
    acc = BudgetAccountant(epsilon=2.0, delta=1e-6)
    AutoSynthesizer(ATTRS, epsilon=1.0, rng=0).fit(df, accountant=acc)
    assert acc.spent() == pytest.approx((1.0, 1e-9))
    for kw, match in [({"theta": 0}, "theta"), ({"count_share": 1.5}, "count_share"),
                      ({"noise": "normal"}, "noise"), ({"never_missing": ["age"]}, "not attributes")]:
        with pytest.raises(ValueError, match=match):
            AutoSynthesizer(ATTRS, epsilon=1.0, **kw).fit(df)
    # Bad data are refused before the count is drawn: the noise source has not moved.
    gen = np.random.default_rng(7)
    state = gen.bit_generator.state
    for bad, match in [(df.assign(SEX=3), "SEX"), (df.assign(WORK=None), r"never_missing have gaps: \['WORK'\]")]:
        with pytest.raises(ValueError, match=match):
            AutoSynthesizer(ATTRS, epsilon=1.0, never_missing=["WORK"], rng=gen).fit(bad)
        assert gen.bit_generator.state == state


def test_the_released_count_buys_the_useful_quantiles_only():
    # 800 rows at ε = 1: INCOME's median would be off by more than its parts hold, so no quantile level
    # is released (only the point-mass histograms: INCOME's, one part of 7, and AGE's, a narrow Ordinal's, one part
    # more from the model's) and the model has the rest of the share; 40,000 at ε = 4 buy every level.
    small = AutoSynthesizer(ATTRS, epsilon=1.0, rng=0).fit(people(800))
    large = AutoSynthesizer(ATTRS, epsilon=4.0, rng=0).fit(people(40_000))
    assert small.synthesizer_.n_rows == small.released_rows_ and small.synthesizer_.bin_edges_ == {"INCOME": []}
    assert small.public_params()["quantile_levels"] == 0 and small.delta_ == 1e-9
    assert small.public_params()["quantile_share"] == pytest.approx(0.1 * 2 / 7)
    assert large.public_params()["quantile_levels"] == 6 and len(large.synthesizer_.bin_edges_["INCOME"]) == 63
    # Without the rule (an explicit n_rows of None on the method) the small table spends them anyway.
    assert MSTSynthesizer(ATTRS, epsilon=0.99).plan().levels == 6
