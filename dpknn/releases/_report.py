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
from dpknn.impute._knn import KNNImputer
from dpknn.mechanisms._base import jsonable, noise_survival
from dpknn.releases._queries import PrivateImputation
from dpknn.releases._query import available_conditions, check_where, involves_imputed, numeric_bounds
from dpknn.releases._queryfile import QUERY_KEYS, ask, query_cost, read_queries
from dpknn.releases._statistics import CachedStatistics, InMemoryStatistics, universe_of
from dpknn.schema._attributes import Categorical, Continuous
from dpknn.utils._progress import progress_bar
from dpknn.utils._report import Report, crowded

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
    the declared bounds); ``observed`` and ``imputed`` count the records in each. ``binning`` says how
    a numeric attribute was cut: equal bins of its public range, or, when 90% of the observed values sit in
    a fifth of those or fewer (an amount on a wide range, :func:`dpknn.utils._report.crowded`), bins at the
    observed values' 30-quantiles.

    Attributes
    ----------
    attribute : str
        Name of the imputed attribute.
    kind : {"categorical", "ordinal", "continuous"}
        The attribute's type in the schema.
    bins : tuple of str
        Labels of the bins: the categories, or the values or ranges (``"low-high"``) of a numeric attribute.
    observed : tuple of int
        Per bin, the records of the attribute's universe whose value is observed.
    imputed : tuple of int
        Per bin, the records of the attribute's universe whose value was missing and is imputed.
    observed_mean, imputed_mean : float or None, default None
        Mean of the observed and of the imputed values of a numeric attribute; None for a categorical
        one or when there are no such values.
    binning : {"public", "observed quantiles"}, default "public"
        How a numeric attribute was cut: equal bins of its public range, or bins at the observed values'
        quantiles.
    """

    attribute: str
    kind: str
    bins: tuple
    observed: tuple
    imputed: tuple
    observed_mean: float | None = None
    imputed_mean: float | None = None
    binning: str = "public"


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
    error_99, error_999 : tuple of two float, or None
        The 0.5th and 99.5th, and the 0.05th and 99.95th percentiles: 99% and 99.9% intervals.
    p_large_error : float or None
        Probability that ``|release - estimate|`` exceeds 10% of ``|estimate|``.
    infinite_variance : bool
        The last step's noise has no finite variance (PolyPlace with a <= 3, generalized Cauchy with
        γ <= 3, i.e. small ε): errors of many noise scales are not rare, which a standard deviation or a
        90% interval hides.
    problem : str or None
        Why the release cannot be made or planned (then the other fields are None).

    Notes
    -----
    The intervals and ``p_large_error`` are exact for the noise of the last step, averaged over the
    rehearsals of the steps before it (a conditional expectation, so even the 99.9% interval needs
    no more rehearsals than the 90%): each rehearsal gives the last step's centre (a mean's
    noisy count, a proportion's noisy denominator) and clamp, and the exact law of its noise
    (:func:`dpknn.mechanisms._base.noise_survival`) gives the probability of every error from there.
    """

    name: str
    query: str
    method: str
    epsilon: float
    mechanism: str | None = None
    estimate: float | None = None
    noise_scale: float | None = None
    error: tuple | None = None
    error_99: tuple | None = None
    error_999: tuple | None = None
    p_large_error: float | None = None
    infinite_variance: bool = False
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
                      f"Each release rehearsed {self.draws} times. The intervals hold the release with probability "
                      "90%, 99% and 99.9%, and the last column is the probability that it is off by more than "
                      f"{LARGE_ERROR:.0%} of its estimate: exact for the noise of the last step, averaged over the "
                      "rehearsals of the steps before it. Smooth noise at small epsilon has heavy tails (no finite "
                      "variance): read the 99.9% interval, not the 90% one alone. A release is clamped to its "
                      "public range (a count at 0), so an interval can end there. The ignore_missing columns answer "
                      "the same query on its available cases (the records whose values of its attributes are "
                      "observed; less noise, but biased unless data are missing completely at random).", "",
                      "| name | query | method | mechanism | epsilon | estimate | noise scale | 90% interval | "
                      f"99% interval | 99.9% interval | P(error > {LARGE_ERROR:.0%}) | ignore_missing estimate | "
                      "ignore_missing 90% interval | ignore_missing 99.9% interval |",
                      "|---|---|---|---|---:|---:|---:|---|---|---|---:|---:|---|---|"]
            for p, alt in self.planned:
                head = f"| {p.name} | {p.query} | {p.method} | {p.mechanism or '-'} | {p.epsilon:g} |"
                if p.problem is not None:
                    lines.append(f"{head} {p.problem} |" + " |" * 8)
                    continue
                heavy = " (infinite variance)" if p.infinite_variance else ""
                lines.append(f"{head} {_fmt(p.estimate)} | {_fmt(p.noise_scale)}{heavy} | {_interval(p, p.error)} | "
                             f"{_interval(p, p.error_99)} | {_interval(p, p.error_999)} | "
                             f"{_probability(p.p_large_error)} | {'' if alt is None else _fmt(alt.estimate)} | "
                             f"{'' if alt is None else _interval(alt, alt.error)} | "
                             f"{'' if alt is None else _interval(alt, alt.error_999)} |")
            lines += ["", f"![planned errors]({_FIGURES['planned']})", ""]
        return "\n".join(lines)

    def figures(self):
        """``[(file name, matplotlib Figure)]`` of the report's plots (needs matplotlib)."""
        from dpknn.utils._plotting import donee_count_figure, imputed_observed_figure, planned_errors_figure

        out = [(_FIGURES["donees"], donee_count_figure(self.donee_counts, title=f"Donee counts ({CONFIDENTIAL})")),
               (_FIGURES["distributions"], imputed_observed_figure(
                   self.distributions, title=f"Observed and imputed values ({CONFIDENTIAL})"))]
        # Always drawn (empty without a query file), so that no stale plot of an earlier run remains.
        out.append((_FIGURES["planned"], planned_errors_figure(
            self.planned, title=f"Planned releases: 90% and 99.9% intervals ({CONFIDENTIAL})")))
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
    observed_only = query.get("method", "smooth") == "ignore_missing"
    schema = stats.schema
    where = check_where(schema, query.get("where"))
    kind = query["type"]
    if kind == "count":
        return float(stats.count(where, observed_only=observed_only)), None
    if kind == "proportion":
        within = check_where(schema, query.get("within"), "within")
        den = stats.count(available_conditions(schema, within, where) if observed_only else within,
                          observed_only=observed_only)
        num = stats.count({**within, **where}, observed_only=observed_only)
        return (num / den if den else None), den
    column = query["column"]
    values = stats.values(column, where, numeric_bounds(schema, column, query.get("bounds")),
                          observed_only=observed_only, universe=universe_of(schema, column))
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
        steps, scales = [], np.empty(draws)
        for i in range(draws):
            rel = ask(rehearsal, query)
            steps.append(_last_step(rel))
            if query["type"] == "proportion":
                scales[i] = _scale_of(rel.parts["numerator"]) / max(denominator, 1)
            else:
                scales[i] = _scale_of(rel)
            rehearsal.releases.clear()
    except (ValueError, TypeError) as exc:
        return PlannedRelease(**base, problem=f"cannot be released: {exc}")
    last = steps[-1].release
    base.update(mechanism=last.mechanism, noise_scale=float(np.median(scales)),
                infinite_variance=_infinite_variance(last))
    if estimate is None:
        return PlannedRelease(**base, problem="no estimate: the subpopulation has too few records")
    tails = _Tails(steps, estimate)
    return PlannedRelease(**base, estimate=estimate, error=tails.interval(0.90), error_99=tails.interval(0.99),
                          error_999=tails.interval(0.999), p_large_error=tails.beyond(LARGE_ERROR * abs(estimate)))


# --- tails -------------------------------------------------------------------------------------
#: The report gives the probability of an error above this share of the estimate.
LARGE_ERROR = 0.10
#: Where each heavy-tailed smooth noise gets a finite variance (checked by tests/test_report.py against the
#: calibrations: PolyPlace needs a > 3, a multiple of 1/16 with (a - 1) ln 2 <= ε; the Cauchy γ > 3).
FINITE_VARIANCE = {"smooth_polyplace": "PolyPlace noise has a finite variance from epsilon = 1.43 per smooth step",
                   "smooth_cauchy": "the generalized Cauchy noise has a finite variance from epsilon = 3.12 per "
                                    "smooth step"}


@dataclass(frozen=True)
class _LastStep:
    """CONFIDENTIAL: one rehearsal's last noisy step. The release is ``clip(centre + Z, low, high)``
    (``integer``: Z rounded to an integer, as a count's), or for a proportion the numerator count
    ``max(centre + Z, 0)`` over the rehearsal's noisy ``denominator``; Z is ``release``'s noise."""

    release: object
    centre: float
    low: float = -math.inf
    high: float = math.inf
    integer: bool = False
    denominator: float | None = None


def _last_step(rel):
    """The :class:`_LastStep` of a rehearsed release ``rel``: its noise-free centre, which the release path keeps
    in the curator diagnostics of the step that drew the noise, and the public range it is clamped to."""
    query = rel.params.get("query")
    if rel.mechanism == "ratio of counts":   # a proportion: its numerator over its released denominator
        num = rel.parts["numerator"]
        return _LastStep(num, float(num.diagnostics.values["centre"]), low=0.0, integer=True,
                         denominator=float(rel.parts["denominator"].value))
    centre = float(rel.diagnostics.values["centre"])
    if query == "count":
        return _LastStep(rel, centre, low=0.0, integer=True)
    a, b = rel.params["bounds"]
    if query == "mean":
        return _LastStep(rel, centre, low=a, high=b)
    return _LastStep(rel, centre, low=0.0, high=((b - a) / 2) ** 2)   # a variance


class _Tails:
    """P(release − estimate > t) and P(release − estimate < −t) on a geometric grid of t (steps of 0.5%),
    averaged over the rehearsals' last steps (equal steps, as all of a count's, computed once)."""

    def __init__(self, steps, estimate):
        spread = max(1e-300, abs(estimate), max(_scale_of(st.release) for st in steps))
        self.estimate = estimate
        self.t = np.r_[0.0, spread * np.geomspace(1e-9, 1e12, 10_000)]
        groups = {}
        for st in steps:
            key = (st.release.mechanism, repr(sorted(st.release.params.items())),
                   repr(sorted(st.release.diagnostics.values.items())), st.centre, st.low, st.high, st.integer,
                   st.denominator)
            groups.setdefault(key, [st, 0])[1] += 1
        self.groups = [(st, n / len(steps)) for st, n in groups.values()]
        self.above = sum(w * _p_above(st, estimate + self.t) for st, w in self.groups)
        self.below = sum(w * _p_below(st, estimate - self.t) for st, w in self.groups)
        # The public range every release is clamped to (a proportion's is [0, 1]).
        first = steps[0]
        self.low, self.high = (0.0, 1.0) if first.denominator is not None else (first.low, first.high)

    def beyond(self, t):
        """P(|release − estimate| > t), exactly at t (counts are integers: t on a grid could cross one)."""
        v = np.array([t])
        return float(min(1.0, sum(w * (_p_above(st, self.estimate + v)[0] + _p_below(st, self.estimate - v)[0])
                                  for st, w in self.groups)))

    def interval(self, level):
        """(lo, hi) with P(error < lo) and P(error > hi) each at most (1 − level)/2, to 0.5% of the width."""
        tail = (1.0 - level) / 2
        return (max(-self._first(self.below, tail), self.low - self.estimate),
                min(self._first(self.above, tail), self.high - self.estimate))

    def _first(self, p, tail):
        ok = np.flatnonzero(p <= tail)
        return float(self.t[ok[0]]) if ok.size else math.inf


def _survival(step, x):
    return np.asarray(noise_survival(step.release, x), dtype=np.float64)


def _p_above(st, v):
    """P(release > v) for one rehearsal's last step, for each value of the array ``v``."""
    if st.denominator is not None:
        # The proportion exceeds v in [0, 1) exactly when the numerator count reaches k >= 1.
        k = np.maximum(1.0, np.floor(v * st.denominator) + 1.0) if st.denominator > 0 else np.ones_like(v)
        p = _survival(st, k - 0.5 - st.centre)
        return np.where(v >= 1.0, 0.0, np.where(v < 0.0, 1.0, p))
    # An integer release above v is at least floor(v) + 1.
    x = np.floor(v) + 0.5 - st.centre if st.integer else v - st.centre
    p = _survival(st, x)
    return np.where(v >= st.high, 0.0, np.where(v < st.low, 1.0, p))


def _p_below(st, v):
    """P(release < v) for one rehearsal's last step (the noise is symmetric), for each value of ``v``."""
    if st.denominator is not None:
        # Below v in (0, 1] exactly when the numerator count is at most m >= 0.
        m = np.ceil(v * st.denominator) - 1.0 if st.denominator > 0 else np.zeros_like(v)
        p = _survival(st, st.centre - m - 0.5)
        return np.where(v <= 0.0, 0.0, np.where(v > 1.0, 1.0, p))
    # An integer release below v is at most ceil(v) - 1.
    x = st.centre - (np.ceil(v) - 1.0) - 0.5 if st.integer else st.centre - v
    p = _survival(st, x)
    return np.where(v <= st.low, 0.0, np.where(v > st.high, 1.0, p))


def _infinite_variance(release):
    """Whether the noise of ``release`` has no finite variance (a heavy tail)."""
    if release.mechanism == "smooth_polyplace":
        return float(release.params["a"]) <= 3.0
    if release.mechanism == "smooth_cauchy":
        return float(release.params["gamma"]) <= 3.0
    return False


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
    out = []
    if plan.infinite_variance:
        out.append(f"{plan.name}: the noise of its last step ({plan.mechanism}) has infinite variance: errors "
                   f"of many noise scales are not rare. The 99.9% interval is {_interval(plan, plan.error_999)} "
                   f"against {_interval(plan, plan.error)} for 90%, and the release is off by more than "
                   f"{LARGE_ERROR:.0%} of the estimate with probability {_probability(plan.p_large_error)}. More "
                   f"epsilon for this release thins the tail ({FINITE_VARIANCE[plan.mechanism]}).")
    if not plan.noisier_than_estimate:
        return out
    text = (f"{plan.name}: the noise would exceed the estimate's magnitude (estimate {_fmt(plan.estimate)}, 90% "
            f"error interval [{_fmt(plan.error[0])}, {_fmt(plan.error[1])}]): spend more epsilon, ask about a larger "
            "subpopulation or declare narrower bounds")
    if alt is not None and alt.error is not None and not alt.noisier_than_estimate:
        text += ("; method = \"ignore_missing\" would not (but it is biased unless data are missing completely "
                 "at random)")
    return [*out, text + "."]


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
    binning = "public"
    if obs.size and crowded(np.histogram(obs, bins=edges)[0]):
        # An amount on a wide public range: nearly every value in the first bar. The observed values'
        # quantiles show where the imputed ones fall instead (the report is confidential, like the data).
        cuts = np.unique(np.quantile(obs, np.linspace(0, 1, _BINS + 1)))
        if cuts.size >= 3:
            edges = np.r_[min(cuts[0], attr.lower), cuts[1:-1], max(cuts[-1], attr.upper)]
            labels = tuple(f"{_fmt(a)}-{_fmt(b)}" for a, b in itertools.pairwise(edges))
            binning = "observed quantiles"
    return AttributeDistribution(name, attr.kind, labels, _ints(np.histogram(obs, bins=edges)[0]),
                                 _ints(np.histogram(imp, bins=edges)[0]),
                                 observed_mean=float(obs.mean()) if obs.size else None,
                                 imputed_mean=float(imp.mean()) if imp.size else None, binning=binning)


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


def _interval(p, error):
    return f"[{_fmt(p.estimate + error[0])}, {_fmt(p.estimate + error[1])}]"


def _probability(p):
    """A probability as a rounded percentage ("< 0.01%" below that)."""
    if p is None:
        return "-"
    return "< 0.01%" if p < 1e-4 else f"{p:.2%}" if p < 0.01 else f"{p:.1%}"


def _fmt(v):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    a = abs(v)
    if a == 0 or 1e-3 <= a < 1e7:
        return f"{v:,.4g}" if a < 1000 else f"{v:,.0f}"
    return f"{v:.3g}"
