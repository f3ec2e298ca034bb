"""``dpknn experiment amplification``: MCAR amplification, the paper's examples and a Table-2-style table.

Examples 5.5-5.13 of Mohapatra et al. (2024), ε = 1 split equally, missing rates φ: State 0.25,
Occupation 0, Gender 0.25, Income 0.25. For each: the paper's (linear, not valid) figure, the best
valid partition and the exact bound (:func:`dpknn.accounting.mcar_cost`).

Table-2 style: a degree-2 Bayesian network over the 10 attributes of the synthetic census (a
fixed, public structure, :data:`CENSUS_NETWORK`; PrivBayes would choose one from the data and
charge the search separately), ε = 1 spread equally over its 10 marginals, every attribute
missing completely at random with the same public rate 0.1-0.5. Columns: no amplification, the
paper's Algorithm 4 (linear, NOT valid), the child bound (valid a priori for any structure), the
best valid partition and the exact bound (both valid for this structure).

References
----------
.. [1] Mohapatra, Zong, Kerschbaum, He (2024). "Differentially private data generation with missing
   data", §5 and Table 2.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path

import pandas as pd

from dpknn.accounting import amplify_mcar, mcar_cost
from dpknn.accounting._mcar import child_bound
from dpknn.utils._io import markdown_table, text_writer, write_with_figures

__all__ = ["CENSUS_NETWORK", "EXAMPLE_RATES", "examples", "run_amplification_experiment", "table"]

logger = logging.getLogger(__name__)

#: Missing rates of the paper's running example (Figure 3).
EXAMPLE_RATES = {"State": 0.25, "Occupation": 0.0, "Gender": 0.25, "Income": 0.25}
_ALL = ("State", "Occupation", "Gender", "Income")

#: A public degree-2 network over the synthetic census: child -> parents.
CENSUS_NETWORK = {
    "AGE": (), "SEX": (), "RACE": (), "URBAN": (),
    "SCHOOL": ("AGE", "RACE"), "MARST": ("AGE", "SEX"), "RELATE": ("MARST", "AGE"),
    "EMPSTAT": ("AGE", "SEX"), "CLASSWKR": ("EMPSTAT", "SCHOOL"), "INCWAGE": ("CLASSWKR", "SCHOOL"),
}


def examples():
    """The paper's examples: a DataFrame with the paper's figure, best valid partition and exact."""
    cases = [
        ("5.5", "four marginals on complete rows only", [0.25] * 4, [set(_ALL)] * 4, 0.421),
        ("5.7", "partial observation: State, Occupation, (Gender, Income)", [1 / 3] * 3,
         [{"State"}, {"Occupation"}, {"Gender", "Income"}], 0.771),
        ("5.8", "partial observation: State, Occupation, Gender, (Gender, Income)", [0.25] * 4,
         [{"State"}, {"Occupation"}, {"Gender"}, {"Gender", "Income"}], 0.8125),
        ("5.13", "column-wise imputation: one stage per attribute", [0.25] * 4, [{a} for a in _ALL], 0.9375),
    ]
    rows = []
    for name, what, eps, sets, paper in cases:
        rows.append({"example": name, "setting": what, "paper": paper,
                     "paper_alg4_recomputed": mcar_cost(eps, sets, EXAMPLE_RATES, method="paper").epsilon,
                     "partition": mcar_cost(eps, sets, EXAMPLE_RATES, method="partition").epsilon,
                     "exact": mcar_cost(eps, sets, EXAMPLE_RATES, method="exact").epsilon})
    # Theorem 5.12 amplifies one model only (p = 3/4, linear): 0.75 * 0.25 + 0.75 = 0.9375; the
    # same structure with the valid cost is ln(1 + 0.75 (e^0.25 - 1)) + 0.75.
    rows[-1]["one_model_valid"] = amplify_mcar(0.25, 0.75)[0] + 0.75
    return pd.DataFrame(rows).set_index("example")


def table(rates=(0.1, 0.2, 0.3, 0.4, 0.5), *, epsilon=1.0, network=None):
    """ε on the ground-truth data for the census network at each MCAR rate (Table-2 style)."""
    network = CENSUS_NETWORK if network is None else network
    children = list(network)
    sets = [{c, *network[c]} for c in children]
    eps = [epsilon / len(children)] * len(children)
    rows = []
    for rate in rates:
        phi = {a: rate for a in children}
        rows.append({"rate": rate, "raw": math.fsum(eps),
                     "paper": mcar_cost(eps, sets, phi, method="paper").epsilon,
                     "child_bound": child_bound(eps, children, phi),
                     "partition": mcar_cost(eps, sets, phi, method="partition").epsilon,
                     "exact": mcar_cost(eps, sets, phi, method="exact").epsilon})
    return pd.DataFrame(rows).set_index("rate")


def run_amplification_experiment(*, rates=(0.1, 0.2, 0.3, 0.4, 0.5), epsilon=1.0, out="dpknn-amplification"):
    """``dpknn experiment amplification``: write report.md, examples.csv, table.csv and amplification.png.

    Parameters
    ----------
    rates : sequence of float
        The MCAR missing rates of the table's rows.
    epsilon : float
        The total epsilon of the marginals (add/remove one record, pure DP).
    out : str or Path
        The output folder.

    Returns
    -------
    int
        0, the command's exit status.
    """
    t0 = time.perf_counter()
    ex = examples()
    tab = table(rates, epsilon=epsilon)
    lines = [
        "# MCAR amplification (Mohapatra et al. 2024, §5)", "",
        "All costs are on the ground-truth data, add/remove one record, for pure-DP mechanisms. `paper` is the "
        "paper's linear cost (p·ε, mechanisms of a group amplified separately): **not a valid bound**. "
        "`partition` is the best valid partition with the valid group cost ln(1 + p(e^ε - 1)); `exact` is "
        "ln E_O[exp(Σ ε_j 1{S_j ⊆ O})] over the observed attributes O, never above any valid partition.", "",
        "## The paper's examples (ε = 1; φ: State 0.25, Occupation 0, Gender 0.25, Income 0.25)", "",
        markdown_table(ex.drop(columns=["setting"])), "",
        "Example 5.8: the best valid partition amplifies (State) by State, (Gender) by Gender and "
        "(Gender, Income) by Income alone (0.8293); grouping the two Gender mechanisms on Gender gives 0.8396. "
        "Example 5.13: the paper's Theorem 5.12 amplifies one model (0.9375 linear, 0.9431 valid); every stage "
        "reads only rows observed on its own attribute, so every stage can be amplified (0.8293, exact).", "",
        f"## Census network, ε = {epsilon:g} over {len(CENSUS_NETWORK)} marginals (Table-2 style)", "",
        "Structure (child: parents): " + "; ".join(f"{c}: {', '.join(p) or '-'}" for c, p in CENSUS_NETWORK.items())
        + ". Every attribute missing completely at random with the same public rate.", "",
        markdown_table(tab), "",
        "The child bound is valid before the structure is known (the structure search itself is not amplified "
        "and is charged separately); `partition` and `exact` are computed on this (public) structure. For a "
        "structure chosen from the data they are after-the-fact figures.", "",
        f"Run time: {time.perf_counter() - t0:.1f} s.", ""]
    report = "\n".join(lines)
    out = Path(out)
    files = [(out / "report.md", text_writer(report)),
             (out / "examples.csv", lambda tmp: ex.to_csv(tmp)),
             (out / "table.csv", lambda tmp: tab.to_csv(tmp))]

    def figures():
        from dpknn.utils._plotting import amplification_figure
        return [(out / "amplification.png", amplification_figure(
            tab, title=f"Census network, epsilon = {epsilon:g} over {len(CENSUS_NETWORK)} marginals"))]

    write_with_figures(files, figures)
    print(report)
    print(f"Wrote report.md, examples.csv, table.csv and amplification.png to {out}")
    return 0
