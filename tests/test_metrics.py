import numpy as np
import pandas as pd
import pytest

from dpknn.metrics import (
    _utility as utility,
)
from dpknn.metrics import (
    closest_distances,
    correlation_change,
    max_cooks_distance,
    max_mahalanobis,
    ols_comparison,
    pca_variance,
    random_forest_misclassification,
)
from dpknn.sdc._rwn import RWN


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(800, 3))
    y = 2.0 + x @ [1.0, -0.5, 0.0] + rng.normal(scale=0.5, size=800)
    df = pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "x3": x[:, 2], "y": y})
    df.loc[0, ["x1", "y"]] = [8.0, 30.0]          # an outlier that is easy to single out
    df["cls"] = np.where(df["x1"] + df["x2"] > 0, "hi", "lo")
    return df, RWN(k=5, radius=0.3, rng=2).fit_transform(df)


def test_correlations_and_ols(data):
    df, out = data
    corr = correlation_change(df, out, columns=["x1", "x2", "y"])
    np.testing.assert_allclose(np.diag(corr["before"]), 1.0)
    assert (corr["difference"].abs().to_numpy() < 0.2).all() and set(corr) == {"before", "after", "difference"}
    ols = ols_comparison(df, out, y="y", X=["x1", "x2", "x3"])
    assert ols.loc["x1", "coef_before"] == pytest.approx(np.polyfit(df.x1, df.y, 1)[0], rel=0.5)
    assert (ols["se_before"] > 0).all() and abs(ols.loc["x2", "coef_after"] + 0.5) < 0.25


def test_disclosure_measures_drop_for_the_outlier(data):
    df, out = data
    before, label = max_cooks_distance(df, y="y", X=["x1", "x2"])
    after, _ = max_cooks_distance(out, y="y", X=["x1", "x2"])
    assert label == 0 and after < before
    m_before, label = max_mahalanobis(df, columns=["x1", "x2", "y"])
    assert label == 0 and max_mahalanobis(out, columns=["x1", "x2", "y"])[0] <= m_before
    table = closest_distances(df, out, columns=["x1", "x2", "x3", "y"])
    assert isinstance(table, pd.DataFrame) and table.index.equals(df.index) and (table["before"] > 0).all()
    with pytest.raises(TypeError, match="plot"):
        closest_distances(df, out, plot=True)  # one return type: figures come from dpknn.utils._plotting


def test_pca_and_random_forest(data):
    df, out = data
    assert utility.pca_variance is pca_variance
    pca = pca_variance(df, out, columns=["x1", "x2", "x3", "y"])
    np.testing.assert_allclose(pca["cumulative_before"].iloc[-1], 1.0)
    assert (np.diff(pca["proportion_before"]) <= 1e-12).all()
    train, test = out.iloc[:600], df.iloc[600:]
    rate = random_forest_misclassification(train, test, target="cls", features=["x1", "x2"], rng=0)
    assert 0 <= rate < 0.2
