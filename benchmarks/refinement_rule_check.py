"""Which fits the public cuts' reading of an atom on a public edge changes (21de87d): each fit of
``compare_synthesis.py``'s tables is run with the mended rule (an atom on an edge e counts in the piece [e, ·)
above it, ``ValueShape.cdf_at``) and the cuts the rule before it would have made (the tabulated CDF read with
``np.interp``, which counts such an atom below e) are computed beside them; every fit where the two differ is
printed, so the benchmark rows that had to be re-run are known.

    python benchmarks/refinement_rule_check.py --tables slid,chile,cps-mcar,cps-mar,cps-mnar --epsilons 0.5,1,2,4 \\
        --seeds 6
    python benchmarks/refinement_rule_check.py --tables acs,yrbss,gss-wages --epsilons 1,4 --seeds 10 --analyses
"""

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_synthesis import ANALYSIS, table

import dpknn.synth._bins as bins
from dpknn.synth import AutoSynthesizer

MENDED = bins.QuantileEdges.refinement
CHANGED = []


def before(q, attribute, edges, public, least):
    """The cuts of the rule before 21de87d: the same as ``QuantileEdges.refinement`` but for the pieces' counts."""
    shape = q.shape(attribute)
    top = attribute.upper + 1 if isinstance(attribute, bins.Ordinal) else attribute.upper
    ends = np.r_[attribute.lower, sorted(edges), top].astype(np.float64)
    cuts = np.setdiff1d(np.asarray([e for e in public if attribute.lower < e < top], dtype=np.float64), ends)
    grid = np.r_[ends[0], np.setdiff1d(np.asarray(public, dtype=np.float64), ends[[0, -1]]), ends[-1]]
    whole = np.searchsorted(grid, ends[1:], side="right") - np.searchsorted(grid, ends[:-1], side="left") >= 2
    cuts = cuts[whole[np.searchsorted(ends, cuts, side="right") - 1]]
    pieces = np.unique(np.r_[ends, cuts])
    full = q.rest * np.diff(np.interp(pieces, shape.grid, shape.cdf)) >= least
    return [float(e) for e, ok in zip(pieces[1:-1], full[:-1] & full[1:]) if ok and e in cuts]


def both(q, attribute, edges, public, least):
    mended = MENDED(q, attribute, edges, public, least)
    old = before(q, attribute, edges, public, least)
    if [float(e) for e in mended] != old:
        CHANGED.append((attribute.name, old, [float(e) for e in mended]))
    return mended


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="slid,chile")
    ap.add_argument("--epsilons", default="0.5,1,2,4")
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--analyses", action="store_true", help="also fit each table told its analysis")
    args = ap.parse_args()
    bins.QuantileEdges.refinement = both
    warnings.simplefilter("ignore")
    fits = 0
    for name in args.tables.split(","):
        df, attrs, _, _ = table(name)
        df = df[[a.name for a in attrs]]
        train = df[np.random.default_rng(0).random(len(df)) < 0.8].reset_index(drop=True)   # compare_synthesis's
        for eps in [float(e) for e in args.epsilons.split(",")]:
            for seed in range(args.seeds):
                for analyses in ([(), [ANALYSIS[name]]] if args.analyses and name in ANALYSIS else [()]):
                    seen = len(CHANGED)
                    AutoSynthesizer(attrs, epsilon=eps, rng=seed, analyses=analyses).fit(train)
                    fits += 1
                    for attribute, old, new in CHANGED[seen:]:
                        print(f"{name}, epsilon {eps:g}, seed {seed}, analysis {bool(analyses)}: {attribute} cut at "
                              f"{old} before, at {new} now", flush=True)
    print(f"{fits} fits, {len(CHANGED)} with other cuts")


if __name__ == "__main__":
    main()
