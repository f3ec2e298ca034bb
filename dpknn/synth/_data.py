"""What a marginal synthesiser reads of its data: sums over records, in two reads.

MST, AIM and the choice between them (:mod:`dpknn.synth._marginal`, :mod:`dpknn.synth._auto`) read the data
only through a few kinds of sums over records, and every released value is a mechanism applied to one of them:

1. **The scan** (:class:`Scan`), before anything is released: the number of rows, the domain checks and the
   ``never_missing`` refusal, the observed values outside their universes (for the curator), and the
   :class:`~dpknn.synth._bins.ValueHistogram` of each amount whose point masses and quantiles are released.
2. **The counts**, once the quantiles have fixed the model's bins (:meth:`TableData.count`): the count tables of
   the attribute sets the method may measure or score (:class:`Counts`) and the within-bin rank sums of the
   analyses (:func:`~dpknn.synth._ranks.rank_tables`).

Each is a sum over records, so the sums of disjoint parts of the data add up to the whole's. A
:class:`FrameData` computes them from a DataFrame in memory; :class:`~dpknn.synth._distributed.ParquetData` from
a folder of Parquet partitions, one Dask task per partition and pass, merged on the client. The fit that reads
them is the same code, so for the same seed it releases the same values and fits the same model
(``tests/test_synth_distributed.py``). Nothing here is released: everything a :class:`TableData` returns is
data, and the mechanisms that read it are in the synthesisers.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from dpknn.schema._attributes import observed_outside_universes
from dpknn.schema._discretization import slot_middles
from dpknn.schema._flags import check_not_imputed
from dpknn.schema._marginals import count_tables, extended_codes
from dpknn.synth._bins import candidate_grid, value_histogram
from dpknn.synth._ranks import rank_tables, within_bin_ranks

__all__ = ["Counts", "FrameData", "RankPlan", "Scan", "TableData", "encode_checked", "partition_counts",
           "partition_scan"]


def encode_checked(X, plan):
    """``X``'s codes under ``plan`` (a :class:`~dpknn.synth._marginal.Prepared`), refusing domain errors and gaps
    in a ``never_missing`` attribute (a refusal that reveals one bit, ``docs/privacy.md``)."""
    disc = plan.disc
    codes = disc.encode(X)
    gaps = [n for n, nv, row in zip(disc.names, plan.never, codes) if nv and (row < 0).any()]
    if gaps:
        raise ValueError(f"attributes declared never_missing have gaps: {gaps}. Remove them from never_missing "
                         "(their gaps then become a code of their own) or impute them first.")
    return codes


@dataclass(frozen=True)
class Scan:
    """CONFIDENTIAL, the first read of the data: its number of rows, the observed values outside their universe
    by attribute (curator diagnostics), and a :class:`~dpknn.synth._bins.ValueHistogram` by name of each
    attribute whose quantiles or point masses the plan releases."""

    rows: int
    outside_universe: dict
    histograms: dict

    def merged(self, other):
        """The scan of the union of two disjoint sets of records."""
        outside = {k: self.outside_universe.get(k, 0) + other.outside_universe.get(k, 0)
                   for k in dict.fromkeys([*self.outside_universe, *other.outside_universe])}
        hists = {k: h.merged(other.histograms[k]) for k, h in self.histograms.items()}
        return Scan(self.rows + other.rows, outside, hists)


@dataclass(frozen=True)
class RankPlan:
    """The rank sums to count (public: from the analyses and the released shapes): the (amount, partner) index
    pairs, and each attribute's :class:`~dpknn.schema._discretization.ValueShape` (None where it has none)."""

    pairs: tuple
    shapes: tuple


class Counts:
    """The true extended count tables of attribute sets, computed once each: data, never released.

    ``ext`` holds extended codes (missing = last code), ``sizes`` the attributes' domain sizes and
    ``ext_sizes`` the table sizes (one more where the model has a missing code; where it has none,
    the missing code is cut, so the tables count the rows observed on that attribute). ``tables``
    gives tables counted elsewhere (a pass over Parquet partitions), by sorted attribute tuple, already cut.
    """

    def __init__(self, ext, sizes, ext_sizes, *, n_jobs=2, tables=None):
        self.ext, self.sizes, self.ext_sizes, self.n_jobs = ext, sizes, ext_sizes, n_jobs
        self._tables = dict(tables or {})

    def __getitem__(self, attributes):
        return self.tables([attributes])[0]

    def count(self, sets):
        """The full extended tables (uncut, :func:`~dpknn.schema._marginals.count_tables`) of ``sets``, sorted
        tuples none of which is held yet; a subclass that reads the data elsewhere counts them there."""
        return count_tables(self.ext, self.sizes, sets, n_jobs=self.n_jobs)

    def tables(self, sets):
        """The tables of ``sets`` (tuples of attribute indices, axes in that order), int64."""
        todo = list(dict.fromkeys(tuple(sorted(s)) for s in sets if tuple(sorted(s)) not in self._tables))
        for s, t in zip(todo, self.count(todo) if todo else []):
            self._tables[s] = t[tuple(slice(0, int(self.ext_sizes[v])) for v in s)].astype(np.int64)
        out = []
        for s in sets:
            key = tuple(sorted(s))
            out.append(np.transpose(self._tables[key], [key.index(v) for v in s]))
        return out


def partition_scan(X, plan):
    """The :class:`Scan` of ``X`` (a DataFrame: the whole data or one partition) under ``plan``: its codes
    checked (:func:`encode_checked`), the values outside universes, and the histograms of ``plan.wide`` and
    ``plan.heaped``."""
    encode_checked(X, plan)
    hists = {}
    for a in [*plan.wide, *plan.heaped]:
        values, missing = a.read_column(X)
        keep = ~missing if a.universe is None else ~missing & a.universe.mask(X)
        hists[a.name] = value_histogram(np.asarray(values, dtype=np.float64)[keep], a, grid=candidate_grid(a))
    return Scan(len(X), observed_outside_universes(X, plan.disc.attributes), hists)


def partition_counts(X, disc, ext_sizes, sets, ranks):
    """The tables of ``sets`` (sorted tuples, cut to ``ext_sizes``, int64) and the rank tables of ``ranks`` (a
    :class:`RankPlan`) of ``X`` under the model's discretisation ``disc``: one partition's share of the counts."""
    codes = disc.encode(X)
    ext = extended_codes(codes, disc.sizes)
    tables = dict(zip(sets, Counts(ext, disc.sizes, ext_sizes, n_jobs=1).tables(list(sets))))
    return tables, frame_rank_tables(X, codes, ext, disc, ranks)


def frame_rank_tables(X, codes, ext, disc, ranks):
    """The rank tables (:func:`~dpknn.synth._ranks.rank_tables`) of ``ranks`` (a :class:`RankPlan`) over ``X``."""
    if not ranks.pairs:
        return {}
    by_amount = {}
    for a in sorted({y for y, _ in ranks.pairs}):
        attr = disc.attributes[a]
        values, _ = attr.read_column(X)
        lo, hi = disc.bounds(attr)
        # Ranked where the shape puts it (an Ordinal's value in the middle of its slot, where a heap's atom sits:
        # read at v, a value on a heap ranked below the whole jump).
        by_amount[a] = within_bin_ranks(slot_middles(attr, values), codes[a], lo, hi, ranks.shapes[a])
    return rank_tables(by_amount, codes, ext, [disc.value_codes(a) for a in disc.attributes], disc.sizes + 1,
                       ranks.pairs)


class TableData(abc.ABC):
    """The data of a marginal synthesiser's fit, read as sums over records (module docstring)."""

    def __init__(self):
        self._scans = {}

    @property
    @abc.abstractmethod
    def rows(self):
        """The number of rows (data: a synthesiser releases it only through a mechanism)."""

    @abc.abstractmethod
    def read_scan(self, plan):
        """Read the :class:`Scan` under ``plan`` (a :class:`~dpknn.synth._marginal.Prepared`); raises as
        :func:`encode_checked` does."""

    def scan(self, plan):
        """The :class:`Scan` under ``plan``, read once for the plans that share its checks.

        :class:`~dpknn.synth.AutoSynthesizer` scans with AIM's plan before its count and the chosen method scans
        again with its own: the same domains and never-missing attributes, histograms of the same or fewer
        attributes, so the first read serves both (out of core, one pass over the folder instead of two)."""
        key = (tuple(plan.disc.names), tuple(map(bool, plan.never)))
        wanted = {a.name for a in [*plan.wide, *plan.heaped]}
        held = self._scans.get(key)
        if held is None or not wanted <= set(held.histograms):
            held = self._scans[key] = self.read_scan(plan)
        return Scan(held.rows, held.outside_universe, {k: held.histograms[k] for k in wanted})

    @abc.abstractmethod
    def count(self, disc, ext_sizes, sets, ranks, *, n_jobs=2):
        """(:class:`Counts` holding at least the tables of ``sets``, the rank tables of ``ranks``) under the model's
        discretisation ``disc`` and table sizes ``ext_sizes``."""


class FrameData(TableData):
    """A DataFrame in memory (not modified): the scan reads it at once, the counts as the fit asks for them."""

    def __init__(self, X):
        super().__init__()
        check_not_imputed(X, "X")
        self.X = X

    @property
    def rows(self):
        return len(self.X)

    def read_scan(self, plan):
        return partition_scan(self.X, plan)

    def count(self, disc, ext_sizes, sets, ranks, *, n_jobs=2):
        codes = disc.encode(self.X)
        ext = extended_codes(codes, disc.sizes)
        # Lazily: a table is counted when the method first reads it (AIM scores few of a wide workload's sets).
        return Counts(ext, disc.sizes, ext_sizes, n_jobs=n_jobs), frame_rank_tables(self.X, codes, ext, disc, ranks)
