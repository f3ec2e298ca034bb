"""Exact samplers side by side with float samplers and (when installed) OpenDP's.

Prints microseconds per draw and the ratio to dpknn. The float samplers (numpy) are what the
package used to ship and are not safe to release (Mironov 2012); they show the cost of exactness.
OpenDP (``pip install opendp``) samples the same discrete Laplace and Gaussian exactly.

    python benchmarks/compare_samplers.py --draws 20000
"""

import argparse
import time
from fractions import Fraction

import numpy as np

from dpknn.mechanisms import _noise as noise
from dpknn.mechanisms._randomness import as_source


def per_draw(fn, draws):
    t0 = time.perf_counter()
    for _ in range(draws):
        fn()
    return (time.perf_counter() - t0) / draws * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--draws", type=int, default=20_000)
    args = ap.parse_args()
    seeded, secure = as_source(1), as_source(None)
    gen = np.random.default_rng(1)
    rows = [
        ("discrete Laplace, scale 2^20 (dpknn, seeded)", lambda: noise.discrete_laplace(2**20, rng=seeded)),
        ("discrete Laplace, scale 2^20 (dpknn, CSPRNG)", lambda: noise.discrete_laplace(2**20, rng=secure)),
        ("discrete Gaussian, sigma^2 2^20 (dpknn, CSPRNG)",
         lambda: noise.discrete_gaussian(Fraction(2**20), rng=secure)),
        ("rounded Cauchy gamma 4 (dpknn, CSPRNG)",
         lambda: noise.rounded_generalized_cauchy(4, 2**50, center=7, rng=secure)),
        ("rounded Cauchy gamma 1.25 (dpknn, CSPRNG)",
         lambda: noise.rounded_generalized_cauchy(1.25, 2**50, center=7, rng=secure)),
        ("rounded PolyPlace a 111/16, count (dpknn, CSPRNG)",
         lambda: noise.rounded_polyplace(Fraction(111, 16), Fraction(40.2), center=12345, rng=secure)),
        ("rounded PolyPlace a 111/16, mean grid (dpknn, CSPRNG)",
         lambda: noise.rounded_polyplace(Fraction(111, 16), 2**50 + Fraction(1, 3), center=Fraction(2**62, 7),
                                         rng=secure)),
        ("float Laplace (numpy, NOT safe)", lambda: gen.laplace(0.0, 1.0)),
        ("float Cauchy-type ratio of gammas (numpy, NOT safe)",
         lambda: (gen.standard_gamma(0.25) / gen.standard_gamma(0.75)) ** 0.25),
    ]
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        space = dp.atom_domain(T=int), dp.absolute_distance(T=int)
        lap = dp.m.make_laplace(*space, scale=float(2**20))
        gau = dp.m.make_gaussian(*space, scale=float(2**10))
        rows += [("discrete Laplace, scale 2^20 (OpenDP)", lambda: lap(0)),
                 ("discrete Gaussian, sigma 2^10 (OpenDP)", lambda: gau(0))]
    except ImportError:
        print("opendp is not installed: its rows are skipped (pip install opendp)")
    times = {}
    for name, fn in rows:
        times[name] = per_draw(fn, args.draws)
        print(f"{name:55s} {times[name]:9.2f} us/draw")
    pairs = [("discrete Laplace, scale 2^20 (OpenDP)", "discrete Laplace, scale 2^20 (dpknn, CSPRNG)"),
             ("discrete Gaussian, sigma 2^10 (OpenDP)", "discrete Gaussian, sigma^2 2^20 (dpknn, CSPRNG)"),
             ("rounded Cauchy gamma 4 (dpknn, CSPRNG)", "float Cauchy-type ratio of gammas (numpy, NOT safe)"),
             ("rounded PolyPlace a 111/16, count (dpknn, CSPRNG)", "rounded Cauchy gamma 4 (dpknn, CSPRNG)")]
    for a, b in pairs:
        if a in times and b in times:
            print(f"ratio {a} / {b}: {times[a] / times[b]:.2f}")


if __name__ == "__main__":
    main()
