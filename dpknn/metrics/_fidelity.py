"""Fidelity of synthetic data: k-way marginal distance and machine-learning efficacy.

- :func:`tvd`: the total variation distance ½·Σ|P − Q| between the real and synthetic
  distributions of every set of ``way`` attributes, on the public bins of
  :class:`~dpknn.schema.Discretization`, averaged over the sets. Mohapatra et al. (2024,
  §6.1) write the sum without the ½; their figures are twice these.
- :func:`ml_efficacy`: the F1 score of classifiers trained on the synthetic data and tested on
  real records held out from the synthesiser, each attribute in turn the (binarised) target
  (Mohapatra et al. 2024, §6.1; Ge et al. 2021).

Both are evaluations for the curator: they read the real data and are not releases.

References
----------
.. [1] Mohapatra, Zong, Kerschbaum, He (2024). "Differentially private data generation with
   missing data", §6.1 (metrics).
.. [2] Zhang, Cormode, Procopiuc, Srivastava, Xiao (2017). "PrivBayes", ACM TODS, §6 (α-way
   marginals and total variation distance).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpknn.schema._discretization import Discretization
from dpknn.schema._marginals import count_tables, extended_codes, observed_block
from dpknn.utils._validation import check_positive_int, check_rng

__all__ = ["MODELS", "MlEfficacy", "ml_efficacy", "tvd"]


def _tables(df, disc, sets):
    codes = disc.encode(df)
    return count_tables(extended_codes(codes, disc.sizes), disc.sizes, sets)


def tvd(real, synthetic, attributes, *, way=2, bins=10, missing="value"):
    """Mean total variation distance between real and synthetic ``way``-way marginals.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Both hold the attribute columns.
    attributes : sequence of Ordinal, Categorical or Continuous
    way : int, default 2
        Size of the attribute sets (every combination is used).
    bins : int, default 10
        Public bins of numeric attributes.
    missing : {"value", "observed"}, default "value"
        "value": a missing cell is one more category (so a synthesiser that drops missingness
        is charged for it); "observed": each marginal on the rows observed on its attributes,
        in both tables.

    Returns
    -------
    float
        In [0, 1]: 0 for identical marginals, 1 for disjoint ones.
    """
    disc = Discretization(attributes, bins)
    way = check_positive_int(way, "way")
    if way > min(len(disc.attributes), 4):
        raise ValueError(f"way must be at most min(number of attributes, 4) = {min(len(disc.attributes), 4)}, "
                         f"got {way}.")
    if missing not in ("value", "observed"):
        raise ValueError(f"missing must be 'value' or 'observed', got {missing!r}.")
    sets = list(itertools.combinations(range(len(disc.attributes)), way))
    block = (lambda t: t.astype(np.int64)) if missing == "value" else observed_block
    dists = []
    for p, q in zip(_tables(real, disc, sets), _tables(synthetic, disc, sets)):
        p, q = block(p).astype(np.float64), block(q).astype(np.float64)
        if p.sum() == 0 or q.sum() == 0:
            raise ValueError("a marginal has no observed rows in one of the tables; use missing='value'.")
        dists.append(0.5 * np.abs(p / p.sum() - q / q.sum()).sum())
    return float(np.mean(dists))


def _model(name, seed):
    from sklearn.ensemble import (
        AdaBoostClassifier,
        BaggingClassifier,
        GradientBoostingClassifier,
        RandomForestClassifier,
    )
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import BernoulliNB
    from sklearn.neural_network import MLPClassifier
    from sklearn.tree import DecisionTreeClassifier

    return {
        "logistic_regression": lambda: LogisticRegression(max_iter=500),
        "random_forest": lambda: RandomForestClassifier(n_estimators=50, random_state=seed, n_jobs=-1),
        "decision_tree": lambda: DecisionTreeClassifier(random_state=seed),
        "bernoulli_nb": lambda: BernoulliNB(),
        "adaboost": lambda: AdaBoostClassifier(random_state=seed),
        "gradient_boosting": lambda: GradientBoostingClassifier(random_state=seed),
        "bagging": lambda: BaggingClassifier(random_state=seed),
        "mlp": lambda: MLPClassifier(max_iter=200, random_state=seed),
    }[name]()


#: Classifiers :func:`ml_efficacy` knows (the paper's nine less XGBoost, not a dependency).
MODELS = ("logistic_regression", "random_forest", "decision_tree", "bernoulli_nb", "adaboost",
          "gradient_boosting", "bagging", "mlp")


@dataclass(frozen=True)
class MlEfficacy:
    """Result of :func:`ml_efficacy`.

    Attributes
    ----------
    f1 : float
        Mean F1 over targets and models.
    scores : pandas.DataFrame
        F1 per target (rows) and model (columns).
    """

    f1: float
    scores: pd.DataFrame


def _binarise(codes, size):
    """A split of the codes into two classes as balanced as possible on the real test rows.

    Greedy on the codes sorted by frequency: each code goes to the smaller class so far.
    """
    freq = np.bincount(codes, minlength=size)
    positive = np.zeros(size, dtype=bool)
    load = [0, 0]
    for c in np.argsort(-freq, kind="stable"):
        side = int(load[1] < load[0])
        positive[c] = bool(side)
        load[side] += freq[c]
    return positive


def _onehot(codes, sizes, keep):
    """One-hot features of the attributes ``keep``; a missing cell (code −1) has its own column."""
    blocks = []
    for j in keep:
        c = np.where(codes[j] < 0, sizes[j], codes[j])
        blocks.append(np.eye(sizes[j] + 1, dtype=np.float32)[c])
    return np.hstack(blocks)


def ml_efficacy(synthetic, real_test, attributes, *, targets=None, models=("logistic_regression", "random_forest",
                "decision_tree", "bernoulli_nb"), bins=10, rng=None):
    """F1 of classifiers trained on ``synthetic`` and tested on held-out real records.

    Each target attribute is binarised by a split of its public codes that balances the two
    classes on ``real_test``; the features are the other attributes, one-hot on their public
    codes (a missing cell is its own indicator). Test rows with a missing target are skipped.
    A target whose synthetic column has a single class scores F1 = 0 for a positive class it
    cannot predict.

    Parameters
    ----------
    synthetic : pandas.DataFrame
        Training data (all its rows; the paper trains on 70% of them).
    real_test : pandas.DataFrame
        Real records never shown to the synthesiser (the paper's 30% split).
    attributes : sequence of Ordinal, Categorical or Continuous
    targets : list of str or None
        Attribute names to predict; None: all.
    models : sequence of str
        Names from :data:`MODELS`. The paper averages nine, including XGBoost.
    bins : int, default 10
    rng : numpy.random.Generator, int or None
        Seeds the randomised classifiers.

    Returns
    -------
    MlEfficacy
    """
    from sklearn.metrics import f1_score

    disc = Discretization(attributes, bins)
    names = disc.names
    targets = names if targets is None else list(targets)
    bad = [t for t in targets if t not in names]
    if bad:
        raise ValueError(f"targets must be attribute names, got {bad}.")
    unknown = [m for m in models if m not in MODELS]
    if unknown or not models:
        raise ValueError(f"models must be a non-empty list of {MODELS}, got {list(models)!r}.")
    seed = int(check_rng(rng).integers(2**31))
    train, test, sizes = disc.encode(synthetic), disc.encode(real_test), disc.sizes
    rows = {}
    for t in targets:
        j = names.index(t)
        others = [i for i in range(len(names)) if i != j]
        have = test[j] >= 0
        positive = _binarise(test[j][have], sizes[j])
        y_test = positive[test[j][have]]
        x_test = _onehot(test[:, have], sizes, others)
        keep = train[j] >= 0
        y_train = positive[train[j][keep]]
        x_train = _onehot(train[:, keep], sizes, others)
        row = {}
        for name in models:
            if np.unique(y_train).size < 2:
                pred = np.full(y_test.shape, bool(y_train[0]) if y_train.size else False)
            else:
                pred = _model(name, seed).fit(x_train, y_train).predict(x_test)
            row[name] = f1_score(y_test, pred, zero_division=0.0)
        rows[t] = row
    scores = pd.DataFrame.from_dict(rows, orient="index")[list(models)]
    return MlEfficacy(f1=float(scores.to_numpy().mean()), scores=scores)
