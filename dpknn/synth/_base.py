"""The base of the DP synthesisers: what a fitted model may publish beside its rows.

A synthetic table is published with the package's one record type
(:class:`~dpknn.mechanisms.PublishedRecord`): the budget the fit spent, the privacy unit (add/remove one
record), the public domains, and whatever the fit released besides the rows (a PrivBayes network, a row
bound, the column order). :meth:`Synthesizer.public_record` builds it, so the command line and a Python caller
publish the same record. Nothing in it is read from the data except through a mechanism; what a fit learns
about the data beyond that stays in its ``curator_`` diagnostics.
"""

from __future__ import annotations

import abc
import logging
import warnings

from sklearn.base import BaseEstimator

from dpknn.mechanisms._base import PrivacyUnit, PublishedRecord
from dpknn.schema._attributes import warn_outside_universes
from dpknn.schema._discretization import check_attributes
from dpknn.utils._validation import check_is_fitted

__all__ = ["Synthesizer", "check_never_missing"]

logger = logging.getLogger(__name__)


def __getattr__(name):
    # NEIGHBOURS was public here (the sidecar's "neighbours"); the relation is PrivacyUnit.ADD_REMOVE now.
    if name == "NEIGHBOURS":
        warnings.warn("NEIGHBOURS is deprecated: the privacy unit is dpknn.mechanisms.PrivacyUnit.ADD_REMOVE, "
                      "published as privacy_unit.", DeprecationWarning, stacklevel=2)
        return PrivacyUnit.ADD_REMOVE.value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_never_missing(never_missing, names):
    """``never_missing`` as a tuple of attribute names, each one of ``names``; else a clear error."""
    unknown = [c for c in never_missing if c not in names]
    if isinstance(never_missing, str) or unknown:
        raise ValueError(f"never_missing names {unknown or [never_missing]}, which are not attributes (it lists "
                         f"attribute names); the attributes are {list(names)}.")
    return tuple(never_missing)


class Synthesizer(BaseEstimator, abc.ABC):
    """Base of every DP synthesiser: ``fit``, ``sample`` and :meth:`public_params`.

    A subclass declares ``parameter_constraints`` (checked by ``validate_params`` first thing in ``fit``,
    before the accountant is charged or a record read) and implements the two abstract methods.
    """

    @abc.abstractmethod
    def fit(self, X, y=None, *, accountant=None):
        """Fit on ``X`` (a DataFrame of the attribute columns; not modified), charging ``accountant`` (a
        :class:`~dpknn.accounting.BudgetAccountant`; None: a new one holding exactly the fit's cost, the one
        rule of :func:`~dpknn.accounting.charge`) before the data are read, kept as ``accountant_``; returns
        ``self``."""

    @abc.abstractmethod
    def sample(self, n, *, rng=None):
        """``n`` synthetic rows (a DataFrame), drawn from the fitted model with ``rng`` (a Generator, an int
        seed, or None for the cryptographic source): post-processing, no further privacy cost."""

    def public_record(self):
        """The public record of the fitted model (:class:`~dpknn.mechanisms.PublishedRecord`): ε and δ spent,
        the privacy unit, and as public parameters the attributes (universes in their checked form), then what
        the method released besides the rows (see :meth:`released_params`). Holds only released values and public
        inputs.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        """
        check_is_fitted(self, "epsilon_")
        epsilon, delta = self.published_budget()
        return PublishedRecord(epsilon=epsilon, delta=delta, unit=PrivacyUnit.ADD_REMOVE, params={
            "attributes": [a.to_dict() for a in check_attributes(self.attributes)], **self.released_params()})

    def public_params(self):
        """:meth:`public_record` as JSON-ready data (``epsilon``, ``delta``, ``privacy_unit``, ``attributes``,
        then the method's released parameters), as ``dpknn synth`` writes it beside the rows.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        """
        return self.public_record().to_dict()

    def published_budget(self):
        """(ε, δ) of the public record: those the fit spent (a method whose spent ε derives from the data
        publishes its public target instead)."""
        return self.epsilon_, self.delta_

    def released_params(self):
        """The method's own public parameters and released structure (none here)."""
        return {}

    def _note_outside_universes(self, X):
        """Set ``n_outside_universe_`` (CONFIDENTIAL: never in :meth:`public_params`) to the observed values
        of ``X`` outside their attribute's universe, by attribute, and log a warning for the curator. Such
        values are not applicable (:class:`~dpknn.schema.Universe`): the fit reads them as the attribute's
        "not applicable" code, as every other part of dpknn does."""
        self.n_outside_universe_ = warn_outside_universes(X, check_attributes(self.attributes), logger)
