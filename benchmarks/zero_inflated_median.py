"""How precisely the median of a zero-inflated amount can be released (issue 48's ACS goal).

The goal asks for the synthetic median of the ACS income (44 % exact zeros) within 10 % of the real one. The
median of such a column is the (0.5 - z) / (1 - z) quantile of its positive values, z the share of zeros: it
sits at the low end of the positive incomes, where they are sparse, so it moves fast with z. This script
prints, on the training split that ``compare_synthesis.py`` uses:

- the real median and zero share, and the window of zero shares (in points and in records) for which the
  median, the positive values held fixed, stays within 10 %;
- the chance that a count of the zeros lands in that window when it is released with Gaussian noise of the
  whole zCDP budget the synthesiser has at that ε (δ = 1e-9), i.e. the best case of any release of that
  count under that budget, and with the noise of the income's one-way table in the default synthesiser;
- the noise of the default's released point-mass count of income (a second, separate measurement of the
  zero count);
- the medians and zero shares of the default synthesiser (``AutoSynthesizer``) over ``--seeds`` fits.

    python benchmarks/zero_inflated_median.py --epsilons 1,4 --seeds 5
"""

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_synthesis import table

import dpknn.synth._marginal as marginal
from dpknn.accounting import zcdp_rho
from dpknn.synth import AutoSynthesizer

DELTA = 1e-9


def median_at(positives, z):
    """The median of a column with a share ``z`` of zeros and the positive values ``positives``."""
    q = (0.5 - z) / (1.0 - z)
    return 0.0 if q <= 0 else float(np.quantile(positives, q))


def window(positives, m0, z0, tol=0.10, step=1e-5):
    """The zero shares [lo, hi] around z0 whose median stays within ``tol`` of m0."""
    ok = lambda z: abs(median_at(positives, z) / m0 - 1.0) <= tol   # noqa: E731
    lo = hi = z0
    while ok(lo - step):
        lo -= step
    while ok(hi + step):
        hi += step
    return lo, hi


MASS_SIGMAS = []


def _recording(point_masses):
    """``point_masses`` that also records the noise deviation of the counts it releases (instrumentation for
    this script: the synthesiser keeps the released counts' mechanism to itself)."""
    def wrapped(values, attribute, mechanism, src):
        MASS_SIGMAS.append((attribute.name, math.sqrt(mechanism.variance())))
        return point_masses(values, attribute, mechanism, src)
    return wrapped


marginal.point_masses = _recording(marginal.point_masses)


def one_way_sigma(model, name):
    """The noise deviation (records) of the fitted model's one-way table of ``name``."""
    syn = model.synthesizer_
    j = syn.discretization_.names.index(name)
    return next(m.sigma for m in syn.measurements_ if tuple(m.attributes) == (j,))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilons", default="1,4")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    df, attrs, complete, _ = table("acs")
    train = df[np.random.default_rng(0).random(len(df)) < 0.8].reset_index(drop=True)
    income = train["income"].dropna().to_numpy(dtype=float)
    n_obs = income.size
    positives = np.sort(income[income > 0])
    z0, m0 = float((income == 0).mean()), float(np.median(income))
    lo, hi = window(positives, m0, z0)
    below, above = (z0 - lo) * n_obs, (hi - z0) * n_obs   # the count's error may be this many records off

    def inside(sigma):
        return stats.norm.cdf(above / sigma) - stats.norm.cdf(-below / sigma)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load average {load:.2f}")
    print(f"ACS training split: {len(train):,} rows, income observed {n_obs:,}; zeros {100 * z0:.2f} %, "
          f"median {m0:,.0f}")
    print(f"median within 10 %: zero share in [{100 * lo:.2f}, {100 * hi:.2f}] % "
          f"({100 * (z0 - lo):.2f} / {100 * (hi - z0):.2f} points, {(z0 - lo) * n_obs:.1f} / {(hi - z0) * n_obs:.1f} "
          f"records); the median moves {100 * (median_at(positives, z0 - 0.01) / m0 - 1):+.0f} % for 1 point fewer "
          "zeros")
    print("| ε | ρ (δ = 1e-9) | σ, all of ρ on the zero count | P(in window) | σ, default's one-way | P(in window) "
          "| σ, released zero count | σ, both pooled | default: zeros, points off | median off |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for eps in (float(e) for e in args.epsilons.split(",")):
        rho = zcdp_rho(eps, DELTA)
        best = math.sqrt(1.0 / (2.0 * rho))
        p_best = inside(best)
        zeros, medians, sigmas = [], [], []
        MASS_SIGMAS.clear()
        for seed in range(args.seeds):
            model = AutoSynthesizer(attrs, epsilon=eps, never_missing=complete, rng=seed).fit(train)
            out = model.sample(len(train), rng=seed + 100)["income"].dropna().to_numpy(dtype=float)
            zeros.append(100 * ((out == 0).mean() - z0))
            medians.append(100 * (np.median(out) / m0 - 1.0))
            sigmas.append(one_way_sigma(model, "income"))
        sigma = float(np.mean(sigmas))
        p_default = inside(sigma)
        mass = float(np.mean([s for name, s in MASS_SIGMAS if name == "income"]))
        print(f"| {eps:g} | {rho:.4f} | {best:.1f} records | {p_best:.2f} | {sigma:.1f} records | {p_default:.2f} | "
              f"{mass:.1f} records | {(sigma ** -2 + mass ** -2) ** -0.5:.1f} records | "
              f"{', '.join(f'{z:+.1f}' for z in zeros)} | "
              f"{', '.join(f'{m:+.0f} %' for m in medians)} |")


if __name__ == "__main__":
    main()
