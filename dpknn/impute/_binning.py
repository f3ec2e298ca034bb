"""Coarser bins for ordinal attributes when certifying L1(D) passes the work limit.

The exact L1 search (``docs/imputation.md``) costs more on fine ordinal attributes. When it stops
with :class:`~dpknn.exceptions.WorkLimitError`, how much a coarser bin would save cannot be read
off the failed search: it depends on where the donors end up once cells merge. So this module
does not estimate; it *searches again* on the same data with coarser bins, attribute by attribute,
and reports the first schema whose L1 search fits ``max_work``, together with every trial.

A bin width chosen by looking at the data is not a public parameter. The result is for the
curator's planning: before a release, fix the bins on public grounds (a published
classification, the bins of earlier releases); a release whose schema was chosen here from the
very data it releases is not covered by the stated guarantee. The function says so with a
:class:`~dpknn.exceptions.PrivacyLeakWarning`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from dataclasses import dataclass

from dpknn.exceptions import PrivacyLeakWarning, WorkLimitError
from dpknn.impute._knn import DEFAULT_MAX_WORK, KNNImputer
from dpknn.impute._scheme import most_split_ordinal
from dpknn.schema._attributes import Ordinal, Schema
from dpknn.utils._validation import check_positive_int

__all__ = ["BinningSuggestion", "BinningTrial", "suggest_bin_widths"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BinningTrial:
    """One fit tried by :func:`suggest_bin_widths`.

    Attributes
    ----------
    bin_widths : dict of str to int
        Bin width of every ordinal known attribute in this trial.
    fits : bool
        Whether the exact L1 search finished within ``max_work``.
    work : int
        Ball-box tests the L1 search spent (``max_work`` when it did not fit).
    seconds : float or None
        Time of the whole fit; None for a failure the caller passed in (``failure=``).
    """

    bin_widths: dict
    fits: bool
    work: int
    seconds: float


@dataclass(frozen=True)
class BinningSuggestion:
    """Outcome of :func:`suggest_bin_widths`. Confidential: it depends on the data.

    Attributes
    ----------
    schema : Schema or None
        The first schema tried whose exact L1 search fits ``max_work``; None when none did.
    trials : tuple of BinningTrial
        Every fit tried, in order; the last one is ``schema``'s when it fits.
    """

    schema: Schema | None
    trials: tuple

    @property
    def fits(self):
        """Whether some tried bin widths certified L1(D) within the work limit."""
        return self.schema is not None

    @property
    def bin_widths(self):
        """Bin widths of the ordinal attributes of ``schema`` (None when nothing fits)."""
        return self.trials[-1].bin_widths if self.fits else None

    def changed(self):
        """The ordinal attributes whose bin width differs from the original schema's."""
        if not self.fits:
            return {}
        first = self.trials[0].bin_widths
        return {name: bw for name, bw in self.bin_widths.items() if first[name] != bw}


def suggest_bin_widths(schema, df, *, k=1, max_work=DEFAULT_MAX_WORK, factor=4, max_trials=8, failure=None):
    """Search again with coarser ordinal bins until the exact L1(D) fits ``max_work``.

    Greedy: fit; on :class:`~dpknn.exceptions.WorkLimitError`, multiply by ``factor`` the bin
    width of the ordinal attribute the failed search split most often (among those with more than
    one code), and fit again; stop at the first fit, when no ordinal attribute can be coarsened
    further, or after ``max_trials`` fits. Every answer it gives was verified by a full fit on
    ``df``; it never predicts.

    Parameters
    ----------
    schema : Schema
        The schema whose L1 search passed ``max_work``.
    df : pandas.DataFrame
        The data (not modified).
    k : int, default 1
        Donors per incomplete record, as for :class:`~dpknn.impute.KNNImputer`.
    max_work : int, default DEFAULT_MAX_WORK
        Work limit each trial must fit.
    factor : int, default 4
        How much coarser each step makes the chosen attribute's bins (at least 2).
    max_trials : int, default 8
        Largest number of fits, the first (the schema as given) included.
    failure : WorkLimitError or None
        The error that fitting ``schema`` on ``df`` with this ``k`` and ``max_work`` already
        raised; the first trial then uses it instead of fitting again.

    Returns
    -------
    BinningSuggestion

    Warns
    -----
    PrivacyLeakWarning
        Always: bin widths chosen on the data are not public parameters.

    References
    ----------
    .. [1] Clifton et al. (2022), "Differentially private k-nearest neighbor missing data
       imputation", §4 (L1(D)); ``docs/imputation.md`` (the search and its work limit).
    """
    if not isinstance(schema, Schema):
        raise TypeError(f"schema must be a dpknn.Schema, got {type(schema).__name__}.")
    check_positive_int(max_work, "max_work")
    factor = check_positive_int(factor, "factor", minimum=2)
    if failure is not None and not isinstance(failure, WorkLimitError):
        raise TypeError(f"failure must be a WorkLimitError or None, got {type(failure).__name__}.")
    max_trials = check_positive_int(max_trials, "max_trials")
    warnings.warn(
        "suggest_bin_widths chooses bin widths by fitting the data: they are not public parameters. "
        "Use the result to plan, then fix bins on public grounds before any release.",
        PrivacyLeakWarning, stacklevel=2,
    )
    trials = []
    current = schema
    for _ in range(max_trials):
        widths = {a.name: a.bin_width for a in current.known if isinstance(a, Ordinal)}
        t = time.perf_counter()
        try:
            if failure is not None and current is schema:
                raise failure
            imp = KNNImputer(current, k=k, max_work=max_work).fit(df)
        except WorkLimitError as err:
            seconds = None if err is failure else time.perf_counter() - t
            trials.append(BinningTrial(widths, False, int(max_work), seconds))
            logger.info("suggest_bin_widths: %s does not fit", widths)
            coarser = _coarsen(current, err.splits, factor)
            if coarser is None:
                break
            current = coarser
            continue
        trials.append(BinningTrial(widths, True, int(imp.l1_work_), time.perf_counter() - t))
        logger.info("suggest_bin_widths: %s fits, work %d (%.1f s)", widths, imp.l1_work_, trials[-1].seconds)
        return BinningSuggestion(current, tuple(trials))
    return BinningSuggestion(None, tuple(trials))


def _coarsen(schema, splits, factor):
    """``schema`` with the most-split ordinal attribute binned ``factor`` times coarser, or None."""
    attr = most_split_ordinal(schema, splits)
    if attr is None:
        return None
    # Past the whole range the attribute has one code: it no longer separates records.
    width = min(attr.bin_width * factor, attr.upper - attr.lower + 1)
    known = [dataclasses.replace(a, bin_width=width) if a.name == attr.name else a for a in schema.known]
    return dataclasses.replace(schema, known=known)
