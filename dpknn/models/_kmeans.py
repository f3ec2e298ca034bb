"""Differentially private k-means: Lloyd's algorithm on noisy cluster counts and sums.

The course's Algorithm 2 (after Blum, Dwork, McSherry & Nissim 2005): from public initial
centres, each of T iterations assigns every record to its nearest current centre and releases,
for each cluster j, a noisy count n̂ⱼ and a noisy sum âⱼ of its records; the next centre is
âⱼ/n̂ⱼ (post-processing), or a uniform point of the domain when n̂ⱼ < 1.

**Budget split (as the course gives it).** ε is divided equally over the 2T releases:
ε' = ε/(2T) for the histogram of counts and ε' for the vector of sums in each iteration, so
basic composition gives ε in total.

**Sensitivities (add/remove one record).** The records are clamped into the public box
[lower, upper] and mapped to z = (x − mid)/(upper − lower) ∈ [−½, ½]^d; clustering runs in
these unit-width coordinates. Adding or removing a record changes one count by 1 and one
cluster's sum by z, of L1 norm at most d/2. (The course's 2 and 2 are for *replacing* a record
in a domain of L1 norm 1, where two clusters change; under add/remove one does, and a
replace-one guarantee of 2ε follows.)

**Noise.** Counts get two-sided geometric noise of scale 1/ε'. Sums are rounded to a public
power-of-two grid g and get discrete Laplace noise of scale Δ_g/ε' in grid steps, with
Δ_g = (d/2)/g + d: the rounding can move each of the d changed coordinates by one more step.
Both are drawn exactly (:mod:`dpknn.mechanisms._noise`).

Theorem relied on: the Laplace/geometric mechanism is ε-DP for a query of L1 sensitivity Δ with
scale Δ/ε (Dwork et al. 2006; Ghosh et al. 2012), basic composition (Dwork & Roth 2014,
Theorem 3.16) and post-processing.

References
----------
.. [1] Blum, Dwork, McSherry, Nissim (2005). "Practical privacy: the SuLQ framework", PODS.
.. [2] Su, Cao, Li, Bertino, Jin (2016). "Differentially private k-means clustering", CODASPY.
.. [3] Jiang (2025). Short course on data privacy (Algorithm 2, DP Lloyd's algorithm).
.. [4] Dwork, McSherry, Nissim, Smith (2006). "Calibrating noise to sensitivity in private data
   analysis".
"""

from __future__ import annotations

import logging
import typing

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin

from dpknn.accounting._budget import charge
from dpknn.mechanisms._additive import Geometric, Laplace
from dpknn.mechanisms._base import CuratorDiagnostics, PrivacyUnit, PublishedRecord, public_grid
from dpknn.mechanisms._randomness import as_source
from dpknn.schema._flags import check_not_imputed
from dpknn.utils._validation import Interval, check_is_fitted, record_features, validate_params

__all__ = ["DPKMeans"]

logger = logging.getLogger(__name__)

_CHUNK = 1 << 16   # rows per block of the assignment step


def _nearest(z, centres):
    """Index of the nearest centre of each row (squared Euclidean distance, blockwise)."""
    out = np.empty(len(z), dtype=np.int64)
    c2 = (centres**2).sum(axis=1)
    for s in range(0, len(z), _CHUNK):
        block = z[s:s + _CHUNK]
        out[s:s + _CHUNK] = np.argmin(c2[None, :] - 2.0 * block @ centres.T, axis=1)
    return out


class DPKMeans(ClusterMixin, BaseEstimator):
    """ε-DP k-means (Lloyd's algorithm with noisy counts and sums, the course's Algorithm 2).

    ε-DP under add/remove one record, with ε split as ε/(2T) per released histogram of counts
    and per released vector of sums (module docstring). The box ``bounds`` and the initial
    centres are public; records outside the box are clamped into it.

    Parameters
    ----------
    n_clusters : int, default 8
    epsilon : float
        Total privacy budget.
    bounds : (array-like, array-like)
        Public lower and upper bounds of each feature (lower < upper).
    max_iter : int, default 5
        T, the number of noisy iterations (public; each costs ε/T).
    init : array-like of shape (n_clusters, n_features) or None
        Public initial centres in data units; None: uniform in the box, drawn from ``rng``.
    rng : numpy.random.Generator, int or None
        Noise source (None: the operating system's CSPRNG) and initial/replacement centres.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        Released centres, in data units.
    counts_ : ndarray of int
        The released noisy counts of the last iteration.
    history_ : list of dict
        Every iteration's released values: ``counts`` (noisy integers), ``sums`` (noisy sums of
        the unit-width coordinates z) and ``centers`` (data units). All public.
    epsilon_ : float
    curator_ : CuratorDiagnostics
        CONFIDENTIAL: true cluster sizes per iteration and the number of clamped rows.
    """

    parameter_constraints: typing.ClassVar[dict] = {
        "n_clusters": Interval("int", 1, None, closed="left"),
        "epsilon": Interval("real", 0, None, closed="neither"),
        "max_iter": Interval("int", 1, None, closed="left"),
    }

    def __init__(self, n_clusters=8, *, epsilon, bounds, max_iter=5, init=None, rng=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.bounds = bounds
        self.max_iter = max_iter
        self.init = init
        self.rng = rng

    # --- validation ------------------------------------------------------------------------
    def _box(self):
        try:
            lower, upper = self.bounds
        except (TypeError, ValueError):
            raise ValueError(f"bounds must be a pair (lower, upper) of arrays, got {self.bounds!r}.") from None
        lower = np.atleast_1d(np.asarray(lower, dtype=np.float64))
        upper = np.atleast_1d(np.asarray(upper, dtype=np.float64))
        if lower.ndim != 1 or lower.shape != upper.shape:
            raise ValueError(f"bounds must be two 1-d arrays of one length, got shapes {lower.shape} and "
                             f"{upper.shape}.")
        if not (np.isfinite(lower).all() and np.isfinite(upper).all() and (lower < upper).all()):
            raise ValueError(f"bounds must be finite with lower < upper, got {self.bounds!r}.")
        return lower, upper

    def _split(self, epsilon, iterations):
        """ε per released histogram of counts and per released vector of sums."""
        share = epsilon / (2 * iterations)
        return share, share

    def _initial(self, k, lower, upper, gen):
        if self.init is None:
            return gen.uniform(-0.5, 0.5, size=(k, lower.size))
        init = np.asarray(self.init, dtype=np.float64)
        if init.shape != (k, lower.size):
            raise ValueError(f"init must have shape (n_clusters, n_features) = {(k, lower.size)}, got {init.shape}.")
        if not np.isfinite(init).all():
            raise ValueError("init must be finite.")
        return np.clip((init - (lower + upper) / 2) / (upper - lower), -0.5, 0.5)

    # --- fitting ---------------------------------------------------------------------------
    def fit(self, X, y=None, *, accountant=None):
        """Release the centres of ``X``, spending ``epsilon`` (from ``accountant`` if given).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            No missing values (impute them first, e.g. with :func:`dpknn.processing.impute`).
        y : ignored
        accountant : BudgetAccountant or None
            Charged ε before the data are read; refused with nothing computed if it does not fit. None: a
            new accountant holding exactly ε (:func:`~dpknn.accounting.charge`); either is kept as
            ``accountant_``.

        Returns
        -------
        self
        """
        check_not_imputed(X, "X")  # a DataFrame from KNNImputer carries its flags
        params = validate_params(self)
        k, eps, iterations = params["n_clusters"], params["epsilon"], params["max_iter"]
        lower, upper = self._box()
        self.accountant_ = charge(accountant, eps, 0.0, label=f"DPKMeans(n_clusters={k}, max_iter={iterations})")
        if hasattr(X, "columns"):
            record_features(self, X)
        x = np.asarray(X, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != lower.size:
            raise ValueError(f"X must have shape (n_samples, {lower.size}) to match bounds, got {x.shape}.")
        if np.isnan(x).any():
            raise ValueError("X has missing values; impute them first (dpknn.processing) with public values.")
        self.n_features_in_ = x.shape[1]
        src = as_source(self.rng)
        gen = src.generator if src.generator is not None else np.random.default_rng()
        width, mid = upper - lower, (lower + upper) / 2
        clamped = int(((x < lower) | (x > upper)).any(axis=1).sum())
        z = (np.clip(x, lower, upper) - mid) / width
        d = z.shape[1]
        eps_count, eps_sum = self._split(eps, iterations)
        # A histogram of counts (L1 sensitivity 1) and the k x d sums of coordinates in [-1/2, 1/2]
        # (L1 sensitivity d/2, each coordinate rounded to the public grid) per iteration.
        counts_mech = Geometric(epsilon=eps_count, sensitivity=1)
        sums_mech = Laplace(epsilon=eps_sum, sensitivity=d / 2, grid=public_grid((d / 2) / eps_sum), coordinates=d)
        centres = self._initial(k, lower, upper, gen)
        history, sizes = [], []
        for t in range(iterations):
            labels = _nearest(z, centres)
            n = np.bincount(labels, minlength=k)
            sums = np.column_stack([np.bincount(labels, weights=z[:, j], minlength=k) for j in range(d)])
            noisy_n = counts_mech.release_array(n, rng=src)
            noisy_sums = sums_mech.release_array(sums, rng=src)
            new = np.empty_like(centres)
            for j in range(k):
                new[j] = noisy_sums[j] / noisy_n[j] if noisy_n[j] >= 1 else gen.uniform(-0.5, 0.5, size=d)
            centres = np.clip(new, -0.5, 0.5)
            history.append({"counts": noisy_n, "sums": noisy_sums, "centers": mid + centres * width})
            sizes.append(n)
            logger.debug("DPKMeans iteration %d of %d released", t + 1, iterations)
        self.cluster_centers_ = mid + centres * width
        self.counts_ = history[-1]["counts"]
        self.history_ = history
        self.n_iter_ = iterations
        self.epsilon_ = eps
        self.grid_ = sums_mech.grid
        self._public_inputs = {"n_clusters": k, "max_iter": iterations, "bounds": [lower.tolist(), upper.tolist()]}
        if self.init is not None:
            self._public_inputs["init"] = np.asarray(self.init, dtype=np.float64).tolist()
        self._scaled_centres = centres
        self._box_cache = (mid, width)
        self.curator_ = CuratorDiagnostics({"cluster_sizes": [s.tolist() for s in sizes], "clamped_rows": clamped,
                                            "rows": len(x)})
        return self

    def predict(self, X):
        """Index of the nearest released centre of each row (in the box's unit-width coordinates)."""
        check_is_fitted(self, "cluster_centers_")
        x = np.asarray(X, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have shape (n_samples, {self.n_features_in_}), got {x.shape}.")
        mid, width = self._box_cache
        return _nearest(np.clip((x - mid) / width, -0.5, 0.5), self._scaled_centres)

    def public_record(self):
        """What the fit may publish (:class:`~dpknn.mechanisms.PublishedRecord`): ε (δ = 0) under add/remove one
        record, the public parameters (k, T, the box, the sums' grid, the initial centres when given) and the
        released values (every iteration's noisy counts and sums and the centres they give). The true cluster
        sizes and the clamped rows stay in ``curator_``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        """
        check_is_fitted(self, "cluster_centers_")
        # The inputs the fit used (set_params after fit changes the estimator, not what was released).
        params = {"method": "DP k-means", **self._public_inputs, "grid": self.grid_}
        params.update(cluster_centers=self.cluster_centers_.tolist(), counts=np.asarray(self.counts_).tolist(),
                      history=[{k: np.asarray(v).tolist() for k, v in step.items()} for step in self.history_])
        return PublishedRecord(epsilon=self.epsilon_, delta=0.0, unit=PrivacyUnit.ADD_REMOVE, params=params)

    def fit_predict(self, X, y=None, *, accountant=None):
        return self.fit(X, accountant=accountant).predict(X)
