"""Query files: the ``[[query]]`` tables of ``docs/queries.md``, read and asked.

A query file lists the releases a curator plans (count, proportion, mean, variance), each with
its conditions, bounds, method and budgets. :func:`read_queries` checks every entry against a
schema before any data are read; :func:`ask` makes one release with a
:class:`~dpknn.releases.PrivateImputation` and :func:`release_queries` all of a file's, as the
:class:`ReleaseSet` that ``dpknn release`` publishes. The curator's report
(:func:`dpknn.releases.curator_report`) rehearses them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from dpknn.mechanisms._base import PrivacyUnit
from dpknn.releases._baseline import NOT_DP, global_baseline
from dpknn.schema._conditions import check_condition
from dpknn.utils._io import read_toml
from dpknn.utils._progress import progress_bar
from dpknn.utils._validation import check_keys

__all__ = ["ReleaseSet", "ask", "read_queries", "release_queries"]

QUERY_KEYS = {
    "count": {"where"}, "proportion": {"where", "within", "denominator_epsilon"},
    "mean": {"column", "where", "bounds", "count_epsilon"},
    "variance": {"column", "where", "bounds", "count_epsilon", "mean_epsilon"},
}
BUDGET_KEYS = ("epsilon", "count_epsilon", "mean_epsilon", "denominator_epsilon")


def _where(spec, name, key, schema):
    """TOML conditions: ``{low = .., high = ..}`` is an inclusive range (either end optional); an
    array lists allowed values of an Ordinal or Categorical attribute. Checked against the schema."""
    if not isinstance(spec, dict):
        raise ValueError(f"query {name!r}: {key} must be a table of column conditions, got {spec!r}.")
    names = schema.known_names + schema.imputed_names
    out = {}
    for col, cond in spec.items():
        if col not in names:
            raise ValueError(f"query {name!r}: {key} names column {col!r}, which is not in the schema "
                             f"(attributes: {list(names)}).")
        if isinstance(cond, dict):
            check_keys(cond, {"low", "high"}, f"query {name!r}: condition on {col!r}",
                       hint="a range is {low = .., high = ..}")
            cond = (cond.get("low"), cond.get("high"))
        elif not isinstance(cond, list):
            raise ValueError(f"query {name!r}: condition on {col!r} must be a range {{low = .., high = ..}} or an "
                             f"array of values, got {cond!r}.")
        out[col] = check_condition(schema.attribute(col), cond, f"query {name!r}: {key}.{col}")
    return out


def _budget(q, key, name):
    v = q[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"query {name!r}: {key} must be a finite number > 0, got {v!r}.")
    return float(v)


def query_cost(query):
    """Total ε of one parsed query (a proportion's denominator costs ``epsilon`` unless given)."""
    costs = [query[k] for k in BUDGET_KEYS if k in query]
    if query["type"] == "proportion" and "denominator_epsilon" not in query:
        costs.append(query["epsilon"])
    return math.fsum(costs)


def read_queries(path, schema, *, allow_non_dp=False):
    """Parse a TOML file of ``[[query]]`` tables (``docs/queries.md``) against ``schema``.

    Parameters
    ----------
    path : str or Path
    schema : Schema
        Conditions, columns and bounds are checked against it.
    allow_non_dp : bool, default False
        Accept ``method = "global"`` (the paper's comparison, NOT differentially private).

    Returns
    -------
    (list of dict, float)
        The queries (``name``, ``type`` and the keyword arguments of the matching
        :class:`~dpknn.releases.PrivateImputation` method) and their total ε. Everything is
        checked before any data are read.

    Raises
    ------
    ValueError
        Naming the query and the key at fault.
    """
    path = Path(path)
    spec = read_toml(path, "queries file")
    check_keys(spec, {"query"}, f"queries file {str(path)!r}", hint="use [[query]] tables")
    queries = spec.get("query")
    if not isinstance(queries, list) or not queries:
        raise ValueError(f"queries file {str(path)!r} must hold one or more [[query]] tables.")
    parsed = []
    for i, q in enumerate(queries):
        q = dict(q)
        name = str(q.pop("name", f"query {i + 1}"))
        kind = q.pop("type", None)
        if kind not in QUERY_KEYS:
            raise ValueError(f"query {name!r}: type must be one of {sorted(QUERY_KEYS)}, got {kind!r}.")
        if "epsilon" not in q:
            raise ValueError(f"query {name!r}: epsilon is required.")
        allowed = QUERY_KEYS[kind] | {"epsilon", "method", "noise", "gamma"}
        check_keys(q, allowed, f"query {name!r} ({kind})")
        for key in ("count_epsilon", "mean_epsilon"):
            if key in QUERY_KEYS[kind] and key not in q:
                raise ValueError(f"query {name!r}: {key} is required for a {kind}.")
        if kind in ("mean", "variance") and "column" not in q:
            raise ValueError(f"query {name!r}: column is required for a {kind}.")
        if q.get("noise", "polyplace") not in ("polyplace", "cauchy"):
            raise ValueError(f"query {name!r}: noise must be \"polyplace\" (the default) or \"cauchy\" (the paper's), "
                             f"got {q['noise']!r}.")
        if "gamma" in q and q.get("noise") != "cauchy":
            raise ValueError(f"query {name!r}: gamma sets the generalized Cauchy noise; add noise = \"cauchy\".")
        method = q.get("method", "smooth")
        if method not in ("smooth", "ignore_missing", "global"):
            raise ValueError(f"query {name!r}: method must be smooth or ignore_missing, got {method!r}.")
        if method == "global":
            if not allow_non_dp:
                raise ValueError(f"query {name!r}: method = \"global\" is the paper's comparison and is NOT "
                                 "differentially private; pass --allow-non-dp to compute it anyway.")
            if kind == "variance":
                raise ValueError(f"query {name!r}: the global comparison covers count, proportion and mean only.")
        for key in ("where", "within"):
            if key in q:
                q[key] = _where(q[key], name, key, schema)
        if "bounds" in q:
            b = q["bounds"]
            if (not isinstance(b, list) or len(b) != 2
                    or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in b)):
                raise ValueError(f"query {name!r}: bounds must be an array of two numbers [low, high], got {b!r}.")
            q["bounds"] = tuple(b)
        for key in BUDGET_KEYS:
            if key in q:
                q[key] = _budget(q, key, name)
        if method == "smooth":
            _check_smooth_budgets(name, kind, q, schema)
        parsed.append({"name": name, "type": kind, **q})
    return parsed, math.fsum(query_cost(q) for q in parsed)


def _smooth_budgets(kind, q, schema):
    """The budget keys of a query that a smooth-sensitivity mechanism would spend (those whose release
    reads an imputed attribute), as in :class:`~dpknn.releases.PrivateImputation`."""
    imputed = set(schema.imputed_names)
    where = bool(imputed & set(q.get("where") or {}))
    within = bool(imputed & set(q.get("within") or {}))
    column = q.get("column") in imputed
    if kind == "count":
        return ["epsilon"] if where else []
    if kind == "proportion":
        return [k for k, smooth in (("epsilon", where or within),
                                    ("denominator_epsilon" if "denominator_epsilon" in q else "epsilon", within))
                if smooth]
    keys = ["count_epsilon"] if where else []
    if where or column:
        keys += ["epsilon"] + (["mean_epsilon"] if kind == "variance" else [])
    return keys


def _check_smooth_budgets(name, kind, q, schema):
    """Refuse, before any data are read, a smooth release whose ε its noise cannot use."""
    from dpknn.mechanisms._smooth import choose_gamma, choose_polyplace

    noise = q.get("noise", "polyplace")
    for key in dict.fromkeys(_smooth_budgets(kind, q, schema)):
        try:
            if noise == "cauchy":
                choose_gamma(q[key], q.get("gamma", "optimal"))
            else:
                choose_polyplace(q[key])
        except ValueError:
            need = ("epsilon > 2 ln 2 = 1.3863 with noise = \"cauchy\" (the default PolyPlace noise needs only "
                    "epsilon > ln 2)" if noise == "cauchy" else "epsilon > ln 2 = 0.6931")
            raise ValueError(f"query {name!r}: {key} = {q[key]:g} is too small for a smooth-sensitivity release, "
                             f"which needs {need}: the noise is scaled to 1 + L1(D), which is only ln 2-smooth. "
                             "Spend more budget on it, or set method = \"ignore_missing\".") from None


def ask(private, query):
    """Make the release ``query`` (one entry of :func:`read_queries`) with ``private``.

    ``private`` is a :class:`~dpknn.releases.PrivateImputation`; its accountant is charged. The
    non-DP ``method = "global"`` is not asked here (see :mod:`dpknn.releases._baseline`).

    Parameters
    ----------
    private : PrivateImputation
        What answers the query; its accountant is charged.
    query : dict
        One query of :func:`read_queries`: ``name``, ``type`` and the keyword arguments of the
        :class:`~dpknn.releases.PrivateImputation` method named by ``type``.

    Returns
    -------
    Release
        The release of that method.

    Raises
    ------
    ValueError
        The query's method is ``"global"``.
    """
    kwargs = {k: v for k, v in query.items() if k not in ("name", "type")}
    if kwargs.get("method") == "global":
        raise ValueError(f"query {query['name']!r}: method 'global' is not differentially private; "
                         "dpknn.releases._baseline.global_baseline computes it.")
    kind = query["type"]
    if kind in ("mean", "variance"):
        return getattr(private, kind)(kwargs.pop("column"), **kwargs)
    return getattr(private, kind)(kwargs.pop("where", None), **kwargs)


@dataclass(frozen=True)
class ReleaseSet:
    """The releases of a query file: what may be published and the curator's diagnostics.

    Attributes
    ----------
    releases : tuple of dict
        One published entry per query, in the file's order: its name and type and the
        :meth:`~dpknn.mechanisms.Release.to_dict` of its release (released values and public
        parameters), or, for a non-DP ``method = "global"`` query, its value marked as such.
    curator : tuple of dict
        CONFIDENTIAL: per DP release, its name and its
        :meth:`~dpknn.mechanisms.Release.curator_dict` (data-dependent noise scales).
    differentially_private : bool
        False when some value came from the non-DP baseline.
    """

    releases: tuple
    curator: tuple
    differentially_private: bool

    def published(self, accountant, *, k, epsilon_budget):
        """The file ``dpknn release`` publishes: the releases, the public parameters (k, the
        budget) and the accountant's ledger, with a warning at the top when some value is not DP."""
        out = {"differentially_private": self.differentially_private}
        if not self.differentially_private:
            out["WARNING"] = "NOT DIFFERENTIALLY PRIVATE: some values use --allow-non-dp (" + NOT_DP + ")."
        out.update({"privacy_unit": PrivacyUnit.ADD_REMOVE.value, "k": k, "epsilon_budget": epsilon_budget,
                    "epsilon_spent": accountant.spent()[0], "ledger": [vars(e) for e in accountant.ledger],
                    "releases": list(self.releases)})
        return out


def release_queries(private, queries, *, progress=False):
    """Ask every query of a file (:func:`read_queries`) with ``private``, in order.

    Every DP query is charged to ``private``'s accountant (whose limit
    :func:`read_queries`' total should have been checked against first). A query with
    ``method = "global"`` (read only with ``allow_non_dp=True``) gets the paper's non-DP value
    (:func:`dpknn.releases._baseline.global_baseline`), charged nothing and marked.

    A tqdm bar over the queries when ``progress`` (each one pass over a folder of partitions).

    Parameters
    ----------
    private : PrivateImputation
        What answers the queries; its accountant is charged.
    queries : list of dict
        The queries of :func:`read_queries`, asked in this order.
    progress : bool, default False
        Show the tqdm bar over the queries.

    Returns
    -------
    ReleaseSet
    """
    out, curator, non_dp = [], [], False
    for q in progress_bar(queries, progress=progress, total=len(queries), desc="releases", unit="query"):
        if q.get("method") == "global":
            kwargs = {k: v for k, v in q.items() if k not in ("name", "type", "method", "gamma")}
            out.append({"name": q["name"], "type": q["type"], "value": global_baseline(private, q["type"], **kwargs),
                        "differentially_private": False, "note": NOT_DP})
            non_dp = True
            continue
        rel = ask(private, q)
        out.append({"name": q["name"], "type": q["type"], **rel.to_dict()})
        curator.append({"name": q["name"], **rel.curator_dict()})
    return ReleaseSet(tuple(out), tuple(curator), not non_dp)
