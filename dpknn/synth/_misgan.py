"""DP-MisGAN made valid: MisGAN for incomplete data, trained with DP-SGD on both critics.

MisGAN (Li, Jiang, Marlin 2019) learns a table with gaps by two generator-critic pairs: a mask
generator G_m and its critic D_m learn where values are observed; a data generator G_x and its
critic D_x learn the values, D_x seeing only the observed part, x ⊙ m (here with m appended, so
that a zero column is not confused with a gap). Both critics are Wasserstein critics with the
one-sided gradient penalty λ·max(0, ‖∇D‖ − 1)² (Petzka et al. 2018).

What makes it learn a table (each measured on SLID, 5,924 rows, without privacy; 2-way TVD):

- **Public bins, not scaled amounts.** Every attribute is a one-hot block over its public codes,
  a numeric one with its position inside the bin (:class:`~dpknn.synth.TabularEncoding`). With
  one sigmoid per amount the generator collapsed onto a band (77 % of ages in one tenth of the
  range): 0.54 → 0.12.
- **Many generator steps, one critic step each, and averaged generators.** With 5 critic steps
  per generator step at a learning rate of 2·10⁻⁴ the generator learnt the marginals but no
  dependence (two attributes equal in 92 % of rows came out equal in 21 %, as if independent);
  one critic step per generator step at 10⁻³ (now 3·10⁻³ with larger batches, below) learns
  it, but oscillates, so the released generators are exponential moving averages of the
  trained ones (decay 0.999; free: they are post-processing like the generators): 0.12 → 0.06.
- **One latent for both generators**, so that missingness may depend on the values (MAR, MNAR);
  MisGAN's independent latents can only produce masks independent of the data.
- **Large batches under privacy.** At a fixed ε the noise per coordinate, σC/B, falls with the
  expected batch B while σ barely moves, so B = min(256, n/8) with a step of 3·10⁻³ learns more
  per unit of privacy than B = 64 at 10⁻³: on SLID 0.123 → 0.086 at ε = 1000, 0.23 → 0.13 at
  ε = 4, 0.49 → 0.23 at ε = 1.
- **Released two-way tables as a second loss of the generators** (``marginal_share``). The
  adversarial loss alone left the best MisGAN measured, without privacy, at 1.9 times the
  sampling floor of these tables: a critic trained on a few thousand steps of small batches
  tells the generator little about rare combinations. So most of the budget measures every
  two-way table of the attributes' codes (a gap one more code) with discrete Gaussian noise,
  and both generators also minimise the L1 distance between their expected tables and the
  noisy ones (:class:`~dpknn.synth._misgan_torch.MarginalLoss`; the idea of GEM, Liu, Vietri,
  Wu 2021), and their values under a gap follow the rows observed on each pair (the loss's
  second term): first alone for ``pretrain_steps`` steps, then beside the critics' losses. The
  critics still teach what the tables do not hold (where a value lies inside its bin, more
  than two attributes at a time). On SLID (2 seeds): 0.086 → 0.028 at ε = 1000, 0.126 → 0.030
  at ε = 4, 0.233 → 0.039 at ε = 1 (``benchmarks/README.md``).

Privacy (add/remove one record together with its mask):

- **The tables**: k tables (every pair of attributes; the one attribute's table when there is
  one), each the counts of the extended codes. Adding or removing a record changes one cell of
  each table by one (L2 sensitivity 1), so a table with
  :class:`~dpknn.mechanisms.DiscreteGaussian` noise of variance 1/(2ρ_m/k) on the integer grid
  is (ρ_m/k)-zCDP (Canonne, Kamath, Steinke 2020, Theorem 4) and the k tables are ρ_m-zCDP (Bun
  and Steinke 2016, Lemma 2.3). ρ_m is the largest ρ whose conversion alone gives
  (``marginal_share``·ε, δ) on the accountant's orders (:func:`~dpknn.accounting.rdp_rho`), so
  the critics always keep a share of ε. ρ_m-zCDP is Rényi DP of ρ_m·α at every order α (Bun and
  Steinke 2016, Definition 1.1). The tables are measured first; everything after reads them
  only through the generators (post-processing).
- **Each critic step is one sampled Gaussian mechanism** (Abadi et al. 2016; Mironov, Talwar,
  Zhang 2019). The batch is a Poisson sample, each record with probability q = B/n. For each
  sampled record the gradient of its own loss with respect to *both* critics' parameters is
  computed by ``torch.func.vmap(grad)``, including the gradient-penalty term (whose
  interpolate depends on the record, so it needs a double backward); the two critics'
  gradients are clipped *jointly* to L2 norm C, summed, and N(0, σ²C²) is added to every
  coordinate, and the sum is divided by the public B (never by the private batch size).
  Adding or removing a record changes the sum by at most C in L2, so the step is the SGM with
  noise multiplier σ and rate q.
- **The generators are post-processing**: they are trained only through the critics, which
  are the output of the noisy steps, on fake data, and on the released tables; so are their
  moving averages.
- **Composition**: T = epochs · ⌊n/B⌋ critic steps and the tables compose in Rényi DP to
  T·R_SGM(α) + ρ_m·α (Mironov 2017, Proposition 1, which allows each step to depend on the
  earlier outputs) and convert to (ε, δ) (:func:`dpknn.accounting.rdp_epsilon` with ``rho``).
  σ is the smallest with ε(q, σ, T, δ, ρ_m) <= ε (:func:`dpknn.accounting.sgm_sigma`).

**What n is.** q and T are computed from a row count. With ``n_rows`` given it is a public
number and everything above holds as stated. With ``n_rows=None`` the data's own n is used, as
Opacus and TF-Privacy do: the guarantee is then for the mechanism with this (q, T) held fixed
while a record is added or removed, and q, T, σ, ρ_m and δ reveal n, so they stay with the
curator (a :class:`~dpknn.exceptions.PrivacyLeakWarning` says so, and
:meth:`DPMisGAN.public_params` withholds them).

**The paper's accounting is not valid.** Mohapatra et al. (2024, Alg. 1, Thm 4.7) noise the
*generators'* gradients and train the critics on all the data without privacy; their critics
therefore carry the data, there is no amplification at B/n, and the per-sample noise counts B
times (the GS-WGAN maintainers' issues #12 and #15). Alg. 1 also clips the mask gradient by the
batch norm. ``accounting="paper"`` only computes σ the paper's way (2⌈T/n_critic⌉ SGMs at rate
q), then trains this valid mechanism with it and reports the ε that σ really gives; it warns
that the requested ε is not met.

**Noise.** The Gaussian noise is floating point (``torch.randn``, seeded from the package's
source: the OS CSPRNG by default). This is the one place in dpknn where noise is not drawn by
an exact sampler on a grid: a run needs 10⁸-10⁹ Gaussian coordinates and the exact discrete
Gaussian draws about 2·10⁴ per second. Floating-point attacks on DP-SGD (Jin et al. 2022) are
not ruled out by the theorem above.

References
----------
.. [1] Li, Jiang, Marlin (2019). "MisGAN: learning from incomplete data with generative
   adversarial networks", ICLR.
.. [2] Abadi, Chu, Goodfellow, McMahan, Mironov, Talwar, Zhang (2016). "Deep learning with
   differential privacy", CCS.
.. [3] Mironov, Talwar, Zhang (2019). "Rényi differential privacy of the sampled Gaussian
   mechanism".
.. [4] Gulrajani, Ahmed, Arjovsky, Dumoulin, Courville (2017). "Improved training of
   Wasserstein GANs"; Petzka, Fischer, Lukovnikov (2018). "On the regularization of
   Wasserstein GANs" (the one-sided penalty).
.. [5] Mohapatra, Zong, Kerschbaum, He (2024). "Differentially private data generation with
   missing data", §4.3.
.. [6] Jin, McMurtry, Rubinstein, Ohrimenko (2022). "Are we there yet? Timing and
   floating-point attacks on differential privacy systems", IEEE S&P.
.. [7] Liu, Vietri, Wu (2021). "Iterative methods for private synthetic data: unifying framework
   and new methods", NeurIPS (GEM: a generator fitted to noisy marginals).
.. [8] Canonne, Kamath, Steinke (2020). "The discrete Gaussian for differential privacy",
   NeurIPS, Theorem 4; Bun, Steinke (2016). "Concentrated differential privacy", TCC,
   Definition 1.1 and Lemma 2.3.
"""

from __future__ import annotations

import importlib
import itertools
import logging
import math
import typing
import warnings
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from dpknn.accounting import rdp_epsilon, sgm_sigma
from dpknn.accounting._budget import charge
from dpknn.accounting._rdp import rdp_rho
from dpknn.exceptions import PrivacyLeakWarning
from dpknn.mechanisms._base import CuratorDiagnostics
from dpknn.mechanisms._randomness import as_source
from dpknn.schema._attributes import blank_outside_universes
from dpknn.schema._flags import check_not_imputed
from dpknn.schema._marginals import extended_codes
from dpknn.synth._base import Synthesizer, check_never_missing
from dpknn.synth._data import Counts
from dpknn.synth._marginal import ZCDPBudget, measure
from dpknn.synth._tabular import TabularEncoding
from dpknn.utils._validation import (
    EPSILON,
    POSITIVE,
    Boolean,
    Interval,
    Options,
    check_is_fitted,
    check_positive_int,
    check_positive_int_or_auto,
    check_positive_real,
    check_rng,
    check_unit_interval,
    validate_params,
)

__all__ = ["ACCOUNTING", "DPMisGAN", "GanPrivacy", "default_delta", "measure_tables", "paper_sigma", "table_sets"]

logger = logging.getLogger(__name__)

ACCOUNTING = ("valid", "paper")

TORCH_HINT = ("DPMisGAN needs torch (the 'gan' extra). On the CPU: pip install torch==2.13.0 "
              "(or from https://download.pytorch.org/whl/cpu), then pip install 'dpknn[gan]'.")


def _torch():
    try:
        return importlib.import_module("dpknn.synth._misgan_torch")
    except ImportError as exc:  # torch absent or broken
        raise ImportError(f"{TORCH_HINT} ({exc})") from exc


#: The largest noise multiplier DP-MisGAN accepts: past it the noise per coordinate, σC/B, swamps a
#: clipped batch's signal for any batch up to 256 (σ/B > 0.4), and the accounting of one σ takes seconds.
SIGMA_CAP = 100.0


def default_delta(n):
    """10^-(digits(n) + 1): below 1/n, as DP-MisGAN's default."""
    return 10.0 ** -(len(str(int(n))) + 1)


class GanPrivacy(NamedTuple):
    """The privacy parameters of a fit: sampling rate q, critic steps T, noise multiplier σ, δ,
    the ε the run has, and ρ_m of the tables (0 without them)."""

    q: float
    steps: int
    sigma: float
    delta: float
    epsilon: float
    rho: float


def table_sets(d):
    """The attribute sets whose tables are measured: every pair, or the one attribute (public)."""
    return list(itertools.combinations(range(d), 2)) if d > 1 else [(0,)]


def measure_tables(codes, sizes, rho, src):
    """The extended count tables (a gap the last code) of :func:`table_sets`, each with discrete
    Gaussian noise of cost ρ/k (a Fraction each, summing to ``rho`` exactly): ρ-zCDP in all
    (module docstring). ``codes`` (d, n) are data; the :class:`~dpknn.synth._graphical_model.Measurement`
    records returned are releases."""
    sizes = np.asarray(sizes)
    sets = table_sets(len(sizes))
    counts = Counts(extended_codes(codes, sizes), sizes, sizes + 1)
    cost = Fraction(rho) / len(sets)
    budget = ZCDPBudget(Fraction(rho))
    return [measure(counts, s, cost, src, budget=budget) for s in sets]


def paper_sigma(*, q, steps, n_critic, epsilon, delta):
    """σ by the paper's Theorem 4.7: 2⌈T/n_critic⌉ SGMs at rate q (NOT a valid accounting of DP-MisGAN)."""
    return sgm_sigma(q=q, steps=2 * math.ceil(steps / n_critic), epsilon=epsilon, delta=delta)


class DPMisGAN(Synthesizer):
    """DP synthetic data with gaps by MisGAN trained with DP-SGD on its critics, its generators
    also fitted to two-way tables released with discrete Gaussian noise.

    (ε, δ)-DP under add/remove one record (with its mask) by the RDP of the sampled Gaussian
    mechanism over the critic steps (Mironov, Talwar, Zhang 2019) composed with the tables' zCDP
    (Canonne, Kamath, Steinke 2020, Theorem 4); the module docstring gives the argument, what
    ``n_rows`` means, and why the paper's accounting is not valid.

    Parameters
    ----------
    attributes : sequence of Ordinal, Categorical or Continuous
        Public domains: every attribute becomes a one-hot block over its public codes, a numeric
        one with its position inside its bin (:class:`~dpknn.synth.TabularEncoding`).
    epsilon : float
        Target ε of :meth:`fit`.
    delta : float or None
        δ of :meth:`fit`; None: 10^-(digits(n) + 1).
    bins : int, default 10
        Public equal bins of a numeric attribute with a wide domain. At ε = 1, 10 bins gave
        2-way TVD 0.045 on SLID and 0.118 on Chile against 0.061 and 0.146 with 20: the tables'
        noise is spread over fewer cells.
    bin_edges : dict or None
        Public inner bin edges of some numeric attributes, ``{name: increasing values}``
        (:func:`~dpknn.schema._discretization.geometric_edges` suits money).
    epochs : int, default 40
        Passes over the data in expectation: T = epochs · ⌊n/B⌋ critic steps.
    marginal_share : float in [0, 1), default 0.9
        The two-way tables that the generators also fit (module docstring) get the largest ρ
        whose conversion alone is (``marginal_share``·ε, δ)-DP; the critics' DP-SGD gets what
        the composition leaves of (ε, δ). 0: MisGAN's adversarial losses alone. Shares 0.5, 0.75
        and 0.9 of ρ(ε, δ) were measured on SLID and Chile (one seed, ``benchmarks/README.md``):
        0.9 was best on Chile at ε = 1 and 4, and within 0.003 of the best on SLID.
    marginal_weight : float, default 10.0
        λ: weight of the tables' L1 distance in the generators' losses.
    pretrain_steps : int, default 2000
        Steps of the generators on the tables alone before the critics start (post-processing,
        free of privacy; a small table has few critic steps: 320 for Chile's 2,149 rows).
    batch_size : int or "auto", default "auto"
        Expected batch size B; the sampling rate is q = B/n. "auto": min(256, max(1, ⌊n/8⌋)),
        a function of the (public) row count. Large batches with a larger step (``lr``) are the
        DP-SGD recipe: the noise σC/B per coordinate shrinks with B. On SLID, B = 256 at
        lr = 3·10⁻³ gave a 2-way TVD of 0.086 at ε = 1000, 0.126 at ε = 4 and 0.233 at ε = 1
        (2 seeds), against 0.123, 0.229 and 0.491 for B = 64 at 10⁻³
        (``benchmarks/compare_misgan.py``).
    clip : float, default 1.0
        L2 bound C on each record's joint gradient of the two critics.
    n_critic : int, default 1
        Critic steps per generator step.
    gp_weight : float, default 10.0
        λ of the gradient penalty.
    mask_weight : float, default 0.2
        α: weight of the data critic's loss in the mask generator's loss (MisGAN).
    latent_dim, hidden : int, default 64, 128
        Noise dimension of the generators; width of the two hidden layers of every network.
    lr : float, default 3e-3
        Adam learning rate of all four networks (β = (0.5, 0.9)).
    ema_decay : float, default 0.999
        Decay of the moving averages of the generators' weights that are released (0: the last
        weights).
    n_rows : int or None
        Public row count for q and T (and the default δ). None: the data's n
        (:class:`~dpknn.exceptions.PrivacyLeakWarning`).
    accounting : {"valid", "paper"}, default "valid"
        "paper" computes σ by the paper's invalid Theorem 4.7 (NOT DP at ``epsilon``); the
        ε the run really has is in ``epsilon_``. It reproduces the paper's MisGAN, which has no
        tables: it needs ``marginal_share=0``.
    progress : bool, default False
    rng : numpy.random.Generator, int or None
        Source of the sampling, the initial weights and the noise (None: the OS CSPRNG).

    Attributes
    ----------
    noise_multiplier_ : float
        σ (noise std σ·C).
    marginals_ : list of Measurement
        The released noisy tables (attribute indices, noisy counts, noise standard deviation).
    marginal_rho_ : float
        ρ_m, their zCDP cost.
    sampling_rate_ : float
        q = B/n.
    batch_size_ : int
        B.
    steps_ : int
        Critic steps T, each one sampled Gaussian mechanism.
    generator_steps_ : int
    epsilon_, delta_ : float
        The (ε, δ) this run has: ε = ``rdp_epsilon(q, σ, T, δ, rho=ρ_m)``.
    data_generator_, mask_generator_ : torch.nn.Module
        The released generators: moving averages of the trained ones (the critics are discarded).
    generator_losses_ : list of (float, float)
        Generator losses at the end of each epoch (computed on fake data against the private
        critics, so released values).
    curator_ : CuratorDiagnostics
        CONFIDENTIAL: rows, Poisson batch sizes, share of clipped per-example gradients.
    encoding_ : TabularEncoding

    Notes
    -----
    ``noise_multiplier_``, ``sampling_rate_``, ``steps_``, ``delta_`` and ``marginal_rho_`` are public
    only when ``n_rows`` is given.

    Examples
    --------
    >>> from dpknn import Categorical, Ordinal
    >>> from dpknn.datasets import make_census
    >>> from dpknn.synth import DPMisGAN
    >>> attrs = [Ordinal("AGE", 0, 99), Categorical("SEX", [1, 2])]
    >>> gan = DPMisGAN(attrs, epsilon=3.0, delta=1e-6, epochs=1, n_rows=2_000, rng=0)
    >>> gan = gan.fit(make_census(2_000, rng=0))  # doctest: +SKIP
    >>> gan.sample(3, rng=0).shape  # doctest: +SKIP
    (3, 2)
    """

    parameter_constraints: typing.ClassVar[dict] = {
        "epsilon": EPSILON,
        "delta": (Interval("real", 0, 1, closed="neither"), None),
        "marginal_share": Interval("real", 0, 1, closed="left"),
        "marginal_weight": POSITIVE,
        "pretrain_steps": Interval("int", 0, None, closed="left"),
        "epochs": Interval("int", 1, None, closed="left"),
        "batch_size": (Interval("int", 1, None, closed="left"), Options("auto")),
        "clip": POSITIVE,
        "n_critic": Interval("int", 1, None, closed="left"),
        "gp_weight": POSITIVE,
        "ema_decay": Interval("real", 0, 1, closed="left"),
        "mask_weight": Interval("real", 0, None, closed="left"),
        "latent_dim": Interval("int", 1, None, closed="left"),
        "hidden": Interval("int", 1, None, closed="left"),
        "lr": POSITIVE,
        "n_rows": (Interval("int", 1, None, closed="left"), None),
        "accounting": Options(*ACCOUNTING),
        "progress": Boolean(),
    }

    def __init__(self, attributes, *, epsilon, delta=None, bins=10, bin_edges=None, marginal_share=0.9,
                 marginal_weight=10.0, pretrain_steps=2000, epochs=40, batch_size="auto", clip=1.0, n_critic=1,
                 gp_weight=10.0, mask_weight=0.2, latent_dim=64, hidden=128, lr=3e-3, ema_decay=0.999, n_rows=None,
                 accounting="valid", progress=False, rng=None):
        self.attributes = attributes
        self.marginal_share = marginal_share
        self.marginal_weight = marginal_weight
        self.pretrain_steps = pretrain_steps
        self.bins = bins
        self.bin_edges = bin_edges
        self.epsilon = epsilon
        self.delta = delta
        self.epochs = epochs
        self.batch_size = batch_size
        self.clip = clip
        self.n_critic = n_critic
        self.gp_weight = gp_weight
        self.mask_weight = mask_weight
        self.latent_dim = latent_dim
        self.hidden = hidden
        self.lr = lr
        self.ema_decay = ema_decay
        self.n_rows = n_rows
        self.accounting = accounting
        self.progress = progress
        self.rng = rng

    def _validate(self):
        enc = TabularEncoding(self.attributes, bins=self.bins, edges=self.bin_edges)
        eps = check_positive_real(self.epsilon, "epsilon")
        for name in ("bins", "epochs", "n_critic", "latent_dim", "hidden"):
            check_positive_int(getattr(self, name), name)
        check_positive_int_or_auto(self.batch_size, "batch_size", auto="min(256, n/8)")
        for name in ("clip", "gp_weight", "lr", "marginal_weight"):
            check_positive_real(getattr(self, name), name)
        check_positive_int(self.pretrain_steps, "pretrain_steps", minimum=0)
        share = check_unit_interval(self.marginal_share, "marginal_share", closed="left",
                                    why="the critics need a share, and 0 turns the tables off")
        if share > 0 and self.accounting == "paper":
            raise ValueError("accounting='paper' reproduces the paper's MisGAN, which measures no tables; pass "
                             "marginal_share=0 with it.")
        check_positive_real(self.mask_weight, "mask_weight", allow_zero=True)
        if not 0.0 <= self.ema_decay < 1.0:
            raise ValueError(f"ema_decay must be in [0, 1), got {self.ema_decay!r}; 0 releases the last weights.")
        if self.accounting not in ACCOUNTING:
            raise ValueError(f"accounting must be one of {ACCOUNTING}, got {self.accounting!r}.")
        if self.n_rows is not None:
            check_positive_int(self.n_rows, "n_rows")
        if self.delta is not None:
            check_unit_interval(self.delta, "delta")
        return enc, eps

    def batch_for(self, n):
        """The expected batch size B for ``n`` rows: ``batch_size``, or min(256, max(1, ⌊n/8⌋)) for "auto"."""
        return min(256, max(1, int(n) // 8)) if self.batch_size == "auto" else int(self.batch_size)

    def privacy_parameters(self, n):
        """The :class:`GanPrivacy` (q, T, σ, δ, ε of the run, ρ_m) for ``n`` rows: what :meth:`fit`
        uses, without the data."""
        _, eps = self._validate()
        return self._privacy(n, eps)

    def _privacy(self, n, eps):
        n = check_positive_int(n, "n")
        B = self.batch_for(n)
        if B > n:
            raise ValueError(f"batch_size={B} exceeds the number of rows n={n}; the sampling rate B/n must be <= 1.")
        q = B / n
        steps = int(self.epochs) * (n // B)
        delta = default_delta(n) if self.delta is None else float(self.delta)
        rho = rdp_rho(float(self.marginal_share) * eps, delta) if self.marginal_share > 0 else 0.0
        if self.accounting == "paper":
            sigma = paper_sigma(q=q, steps=steps, n_critic=int(self.n_critic), epsilon=eps, delta=delta)
        else:
            if rdp_epsilon(q=q, sigma=SIGMA_CAP, steps=steps, delta=delta, rho=rho).epsilon > eps:
                raise ValueError(
                    f"DPMisGAN at epsilon={eps:g} on {n} rows with {steps} critic steps (epochs={self.epochs}, batch "
                    f"{B}) needs a noise multiplier above {SIGMA_CAP:g}, at which the critics learn nothing (and its "
                    f"accounting takes minutes): give fewer epochs, a larger epsilon, or a smaller marginal_share "
                    f"(now {self.marginal_share:g}) so that the critics get more of the budget.")
            sigma = sgm_sigma(q=q, steps=steps, epsilon=eps, delta=delta, rho=rho)
        run_eps = rdp_epsilon(q=q, sigma=sigma, steps=steps, delta=delta, rho=rho).epsilon
        return GanPrivacy(q, steps, sigma, delta, run_eps, rho)

    def fit(self, X, y=None, *, accountant=None):
        """Train on ``X`` (a DataFrame with the attribute columns; gaps as NaN/None; not modified).

        Parameters
        ----------
        X : pandas.DataFrame
        y : ignored
        accountant : BudgetAccountant or None
            Charged T sampled-Gaussian steps (q, σ) and the tables' ρ_m in its RDP part before the
            data are read; refused, with nothing trained, when they do not fit. None: a new accountant of
            the run's own budget (:func:`~dpknn.accounting.charge`); either is kept as ``accountant_``.
        """
        validate_params(self)   # the declared parameter_constraints, before anything is read or charged
        check_not_imputed(X, "X")  # imputed values would be learnt as observed ones
        enc, eps = self._validate()
        mt = _torch()
        import torch

        if self.n_rows is None:
            n = len(X)
            warnings.warn("DPMisGAN: n_rows is None, so the sampling rate q = batch_size/n, the step count, the "
                          "'auto' batch size and the default delta are computed from the data's row count; they "
                          "reveal n (as do sigma and the tables' rho) and stay with the curator: they are in "
                          "curator_, not in public_params(). Pass a public n_rows to make them public.",
                          PrivacyLeakWarning, stacklevel=2)
        else:
            n = int(self.n_rows)
        if len(X) == 0:
            raise ValueError("X has no rows.")
        q, steps, sigma, delta, run_eps, rho = self._privacy(n, eps)
        if self.accounting == "paper":
            warnings.warn(f"DPMisGAN(accounting='paper'): sigma={sigma:.4g} comes from the paper's Theorem 4.7, which "
                          f"is not a valid bound; this run is NOT ({float(self.epsilon):g}, {delta:g})-DP. Its valid "
                          f"epsilon is {run_eps:.4g}.", PrivacyLeakWarning, stacklevel=2)
        label = f"DPMisGAN({steps} critic steps{', tables' if rho else ''})"
        # Without an accountant, one of the run's own budget: its valid ε (above ε under accounting="paper").
        self.accountant_ = charge(accountant, max(float(self.epsilon), run_eps), delta, label=label,
                                  spend=lambda acc: acc.spend_sgm(q=q, sigma=sigma, steps=steps, rho=rho, label=label))

        x, m = enc.encode(X)
        self._note_outside_universes(X)
        src = as_source(self.rng)
        tables = measure_tables(enc.discretization.encode(X), enc.discretization.sizes, rho, src) if rho else []
        # The Poisson sampling and the torch noise run on generators seeded from the source (the OS
        # CSPRNG by default): per-record Bernoulli draws one by one from secrets would dominate the run.
        np_gen = src.generator if src.generator is not None else np.random.default_rng(src.randbits(128))
        gen = torch.Generator().manual_seed(int(src.randbelow(2**63)))
        B = self.batch_for(n)
        # The targets are the released tables (MarginalLoss normalises them): released values only.
        loss = mt.MarginalLoss(enc.segments, [(t.attributes, t.counts) for t in tables],
                               total=self.n_rows) if tables else None
        trainer = mt.Trainer(enc, latent=int(self.latent_dim), hidden=int(self.hidden), lr=float(self.lr),
                             gp_weight=float(self.gp_weight), mask_weight=float(self.mask_weight),
                             ema_decay=float(self.ema_decay), generator=gen, marginal_loss=loss,
                             marginal_weight=float(self.marginal_weight))
        logger.info("DP-MisGAN: %d rows, %d columns, q=%.4g, %d critic steps, sigma=%.4f, %d tables at rho=%.4g, "
                    "epsilon=%.4g, delta=%.3g", x.shape[0], x.shape[1], q, steps, sigma, len(tables), rho, run_eps,
                    delta)
        diag = mt.train(trainer, x, m, q=q, steps=steps, steps_per_epoch=n // B,
                        n_critic=int(self.n_critic), clip=float(self.clip), sigma=sigma, expected_batch=B,
                        np_gen=np_gen, pretrain_steps=int(self.pretrain_steps), progress=self.progress)

        self.encoding_ = enc
        self.data_generator_, self.mask_generator_ = (g.eval() for g in trainer.released())
        self.noise_multiplier_ = float(sigma)
        self.marginals_ = tables
        self.marginal_rho_ = float(rho)
        self.sampling_rate_ = float(q)
        self.batch_size_ = B
        self.steps_ = int(steps)
        self.generator_steps_ = int(diag["generator_steps"])
        self.epsilon_ = float(run_eps)
        self.delta_ = float(delta)
        self.generator_losses_ = list(diag["generator_losses"])
        self.curator_ = self._curator_diagnostics(int(x.shape[0]), diag)
        self.n_features_in_ = len(enc.attributes)
        return self

    def _curator_diagnostics(self, rows, diag):
        """Data-derived numbers: here, never in the public record. With ``n_rows=None`` they include the
        parameters the row count set, and the run's ε and δ."""
        derived = {} if self.n_rows is not None else {**self._row_count_params(), "epsilon": self.epsilon_,
                                                      "delta": self.delta_}
        return CuratorDiagnostics({"rows": rows, "batch_sizes": diag["batch_sizes"],
                                   "clipped_share": diag["clipped_share"], **derived})

    def published_budget(self):
        """(ε, δ) of the public record: the run's, with a public ``n_rows``. With ``n_rows=None`` the run's ε
        (σ's search sets it to within 10⁻⁶ of the target from the data's row count) and a default δ (computed from
        that count) are data-derived: the target ε and the given δ (None when it was the default) instead; the
        run's values are in ``curator_``."""
        if self.n_rows is not None:
            return super().published_budget()
        return float(self.epsilon), None if self.delta is None else float(self.delta)

    def released_params(self):
        """The public number of input rows, the DP-SGD parameters and the accounting used: only values that come
        from public inputs. With ``n_rows=None`` the sampling rate, step count, noise multiplier, the tables' ρ
        and an "auto" batch size are computed from the data's row count, so they are not in the record but in
        the curator's diagnostics (``curator_``), and ``from_row_count`` names them."""
        check_is_fitted(self, "epsilon_")
        record = {"input_rows": self.n_rows, "input_rows_is": "public input", "bins": self.bins,
                  "bin_edges": self.bin_edges, "marginal_share": self.marginal_share,
                  "marginal_tables": [[self.encoding_.names[v] for v in t.attributes] for t in self.marginals_],
                  "marginal_weight": self.marginal_weight, "pretrain_steps": self.pretrain_steps,
                  "epochs": self.epochs, "clip": self.clip}
        derived = self._row_count_params()
        if self.n_rows is None:
            record["from_row_count"] = (f"{sorted(derived)}: computed from the data's row count (n_rows is None), "
                                        "kept for the curator")
        else:
            record.update(derived)
        record["accounting"] = "RDP of the sampled Gaussian mechanism and of the zCDP tables, improved conversion"
        return record

    def _row_count_params(self):
        """The fitted parameters that the row count sets (public when ``n_rows`` is; a given batch size is
        public either way)."""
        out = {"marginal_rho": self.marginal_rho_, "sampling_rate": self.sampling_rate_, "critic_steps": self.steps_,
               "noise_multiplier": self.noise_multiplier_}
        if self.batch_size == "auto" or self.n_rows is not None:
            out["batch_size"] = self.batch_size_
        return out

    def sample(self, n, *, rng=None, missing=False, never_missing=()):
        """``n`` synthetic rows (a DataFrame with the attribute columns in declared order).

        Post-processing of the released generators. Categories are drawn from the data
        generator's softmax, numerics scaled back from public bounds (domain-valid). With
        ``missing=True`` a cell is left missing with probability 1 − G_m's mask value, so the
        rows carry the learnt missingness pattern, except in the attributes ``never_missing``
        names (complete by design, a public fact such as a schema's known attributes). Every
        attribute is missing outside its universe (:func:`~dpknn.schema._attributes.blank_outside_universes`).
        """
        check_is_fitted(self, "data_generator_")
        n = check_positive_int(n, "n", minimum=0)
        names = [a.name for a in self.encoding_.attributes]
        check_never_missing(never_missing, names)
        mt = _torch()
        import torch

        gen = check_rng(rng)
        tgen = torch.Generator().manual_seed(int(gen.integers(2**63)))
        x, mprob = mt.generate(self.data_generator_, self.mask_generator_, n, latent=int(self.latent_dim),
                               generator=tgen)
        mask = (gen.random(mprob.shape) < mprob).astype(np.float32) if missing else None
        if mask is not None:
            mask[:, [names.index(a) for a in never_missing]] = 1.0
        return blank_outside_universes(self.encoding_.decode(x, mask, rng=gen), self.encoding_.attributes)
