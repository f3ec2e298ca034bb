import numpy as np
import pandas as pd

from dpknn.experiments._census import mse_table
from dpknn.utils._plotting import census_boxplots, closest_distances_figure, correlation_figure, demo_figure


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
    assert table.loc["mean_20_59", "paper_smooth_cauchy"] == 1.3


def test_demo_figure_marks_off_scale_values(tmp_path):
    rows = [{"query": "q", "method": "smooth", "value": 10.0}, {"query": "q", "method": "global", "value": 1e6}]
    fig = demo_figure(rows, {"q": 10.5}, path=tmp_path / "d.png")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any("off scale" in t for t in texts)


def test_demo_figure_shows_a_zero_release_and_its_units(tmp_path):
    # Issue 28, finding 12: a bar of height 0 was invisible and the axes had no units.
    rows = [{"query": "q", "method": "smooth", "value": 0.0}, {"query": "q", "method": "ignore_missing", "value": 0.2}]
    fig = demo_figure(rows, {"q": 0.1}, units={"q": "share of persons (0 to 1)"}, path=tmp_path / "d.png")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "share of persons (0 to 1)"
    markers = [line for line in ax.lines if line.get_marker() == "D"]
    assert [float(m.get_ydata()[0]) for m in markers] == [0.0, 0.2]
    assert {"0", "0.2"} <= {t.get_text() for t in ax.texts}


def test_demo_states_one_epsilon_per_query_in_title_and_report(tmp_path, monkeypatch, capsys):
    import dpknn.utils._plotting as plotting
    from dpknn.experiments._census import COUNT_EPSILON, EPSILON
    from dpknn.experiments._demo import budget_text, run_demo

    figures = []
    draw = plotting.demo_figure
    monkeypatch.setattr(plotting, "demo_figure", lambda *a, **kw: figures.append(draw(*a, **kw)) or figures[-1])
    run_demo(n=3000, seed=2, out=tmp_path / "demo", progress=False)
    capsys.readouterr()
    budget = budget_text(EPSILON, COUNT_EPSILON)
    assert f"epsilon per query {EPSILON + COUNT_EPSILON:.4f}" in budget
    title = figures[0]._suptitle.get_text()
    assert budget in title and "per release" not in title
    assert budget in (tmp_path / "demo" / "report.md").read_text()
    labels = [ax.get_ylabel() for ax in figures[0].axes]
    assert labels == ["mean wage income (dollars)"] * 3 + ["share of persons (0 to 1)"] * 2


def test_correlation_difference_on_its_own_diverging_scale(tmp_path):
    names = ["a", "b", "c"]
    before = pd.DataFrame(np.eye(3) + 0.3 * (1 - np.eye(3)), index=names, columns=names)
    diff = pd.DataFrame(0.0, index=names, columns=names)
    diff.loc["a", "b"] = diff.loc["b", "a"] = 0.14
    diff.loc["a", "c"] = diff.loc["c", "a"] = -0.05
    change = {"before": before, "after": before + diff, "difference": diff}
    fig = correlation_figure(change, path=tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    panel = fig.axes[2]
    low, high = panel.images[0].get_clim()
    assert (low, high) == (-0.14, 0.14)  # centred on 0, reaching the largest difference
    assert fig.axes[0].images[0].get_clim() == (-1.0, 1.0)
    assert "+0.14" in [t.get_text() for t in panel.texts] and len(panel.texts) == 9
    table = pd.DataFrame({"before": [0.1, 0.2, 0.5], "after": [0.4, 0.3, 0.6]})
    assert closest_distances_figure(table, path=tmp_path / "d.png").axes


def test_synthesis_figure_tells_every_line_apart():
    # Issue 28, finding 12: the column-wise and PrivBayes lines differed only by a dash pattern.
    from dpknn.experiments._synthesis import STRATEGIES, synthesis_figure

    rows = [{"mechanism": mech, "rate": rate, "model": model, "strategy": strategy, "tvd2": 0.1 + rate, "f1": 0.8}
            for mech in ("mcar", "mar") for rate in (0.1, 0.2) for model, strategy in STRATEGIES]
    fig = synthesis_figure(pd.DataFrame(rows), title="t")
    lines = fig.axes[0].lines
    assert len(lines) == len(STRATEGIES)
    assert len({line.get_color() for line in lines}) == len(STRATEGIES)
    by_model = {line.get_label().split(", ")[0]: (line.get_marker(), line.get_linestyle()) for line in lines}
    assert by_model["PrivBayes"][0] != by_model["Columnwise"][0]
    assert by_model["PrivBayes"][1] != by_model["Columnwise"][1]
    legend = fig.legends[0]
    assert {t.get_text() for t in legend.get_texts()} >= {f"{m}, {s}" for m, s in STRATEGIES}
    assert all(t.get_fontsize() >= 9 for t in legend.get_texts())
