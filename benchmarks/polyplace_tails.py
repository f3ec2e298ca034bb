"""How wide smooth noise is, tails included, and what a calibration for a high quantile would buy.

Prints, in units of S(D) (count noise: S = 1 + L1(D)), for each ε: the PolyPlace pair (a, c) that
``choose_polyplace`` returns, its standard deviation, the half-widths of its central 90%, 99% and 99.9%
intervals, and the generalized Cauchy's (optimal γ) std and 90% half-width beside it; then, for the same
ε, the admissible pair that minimises the 99.9% half-width instead (a on the grid of 1/16 up to
1 + ε/ln 2 and its smallest certified c) and what it gains at 99.9% and costs at 90%. These are the tables
of ``docs/privacy.md`` ("How wide the noise is") and need no data:

    python benchmarks/polyplace_tails.py
"""

import math
from fractions import Fraction

from dpknn.mechanisms import _noise as noise
from dpknn.mechanisms._smooth import LN2, certify_polyplace, choose_gamma, choose_polyplace

EPSILONS = [("0.75", 0.75), ("1", 1.0), ("1.25", 1.25), ("2 ln 2", 2 * LN2), ("2", 2.0), ("3", 3.0), ("4", 4.0),
            ("6 ln 2", 6 * LN2), ("8", 8.0), ("10", 10.0)]
LEVELS = (0.9, 0.99, 0.999)


def half_width(a, c, level):
    return float(c) * noise.polyplace_half_width(a, level)


def smallest_c(a, epsilon):
    """The smallest certified c on choose_polyplace's grid for this a (None if a is not admissible)."""
    cal = choose_polyplace(epsilon, a=a) if certify_polyplace(a, Fraction(10**9), epsilon) else None
    return None if cal is None else cal.c


def tail_optimal(epsilon, level=0.999):
    top = min(Fraction(32), 1 + Fraction(epsilon) / Fraction(LN2))
    pairs = [(a, c) for i in range(20, math.floor(16 * top) + 1)
             if (c := smallest_c(a := Fraction(i, 16), epsilon)) is not None]
    return min(pairs, key=lambda ac: half_width(*ac, level))


def fmt(x):
    return "∞" if not math.isfinite(x) else f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def main():
    print("| ε | a | c | std | 90% half-width | 99% half-width | 99.9% half-width | Cauchy std | "
          "Cauchy 90% half-width |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, eps in EPSILONS:
        cal = choose_polyplace(eps)
        std = float(cal.c) * noise.polyplace_std(cal.a)
        try:
            g = choose_gamma(eps)
            cauchy = (fmt(g.spread() if g.gamma > 3 else math.inf),
                      fmt(noise.generalized_cauchy_quantile(0.95, g.gamma) / g.alpha))
        except ValueError:
            cauchy = ("refused", "refused")
        widths = " | ".join(fmt(half_width(cal.a, cal.c, lv)) for lv in LEVELS)
        print(f"| {label} | {float(cal.a):g} | {float(cal.c):.4f} | {fmt(std)} | {widths} | {cauchy[0]} | "
              f"{cauchy[1]} |")
    print()
    print("| ε | a (std rule) | a (99.9% rule) | 99.9% half-width, std rule → 99.9% rule | 90% half-width, "
          "std rule → 99.9% rule |")
    print("|---|---|---|---|---|")
    for label, eps in EPSILONS:
        cal = choose_polyplace(eps)
        a, c = tail_optimal(eps)
        w_std, w_tail = half_width(cal.a, cal.c, 0.999), half_width(a, c, 0.999)
        n_std, n_tail = half_width(cal.a, cal.c, 0.9), half_width(a, c, 0.9)
        same = a == cal.a and c == cal.c
        print(f"| {label} | {float(cal.a):g} | {float(a):g} | "
              + ("the same pair | the same pair |" if same else
                 f"{fmt(w_std)} → {fmt(w_tail)} ({w_tail / w_std - 1:+.0%}) | {fmt(n_std)} → {fmt(n_tail)} "
                 f"({n_tail / n_std - 1:+.0%}) |"))


if __name__ == "__main__":
    main()
