"""Figures (matplotlib, the ``plot`` extra): census experiment box plots, demo releases, RWN
utility and disclosure measures, and the curator's report."""

from __future__ import annotations

import math
import textwrap

import numpy as np

__all__ = ["amplification_figure", "census_boxplots", "closest_distances_figure", "correlation_figure",
           "demo_figure", "donee_count_figure", "evaluation_risk_figure", "imputed_observed_figure",
           "load_pyplot", "marginals_figure", "planned_errors_figure", "regression_intervals_figure"]

_COLORS = {"smooth": "#1b9e77", "smooth_cauchy": "#66a61e", "ignore_missing": "#d95f02", "global": "#7570b3"}


def load_pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no screen), or an ImportError naming the ``plot`` extra."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plots need matplotlib: pip install 'dpknn[plot]'") from exc
    return plt


def _box(ax, values, pos, color):
    """Box = interquartile range, whiskers = 5th and 95th percentiles, line = median."""
    q5, q25, q50, q75, q95 = np.percentile(values, [5, 25, 50, 75, 95])
    ax.add_patch(load_pyplot().Rectangle((pos - 0.3, q25), 0.6, q75 - q25, facecolor=color, alpha=0.35,
                                     edgecolor=color))
    ax.plot([pos - 0.3, pos + 0.3], [q50, q50], color=color, lw=2)
    ax.plot([pos, pos], [q5, q25], color=color, lw=1)
    ax.plot([pos, pos], [q75, q95], color=color, lw=1)
    ax.plot([pos - 0.15, pos + 0.15], [q5, q5], color=color, lw=1)
    ax.plot([pos - 0.15, pos + 0.15], [q95, q95], color=color, lw=1)
    return q5, q95


def _method_axis(ax, methods, method_labels, title):
    ax.set_xticks(range(len(methods)))
    # Wrapped, not rotated: four long method names side by side would overlap.
    ax.set_xticklabels([textwrap.fill((method_labels or {}).get(m, m), 13) for m in methods], fontsize=8)
    ax.set_title(title, fontsize=9)


def _saved(fig, path):
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def _finish(fig, axes, title, path):
    axes[0][0].legend(fontsize=8, loc="best")
    if title:
        fig.suptitle(title, fontsize=10)
    return _saved(fig, path)


def census_boxplots(results, *, labels=None, method_labels=None, path=None, title=None):
    """Box plots in the style of Clifton et al. (2022) Figures 4-6.

    One panel per query; one box per method (box: interquartile range, whiskers: 5th-95th
    percentiles); the true value as a full-width line.

    Parameters
    ----------
    results : pandas.DataFrame
        Columns query, method, value, truth (as from
        :func:`dpknn.experiments._census.run_experiment`).
    path : str or Path, optional
        Write a PNG there.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = load_pyplot()
    queries = list(dict.fromkeys(results["query"]))
    methods = list(dict.fromkeys(results["method"]))
    fig, axes = plt.subplots(1, len(queries), figsize=(3.4 * len(queries), 4.2), squeeze=False)
    for ax, q in zip(axes[0], queries):
        sub = results[results["query"] == q]
        lo, hi = [], []
        for i, m in enumerate(methods):
            v = sub.loc[sub["method"] == m, "value"].to_numpy()
            if v.size:
                a, b = _box(ax, v, i, _COLORS.get(m, "grey"))
                lo.append(a)
                hi.append(b)
        t = float(sub["truth"].iloc[0])
        ax.axhline(t, color="black", lw=1.2, label="true value")
        top, bottom = max(*hi, t), min(*lo, t)
        span = (top - bottom) or 1.0
        ax.set_ylim(bottom - 0.08 * span, top + 0.08 * span)
        ax.set_xlim(-0.6, len(methods) - 0.4)
        _method_axis(ax, methods, method_labels, (labels or {}).get(q, q))
    return _finish(fig, axes, title, path)


def demo_figure(rows, truths, *, labels=None, method_labels=None, units=None, path=None, title=None):
    """Released values of the demo next to the true value, one panel per query.

    Each release is a bar with a diamond at its value and the value printed beside it, so that
    a release of 0 (a bar of no height) still shows. ``units`` maps a query to its y-axis label
    with the unit (e.g. "mean wage income (dollars)").
    """
    plt = load_pyplot()
    queries = list(truths)
    fig, axes = plt.subplots(1, len(queries), figsize=(3.4 * len(queries), 4.0), squeeze=False)
    for ax, q in zip(axes[0], queries):
        sub = [r for r in rows if r["query"] == q]
        ax.axhline(truths[q], color="black", lw=1.2, label="true value")
        _method_axis(ax, [r["method"] for r in sub], method_labels, (labels or {}).get(q, q))
        ax.set_ylabel((units or {}).get(q, "released value"), fontsize=8)
        finite = [r["value"] for r in sub if r["method"] != "global"] + [truths[q]]
        span = (max(finite) - min(min(finite), 0)) or 1.0
        low, high = min(min(finite), 0) - 0.1 * span, max(finite) + 0.25 * span
        ax.set_ylim(low, high)
        ax.set_xlim(-0.6, len(sub) - 0.4)
        for i, r in enumerate(sub):
            color = _COLORS.get(r["method"], "grey")
            v = r["value"]
            ax.bar(i, v, color=color, alpha=0.45, edgecolor=color)
            if low <= v <= high:
                ax.plot(i, v, "D", color=color, markeredgecolor="black", ms=6, zorder=3)
                ax.annotate(f"{v:,.4g}", (i, v), xytext=(0, 6), textcoords="offset points", ha="center",
                            va="bottom", fontsize=7)
            else:
                # Off the scale (the non-private global baseline): an arrow at the edge and the value.
                edge, marker = (high, "^") if v > high else (low, "v")
                ax.plot(i, edge, marker, color=color, markeredgecolor="black", ms=8, clip_on=False, zorder=3)
                ax.text(i, low + 0.5 * (high - low), f"{v:,.4g}\n(off scale)", ha="center", fontsize=7,
                        bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
    return _finish(fig, axes, title, path)


_AMPLIFICATION_STYLE = {
    "raw": ("no amplification", "#999999", "-"),
    "paper": ("paper, linear (NOT valid)", "#e7298a", ":"),
    "child_bound": ("child bound (a priori)", "#7570b3", "--"),
    "partition": ("best valid partition", "#d95f02", "-"),
    "exact": ("exact", "#1b9e77", "-"),
}


def amplification_figure(table, *, path=None, title=None):
    """Privacy cost on the ground-truth data against the MCAR rate, one line per method.

    ``table``: DataFrame indexed by the MCAR rate with columns among raw, paper, child_bound,
    partition and exact.
    """
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for col, (label, color, style) in _AMPLIFICATION_STYLE.items():
        if col in table.columns:
            ax.plot(table.index, table[col], style, color=color, marker="o", ms=4, label=label)
    ax.set_xlabel("MCAR missing rate of every attribute (public)")
    ax.set_ylabel("epsilon on the ground-truth data")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    return _finish(fig, [[ax]], title, path)


def _annotated_heatmap(ax, values, names, *, limit, fmt, row_labels=True):
    """Heatmap on a diverging scale centred on 0 over [-limit, limit], each cell's number printed (larger
    for fewer columns). Without ``row_labels`` the rows are not named: a panel right of another that names
    them would have its labels run into that panel."""
    im = ax.imshow(values, vmin=-limit, vmax=limit, cmap="RdBu_r")
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=8)
    ax.set_yticks(range(len(names)), names if row_labels else [], fontsize=8)
    if len(names) <= 20:
        size = 10 if len(names) <= 6 else 8 if len(names) <= 12 else 6.5
        for (i, j), v in np.ndenumerate(values):
            ax.text(j, i, format(v, fmt), ha="center", va="center", fontsize=size,
                    color="white" if abs(v) > 0.6 * limit else "black")
    return im


def correlation_figure(change, *, names=("before", "after"), path=None, title=None):
    """Correlations before and after perturbation, and their difference, as heatmaps.

    Parameters
    ----------
    change : dict
        The result of :func:`dpknn.metrics.correlation_change` (keys ``before``, ``after``,
        ``difference``).
    names : (str, str)
        What the two tables are called in the panel titles.

    The two correlation panels share the scale [-1, 1]; the difference panel has its own
    diverging scale centred on 0 and reaching the largest absolute difference, so that a shift
    of 0.14 is not drawn as white. Every cell shows its number (up to 20 columns).
    """
    plt = load_pyplot()
    columns = list(change["before"].columns)
    side = 4.2 + 0.25 * len(columns)
    # Constrained layout keeps each panel's labels and colour bar clear of the next panel.
    fig, axes = plt.subplots(1, 3, figsize=(3 * side + 2, side + 0.8), layout="constrained")
    for k, (ax, key, name) in enumerate(zip(axes[:2], ("before", "after"), names)):
        im = _annotated_heatmap(ax, change[key].to_numpy(), columns, limit=1.0, fmt=".2f", row_labels=k == 0)
        ax.set_title(f"correlation {name}", fontsize=10)
    fig.colorbar(im, ax=axes[:2], shrink=0.8, label="correlation")
    diff = change["difference"].to_numpy()
    largest = float(np.nanmax(np.abs(diff))) if np.isfinite(diff).any() else 0.0
    im = _annotated_heatmap(axes[2], diff, columns, limit=largest if largest > 0 else 1.0, fmt="+.2f",
                            row_labels=False)
    axes[2].set_title(f"difference ({names[1]} - {names[0]}), scale ±{largest:.2g}", fontsize=10)
    fig.colorbar(im, ax=axes[2], shrink=0.8, label="difference of correlations")
    if title:
        fig.suptitle(title, fontsize=10)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def closest_distances_figure(table, *, path=None, title=None):
    """Box plots of each record's distance to its closest other record, before and after
    (Perry et al. 2022, Figure 8); ``table`` is :func:`dpknn.metrics.closest_distances`'s result."""
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.boxplot([table["before"], table["after"]])
    ax.set_xticks([1, 2], ["original", "perturbed"])
    ax.set_ylabel("distance to the closest other record")
    if title:
        ax.set_title(title, fontsize=9)
    return _saved(fig, path)


def donee_count_figure(donee_counts, *, path=None, title=None):
    """Bars of how many records impute exactly c incomplete records, for each c >= 1 (log scale).

    ``donee_counts`` is :attr:`dpknn.impute.CuratorReport.donee_counts`: pairs (c, records).
    A long tail means a few donors carry many imputed values, which is what makes L1(D) large.
    """
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    if donee_counts:
        c, n = np.asarray(donee_counts, dtype=np.int64).T
        ax.bar(c, n, width=0.8 if c.max() <= 60 else max(c.max() / 150, 0.8), color="#1b9e77")
        ax.set_yscale("log")
        ax.axvline(c.max(), color="0.4", ls=":", lw=1)
        ax.annotate(f"largest: {c.max():,}", (c.max(), n.max()), ha="right", va="top", fontsize=8,
                    xytext=(-4, 0), textcoords="offset points")
    else:
        ax.text(0.5, 0.5, "no record was imputed", ha="center", va="center", transform=ax.transAxes)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    # Two lines: on one, the label is wider than the figure and no layout can keep it whole.
    ax.set_xlabel("donee count: incomplete records imputed from one donor\n(records, summed over universes)")
    ax.set_ylabel("donors (records, log scale)")
    ax.grid(alpha=0.3, axis="y")
    if title:
        ax.set_title(title, fontsize=9)
    return _saved(fig, path)


def imputed_observed_figure(distributions, *, path=None, title=None):
    """Per imputed attribute, the share of observed and of imputed values in each bin of its domain.

    ``distributions`` is :attr:`dpknn.impute.CuratorReport.distributions`; each panel is over
    the attribute's universe.
    """
    plt = load_pyplot()
    n = max(len(distributions), 1)
    cols = min(n, 2)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 3.4 * rows), squeeze=False)
    for ax in axes.ravel()[len(distributions):]:
        ax.set_axis_off()
    for ax, d in zip(axes.ravel(), distributions):
        x = np.arange(len(d.bins))
        for offset, counts, label, color in ((-0.2, d.observed, "observed", "#7570b3"),
                                             (0.2, d.imputed, "imputed", "#d95f02")):
            counts = np.asarray(counts, dtype=np.float64)
            total = counts.sum()
            ax.bar(x + offset, counts / total if total else counts, width=0.4, color=color,
                   label=f"{label} ({int(total):,})")
        step = max(1, len(d.bins) // 12)
        ax.set_xticks(x[::step], [d.bins[i] for i in x[::step]], rotation=35, ha="right", fontsize=7)
        ax.set_ylabel("share of records")
        quantiles = getattr(d, "binning", "public") == "observed quantiles"
        ax.set_title(d.attribute + (" (bins at the observed values' quantiles)" if quantiles else ""), fontsize=9)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    if title:
        fig.suptitle(title, fontsize=10)
    return _saved(fig, path)


def planned_errors_figure(planned, *, path=None, title=None):
    """90% (bars) and 99.9% (lines) intervals of planned releases relative to their noise-free estimate.

    ``planned`` is :attr:`dpknn.impute.CuratorReport.planned`. One row per release: its interval
    as a percentage of the estimate's magnitude (printed on the right), and the same query by
    ``ignore_missing`` measured from the same estimate, so that its bias shows as a shift of its
    dot. Beyond the dashed lines at ±100% the noise exceeds the estimate. The axis is linear near
    0, down to the narrowest interval, and logarithmic beyond.
    """
    plt = load_pyplot()
    from matplotlib.ticker import FuncFormatter
    from matplotlib.transforms import blended_transform_factory

    rows = list(reversed(planned))
    fig, ax = plt.subplots(figsize=(10.5, 0.6 * max(len(rows), 1) + 1.8))
    right = blended_transform_factory(ax.transAxes, ax.transData)
    names, labelled, widths = [], set(), []

    def label(what):
        if what in labelled:
            return None
        labelled.add(what)
        return what

    for row, (p, alt) in enumerate(rows):
        names.append(f"{p.name}\n({p.method}, eps {p.epsilon:g})")
        if p.error is None or not p.estimate:
            text = p.problem or "estimate 0: no relative scale"
            ax.text(0, row, text if len(text) < 70 else text.split(":")[0] + " (see the report)", ha="center",
                    va="center", fontsize=7, color="0.3")
            continue
        scale = abs(p.estimate) / 100.0
        lo, hi = p.error[0] / scale, p.error[1] / scale
        widths.append(max(abs(lo), abs(hi)))
        tail = ""
        if p.error_999 is not None and all(math.isfinite(e) for e in p.error_999):
            # The tail behind the bar: heavy-tailed noise puts the 99.9% interval many bar-widths out.
            lo9, hi9 = p.error_999[0] / scale, p.error_999[1] / scale
            ax.plot([lo9, hi9], [row + 0.12] * 2, color=_COLORS["smooth"], lw=1, alpha=0.7,
                    marker="|", ms=7, label=label("99.9% interval"))
            tail = f"; 99.9%: [{lo9:+.3g}%, {hi9:+.3g}%]"
        ax.plot([lo, hi], [row + 0.12] * 2, color=_COLORS["smooth"], lw=5, solid_capstyle="butt",
                label=label("90% interval of this release"))
        ax.plot(0, row + 0.12, "|", color="0.1", ms=9)
        ax.text(1.01, row + 0.12, f"[{lo:+.3g}%, {hi:+.3g}%]{tail}", transform=right, fontsize=7, va="center",
                color=_COLORS["smooth"])
        if alt is not None and alt.error is not None:
            shift = alt.estimate - p.estimate
            ax.plot([(shift + alt.error[0]) / scale, (shift + alt.error[1]) / scale], [row - 0.15] * 2,
                    color=_COLORS["ignore_missing"], lw=2.5, solid_capstyle="butt",
                    label=label("ignore_missing (dot: its estimate)"))
            ax.plot(shift / scale, row - 0.15, "o", color=_COLORS["ignore_missing"], ms=4)
            ax.text(1.01, row - 0.15, f"shift {shift / scale:+.3g}%", transform=right, fontsize=7, va="center",
                    color=_COLORS["ignore_missing"])
    if not rows:
        ax.text(0, 0, "no query file: nothing planned", ha="center", va="center", fontsize=9, color="0.3")
        ax.set_xlim(-300, 300)
    narrowest = min((w for w in widths if w > 0), default=10.0)
    ax.set_xscale("symlog", linthresh=min(10.0, 10.0 ** math.floor(math.log10(narrowest))))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:+g}%" if v else "0"))
    for x in (-100, 100):
        ax.axvline(x, color="#b2182b", ls="--", lw=1)
    ax.axvline(0, color="0.3", lw=0.6)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(-0.7, max(len(names), 1) + (0.5 if labelled else -0.3))
    ax.set_xlabel("release - estimate, in % of |estimate|  (dashed: noise as large as the estimate)")
    ax.tick_params(axis="x", labelsize=7)
    if labelled:
        ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3, axis="x")
    if title:
        ax.set_title(title, fontsize=9)
    return _saved(fig, path)


def marginals_figure(marginals, *, path=None, title=None):
    """Bar charts of each attribute's shares in its bins, real beside released.

    ``marginals`` maps attribute names to DataFrames with columns ``real`` and ``released``
    indexed by bin (as :attr:`dpknn.metrics._evaluation.EvaluationReport.marginals`); a table whose
    ``attrs["binning"]`` says so is titled by it (a numeric attribute's bins at the real data's
    deciles, so that a skewed amount is not all in the first bar).
    """
    plt = load_pyplot()
    names = list(marginals)
    cols = min(3, len(names))
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.2 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        t = marginals[name]
        pos = np.arange(len(t))
        ax.bar(pos - 0.2, t["real"], width=0.4, color="#1b9e77", label="real")
        ax.bar(pos + 0.2, t["released"], width=0.4, color="#d95f02", label="released")
        tvd = 0.5 * float(np.abs(t["real"] - t["released"]).sum())
        binning = t.attrs.get("binning")
        ax.set_title(f"{name} (TVD {tvd:.3f}" + (f"; {binning})" if binning else ")"), fontsize=9)
        ax.set_xticks(pos, [str(i) for i in t.index], rotation=60, fontsize=6, ha="right")
        ax.set_ylabel("share of rows", fontsize=8)
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    axes[0][0].legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    return _saved(fig, path)


def regression_intervals_figure(comparisons, *, path=None, title=None):
    """Coefficient intervals of the released data on the real data's scale, one panel per model.

    ``comparisons`` is a list of :class:`dpknn.metrics.RegressionComparison`. Each coefficient
    is drawn as (β − β̂_real) / SE_real, so the real interval is ±z around 0 for every
    coefficient and the released one shows its shift (the standardised difference) and width;
    the labels give the CI overlap.
    """
    plt = load_pyplot()
    height = 1.6 + 0.45 * max(len(c.table) for c in comparisons)
    fig, axes = plt.subplots(1, len(comparisons), figsize=(max(7.0, 6 * len(comparisons)), height), squeeze=False)
    for ax, comp in zip(axes[0], comparisons):
        t = comp.table
        pos = np.arange(len(t))[::-1]
        centre, scale = t["coef_real"], t["se_real"]
        for off, which, color in ((0.15, "real", "#1b9e77"), (-0.15, "released", "#d95f02")):
            mid = (t[f"coef_{which}"] - centre) / scale
            lo = (t[f"lower_{which}"] - centre) / scale
            hi = (t[f"upper_{which}"] - centre) / scale
            ax.errorbar(mid, pos + off, xerr=[mid - lo, hi - mid], fmt="o", ms=3, color=color, label=which, capsize=2)
        ax.set_yticks(pos, [f"{i} (overlap {v:.2f})" for i, v in zip(t.index, t["ci_overlap"])], fontsize=7)
        ax.axvline(0, color="grey", lw=0.5)
        ax.set_xlabel("(coefficient − real estimate) / real standard error", fontsize=8)
        ax.set_title(f"{comp.formula} ({comp.family}, {100 * comp.level:.0f}% intervals)", fontsize=9)
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    return _saved(fig, path)


def evaluation_risk_figure(report, *, path=None, title=None):
    """The distributions behind the report's risk measures.

    Panels: distance to the closest real record (released rows against real rows' own nearest
    neighbours), and, when measured, the per-record linkage probability and the correct
    attribution probability.
    """
    plt = load_pyplot()
    panels = 1 + (report.linkage is not None) + (report.attribution is not None)
    # At least 7.5 inches wide: the confidentiality line of the title must fit on one panel too.
    fig, axes = plt.subplots(1, panels, figsize=(max(4.8 * panels, 7.5), 4.0), squeeze=False, layout="constrained")
    ax = axes[0][0]
    c = report.closest
    hi = float(np.nanquantile(np.r_[c.released, c.original], 0.99)) or 1.0
    bins = np.linspace(0, hi, 40)
    ax.hist(np.clip(c.original, 0, hi), bins=bins, alpha=0.5, density=True, color="#1b9e77",
            label="real → nearest other real")
    ax.hist(np.clip(c.released, 0, hi), bins=bins, alpha=0.5, density=True, color="#d95f02",
            label="released → nearest real")
    ax.set_xlabel("distance (standardised units, clipped at the 99th percentile)", fontsize=8)
    ax.set_ylabel("density (share of rows per unit of distance)", fontsize=8)
    ax.set_title("distance to the closest record", fontsize=9)
    ax.legend(fontsize=7)
    k = 1
    if report.linkage is not None:
        ax = axes[0][k]
        k += 1
        ax.hist(report.linkage.probabilities, bins=np.linspace(0, 1, 21), color="#7570b3")
        ax.set_yscale("log")
        ax.set_xlabel("P(intruder links the released row to its source)", fontsize=8)
        ax.set_ylabel("released rows (log scale)", fontsize=8)
        ax.set_title(f"linkage: mean {report.linkage.rate:.3f}, chance {report.linkage.chance:.1g}", fontsize=9)
    if report.attribution is not None:
        ax = axes[0][k]
        a = report.attribution
        ax.hist(a.probabilities.dropna(), bins=np.linspace(0, 1, 21), color="#e7298a")
        ax.axvline(a.baseline, color="black", ls="--", lw=1, label=f"baseline {a.baseline:.2f}")
        ax.set_xlabel(f"correct attribution probability of {report.target}", fontsize=8)
        ax.set_ylabel("real records", fontsize=8)
        ax.set_title(f"attribution: mean {a.cap:.3f} on matched records", fontsize=9)
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    return _saved(fig, path)
