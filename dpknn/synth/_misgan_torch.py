"""The torch half of :class:`~dpknn.synth.DPMisGAN`: networks, per-example clipped gradients, training.

Imported only when a GAN is fitted or sampled, so that ``import dpknn.synth`` never needs torch.
Everything that touches the records is in :meth:`Trainer.clipped_gradient_sum`; the generators see
only the critics, which are the output of the noisy steps, and the released noisy tables of
:class:`MarginalLoss` (post-processing).
"""

from __future__ import annotations

import itertools
import logging
import math

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from dpknn.synth._tabular import CODES
from dpknn.utils._progress import progress_bar

logger = logging.getLogger(__name__)

# Clipping scales by C·(1 − 2⁻²⁰)/‖g‖: float32 rounding of the scaled norm stays below C.
_CLIP_SHRINK = 1.0 - 2.0**-20


def mlp(sizes, *, generator, leaky=False):
    """Linear layers with ReLU (LeakyReLU(0.2) for critics) between, initialised from ``generator``."""
    layers = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        lin = nn.Linear(a, b)
        # torch's own default initialisation, but drawn from our generator, not torch's global one.
        nn.init.kaiming_uniform_(lin.weight, a=math.sqrt(5), generator=generator)
        bound = 1 / math.sqrt(a)
        nn.init.uniform_(lin.bias, -bound, bound, generator=generator)
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(nn.LeakyReLU(0.2) if leaky else nn.ReLU())
    return nn.Sequential(*layers)


class DataGenerator(nn.Module):
    """z -> encoded row: a softmax per codes block (a straight-through Gumbel-softmax sample in
    training), a sigmoid per position."""

    def __init__(self, latent, hidden, segments, *, generator, tau=0.2):
        super().__init__()
        self.net = mlp([latent, hidden, hidden, segments[-1].stop], generator=generator)
        self.segments = tuple((s.start, s.stop, s.kind == CODES) for s in segments)
        self.tau = tau

    def forward(self, z, *, generator=None):
        h = self.net(z)
        parts = []
        for lo, hi, codes in self.segments:
            if codes:
                logits = h[:, lo:hi]
                if generator is not None:
                    u = torch.rand(logits.shape, generator=generator).clamp_(1e-10, 1 - 1e-7)
                    soft = torch.softmax((logits - torch.log(-torch.log(u))) / self.tau, dim=1)
                    # Straight-through: the critic sees an exact one-hot, as in the real rows, so it
                    # cannot tell fakes by their softness; the gradient is the soft sample's.
                    hard = torch.nn.functional.one_hot(soft.argmax(dim=1), hi - lo).to(soft.dtype)
                    parts.append(hard + soft - soft.detach())
                    continue
                parts.append(torch.softmax(logits, dim=1))
            else:
                parts.append(torch.sigmoid(h[:, lo:hi]))
        return torch.cat(parts, dim=1)


class MaskGenerator(nn.Module):
    """z -> mask in (0, 1)^d, sigmoid at temperature τ (MisGAN's relaxed mask)."""

    def __init__(self, latent, hidden, d, *, generator, tau=0.66):
        super().__init__()
        self.net = mlp([latent, hidden, hidden, d], generator=generator)
        self.tau = tau

    def forward(self, z):
        return torch.sigmoid(self.net(z) / self.tau)


def critic_input(x, m, column_attribute):
    """x ⊙ m (the mask expanded to columns) with the mask appended: the data critic's input."""
    return torch.cat([x * m[..., column_attribute], m], dim=-1)


def _gradient_penalty(f, real, fake, u):
    # One-sided (Lipschitz) penalty, max(0, ‖∇D‖ − 1)²: the two-sided one pulls a small slope up to 1
    # in whatever direction it has at first, and a critic of a binary mask then stays stuck with the
    # wrong sign (seen on a 70 % observed attribute: the mask generator collapsed to all observed).
    xi = u * real + (1 - u) * fake
    g = grad(f)(xi)
    return torch.clamp(torch.sqrt((g * g).sum() + 1e-12) - 1.0, min=0.0) ** 2


def per_example_gradients(critic_x, critic_m, real_in, real_m, fake_in, fake_m, u, *, gp_weight):
    """Per-example gradients of both critics' WGAN-GP loss, by ``vmap(grad)``.

    Example i's loss pairs its record with the i-th fake and a random interpolate:
    D_x(fake_i) − D_x(real_i) + λ·max(0, ‖∇D_x(ξ_i)‖ − 1)² plus the same for the mask critic, so the
    gradient penalty, which depends on the record, is inside the per-example gradient.

    Returns two dicts name -> tensor with a leading batch axis (data critic, mask critic).
    """
    px = {k: v.detach() for k, v in critic_x.named_parameters()}
    pm = {k: v.detach() for k, v in critic_m.named_parameters()}

    def loss(px, pm, r_in, r_m, f_in, f_m, u):
        def dx(v):
            return functional_call(critic_x, px, (v,)).squeeze(-1)

        def dm(v):
            return functional_call(critic_m, pm, (v,)).squeeze(-1)

        return (dx(f_in) - dx(r_in) + gp_weight * _gradient_penalty(dx, r_in, f_in, u[0])
                + dm(f_m) - dm(r_m) + gp_weight * _gradient_penalty(dm, r_m, f_m, u[1]))

    return vmap(grad(loss, argnums=(0, 1)), in_dims=(None, None, 0, 0, 0, 0, 0))(
        px, pm, real_in, real_m, fake_in, fake_m, u)


def clip_jointly(grads, clip):
    """Scale each example's gradient (all tensors of all dicts together) to L2 norm <= ``clip``.

    Returns the clipped dicts and the norms before clipping.
    """
    flat = [g.reshape(g.shape[0], -1) for d in grads for g in d.values()]
    norms = torch.sqrt(sum((f * f).sum(dim=1) for f in flat))
    factor = torch.clamp(clip * _CLIP_SHRINK / torch.clamp(norms, min=1e-30), max=1.0)
    out = tuple({k: g * factor.reshape(-1, *([1] * (g.dim() - 1))) for k, g in d.items()} for d in grads)
    return out, norms


def add_noise(summed, *, std, generator):
    """Each coordinate plus N(0, std²) (the Gaussian of the sampled Gaussian mechanism)."""
    return {k: v + std * torch.randn(v.shape, generator=generator, dtype=v.dtype) for k, v in summed.items()}


def poisson_batch(gen, n, q):
    """Indices of a Poisson sample: each of the n rows independently with probability q."""
    return np.flatnonzero(gen.random(n) < q)


class MarginalLoss:
    """The L1 distance between the generators' expected tables and released target tables.

    A generated row's attribute a is, in expectation over its draw, the vector
    e_a = [m_a·p_a, 1 − m_a] over a's codes and the gap (p_a the data generator's softmax over
    the codes, m_a the mask generator's probability that a is observed; the codes and the mask
    are drawn independently given the latent, as :meth:`DPMisGAN.sample` does). The expected
    table of a pair (a, b) is then the batch mean of e_a ⊗ e_b, a differentiable function of the
    generators, and its target is a released noisy table divided by its own noisy total.

    A second term fixes the values the data generator gives where its mask says "missing": the
    batch mean of p_a ⊗ p_b over every latent, whatever the masks, against the observed block of
    the same noisy table (rows observed on both attributes) over its own total. The critics see
    values only where the mask is 1, and the latent is shared with the mask, so without it the
    values under a gap are unconstrained, and ``sample(missing=False)`` drew them anywhere (on a
    2,000-row ACS extract at ε = 1, 22 % of travel times at the 200-minute top of the public
    range, none real). With it they follow the rows observed on the pair, MCAR's answer.

    The loss is the mean over the tables of the two L1 distances: a function of released values only.

    Parameters
    ----------
    segments : sequence of Segment
        The encoding's column blocks (its ``CODES`` blocks are read).
    tables : sequence of (tuple of int, ndarray)
        Attribute indices (one or two) and a released count table over their extended codes (the
        gap last on every axis).
    total : float or None
        The row count the tables are divided by: a public one, or None for the mean of the
        tables' own noisy totals (one noisy total can be negative when the noise swamps a small
        table; their mean rarely is). At least 1. An observed block is divided by its own total
        (at least 1).
    """

    def __init__(self, segments, tables, *, total=None):
        self.blocks = {s.attribute: (s.start, s.stop) for s in segments if s.kind == CODES}
        tables = [(tuple(a), np.asarray(t, dtype=np.float64)) for a, t in tables]
        total = float(np.mean([t.sum() for _, t in tables])) if total is None else float(total)
        self.tables = []
        for attrs, t in tables:
            observed = t[(slice(0, -1),) * t.ndim]
            self.tables.append((attrs, torch.as_tensor(t / max(total, 1.0), dtype=torch.float32),
                                torch.as_tensor(observed / max(observed.sum(), 1.0), dtype=torch.float32)))

    def __call__(self, probs, mask):
        """The loss for a batch of data-generator scores ``probs`` (b, p) and masks ``mask`` (b, d)."""
        ext, full = {}, {}
        for a, (lo, hi) in self.blocks.items():
            m = mask[:, a:a + 1]
            full[a] = probs[:, lo:hi]
            ext[a] = torch.cat([full[a] * m, 1.0 - m], dim=1)
        total = probs.new_zeros(())
        for attrs, target, observed in self.tables:
            for blocks, want in ((ext, target), (full, observed)):
                if len(attrs) == 1:
                    table = blocks[attrs[0]].mean(dim=0)
                else:
                    table = blocks[attrs[0]].T @ blocks[attrs[1]] / probs.shape[0]
                total = total + (table - want).abs().sum()
        return total / len(self.tables)


class Trainer:
    """MisGAN with DP-SGD on both critics; the state of one :meth:`DPMisGAN.fit`.

    With a :class:`MarginalLoss`, both generators also minimise ``marginal_weight`` times it, first
    alone for :meth:`pretrain` steps and then beside the critics' losses."""

    def __init__(self, enc, *, latent, hidden, lr, gp_weight, mask_weight, generator, ema_decay=0.999,
                 marginal_loss=None, marginal_weight=10.0, marginal_batch=1024):
        p, d = enc.n_columns, len(enc.attributes)
        self.column_attribute = torch.as_tensor(enc.column_attribute, dtype=torch.long)
        self.latent = latent
        self.gp_weight = gp_weight
        self.mask_weight = mask_weight
        self.gen = generator
        self.marginal_loss = marginal_loss
        self.marginal_weight = marginal_weight
        self.marginal_batch = marginal_batch
        self.data_generator = DataGenerator(latent, hidden, enc.segments, generator=generator)
        self.mask_generator = MaskGenerator(latent, hidden, d, generator=generator)
        self.critic_x = mlp([p + d, hidden, hidden, 1], generator=generator, leaky=True)
        self.critic_m = mlp([d, hidden, hidden, 1], generator=generator, leaky=True)
        betas = (0.5, 0.9)
        self.opt_c = torch.optim.Adam([*self.critic_x.parameters(), *self.critic_m.parameters()], lr=lr, betas=betas)
        self.opt_gx = torch.optim.Adam(self.data_generator.parameters(), lr=lr, betas=betas)
        self.opt_gm = torch.optim.Adam(self.mask_generator.parameters(), lr=lr, betas=betas)
        # Released generators: exponential moving averages of the trained ones (post-processing).
        def ema(average, current, count):
            # The decay warms up as (1 + t)/(10 + t), so that a short run is not an average that is
            # mostly the untrained initial weights (TensorFlow's ExponentialMovingAverage does the same).
            decay = min(ema_decay, (1.0 + float(count)) / (10.0 + float(count)))
            return decay * average + (1.0 - decay) * current

        self.data_average = torch.optim.swa_utils.AveragedModel(self.data_generator, avg_fn=ema)
        self.mask_average = torch.optim.swa_utils.AveragedModel(self.mask_generator, avg_fn=ema)

    def released(self):
        """The generators to release: the moving averages of the trained ones."""
        return self.data_average.module, self.mask_average.module

    def fakes(self, b):
        """b fake (critic input, mask) pairs, with the graph to the generators."""
        # One latent for both generators, so that a mask may depend on the values (MAR, MNAR).
        z = torch.randn((b, self.latent), generator=self.gen)
        m = self.mask_generator(z)
        x = self.data_generator(z, generator=self.gen)
        return critic_input(x, m, self.column_attribute), m

    def marginal_term(self):
        """``marginal_weight`` × the :class:`MarginalLoss` of a fresh batch of latents (0 without one)."""
        if self.marginal_loss is None:
            return torch.zeros(())
        z = torch.randn((self.marginal_batch, self.latent), generator=self.gen)
        return self.marginal_weight * self.marginal_loss(self.data_generator(z), self.mask_generator(z))

    def pretrain(self, steps, *, progress=False):
        """``steps`` steps of both generators on the marginal term alone: post-processing of the
        released tables, before the critics are trained. Returns the last loss."""
        last = math.nan
        params = [*self.data_generator.parameters(), *self.mask_generator.parameters()]
        for _ in progress_bar(range(steps), progress=progress, desc="DP-MisGAN tables", unit="step"):
            loss = self.marginal_term()
            for p, g in zip(params, torch.autograd.grad(loss, params)):
                p.grad = g
            self.opt_gx.step()
            self.opt_gm.step()
            last = float(loss.detach())
        return last

    def clipped_gradient_sum(self, x, m, clip):
        """Σ_i clip(∇ℓ_i) over the records (x, m) of a batch, and their gradient norms before clipping."""
        b = x.shape[0]
        if b == 0:
            return tuple({k: torch.zeros_like(v) for k, v in c.named_parameters()}
                         for c in (self.critic_x, self.critic_m)), torch.zeros(0)
        with torch.no_grad():
            fake_in, fake_m = self.fakes(b)
        u = torch.rand((b, 2), generator=self.gen)
        grads = per_example_gradients(self.critic_x, self.critic_m, critic_input(x, m, self.column_attribute), m,
                                      fake_in, fake_m, u, gp_weight=self.gp_weight)
        clipped, norms = clip_jointly(grads, clip)
        return tuple({k: g.sum(dim=0) for k, g in d.items()} for d in clipped), norms

    def critic_step(self, x, m, *, clip, std, expected_batch):
        """One sampled Gaussian mechanism: (Σ clipped + N(0, (σC)²)) / B, then an Adam step."""
        sums, norms = self.clipped_gradient_sum(x, m, clip)
        for module, s in zip((self.critic_x, self.critic_m), sums):
            noisy = add_noise(s, std=std, generator=self.gen)
            for name, p in module.named_parameters():
                p.grad = noisy[name] / expected_batch
        self.opt_c.step()
        return norms

    def generator_step(self, b):
        """One step of both generators against the (already private) critics: post-processing."""
        fake_in, fake_m = self.fakes(b)
        loss_x = -self.critic_x(fake_in).mean()
        loss_m = -self.critic_m(fake_m).mean()
        tables = self.marginal_term()
        gx = torch.autograd.grad(loss_x + tables, list(self.data_generator.parameters()), retain_graph=True)
        # MisGAN: the mask generator also serves the data critic, with weight α.
        gm = torch.autograd.grad(loss_m + self.mask_weight * loss_x + tables, list(self.mask_generator.parameters()))
        for p, g in zip(self.data_generator.parameters(), gx):
            p.grad = g
        for p, g in zip(self.mask_generator.parameters(), gm):
            p.grad = g
        self.opt_gx.step()
        self.opt_gm.step()
        self.data_average.update_parameters(self.data_generator)
        self.mask_average.update_parameters(self.mask_generator)
        return float(loss_x.detach()), float(loss_m.detach())


def train(trainer, x, m, *, q, steps, steps_per_epoch, n_critic, clip, sigma, expected_batch, np_gen,
          pretrain_steps=0, progress=False):
    """Run ``pretrain_steps`` generator steps on the tables (with a marginal loss), then ``steps``
    critic steps (a generator step after every ``n_critic``); curator diagnostics back."""
    if trainer.marginal_loss is not None and pretrain_steps:
        logger.info("DP-MisGAN: marginal loss %.4f after %d generator steps on the released tables",
                    trainer.pretrain(pretrain_steps, progress=progress), pretrain_steps)
        # The averages start from the pretrained generators, which are released even if no generator
        # step follows (n_critic > steps).
        trainer.data_average.update_parameters(trainer.data_generator)
        trainer.mask_average.update_parameters(trainer.mask_generator)
    xt = torch.as_tensor(x)
    mt = torch.as_tensor(m)
    n = x.shape[0]
    batch_sizes = np.empty(steps, dtype=np.int64)
    clipped = 0
    examples = 0
    gen_steps = 0
    history = []
    for t in progress_bar(range(steps), progress=progress, desc="DP-MisGAN", unit="step"):
        idx = torch.as_tensor(poisson_batch(np_gen, n, q))
        batch_sizes[t] = len(idx)
        norms = trainer.critic_step(xt[idx], mt[idx], clip=clip, std=sigma * clip, expected_batch=expected_batch)
        clipped += int((norms > clip).sum())
        examples += len(idx)
        if (t + 1) % n_critic == 0:
            lx, lm = trainer.generator_step(expected_batch)
            gen_steps += 1
        if (t + 1) % steps_per_epoch == 0 and gen_steps:
            history.append((lx, lm))
            logger.info("DP-MisGAN epoch %d: generator losses %.4f (data), %.4f (mask)", len(history), lx, lm)
    return {"batch_sizes": batch_sizes, "clipped_share": clipped / max(examples, 1), "generator_steps": gen_steps,
            "generator_losses": history}


@torch.no_grad()
def generate(data_generator, mask_generator, n, *, latent, generator):
    """n encoded rows (softmax scores for one-hot blocks) and their masks in (0, 1)."""
    z = torch.randn((n, latent), generator=generator)
    return data_generator(z).numpy(), mask_generator(z).numpy()
