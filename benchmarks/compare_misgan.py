"""DP-MisGAN against the same MisGAN trained without privacy, and against PrivBayes, on public tables.

For each table (those of ``compare_synthesis.py``) this trains:

- ``misgan (non-private)``: the networks, losses and steps of :class:`dpknn.synth.DPMisGAN`, with
  plain mini-batch gradients (no clipping, no noise) and, when ``marginal_share`` > 0, the exact
  two-way tables as the generators' targets: the reference a DP version can at best reach;
- ``dp-misgan eps=E`` for each requested ε (valid accounting, public ``n_rows``);
- ``privbayes-value eps=E``: PrivBayes (its default degree) with missingness as a value (it reproduces gaps,
  as the GAN does) at the largest requested ε: the issue's yardstick.

and prints the mean 2-way TVD on the public scoring bins with a missing cell as a category
(``dpknn.metrics.tvd``), the seconds of fit + sample, and the ratios to the non-private MisGAN and
to PrivBayes. A bootstrap of the training rows gives the sampling floor (a perfect model of the
training rows scores about this).

    python benchmarks/compare_misgan.py --tables slid,chile --epsilons 1000,4,1 --seeds 0
    python benchmarks/compare_misgan.py --tables slid --epsilons 1000 --marginal-share 0   # adversarial only
"""

import argparse
import json
import sys
import time
import warnings

import numpy as np
import pandas as pd
from compare_synthesis import table

from dpknn.metrics import tvd
from dpknn.synth import DPMisGAN, PrivBayes


def nonprivate_misgan(attrs, train, gan, seed):
    """The GAN of ``gan`` (a DPMisGAN, for its settings) trained without clipping or noise."""
    import torch

    from dpknn.schema._marginals import count_tables, extended_codes
    from dpknn.synth import _misgan_torch as mt
    from dpknn.synth._misgan import table_sets
    from dpknn.synth._tabular import TabularEncoding

    enc = TabularEncoding(attrs, bins=gan.bins, edges=gan.bin_edges)
    x, m = enc.encode(train)
    n = len(train)
    b = gan.batch_for(n)
    loss = None
    if gan.marginal_share > 0:   # the exact tables: what noisy ones estimate
        sizes = enc.discretization.sizes
        sets = table_sets(len(sizes))
        exact = count_tables(extended_codes(enc.discretization.encode(train), sizes), sizes, sets)
        loss = mt.MarginalLoss(enc.segments, list(zip(sets, exact)))
    trainer = mt.Trainer(enc, latent=gan.latent_dim, hidden=gan.hidden, lr=gan.lr, gp_weight=gan.gp_weight,
                         mask_weight=gan.mask_weight, generator=torch.Generator().manual_seed(seed),
                         marginal_loss=loss, marginal_weight=gan.marginal_weight)
    mt.train(trainer, x, m, q=b / n, steps=gan.epochs * (n // b), steps_per_epoch=n // b, n_critic=gan.n_critic,
             clip=1e30, sigma=0.0, expected_batch=b, np_gen=np.random.default_rng(seed),
             pretrain_steps=gan.pretrain_steps)
    xs, ms = mt.generate(*trainer.released(), n, latent=gan.latent_dim,
                         generator=torch.Generator().manual_seed(seed + 1))
    gen = np.random.default_rng(seed + 1)
    return enc.decode(xs, (gen.random(ms.shape) < ms).astype(np.float32), rng=gen)


def synthesize(method, eps, attrs, train, seed, extra):
    """Synthetic rows of ``method`` (a label of :func:`main`) at ``eps``, as many as ``train``."""
    n = len(train)
    if method == "bootstrap":
        return train.sample(n, replace=True, random_state=seed).reset_index(drop=True)
    if method == "misgan":
        return nonprivate_misgan(attrs, train, DPMisGAN(attrs, epsilon=1.0, **extra), seed)
    if method == "privbayes":
        return PrivBayes(attrs, epsilon=eps, missing="value", rng=seed).fit(train).sample(n, rng=seed + 1)
    return DPMisGAN(attrs, epsilon=eps, n_rows=n, rng=seed, **extra).fit(train).sample(n, rng=seed + 1, missing=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="slid,chile,cps-mar")
    ap.add_argument("--epsilons", default="1000,4,1")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--epochs", type=int, default=None, help="DPMisGAN's epochs (default: its default)")
    ap.add_argument("--marginal-share", type=float, default=None,
                    help="DPMisGAN's marginal_share (default: its default; 0: the adversarial losses alone)")
    ap.add_argument("--out", default=None, help="CSV of every run")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    epsilons = [float(e) for e in args.epsilons.split(",")]
    rows = []
    for name in args.tables.split(","):
        df, attrs, _, _ = table(name)
        df = df[[a.name for a in attrs]]
        train = df[np.random.default_rng(0).random(len(df)) < 0.8].reset_index(drop=True)
        extra = {k: v for k, v in (("epochs", args.epochs), ("marginal_share", args.marginal_share))
                 if v is not None}
        top = max(epsilons)
        plan = [("bootstrap of the training rows", "bootstrap", None), ("misgan (non-private)", "misgan", None),
                (f"privbayes-value eps={top:g}", "privbayes", top),
                *[(f"dp-misgan eps={e:g}", "dp-misgan", e) for e in epsilons]]
        for seed in [int(s) for s in args.seeds.split(",")]:
            for label, method, eps in plan:
                t = time.perf_counter()
                syn = synthesize(method, eps, attrs, train, seed, extra)
                rows.append({"table": name, "seed": seed, "method": label, "tvd2": tvd(train, syn, attrs),
                             "seconds": time.perf_counter() - t})
                print(json.dumps(rows[-1]), flush=True)
    res = pd.DataFrame(rows)
    if args.out:
        res.to_csv(args.out, index=False)
    table_ = res.groupby(["table", "method"], sort=False)[["tvd2", "seconds"]].mean()
    ref = table_.tvd2.xs("misgan (non-private)", level="method")
    pb = table_.tvd2.xs(f"privbayes-value eps={max(epsilons):g}", level="method")
    table_["/ non-private"] = table_.tvd2 / ref.reindex(table_.index.get_level_values("table")).to_numpy()
    table_["/ privbayes"] = table_.tvd2 / pb.reindex(table_.index.get_level_values("table")).to_numpy()
    print(table_.round(4).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
