import numpy as np
import pandas as pd

from dpknn.experiments.census import mse_table
from dpknn.plotting import census_boxplots, demo_figure


def fake_results():
    rng = np.random.default_rng(0)
    rows = []
    for run in range(50):
        for method, bias in (("smooth", 0.0), ("ignore_missing", -20.0)):
            rows.append({"run": run, "query": "mean_20_59", "method": method,
                         "value": 100 + bias + rng.normal(), "truth": 100.0})
    return pd.DataFrame(rows)


def test_boxplots_and_mse(tmp_path):
    res = fake_results()
    fig = census_boxplots(res, path=tmp_path / "b.png", title="t")
    assert (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"
    ax = fig.axes[0]
    # The true value is drawn as a full-width line and lies inside the axis limits.
    lo, hi = ax.get_ylim()
    assert lo < 100 < hi and lo < 80 - 1
    table = mse_table(res)
    assert table.loc["mean_20_59", "ignore_missing"] > 100 * table.loc["mean_20_59", "smooth"]
    assert table.loc["mean_20_59", "paper_smooth"] == 1.3


def test_demo_figure_marks_off_scale_values(tmp_path):
    rows = [{"query": "q", "method": "smooth", "value": 10.0}, {"query": "q", "method": "global", "value": 1e6}]
    fig = demo_figure(rows, {"q": 10.5}, path=tmp_path / "d.png")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any("off scale" in t for t in texts)
