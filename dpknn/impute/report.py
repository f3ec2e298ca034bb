"""The curator's report: what the imputation did, and what planned releases would look like.

CONFIDENTIAL. Everything in a :class:`CuratorReport` is computed from the data without noise:
equivalence classes, donors, donee counts, L1(D) and the change that attains it, noise-free
estimates and the noise scales calibrated to them. Any of these can tell neighbouring data sets
apart, so none may be published; what may be published is what ``dpknn release`` (or
:meth:`dpknn.mechanisms.Release.to_dict`) writes.

The planned releases of a query file are *rehearsed*: each is drawn ``draws`` times by the very
code that would publish it (:func:`dpknn.releases.ask` on a
:class:`~dpknn.releases.PrivateImputation` with an unlimited private ledger), and the 5th and
95th percentiles of ``release - estimate`` form its 90% error interval, the noise of the
subpopulation count and every clamp included. Nothing drawn here is published, and the real
release draws fresh noise.

Choosing queries, bounds or budgets after reading this report makes them depend on the data; the
guarantee of a release does not cover that choice. Fix them on public grounds, or treat the
report as a pilot on other data.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpknn.accounting import BudgetAccountant
from dpknn.impute.knn import KNNImputer
from dpknn.mechanisms.base import jsonable
from dpknn.releases.queries import PrivateImputation
from dpknn.releases.query import check_where, involves_imputed, numeric_bounds
from dpknn.releases.queryfile import QUERY_KEYS, ask, query_cost, read_queries
from dpknn.releases.statistics import CachedStatistics, InMemoryStatistics, universe_of
from dpknn.schema.attributes import Categorical, Continuous
from dpknn.utils.progress import progress_bar
from dpknn.utils.report import Report

__all__ = ["DONORLESS_SHARE", "REPORT_FILES", "AttributeDistribution", "CuratorReport", "PlannedRelease",
           "UniverseSummary", "curator_report"]

logger = logging.getLogger(__name__)

CONFIDENTIAL = "CONFIDENTIAL - NOT FOR PUBLICATION"
# Bars per histogram of a wide numeric attribute (public: depends on the domain only).
_BINS = 30
_FIGURES = {"donees": "donee_counts.png", "distributions": "imputed_vs_observed.png",
            "planned": "planned_errors.png"}
#: The files :meth:`CuratorReport.write` writes into its directory.
REPORT_FILES = ("report.md", "report.json", *_FIGURES.values())
#: The report warns about a universe where more than this share of the incomplete records sit in
#: classes without a donor (docs/report.md): their donors come from other cells, at a distance.
DONORLESS_SHARE = 0.10


@dataclass(frozen=True)
class UniverseSummary:
    """CONFIDENTIAL: the imputation of the attributes that share one universe.

    Attributes
    ----------
    attributes : tuple of str
    universe : dict or None
        Its public conditions (None: every record).
    records, incomplete : int
        Records inside the universe, and those missing one of ``attributes``.
    classes : int
        Equivalence classes (distinct cells of the known attributes) inside the universe.
    donorless_classes : int
        Classes holding incomplete records and no complete record.
    incomplete_without_donor : int
        Incomplete records of those classes: their donors come from other cells.
    max_donee_count : int
        The most incomplete records one donor imputes.
    l1 : int
        Exact L1(D) of the universe.
    l1_case : str
        The neighbouring change that attains it, in words.
    """

    attributes: tuple
    universe: dict | None
    records: int
    incomplete: int
    classes: int
    donorless_classes: int
    incomplete_without_donor: int
    max_donee_count: int
    l1: int
    l1_case: str

    @property
    def share_without_donor(self):
        """Share of the incomplete records whose class has no donor (NaN when none is incomplete)."""
        return self.incomplete_without_donor / self.incomplete if self.incomplete else math.nan


@dataclass(frozen=True)
class AttributeDistribution:
    """CONFIDENTIAL: observed and imputed values of one imputed attribute, over its universe.

    ``bins`` are labels of a partition of the public domain (categories, values, or ranges of
    the declared bounds); ``observed`` and ``imputed`` count the records in each.
    """

    attribute: str
    kind: str
    bins: tuple
    observed: tuple
    imputed: tuple
    observed_mean: float | None = None
    imputed_mean: float | None = None


@dataclass(frozen=True)
class PlannedRelease:
    """CONFIDENTIAL: a rehearsed release of a query file.

    Attributes
    ----------
    name, query, method : str
    epsilon : float
        Its total cost.
    mechanism : str or None
        The mechanism of its last step (a proportion's numerator): ``smooth_polyplace`` when it
        reads an imputed attribute, else ``geometric`` or ``laplace``.
    estimate : float or None
        The noise-free value the release would be drawn around (None: undefined, e.g. the mean of
        an empty subpopulation).
    noise_scale : float or None
        Median, over the rehearsals, of the scale of the last step's noise in units of the
        released value (for a proportion: the numerator's scale over the noise-free denominator).
    error : tuple of two float, or None
        5th and 95th percentiles of ``release - estimate``: a 90% error interval.
    problem : str or None
        Why the release cannot be made or planned (then the other fields are None).
    """

    name: str
    query: str
    method: str
    epsilon: float
    mechanism: str | None = None
    estimate: float | None = None
    noise_scale: float | None = None
    error: tuple | None = None
    problem: str | None = None

    @property
    def noisier_than_estimate(self):
        """True when the 90% error interval reaches past the estimate's magnitude."""
        if self.error is None or self.estimate is None:
            return False
        return max(abs(self.error[0]), abs(self.error[1])) > abs(self.estimate)


@dataclass(frozen=True)
class CuratorReport(Report):
    """CONFIDENTIAL: the curator's report of a fitted imputation (:func:`curator_report`).

    Attributes
    ----------
    n_records, k : int
    universes : tuple of UniverseSummary
    donee_counts : tuple of (int, int)
        (donee count c, number of records that impute exactly c incomplete records), c >= 1.
    distributions : tuple of AttributeDistribution
    planned : tuple of (PlannedRelease, PlannedRelease or None)
        Each planned release, with the same query by ``ignore_missing`` next to it when the
        release uses the smooth mechanism (None otherwise).
    queries_epsilon : float or None
        Total ε of the query file.
    draws : int
        Rehearsals per planned release.
    warnings : tuple of str
    """

    stem = "report"

    n_records: int
    k: int
    universes: tuple
    donee_counts: tuple
    distributions: tuple
    planned: tuple = ()
    queries_epsilon: float | None = None
    draws: int = 0
    warnings: tuple = field(default=())

    def to_dict(self):
        """A JSON-ready dict, marked confidential."""
        return {"confidential": True, "note": CONFIDENTIAL, "n_records": self.n_records, "k": self.k,
                "universes": [{**jsonable(dataclasses.asdict(u)), "share_without_donor": _num(u.share_without_donor)}
                              for u in self.universes],
                "donee_counts": [list(p) for p in self.donee_counts],
                "distributions": [jsonable(dataclasses.asdict(d)) for d in self.distributions],
                "planned": [{**_planned_dict(p), "ignore_missing": None if alt is None else _planned_dict(alt)}
                            for p, alt in self.planned],
                "queries_epsilon": self.queries_epsilon, "draws": self.draws, "warnings": list(self.warnings)}

    def to_markdown(self):
        """The report as Markdown, with links to the figures that :meth:`write` saves next to it."""
        lines = [f"# dpknn curator's report: {CONFIDENTIAL}", "",
                 "Everything here is computed from the data without noise (counts, donors, L1(D), estimates and "
                 "the noise scales calibrated to them). Publishing any of it voids the privacy guarantee; what "
                 "may be published is what `dpknn release` writes.", "",
                 "Choosing queries, bounds or budgets after reading this report makes them depend on the data, "
                 "which the guarantee of a release does not cover: fix them on public grounds.", "",
                 f"{self.n_records:,} records, k = {self.k}.", ""]
        if self.warnings:
            lines += ["## Warnings", "", *[f"- {w}" for w in self.warnings], ""]
        lines += ["## Imputation", "",
                  "| attributes | universe | records | incomplete | classes | classes with incomplete records and "
                  "no donor | incomplete records whose class has no donor | most records one donor imputes | "
                  "L1(D) | attained by |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for u in self.universes:
            share = "" if not u.incomplete else f" ({u.share_without_donor:.1%})"
            lines.append(f"| {', '.join(u.attributes)} | {_universe_text(u.universe)} | {u.records:,} | "
                         f"{u.incomplete:,} | {u.classes:,} | {u.donorless_classes:,} | "
                         f"{u.incomplete_without_donor:,}{share} | {u.max_donee_count:,} | **{u.l1:,}** | "
                         f"{u.l1_case} |")
        lines += ["", "L1(D) bounds how many records' donors one added or deleted record can change; the smooth "
                  "mechanisms' noise grows with it (a release reading several universes uses the sum of their L1).",
                  "", f"![donee counts]({_FIGURES['donees']})", "", "## Imputed and observed values", "",
                  "| attribute | observed | imputed | observed mean | imputed mean |", "|---|---:|---:|---:|---:|"]
        for d in self.distributions:
            lines.append(f"| {d.attribute} | {sum(d.observed):,} | {sum(d.imputed):,} | {_fmt(d.observed_mean)} | "
                         f"{_fmt(d.imputed_mean)} |")
        lines += ["", f"![imputed vs observed]({_FIGURES['distributions']})", ""]
        if self.planned:
            lines += [f"## Planned releases (total epsilon {self.queries_epsilon:g})", "",
                      f"Each release rehearsed {self.draws} times; the interval is the 5th to 95th percentile of "
                      "the release. The ignore_missing columns answer the same query on the complete records only "
                      "(less noise, but biased unless data are missing completely at random).", "",
                      "| name | query | method | mechanism | epsilon | estimate | noise scale | 90% interval of the "
                      "release | ignore_missing estimate | ignore_missing 90% interval |",
                      "|---|---|---|---|---:|---:|---:|---|---:|---|"]
            for p, alt in self.planned:
                head = f"| {p.name} | {p.query} | {p.method} | {p.mechanism or '-'} | {p.epsilon:g} |"
                if p.problem is not None:
                    lines.append(f"{head} {p.problem} | | | | |")
                    continue
                lines.append(f"{head} {_fmt(p.estimate)} | "
                             f"{_fmt(p.noise_scale)} | {_interval(p)} | "
                             f"{'' if alt is None else _fmt(alt.estimate)} | {'' if alt is None else _interval(alt)} |")
            lines += ["", f"![planned errors]({_FIGURES['planned']})", ""]
        return "\n".join(lines)

    def figures(self):
        """``[(file name, matplotlib Figure)]`` of the report's plots (needs matplotlib)."""
        from dpknn.utils.plotting import donee_count_figure, imputed_observed_figure, planned_errors_figure

        out = [(_FIGURES["donees"], donee_count_figure(self.donee_counts, title=f"Donee counts ({CONFIDENTIAL})")),
               (_FIGURES["distributions"], imputed_observed_figure(
                   self.distributions, title=f"Observed and imputed values ({CONFIDENTIAL})"))]
        # Always drawn (empty without a query file), so that no stale plot of an earlier run remains.
        out.append((_FIGURES["planned"], planned_errors_figure(
            self.planned, title=f"Planned releases: 90% intervals ({CONFIDENTIAL})")))
        return out


def curator_report(imputer, X, *, queries=None, draws=1000, rng=None, progress=False):
    """CONFIDENTIAL report of a fitted :class:`~dpknn.impute.KNNImputer` on its data.

    Parameters
    ----------
    imputer : KNNImputer
        Fitted on ``X``.
    X : pandas.DataFrame
        The data it was fitted on (not modified).
    queries : str, Path, list of dict or None
        A query file (``docs/queries.md``) or the output of :func:`dpknn.releases.read_queries`:
        the releases to rehearse. None: no planned releases.
    draws : int, default 1000
        Rehearsals per planned release (the 90% interval's percentiles come from them).
    rng : numpy.random.Generator, int or None
        Source of the rehearsals' noise (never published). None: the operating system's CSPRNG.
    progress : bool, default False
        A tqdm bar over the rehearsals.

    Returns
    -------
    CuratorReport

    Notes
    -----
    Planning on the data is itself a use of the data: queries, bounds and budgets chosen after
    reading the report are data-dependent, and no release's guarantee covers that choice.
    """
    if not isinstance(imputer, KNNImputer):
        raise TypeError(f"imputer must be a fitted dpknn.KNNImputer, got {type(imputer).__name__}.")
    imputer.check_fitted_on(X)
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 20:
        raise ValueError(f"draws must be an integer >= 20 (the 5th and 95th percentiles need a few), got {draws!r}.")
    if not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be a bool, got {progress!r}.")
    schema = imputer.schema
    if isinstance(queries, (str, Path)):
        queries, _ = read_queries(queries, schema)
    elif queries is not None:
        if not (isinstance(queries, (list, tuple)) and all(isinstance(q, dict) for q in queries)):
            raise TypeError(f"queries must be a path, a list of query dicts or None, got {type(queries).__name__}.")
        queries = [_named(q, i) for i, q in enumerate(queries)]
    rehearsal = rehearsal_imputation(imputer, X, rng=rng)
    universes = tuple(_universe_summary(imputer, g) for g in imputer.groups_)
    warnings = [f"no record is missing {', '.join(u.attributes)}{_in_universe(u.universe)}: the smooth mechanisms "
                "still pay for L1(D) >= 1, so method = \"ignore_missing\" gives the same estimates with less noise."
                for u in universes if u.records and not u.incomplete]
    warnings += [f"{u.share_without_donor:.0%} of the incomplete records (missing any of "
                 f"{', '.join(u.attributes)}){_in_universe(u.universe)} sit in classes without a donor "
                 f"({u.incomplete_without_donor:,} of {u.incomplete:,}; warned above {DONORLESS_SHARE:.0%}): their "
                 "donors come from other cells, at a distance. Either the known attributes "
                 f"({', '.join(schema.known_names)}) are too fine for the data (bin an ordinal more coarsely or drop "
                 "an attribute), or the attribute does not apply to those records (no wage after retirement): "
                 "declare a universe for it (docs/schema.md)."
                 for u in universes if u.incomplete and u.share_without_donor > DONORLESS_SHARE]
    donee = imputer.donee_counts_
    values, counts = np.unique(donee[donee > 0], return_counts=True)
    distributions = tuple(_distribution(schema, a, X, rehearsal.imputed) for a in schema.imputed_names)
    planned = ()
    total = None
    if queries:
        total = math.fsum(query_cost(q) for q in queries)
        bar = progress_bar(total=len(queries), progress=progress, desc="rehearsing releases", unit="query")
        rows = []
        for q in queries:
            plan = _plan(rehearsal, q, draws)
            alt = None
            if plan.problem is None and q.get("method", "smooth") == "smooth" and _involves(schema, q):
                alt = _plan(rehearsal, {**q, "method": "ignore_missing"}, draws)
            rows.append((plan, alt))
            warnings.extend(_release_warnings(plan, alt))
            bar.update()
        bar.close()
        planned = tuple(rows)
        logger.info("curator_report: %d planned releases rehearsed %d times each", len(rows), draws)
    return CuratorReport(n_records=len(X), k=int(imputer.k), universes=universes,
                         donee_counts=tuple((int(v), int(c)) for v, c in zip(values, counts)),
                         distributions=distributions, planned=planned, queries_epsilon=total, draws=int(draws),
                         warnings=tuple(warnings))


# --- rehearsals -------------------------------------------------------------------------------
def rehearsal_imputation(imputer, X, *, rng=None):
    """CONFIDENTIAL: a :class:`~dpknn.releases.PrivateImputation` whose releases are drawn only to measure
    their spread, never published (so its ledger has no limit).

    Its statistics are cached (:class:`~dpknn.releases.CachedStatistics`): the subpopulation's count and
    clamped sums of a query are the same in every draw, so a rehearsal costs the noise alone.
    """
    stats = CachedStatistics(InMemoryStatistics(imputer, X))
    return PrivateImputation.from_statistics(stats, accountant=BudgetAccountant(math.inf), rng=rng)


def _involves(schema, query):
    """Whether ``query`` reads an imputed attribute (then its smooth release pays for L1)."""
    return involves_imputed(schema, query.get("where") or {}, query.get("within") or {}, [query.get("column")])


def _estimate(stats, query):
    """The noise-free value of ``query`` and, for a proportion, its denominator."""
    complete_only = query.get("method", "smooth") == "ignore_missing"
    schema = stats.schema
    where = check_where(schema, query.get("where"))
    kind = query["type"]
    if kind == "count":
        return float(stats.count(where, complete_only=complete_only)), None
    if kind == "proportion":
        within = check_where(schema, query.get("within"), "within")
        den = stats.count(within, complete_only=complete_only)
        num = stats.count({**within, **where}, complete_only=complete_only)
        return (num / den if den else None), den
    column = query["column"]
    values = stats.values(column, where, numeric_bounds(schema, column, query.get("bounds")),
                          complete_only=complete_only, universe=universe_of(schema, column))
    if kind == "mean":
        return (float(values.mean()) if values.size else None), None
    return (float(values.var(ddof=1)) if values.size > 1 else None), None


def _named(query, i):
    """A query dict of a Python caller, with its default name; its keys are checked when it is asked."""
    if query.get("type") not in QUERY_KEYS:
        raise ValueError(f"queries[{i}]: type must be one of {sorted(QUERY_KEYS)}, got {query.get('type')!r}.")
    if "epsilon" not in query:
        raise ValueError(f"queries[{i}]: epsilon is required.")
    return {"name": f"query {i + 1}", **query}


def _plan(rehearsal, query, draws):
    method = query.get("method", "smooth")
    base = {"name": query["name"], "query": query["type"], "method": method, "epsilon": query_cost(query)}
    if method == "global":
        return PlannedRelease(**base, problem="not differentially private: not rehearsed")
    try:
        estimate, denominator = _estimate(rehearsal.statistics, query)
        released, scales = np.empty(draws), np.empty(draws)
        for i in range(draws):
            rel = ask(rehearsal, query)
            released[i] = float(rel.value)
            if query["type"] == "proportion":
                rel = rel.parts["numerator"]
                scales[i] = _scale_of(rel) / max(denominator, 1)
            else:
                scales[i] = _scale_of(rel)
            rehearsal.releases.clear()
    except (ValueError, TypeError) as exc:
        return PlannedRelease(**base, problem=f"cannot be released: {exc}")
    base.update(mechanism=rel.mechanism, noise_scale=float(np.median(scales)))
    if estimate is None:
        return PlannedRelease(**base, problem="no estimate: the subpopulation has too few records")
    lo, hi = np.percentile(released - estimate, [5, 95])
    return PlannedRelease(**base, estimate=estimate, error=(float(lo), float(hi)))


def _scale_of(release):
    """Scale of the noise of a release's last step, in units of its value (curator-only numbers)."""
    diag = release.diagnostics.values
    for key in ("noise_scale", "scale"):
        if key in diag:
            return float(diag[key])
    if "scale" in release.params:
        return float(release.params["scale"])
    return float(release.params["sensitivity"]) / release.epsilon  # geometric: P(z) ∝ exp(-|z| ε/Δ)


def _release_warnings(plan, alt):
    if plan.problem is not None:
        return [f"{plan.name}: {plan.problem}"]
    if not plan.noisier_than_estimate:
        return []
    text = (f"{plan.name}: the noise would exceed the estimate's magnitude (estimate {_fmt(plan.estimate)}, 90% "
            f"error interval [{_fmt(plan.error[0])}, {_fmt(plan.error[1])}]): spend more epsilon, ask about a larger "
            "subpopulation or declare narrower bounds")
    if alt is not None and alt.error is not None and not alt.noisier_than_estimate:
        text += ("; method = \"ignore_missing\" would not (but it is biased unless data are missing completely "
                 "at random)")
    return [text + "."]


# --- summaries ----------------------------------------------------------------------------------
def _universe_summary(imputer, group):
    fitted = group.imputer if group.imputer is not None else (imputer if group.rows.size else None)
    case = next((c for c in group.l1_cases.values() if c.value == group.l1), None)
    return UniverseSummary(
        attributes=tuple(group.attributes),
        universe=None if group.universe is None else group.universe.to_public(),
        records=int(group.rows.size), incomplete=int(group.incomplete_index.size),
        classes=0 if fitted is None else int(fitted.n_classes_),
        donorless_classes=0 if fitted is None else int(fitted.n_donorless_classes_),
        incomplete_without_donor=0 if fitted is None else int(fitted.n_donorless_records_),
        max_donee_count=0 if fitted is None or not fitted.donee_counts_.size else int(fitted.donee_counts_.max()),
        l1=int(group.l1), l1_case="" if case is None else _case_text(case))


def _case_text(case):
    who = "" if case.row is None else f" at row {case.row}" + ("" if case.label is None else f" (label {case.label})")
    if case.kind == "delete_complete":
        return f"deleting the complete record{who}"
    if case.kind == "delete_incomplete":
        return f"deleting the incomplete record{who}"
    if case.kind == "add_incomplete":
        return "adding an incomplete record"
    text = "adding a complete record" + ("" if case.cell is None else f" in cell {case.cell}")
    if case.gap is not None:
        text += f" with a label between {case.gap[0]} and {case.gap[1]}"
    return text


def _distribution(schema, name, X, imputed):
    attr = schema.attribute(name)
    inside = np.ones(len(X), dtype=bool) if attr.universe is None else attr.universe.mask(X)
    missing = X[name].isna().to_numpy()
    if isinstance(attr, Categorical):
        obs = X[name].to_numpy(dtype=object)[inside & ~missing]
        imp = imputed[name].to_numpy(dtype=object)[inside & missing]
        labels = tuple(str(c) for c in attr.categories)
        index = pd.Index(list(attr.categories), dtype=object)
        observed, imputed_ = (np.bincount(index.get_indexer(pd.Index(v, dtype=object)), minlength=len(labels))
                              for v in (obs, imp))
        return AttributeDistribution(name, attr.kind, labels, _ints(observed), _ints(imputed_))
    obs = X[name].astype(np.float64).to_numpy()[inside & ~missing]
    imp = imputed[name].astype(np.float64).to_numpy()[inside & missing]
    if isinstance(attr, Continuous):
        edges = np.linspace(attr.lower, attr.upper, _BINS + 1)
        labels = tuple(f"{_fmt(a)}-{_fmt(b)}" for a, b in itertools.pairwise(edges))
    else:
        # Integer bins of equal width covering [lower, upper]: at most _BINS of them.
        width = -(-(attr.upper - attr.lower + 1) // _BINS)
        starts = np.arange(attr.lower, attr.upper + 1, width)
        edges = np.append(starts, attr.upper + 1).astype(np.float64)
        labels = tuple(str(a) if width == 1 else f"{a}-{min(a + width - 1, attr.upper)}" for a in starts.tolist())
    return AttributeDistribution(name, attr.kind, labels, _ints(np.histogram(obs, bins=edges)[0]),
                                 _ints(np.histogram(imp, bins=edges)[0]),
                                 observed_mean=float(obs.mean()) if obs.size else None,
                                 imputed_mean=float(imp.mean()) if imp.size else None)


def _ints(a):
    return tuple(int(v) for v in a)


def _num(v):
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


def _planned_dict(p):
    return {**jsonable(dataclasses.asdict(p)), "noisier_than_estimate": p.noisier_than_estimate}


def _universe_text(universe):
    if universe is None:
        return "every record"
    return ", ".join(f"{k} in {v}" if isinstance(v, list) else
                     f"{k} {_range_text(v.get('low'), v.get('high'))}" for k, v in universe.items())


def _range_text(low, high):
    if low is None:
        return f"<= {high}"
    return f">= {low}" if high is None else f"in [{low}, {high}]"


def _in_universe(universe):
    return "" if universe is None else f" (universe: {_universe_text(universe)})"


def _interval(p):
    return f"[{_fmt(p.estimate + p.error[0])}, {_fmt(p.estimate + p.error[1])}]"


def _fmt(v):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    a = abs(v)
    if a == 0 or 1e-3 <= a < 1e7:
        return f"{v:,.4g}" if a < 1000 else f"{v:,.0f}"
    return f"{v:.3g}"
