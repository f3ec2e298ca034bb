"""DP-MisGAN: one DP-SGD critic step (per-record gradients with the gradient penalty, joint clipping,
noise) and the issue's goal, a fit on 10^4 census rows x 10 attributes at epsilon = 3 (20% MCAR)."""

import warnings

import numpy as np

try:
    import torch
except ImportError:  # asv skips a benchmark whose setup raises NotImplementedError
    torch = None


def _census(n):
    from dpknn.datasets import make_census, make_missing
    from dpknn.experiments._synthesis import census_attributes

    attrs = census_attributes()
    names = [a.name for a in attrs]
    return make_missing(make_census(n, missing="none", rng=0)[names], mechanism="mcar", rate=0.2, rng=1), attrs


class CriticStep:
    params = [16, 64, 256]
    param_names = ["batch"]

    def setup(self, batch):
        if torch is None:
            raise NotImplementedError("torch is not installed")
        from dpknn.synth import _misgan_torch as mt
        from dpknn.synth._tabular import TabularEncoding

        df, attrs = _census(batch)
        enc = TabularEncoding(attrs)
        x, m = enc.encode(df)
        self.x, self.m = torch.as_tensor(x), torch.as_tensor(m)
        self.trainer = mt.Trainer(enc, latent=64, hidden=128, lr=2e-4, gp_weight=10.0, mask_weight=0.2,
                                  generator=torch.Generator().manual_seed(0))

    def time_critic_step(self, batch):
        self.trainer.critic_step(self.x, self.m, clip=1.0, std=1.0, expected_batch=batch)


class FitGoal:
    """The issue's goal: <= 5 minutes for 10^4 rows x 10 attributes at epsilon = 3 (default settings)."""

    timeout = 900
    number = 1
    repeat = 1

    def setup(self):
        if torch is None:
            raise NotImplementedError("torch is not installed")
        self.df, self.attrs = _census(10_000)

    def time_fit_10k(self):
        from dpknn.synth import DPMisGAN

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gan = DPMisGAN(self.attrs, epsilon=3.0, n_rows=10_000, rng=0).fit(self.df)
        gan.sample(10_000, rng=np.random.default_rng(1))
