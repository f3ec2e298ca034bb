"""A small public-domain table with a universe and gaps, shared by the AIM and MST tests."""

import numpy as np
import pandas as pd

from dpknn import Categorical, Continuous, Ordinal

ATTRS = [Ordinal("AGE", 0, 99), Categorical("SEX", [1, 2]), Categorical("WORK", ["yes", "no"]),
         Continuous("INCOME", 0, 100_000, universe={"AGE": {"low": 15}})]


def people(n, seed=0):
    """``n`` people: income only from age 15 (its universe), and 20 % of it missing there."""
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 100, n)
    work = np.where(rng.random(n) < np.clip((age - 15) / 30, 0, 0.8), "yes", "no")
    income = np.where(work == "yes", rng.gamma(2, 15_000, n), rng.gamma(1, 3_000, n)).clip(0, 100_000)
    income[age < 15] = np.nan
    df = pd.DataFrame({"AGE": age, "SEX": rng.integers(1, 3, n), "WORK": work, "INCOME": income})
    df.loc[(rng.random(n) < 0.2) & (age >= 15), "INCOME"] = np.nan
    return df
