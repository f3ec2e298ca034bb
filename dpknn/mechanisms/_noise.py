"""Exact noise samplers on integers, and the distributions they sample.

Every released number in dpknn is an integer number of steps of a public grid, drawn here by
samplers that use only uniform random integers (:mod:`dpknn.mechanisms._randomness`) and exact integer and
rational arithmetic. Their output distribution is exactly the one the privacy proof assumes;
nothing depends on floating-point rounding, so the low-order bits of a release carry no
information (Mironov 2012).

- :func:`discrete_laplace`: P(Z = z) ∝ exp(-|z| / scale), rational scale (Canonne, Kamath,
  Steinke 2020, Algorithm 2). With scale Δ/ε it is the geometric mechanism.
- :func:`discrete_gaussian`: P(Z = z) ∝ exp(-z² / (2σ²)), rational σ² (Canonne, Kamath,
  Steinke 2020, Algorithm 3).
- :func:`rounded_generalized_cauchy`: ``round(center + width · X)`` with X generalized Cauchy,
  density ∝ 1/(1 + |x|^γ), sampled exactly: X by rejection from a dyadic envelope with lazily
  drawn uniform reals, refined until every comparison and the rounding are decided. Because the
  output is a deterministic rounding of an exact continuous draw, a smooth-sensitivity release
  made this way inherits the continuous mechanism's guarantee as post-processing. γ must be a
  multiple of 1/4 (so every power is a rational power with a small root).
- :func:`rounded_polyplace`: ``round(center + width · X)`` with X PolyPlace, density
  (a − 1)/2 · (1 + |x|)^(−a) (Hladík and Tětek 2025), sampled exactly by inversion: |X| + 1 = U^(−1/(a−1))
  for U uniform, and the rounded output is decided by comparing a lazily drawn U with the exact
  rational thresholds T^(−(a−1)) of each output, as integer powers. a must be a multiple of 1/16.

The generalized Cauchy and PolyPlace CDFs, quantiles and moments are also here (they calibrate the
mechanisms).

References
----------
.. [1] Canonne, Kamath, Steinke (2020). "The discrete Gaussian for differential privacy",
   Algorithms 1-3 and Theorem 7.
.. [2] Nissim, Raskhodnikova, Smith (2007). "Smooth sensitivity and sampling in private data
   analysis", Lemma 2.7 (generalized Cauchy).
.. [3] Mironov (2012). "On significance of the least significant bits for differential privacy".
.. [4] Devroye (1986). "Non-uniform random variate generation", §II.2 (inversion), §II.3 (rejection).
.. [5] Hladík, Tětek (2025). "Smooth sensitivity revisited: towards optimality", FORC (PolyPlace).
"""

from __future__ import annotations

import decimal
import functools
import math
from fractions import Fraction

import numpy as np
from scipy import special

from dpknn.mechanisms._randomness import as_source

__all__ = [
    "bernoulli_exp",
    "bernoulli_real",
    "discrete_gaussian",
    "discrete_gaussian_pmf",
    "discrete_gaussian_tail",
    "discrete_laplace",
    "discrete_laplace_pmf",
    "gamma_fraction",
    "generalized_cauchy_cdf",
    "generalized_cauchy_moment",
    "generalized_cauchy_quantile",
    "polyplace_cdf",
    "polyplace_fraction",
    "polyplace_half_width",
    "polyplace_std",
    "rounded_generalized_cauchy",
    "rounded_generalized_cauchy_pmf",
    "rounded_polyplace",
    "rounded_polyplace_pmf",
]

_ONE = Fraction(1)
_LN2_FLOAT = math.log(2.0)
_CHUNK = 32  # bits added to a lazy uniform at each refinement


def _exact(x, name):
    """A positive finite real as an exact Fraction (a float is the rational it stores)."""
    if isinstance(x, bool):
        raise TypeError(f"{name} must be a positive real number, got {x!r}.")
    try:
        f = Fraction(x)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a positive finite real number, got {x!r}.") from None
    if f <= 0:
        raise ValueError(f"{name} must be > 0, got {x!r}.")
    return f


def _exact_center(center):
    """``center`` as an exact Fraction (a float is the rational it stores); a clear error otherwise."""
    try:
        return Fraction(center)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"center must be a finite rational number, got {center!r}.") from None


def _draw(one, size):
    if size is None:
        return one()
    n = int(np.prod(size))
    out = [one() for _ in range(n)]
    try:
        arr = np.array(out, dtype=np.int64)
    except OverflowError:
        arr = np.array(out, dtype=object)
    return arr.reshape(size)


# --- Bernoulli trials ---------------------------------------------------------------------------
def _bernoulli_fraction(p, src):
    return src.randbelow(p.denominator) < p.numerator


def bernoulli_exp_exact(gamma, src):
    """Bernoulli(exp(-γ)) for a Fraction γ >= 0 drawn from the RandomSource ``src`` (Canonne, Kamath,
    Steinke 2020, Algorithm 1); :func:`bernoulli_exp` is the public form that takes ``rng``."""
    while gamma > 1:
        if not bernoulli_exp_exact(_ONE, src):
            return False
        gamma -= 1
    k = 1
    while _bernoulli_fraction(gamma / k, src):
        k += 1
    return k % 2 == 1


def bernoulli_exp(gamma, *, rng=None):
    """One exact Bernoulli(exp(-γ)) trial for a rational (or float, taken exactly) γ >= 0."""
    g = Fraction(gamma)
    if g < 0:
        raise ValueError(f"gamma must be >= 0, got {gamma!r}.")
    return bernoulli_exp_exact(g, as_source(rng))


class _LazyUniform:
    """A uniform real in [0, 1) of which only the first ``k`` bits have been drawn."""

    __slots__ = ("a", "k", "src")

    def __init__(self, src):
        self.src, self.a, self.k = src, 0, 0

    def refine(self):
        self.a = (self.a << _CHUNK) | self.src.randbits(_CHUNK)
        self.k += _CHUNK

    def bounds(self):
        return Fraction(self.a, 1 << self.k), Fraction(self.a + 1, 1 << self.k)


def bernoulli_real(bounds, src, *, head=None):
    """Bernoulli(p) for a real p given by ``bounds(prec) -> (lo, hi)``, lo <= p <= hi.

    The uniform is drawn lazily and compared with ever tighter bounds; the answer is exact
    (the undecided event has probability 0, so this ends with probability 1). ``head``, a pair
    (a, k), continues a uniform whose first k bits a were already drawn (and did not decide).
    """
    u = _LazyUniform(src)
    if head is not None:
        u.a, u.k = head
    while True:
        u.refine()
        lo, hi = bounds(u.k)
        ulo, uhi = u.bounds()
        if uhi <= lo:
            return True
        if ulo >= hi:
            return False


# --- rational powers with rigorous bounds ---------------------------------------------------------
def _iroot(n, q):
    """floor(n ** (1/q)) for an integer n >= 0 (Newton's method on integers)."""
    if q == 1 or n < 2:
        return n
    x = 1 << (-(-n.bit_length() // q))  # >= the root
    while True:
        y = ((q - 1) * x + n // x ** (q - 1)) // q
        if y >= x:
            return x
        x = y


def _root_bounds(r, q, prec):
    """Rationals lo <= r^(1/q) <= hi with hi - lo = 2^-prec, for rational r >= 0."""
    if q == 1:
        return r, r
    n = (r.numerator << (q * prec)) // r.denominator
    f = _iroot(n, q)
    return Fraction(f, 1 << prec), Fraction(f + 1, 1 << prec)


def gamma_fraction(gamma):
    """γ as an exact Fraction with denominator 1, 2 or 4, > 1; else a clear error."""
    g = _exact(gamma, "gamma")
    if not g > 1:
        raise ValueError(f"gamma must be > 1, got {gamma!r}.")
    if 4 % g.denominator:
        raise ValueError(f"the exact generalized Cauchy sampler needs gamma to be a multiple of 1/4, got {gamma!r}.")
    return g


class _Power:
    """y -> y^γ with rigorous rational bounds, γ = a + b/q with 0 <= b < q, q in {1, 2, 4}."""

    def __init__(self, gamma):
        g = gamma_fraction(gamma)
        self.a, rest = divmod(g.numerator, g.denominator)
        self.q = g.denominator
        self.b = rest

    def bounds(self, ylo, yhi, prec):
        """lo <= y^γ <= hi for every y in [ylo, yhi] (0 <= ylo)."""
        lo = ylo**self.a * _root_bounds(ylo**self.b, self.q, prec)[0]
        hi = yhi**self.a * _root_bounds(yhi**self.b, self.q, prec)[1]
        return lo, hi


@functools.lru_cache(maxsize=4096)
def _pow2_bounds(gamma, i, prec):
    """Bounds on 2^(-i γ) (i >= 0) and on r = 2^(1 - γ)."""
    p = _Power(gamma)
    lo, hi = p.bounds(Fraction(1, 2**i), Fraction(1, 2**i), prec)
    return lo, hi


def _r_bounds(gamma, prec):
    lo, hi = _pow2_bounds(gamma, 1, prec)   # 2^-γ
    return 2 * lo, 2 * hi


# --- discrete Laplace and Gaussian ------------------------------------------------------------------
def _discrete_laplace_one(s, t, src):
    """P(Z = z) ∝ exp(-|z| s / t) for integers s, t >= 1 (CKS 2020, Algorithm 2)."""
    while True:
        u = src.randbelow(t)
        if not bernoulli_exp_exact(Fraction(u, t), src):
            continue
        v = 0
        while bernoulli_exp_exact(_ONE, src):
            v += 1
        y = (u + t * v) // s
        if src.randbits(1):
            if y == 0:
                continue
            return -y
        return y


def discrete_laplace(scale, size=None, *, rng=None):
    """Draw integers Z with P(Z = z) = (1 - a)/(1 + a) · a^|z|, a = exp(-1/scale).

    Exact for any rational ``scale`` > 0 (a float is taken as the rational it stores). With
    ``scale = Δ/ε`` this is the two-sided geometric (discrete Laplace) mechanism for an integer
    query of sensitivity Δ. Returns a Python int for ``size=None``.

    References
    ----------
    .. [1] Canonne, Kamath, Steinke (2020), Algorithm 2.
    """
    sc = _exact(scale, "scale")
    src = as_source(rng)
    return _draw(lambda: _discrete_laplace_one(sc.denominator, sc.numerator, src), size)


def discrete_laplace_pmf(z, scale):
    """P(Z = z) of :func:`discrete_laplace` (float)."""
    a = math.exp(-1.0 / float(scale))
    return (1 - a) / (1 + a) * a ** np.abs(np.asarray(z, dtype=np.float64))


def discrete_laplace_survival(x, scale):
    """P(Z > x) of :func:`discrete_laplace` for real ``x`` (float array): a^(⌊x⌋+1)/(1 + a) above −1,
    by symmetry below."""
    a = math.exp(-1.0 / float(scale))
    k = np.floor(np.asarray(x, dtype=np.float64)) + 1.0   # P(Z > x) = P(Z >= k)
    with np.errstate(over="ignore"):
        upper = np.power(a, np.maximum(k, 0.0)) / (1.0 + a)            # k >= 1 (and k = 0 via 1 - ...)
        lower = 1.0 - np.power(a, np.maximum(1.0 - k, 0.0)) / (1.0 + a)
    return np.where(k >= 1.0, upper, lower)


def _discrete_gaussian_one(sigma2, src):
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    while True:
        y = _discrete_laplace_one(1, t, src)
        if bernoulli_exp_exact((abs(y) - sigma2 / t) ** 2 / (2 * sigma2), src):
            return y


def discrete_gaussian(sigma2, size=None, *, rng=None):
    """Draw integers Z with P(Z = z) ∝ exp(-z² / (2σ²)), exactly, for rational σ² > 0.

    References
    ----------
    .. [1] Canonne, Kamath, Steinke (2020), Algorithm 3.
    """
    s2 = _exact(sigma2, "sigma2")
    src = as_source(rng)
    return _draw(lambda: _discrete_gaussian_one(s2, src), size)


def _discrete_gaussian_norm(sigma2):
    """Σ_z exp(-z²/(2σ²)), by Poisson summation when σ >= 1 (error below 1e-300)."""
    sigma2 = float(sigma2)
    if sigma2 >= 1.0:
        terms = [math.exp(-2 * math.pi**2 * k * k * sigma2) for k in range(1, 4)]
        return math.sqrt(2 * math.pi * sigma2) * (1 + 2 * math.fsum(terms))
    z = np.arange(1, 64)
    return 1.0 + 2.0 * float(np.exp(-(z * z) / (2 * sigma2)).sum())


def discrete_gaussian_pmf(z, sigma2):
    """P(Z = z) of :func:`discrete_gaussian` (float)."""
    z = np.asarray(z, dtype=np.float64)
    return np.exp(-(z * z) / (2 * float(sigma2))) / _discrete_gaussian_norm(sigma2)


def discrete_gaussian_tail(x, sigma2):
    """P(Z > x) of :func:`discrete_gaussian` (float), summed over the integers above x."""
    start = math.floor(x) + 1
    if start <= 0:
        # P(Z > x) = 1 - P(Z <= start - 1) = 1 - P(Z > -start), by symmetry.
        return 1.0 - discrete_gaussian_tail(-start, sigma2)
    stop = start + int(40 * math.sqrt(float(sigma2))) + 40
    z = np.arange(start, stop, dtype=np.float64)
    return float(np.exp(-(z * z) / (2 * float(sigma2))).sum() / _discrete_gaussian_norm(sigma2))


# --- generalized Cauchy ---------------------------------------------------------------------------
def _cauchy_accept(power, gamma, src):
    """One exact draw of |X|, X generalized Cauchy(γ): returns (block, V) with |X| a lazy real.

    Envelope of h(x) = 1/(1 + x^γ) on x >= 0: 1 on [0, 1) and 2^(-iγ) on [2^i, 2^(i+1)), i >= 0;
    h is below it because x^γ >= 2^(iγ) there. The envelope's masses are 1 and r^i with
    r = 2^(1-γ) < 1, so the block is 0 with probability (1-r)/(2-r), else 1 + i with i geometric.
    Inside a block x is uniform; it is accepted with probability h(x)/envelope(x), which is
    1/(c + y^γ) with y = x / 2^i in [1, 2) and c = 2^(-iγ) (c = 1, y = x on [0, 1)).
    """
    def head(prec):
        rlo, rhi = _r_bounds(gamma, prec)
        return (1 - rhi) / (2 - rhi), (1 - rlo) / (2 - rlo)   # decreasing in r

    while True:
        if bernoulli_real(head, src):
            block = None
        else:
            block = 0
            while bernoulli_real(lambda prec: _r_bounds(gamma, prec), src):
                block += 1
        v, u = _LazyUniform(src), _LazyUniform(src)
        while True:
            v.refine()
            u.refine()
            vlo, vhi = v.bounds()
            if block is None:
                clo = chi = _ONE
                ylo, yhi = vlo, vhi
            else:
                clo, chi = _pow2_bounds(gamma, block, v.k)
                ylo, yhi = 1 + vlo, 1 + vhi
            plo, phi = power.bounds(ylo, yhi, v.k)
            ulo, uhi = u.bounds()
            if uhi * (chi + phi) <= 1:
                return block, v
            if ulo * (clo + plo) >= 1:
                break


def _rounded_cauchy_one(power, gamma, width, center, src):
    block, v = _cauchy_accept(power, gamma, src)
    negative = bool(src.randbits(1))
    while True:
        vlo, vhi = v.bounds()
        if block is None:
            xlo, xhi = vlo, vhi
        else:
            xlo, xhi = (1 + vlo) * 2**block, (1 + vhi) * 2**block
        if negative:
            xlo, xhi = -xhi, -xlo
        lo = math.floor(center + width * xlo + Fraction(1, 2))
        hi = math.floor(center + width * xhi + Fraction(1, 2))
        if lo == hi:
            return lo
        v.refine()


def rounded_generalized_cauchy(gamma, width, size=None, *, center=0, rng=None):
    """Draw ``round(center + width · X)`` exactly, X with density ∝ 1/(1 + |x|^γ).

    Parameters
    ----------
    gamma : float or Fraction
        Tail parameter γ > 1, a multiple of 1/4.
    width : float or Fraction
        Scale of X in output units (> 0).
    center : int or Fraction, default 0
    rng : numpy.random.Generator, int or None
        None: the operating system's CSPRNG.

    Returns
    -------
    int (``size=None``) or ndarray of int64

    Notes
    -----
    Rounding is to the nearest integer (ties have probability 0). Because the output is a
    deterministic function of an exact continuous draw, any (ε, δ) guarantee of
    ``center + width · X`` holds for it unchanged.

    References
    ----------
    .. [1] Nissim, Raskhodnikova, Smith (2007), Lemma 2.7; Devroye (1986), §II.3.
    """
    g = gamma_fraction(gamma)
    w = _exact(width, "width")
    c = _exact_center(center)
    src = as_source(rng)
    power = _Power(g)
    return _draw(lambda: _rounded_cauchy_one(power, g, w, c, src), size)


def rounded_generalized_cauchy_pmf(m, gamma, width, center=0.0):
    """P(output = m) of :func:`rounded_generalized_cauchy` (float, from the exact CDF)."""
    m = np.asarray(m, dtype=np.float64)
    w, c = float(width), float(center)
    return (generalized_cauchy_cdf((m + 0.5 - c) / w, gamma) - generalized_cauchy_cdf((m - 0.5 - c) / w, gamma))


def _check_gamma(gamma):
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float, np.floating, np.integer, Fraction)):
        raise TypeError(f"gamma must be a real number > 1, got {gamma!r}.")
    gamma = float(gamma)
    if not (gamma > 1.0 and math.isfinite(gamma)):
        raise ValueError(f"gamma must be a finite real number > 1, got {gamma!r}.")
    return gamma


def generalized_cauchy_cdf(x, gamma):
    """Exact CDF of the generalized Cauchy distribution (regularised incomplete beta).

    With V = X^γ/(1 + X^γ) for X > 0, V ~ Beta(1/γ, 1 - 1/γ); the normaliser of the density
    1/(1 + |x|^γ) is 2π / (γ sin(π/γ)).
    """
    gamma = _check_gamma(gamma)
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.where(np.isinf(ax), 1.0, ax**gamma / (1.0 + ax**gamma))
    half = 0.5 * special.betainc(1.0 / gamma, 1.0 - 1.0 / gamma, p)
    return 0.5 + np.sign(x) * half


def generalized_cauchy_survival(x, gamma):
    """P(X > x) of the generalized Cauchy distribution, from the complemented incomplete beta above 0 (not
    1 − CDF, so that far tails keep their digits)."""
    gamma = _check_gamma(gamma)
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        p = np.where(np.isinf(ax), 1.0, ax**gamma / (1.0 + ax**gamma))
    tail = 0.5 * special.betaincc(1.0 / gamma, 1.0 - 1.0 / gamma, p)
    return np.where(x >= 0, tail, 1.0 - tail)


def generalized_cauchy_quantile(q, gamma):
    """Quantile function of the generalized Cauchy distribution."""
    gamma = _check_gamma(gamma)
    q = np.asarray(q, dtype=np.float64)
    v = special.betaincinv(1.0 / gamma, 1.0 - 1.0 / gamma, np.abs(2.0 * q - 1.0))
    with np.errstate(divide="ignore"):
        mag = np.power(v / (1.0 - v), 1.0 / gamma)
    return np.sign(q - 0.5) * mag


def generalized_cauchy_moment(gamma, order=2):
    """E|X|^order of the generalized Cauchy distribution (inf when order >= γ - 1).

    From the Mellin transform ∫_0^∞ z^(s-1)/(1+z^γ) dz = π / (γ sin(π s/γ)):
    E|X|^r = sin(π/γ) / sin(π (r+1)/γ) for r + 1 < γ.
    """
    gamma = _check_gamma(gamma)
    if order + 1 >= gamma:
        return math.inf
    return math.sin(math.pi / gamma) / math.sin(math.pi * (order + 1) / gamma)


# --- PolyPlace ------------------------------------------------------------------------------------
def polyplace_fraction(a):
    """The PolyPlace exponent a as an exact Fraction, a multiple of 1/16 with a >= 5/4; else a clear error.

    Sixteenth steps keep every threshold comparison an integer power with a root of degree at most 16,
    and a >= 5/4 keeps a 64-bit uniform's largest output, 2^(64/(a−1)) scales, inside a float.
    """
    f = _exact(a, "a")
    if 16 % f.denominator:
        raise ValueError(f"the exact PolyPlace sampler needs a to be a multiple of 1/16, got {a!r}.")
    if f < Fraction(5, 4):
        raise ValueError(f"a must be at least 5/4, got {a!r}.")
    return f


def polyplace_cdf(x, a):
    """CDF of PolyPlace(a): 1 − (1 + x)^(1−a)/2 for x >= 0 and (1 − x)^(1−a)/2 below (closed form)."""
    a = float(a)
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", divide="ignore"):
        tail = 0.5 * np.power(1.0 + np.abs(x), 1.0 - a)
    return np.where(x >= 0, 1.0 - tail, tail)


def polyplace_survival(x, a):
    """P(X > x) of PolyPlace(a): (1 + x)^(1−a)/2 for x >= 0, by symmetry below (computed as such, not as
    1 − CDF, so that tails far below 1e-16 keep their digits)."""
    a = float(a)
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", divide="ignore"):
        tail = 0.5 * np.power(1.0 + np.abs(x), 1.0 - a)
    return np.where(x >= 0, tail, 1.0 - tail)


def polyplace_std(a):
    """Standard deviation of PolyPlace(a): √(2 / ((a − 2)(a − 3))) for a > 3, else inf."""
    a = float(a)
    return math.sqrt(2.0 / ((a - 2.0) * (a - 3.0))) if a > 3 else math.inf


def polyplace_half_width(a, level=0.9):
    """Half-width t of the central ``level`` interval of PolyPlace(a): P(|X| > t) = (1 + t)^(1−a) = 1 − level."""
    return (1.0 - level) ** (-1.0 / (float(a) - 1.0)) - 1.0


class _PolyPlaceRounder:
    """``round(center + width · X)``, X PolyPlace(a), decided exactly.

    |X| = V − 1 with V = U^(−1/e), e = a − 1 = p/q, U uniform on (0, 1). The output is m exactly when
    V lies between two thresholds T = N/D (rationals from m, the center and the width), and
    V > T ⇔ U^q T^p < 1, an integer comparison for the dyadic bounds of a lazily drawn U.
    """

    __slots__ = ("cd", "cf", "cn", "inv", "p", "q", "wd", "wf", "wn")

    def __init__(self, a, width, center):
        e = a - 1
        self.p, self.q = e.numerator, e.denominator
        self.inv = float(e.denominator) / float(e.numerator)
        self.wn, self.wd = width.numerator, width.denominator
        self.cn, self.cd = center.numerator, center.denominator
        self.cf, self.wf = float(center), float(width)

    def _threshold(self, sign, m, upper):
        """(N, D): the V-threshold of output m (lower end, or upper end when ``upper``) for this sign."""
        odd = 2 * m + (1 if upper == (sign > 0) else -1)
        shift = odd * self.cd - 2 * self.cn if sign > 0 else 2 * self.cn - odd * self.cd
        d = 2 * self.cd * self.wn
        return d + shift * self.wd, d

    def _below_one(self, u_top, k, n, d):
        """Whether (u_top/2^k)^q (n/d)^p < 1 (False when equal), for positive integers.

        A float screen in the log domain decides when the log is farther from 0 than 10^-9 times the
        sum of its terms' magnitudes (plus 10^-9): each term is a correctly rounded or 1-ulp log times a
        small integer, so the screen's own error is below 10^-15 of that sum. Closer cases are decided
        by the exact integer comparison.
        """
        p, q = self.p, self.q
        terms = (q * math.log(u_top), p * math.log(n), -p * math.log(d), -k * q * _LN2_FLOAT)
        log = math.fsum(terms)
        margin = 1e-9 * (1.0 + sum(abs(t) for t in terms))
        if log < -margin:
            return True
        if log > margin:
            return False
        return u_top**q * n**p < (d**p) << (k * q)

    def _decides(self, sign, m, top, k):
        """True when every U in [top/2^k, (top+1)/2^k] gives output m."""
        n, d = self._threshold(sign, m, upper=False)
        # V_min = ((top+1)/2^k)^(-1/e) must exceed the lower threshold (always, when it is <= 0):
        # V > T ⇔ U^q T^p < 1.
        if n > 0 and not self._below_one(top + 1, k, n, d):
            return False
        n, d = self._threshold(sign, m, upper=True)
        # V_max = (top/2^k)^(-1/e) must stay below the upper threshold: U^q T^p > 1.
        if top == 0 or n <= 0:
            return False
        # Equality (U exactly at a threshold) has probability 0: it cannot change the distribution.
        return not self._below_one(top, k, n, d)

    def _guess(self, sign, top, k):
        """The output at the middle of U's interval: a candidate that :meth:`_decides` accepts or refuses.

        Floats when the centre and the noise are both below 2^40 grid steps (then their sum is off by
        less than 2^-12, and an output off by one is caught by trying its neighbours); otherwise decimal
        arithmetic with digits for the centre, the width and V, plus 20 to spare.
        """
        u = (top + 0.5) / 2.0**k if k < 1000 else 0.0
        try:
            noise = self.wf * (u ** (-self.inv) - 1.0) if u > 0 else math.inf
        except OverflowError:
            noise = math.inf
        if abs(self.cf) < 2.0**40 and abs(noise) < 2.0**40:
            return math.floor(self.cf + sign * noise + 0.5)
        digits = (20 + len(str(abs(self.cn) // self.cd)) + len(str(self.wn // self.wd))
                  + int(0.302 * (k + 1) * self.inv) + 1)
        ctx = decimal.Context(prec=digits)
        Dec = decimal.Decimal
        u = ctx.divide(Dec(2 * top + 1), Dec(1 << (k + 1)))
        v = ctx.power(u, ctx.divide(Dec(-self.q), Dec(self.p)))
        width = ctx.divide(Dec(self.wn), Dec(self.wd))
        x = ctx.add(ctx.divide(Dec(self.cn), Dec(self.cd)), ctx.multiply(Dec(sign), ctx.multiply(width, v - 1)))
        return int(ctx.add(x, Dec("0.5")).to_integral_value(rounding=decimal.ROUND_FLOOR))

    def draw(self, src):
        sign = -1 if src.randbits(1) else 1
        top, k = src.randbits(64), 64
        while True:
            m = self._guess(sign, top, k)
            for cand in (m, m - 1, m + 1):
                if self._decides(sign, cand, top, k):
                    return cand
            top = (top << _CHUNK) | src.randbits(_CHUNK)
            k += _CHUNK


def rounded_polyplace(a, width, size=None, *, center=0, rng=None):
    """Draw ``round(center + width · X)`` exactly, X with density (a − 1)/2 · (1 + |x|)^(−a).

    Parameters
    ----------
    a : float or Fraction
        Tail exponent, a multiple of 1/16, at least 5/4 (:func:`polyplace_fraction`).
    width : float or Fraction
        Scale of X in output units (> 0).
    center : int, float or Fraction, default 0
        Taken exactly (a float is the rational it stores): pass the exact query value, so that no
        rounding of the center has to be charged in the sensitivity.
    rng : numpy.random.Generator, int or None
        None: the operating system's CSPRNG.

    Returns
    -------
    int (``size=None``) or ndarray of int64

    Notes
    -----
    Inversion (Devroye 1986, §II.2): P(|X| > t) = (1 + t)^(1−a), so |X| = U^(−1/(a−1)) − 1. The
    output m is decided by comparing the lazily drawn bits of U with the exact thresholds of m,
    T^(−(a−1)) with T rational, through integer powers; the undecided event has probability 0 and
    each refinement adds 32 bits. Rounding is to the nearest integer (ties have probability 0).
    Because the output is a deterministic function of an exact continuous draw, any guarantee of
    ``center + width · X`` holds for it unchanged.

    References
    ----------
    .. [1] Hladík, Tětek (2025), the PolyPlace distribution; Devroye (1986), §II.2.
    """
    f = polyplace_fraction(a)
    w = _exact(width, "width")
    c = _exact_center(center)
    src = as_source(rng)
    rounder = _PolyPlaceRounder(f, w, c)
    return _draw(lambda: rounder.draw(src), size)


def rounded_polyplace_pmf(m, a, width, center=0.0):
    """P(output = m) of :func:`rounded_polyplace` (float, from the closed-form CDF)."""
    m = np.asarray(m, dtype=np.float64)
    w, c = float(width), float(center)
    return polyplace_cdf((m + 0.5 - c) / w, a) - polyplace_cdf((m - 0.5 - c) / w, a)
