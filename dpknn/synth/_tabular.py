"""Public numeric encoding of attributes for neural synthesisers: one-hot codes and positions in bins.

Every column is a function of the declared attributes and the public bins only, never of the data.
Each attribute is encoded through its public codes (:class:`~dpknn.schema.Discretization`):

- a **codes** block, one-hot over the attribute's codes: a Categorical's categories, a numeric
  attribute's public bins, and "not applicable" (outside the attribute's universe) when it has one;
- for a numeric attribute whose bins hold several values, one **position** column: where the
  value lies inside its bin, in [0, 1] (an Ordinal's bin of w values is cut into w equal slots and
  a value sits in the middle of its slot).

Why not one column scaled by the public range: a generator with one sigmoid per amount collapses
onto a narrow band (measured on SLID: 77 % of synthetic ages in one tenth of the range against
14 % real), and a public range may be 25 times the median, so the data sit in a sliver of it. A
softmax over public bins is learnt as well as a category, and the position only has to be learnt
inside one bin.

A missing cell encodes as zeros in its attribute's columns and 0 in the mask (MisGAN's
convention: the mask is 1 where a value is observed). "Not applicable" is a known structural
value, not a gap: its mask is 1. Decoding draws a code from a block's scores (or takes the largest)
and places a numeric value at its position inside the code's bin, so every value is inside the
declared domain and nothing is drawn outside a universe.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpknn.schema._attributes import Categorical, Ordinal
from dpknn.schema._discretization import MISSING, Discretization

__all__ = ["CODES", "POSITION", "Segment", "TabularEncoding", "draw_codes"]

CODES = "codes"
POSITION = "position"


@dataclass(frozen=True)
class Segment:
    """Columns [start, stop) of attribute ``attribute`` (its index): a one-hot ``CODES`` block
    or one ``POSITION`` column."""

    start: int
    stop: int
    attribute: int
    kind: str


def _has_position(disc, a):
    if isinstance(a, Categorical):
        return False
    lo, hi = disc.bounds(a)
    # An Ordinal bin [first, last] spans [first, last + 1): one value per bin needs no position.
    return not isinstance(a, Ordinal) or bool(np.any(hi - lo > 1))


def draw_codes(p, rng):
    """A code per row of the non-negative scores ``p`` (n, k): drawn in proportion (uniform where a
    row is all zero) with ``rng``, the largest without."""
    if rng is None:
        return p.argmax(axis=1)
    tot = p.sum(axis=1, keepdims=True)
    p = np.where(tot > 0, p / np.where(tot > 0, tot, 1.0), 1.0 / p.shape[1])
    return np.minimum((p.cumsum(axis=1) < rng.random((p.shape[0], 1))).sum(axis=1), p.shape[1] - 1)


@dataclass(frozen=True)
class TabularEncoding:
    """The public column layout of a list of attributes.

    Parameters
    ----------
    attributes : sequence of Ordinal, Categorical or Continuous
    bins : int, default 20
        Number of equal public bins of a numeric attribute with a wide domain
        (:class:`~dpknn.schema.Discretization`).
    edges : dict or None
        Public inner bin edges of some numeric attributes, ``{name: increasing values}`` (say
        :func:`~dpknn.schema._discretization.geometric_edges` for money).

    Attributes
    ----------
    discretization : Discretization
        The public codes.
    segments : tuple of Segment
        The column blocks, in column order; every attribute has a ``CODES`` block, followed by
        its ``POSITION`` column when its bins hold several values.
    """

    attributes: tuple
    bins: int = 20
    edges: object = None

    def __post_init__(self):
        disc = Discretization(self.attributes, self.bins, self.edges)
        object.__setattr__(self, "attributes", disc.attributes)
        object.__setattr__(self, "discretization", disc)
        segments, start = [], 0
        for j, (a, size) in enumerate(zip(disc.attributes, disc.sizes)):
            segments.append(Segment(start, start + int(size), j, CODES))
            start += int(size)
            if _has_position(disc, a):
                segments.append(Segment(start, start + 1, j, POSITION))
                start += 1
        object.__setattr__(self, "segments", tuple(segments))

    @property
    def names(self):
        """Names of the attributes, in order."""
        return [a.name for a in self.attributes]

    @property
    def n_columns(self):
        """Width p of the encoded data."""
        return self.segments[-1].stop

    @property
    def column_attribute(self):
        """For each encoded column, the index of its attribute (to expand a mask to columns)."""
        return np.repeat([s.attribute for s in self.segments], [s.stop - s.start for s in self.segments])

    def encode(self, df):
        """``(x, m)``: x of shape (n, p) float32, zeros where missing; m of shape (n, d), 1 = observed
        (or "not applicable").

        Raises :class:`~dpknn.exceptions.DomainError` for a value outside its declared domain and
        ``ValueError`` for an absent column. ``df`` is not modified.
        """
        disc = self.discretization
        codes = disc.encode(df).astype(np.int64)
        n = codes.shape[1]
        x = np.zeros((n, self.n_columns), dtype=np.float32)
        m = (codes != MISSING).astype(np.float32).T
        positions = disc.positions(df, codes)
        rows = np.arange(n)
        for s in self.segments:
            c = codes[s.attribute]
            if s.kind == CODES:
                obs = c != MISSING
                x[rows[obs], s.start + c[obs]] = 1.0
            else:
                x[:, s.start] = positions[s.attribute]
        return x, m

    def decode(self, x, m=None, *, rng=None):
        """A DataFrame of domain-valid values from encoded rows ``x`` (n, p) and mask ``m`` (n, d).

        A codes block holds non-negative scores (probabilities): with ``rng`` (a
        :class:`numpy.random.Generator`) the code is drawn in proportion to them, without it the
        largest is taken. A position is clipped to [0, 1]. ``m`` None: every cell observed;
        otherwise a cell with m < 1/2 decodes to a missing value (NaN; ``<NA>`` in an Ordinal's
        ``Int64`` column). Universes are structural: an attribute is missing outside its universe
        whatever its scores, and inside it "not applicable" is never drawn (its code is drawn, or
        taken, among the value codes). A universe is a condition on attributes that have none, so
        their decoded values settle it before the others are drawn.
        """
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.n_columns:
            raise ValueError(f"x must have shape (n, {self.n_columns}), got {x.shape}.")
        n, d = x.shape[0], len(self.attributes)
        miss = np.zeros((n, d), dtype=bool) if m is None else np.asarray(m) < 0.5
        codes = np.empty((d, n), dtype=np.int64)
        positions = [None] * d
        scores = {}
        for s in self.segments:
            block = x[:, s.start:s.stop]
            if s.kind == POSITION:
                positions[s.attribute] = block[:, 0]
                continue
            scores[s.attribute] = np.clip(block, 0.0, None)
            codes[s.attribute] = np.where(miss[:, s.attribute], MISSING, draw_codes(scores[s.attribute], rng))
        # A numeric attribute without a position column has one value per bin: position 0 is it.
        positions = [np.zeros(n) if p is None and not isinstance(a, Categorical) else p
                     for a, p in zip(self.attributes, positions)]
        disc = self.discretization
        # Every position is given, so decoding is a function of the codes: the universe-free attributes'
        # values below are the ones returned.
        values = disc.decode(codes, rng=rng, positions=positions)
        redrawn = False
        for j, a in enumerate(self.attributes):
            if a.universe is None:
                continue
            na = disc.value_codes(a)
            rows = np.flatnonzero(a.universe.mask(values) & (codes[j] == na))
            if rows.size:
                codes[j, rows] = draw_codes(scores[j][rows, :na], rng)
                redrawn = True
        return disc.decode(codes, rng=rng, positions=positions) if redrawn else values
