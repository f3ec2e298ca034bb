"""The paper's "global sensitivity" comparison (Clifton et al. 2022, §6.3). NOT differentially private.

The paper compares its smooth-sensitivity releases with Laplace noise at an "optimistic global
sensitivity" that replaces L1(D) by the number of missing records. That number depends on the
data, so the noise scale itself reveals the data and the release is **not** differentially
private. It is kept only to reproduce the paper's figures (``dpknn experiment census``, the demo's
curator report) and, behind ``--allow-non-dp``, in ``dpknn release``; :mod:`dpknn.releases._queries` never
offers it.

References
----------
.. [1] Clifton, Hanson, Kifer, Shamis, et al. (2022), §6.3.
"""

from __future__ import annotations

from dpknn.mechanisms._additive import Laplace
from dpknn.releases._query import check_where, involves_imputed, numeric_bounds
from dpknn.releases._sensitivity import count_global, mean_global
from dpknn.releases._statistics import universe_of

__all__ = ["NOT_DP", "global_baseline"]

NOT_DP = ("NOT differentially private: the paper's global-sensitivity comparison (Clifton et al. 2022, §6.3), "
          "whose noise scale 1 + (number of missing records) depends on the data")


def global_baseline(private, kind, *, column=None, where=None, within=None, bounds=None, epsilon,
                    count_epsilon=None, denominator_epsilon=None):
    """Value of the paper's non-private comparison for a count, proportion or mean.

    Parameters
    ----------
    private : PrivateImputation
        In memory (its statistics give the values); gives the noise source.
    kind : {"count", "proportion", "mean"}

    Returns
    -------
    float
        The (NOT differentially private) value. No budget is recorded.
    """
    if kind not in ("count", "proportion", "mean"):
        raise ValueError(f"the global baseline covers count, proportion and mean, not {kind!r}.")
    stats, schema, rng = private.statistics, private.schema, private.rng
    n_missing = stats.n_incomplete
    where = check_where(schema, where)

    def count(cond, eps):
        involves = involves_imputed(schema, cond)
        mech = Laplace(epsilon=eps, sensitivity=count_global(n_missing if involves else 0))
        return mech.release(stats.count(cond), rng=rng).value

    # Values are left unclipped (except the ratio), as in the paper's comparison.
    if kind == "count":
        return count(where, epsilon)
    if kind == "proportion":
        within = check_where(schema, within, "within")
        num = count({**within, **where}, epsilon)
        den = count(within, epsilon if denominator_epsilon is None else denominator_epsilon)
        return min(max(num / max(den, 1.0), 0.0), 1.0)
    bounds = numeric_bounds(schema, column, bounds)
    s = max(float(count(where, count_epsilon)), 1.0)
    involves_where = involves_imputed(schema, where)
    affected = n_missing if involves_where or column in schema.imputed_names else 0
    mech = Laplace(epsilon=epsilon, sensitivity=mean_global(bounds, s, affected, depends_on_imputed=involves_where))
    values = stats.values(column, where, bounds, universe=universe_of(schema, column))
    return mech.release(float(values.sum()) / s, rng=rng).value
