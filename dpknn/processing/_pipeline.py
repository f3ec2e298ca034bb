"""Clamp, impute and resize a table with public parameters read from a TOML file.

The file (format in ``docs/processing.md``) holds per-column ``[clamp.COLUMN]`` and
``[impute.COLUMN]`` tables and an optional ``[resize]`` table. The steps run in that order:
clamp, then the data-independent impute, then resize. Every parameter is public: it is read from
the file, never from the data. Clamp and impute map each record on its own (1-stable under
add/remove one record); resize changes the privacy accounting, which :class:`ProcessingResult`
carries (see :class:`dpknn.processing.Resized`).

References
----------
.. [1] Harvard Privacy Tools Project. "Data Processing Notes": §2 clamping, §3 imputation,
   §4 resize.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field

from dpknn.mechanisms._base import PrivacyUnit
from dpknn.processing._transforms import Resized, clamp, impute, resize
from dpknn.schema._flags import flag_columns
from dpknn.utils._validation import check_keys, check_rng

__all__ = ["ProcessingPlan", "ProcessingResult", "run_plan"]

logger = logging.getLogger(__name__)

_CLAMP_KEYS = {"lower", "upper", "categories", "null_value"}
_IMPUTE_KEYS = {"lower", "upper", "integer", "distribution", "shift", "scale", "categories", "weights",
                "null_value"}
_RESIZE_KEYS = {"n", "p", "privacy_unit", "neighboring", "source_column"}


@dataclass(frozen=True)
class ProcessingPlan:
    """Public parameters of the processing steps.

    Attributes
    ----------
    clamp, impute : dict
        ``{column: {parameter: value}}`` as :func:`dpknn.processing.clamp` and
        :func:`dpknn.processing.impute` take them for one column.
    resize : dict or None
        ``n``, and optionally ``p``, ``privacy_unit`` (``"add_remove"``, the default, or ``"replace"``;
        ``neighboring`` is its deprecated name) and ``source_column`` (a column to add that
        holds each output row's position in the input, -1 for padding). Padding records are
        filled with the ``impute`` parameters, which must then cover every column.
    """

    clamp: dict = field(default_factory=dict)
    impute: dict = field(default_factory=dict)
    resize: dict | None = None

    @classmethod
    def from_dict(cls, spec, *, where="processing description"):
        """Check a dict shaped like the TOML file; errors name the table and key."""
        if not isinstance(spec, dict):
            raise TypeError(f"{where} must be a mapping, got {type(spec).__name__}.")
        check_keys(spec, {"clamp", "impute", "resize"}, where,
                   hint="expected [clamp.COLUMN], [impute.COLUMN] and [resize]", noun="tables")
        if not spec:
            raise ValueError(f"{where} is empty: give [clamp.COLUMN], [impute.COLUMN] or [resize] tables.")
        steps = {}
        for step, keys in (("clamp", _CLAMP_KEYS), ("impute", _IMPUTE_KEYS)):
            tables = spec.get(step, {})
            if not isinstance(tables, dict):
                raise TypeError(f"{where}: [{step}] must hold one table per column ([{step}.COLUMN]), got {tables!r}.")
            for col, params in tables.items():
                if not isinstance(params, dict) or not params:
                    raise ValueError(f"{where}: [{step}.{col}] must be a table of parameters, got {params!r}.")
                check_keys(params, keys, f"{where}: [{step}.{col}]")
            steps[step] = {c: dict(p) for c, p in tables.items()}
        size = spec.get("resize")
        if size is not None:
            if not isinstance(size, dict) or "n" not in size:
                raise ValueError(f"{where}: [resize] needs n (the public number of output records), got {size!r}.")
            check_keys(size, _RESIZE_KEYS, f"{where}: [resize]")
            size = dict(size)
            if "neighboring" in size:
                if "privacy_unit" in size:
                    raise ValueError(f"{where}: [resize] gives privacy_unit and neighboring (its old name); keep "
                                     "privacy_unit.")
                # A FutureWarning, not a DeprecationWarning: it is meant for whoever wrote the file, and Python
                # shows it on the command line by default.
                warnings.warn(f"{where}: [resize] neighboring is the old name of privacy_unit; write privacy_unit = "
                              f"{size['neighboring']!r}. The old name will go.", FutureWarning, stacklevel=2)
                size["privacy_unit"] = size.pop("neighboring")
            if "privacy_unit" in size:   # checked here, before a step runs
                try:
                    PrivacyUnit.parse(size["privacy_unit"])
                except ValueError as err:
                    raise ValueError(f"{where}: [resize] privacy_unit: {err}") from None
        return cls(clamp=steps["clamp"], impute=steps["impute"], resize=size)

    @classmethod
    def from_file(cls, path):
        """Read a plan from a TOML file (``docs/processing.md``)."""
        from dpknn.utils._io import read_toml

        spec = read_toml(path, "processing file")
        return cls.from_dict(spec, where=f"processing file {str(path)!r}")


@dataclass(frozen=True)
class ProcessingResult:
    """The processed table and, when it was resized, the resize's privacy accounting.

    Attributes
    ----------
    data : pandas.DataFrame
    resized : Resized or None
        ``resized.privacy_on_original`` turns the budget of a mechanism run on ``data`` into the
        budget it spends on the input. Its ``source`` and ``data`` are confidential.
    """

    data: object
    resized: Resized | None = None


def _by_column(df, tables, step):
    absent = [c for c in tables if c not in df.columns]
    if absent:
        raise ValueError(f"[{step}] names columns {absent} that are not in the data (columns: "
                         f"{list(df.columns)[:20]}).")


def run_plan(df, plan, *, rng=None):
    """Run the steps of ``plan`` on ``df``: clamp, impute, then resize.

    Parameters
    ----------
    df : pandas.DataFrame
        Not modified.
    plan : ProcessingPlan
    rng : numpy.random.Generator, int or None
        Source of the imputation and resize draws.

    Returns
    -------
    ProcessingResult
        Without ``[resize]`` the output has the input's rows in the input's order.
    """
    if not isinstance(plan, ProcessingPlan):
        raise TypeError(f"plan must be a ProcessingPlan, got {type(plan).__name__}.")
    rng = check_rng(rng)
    _by_column(df, plan.clamp, "clamp")
    _by_column(df, plan.impute, "impute")
    for step, tables in (("clamp", plan.clamp), ("impute", plan.impute)):
        named = [c for c in tables if c in flag_columns(df)]
        if named:
            raise ValueError(f"[{step}] names the imputation flag columns {named}; they record which values "
                             "dpknn impute filled and are carried through unchanged. Remove them from the "
                             f"[{step}] table.")
    out = df
    for col, params in plan.clamp.items():
        out = out.assign(**{col: clamp(out[[col]], **{k: {col: v} for k, v in params.items()})[col]})
    for col, params in plan.impute.items():
        kwargs = {k: (v if k == "distribution" else {col: v}) for k, v in params.items()}
        out = out.assign(**{col: impute(out[[col]], rng=rng, **kwargs)[col]})
    if plan.resize is None:
        return ProcessingResult(data=out.copy() if out is df else out)
    size = dict(plan.resize)
    source_column = size.pop("source_column", None)
    if source_column is not None and source_column in out.columns:
        raise ValueError(f"[resize] source_column {source_column!r} is already a column of the data.")
    distributions = {p.get("distribution", "uniform") for p in plan.impute.values()}
    if len(distributions) > 1:
        raise ValueError("[resize] pads with the [impute] tables, which must then share one distribution; they use "
                         f"{sorted(distributions)}.")
    pad = {"distribution": distributions.pop()} if distributions else {}
    for col, params in plan.impute.items():
        for k, v in params.items():
            if k != "distribution":
                pad.setdefault(k, {})[col] = v
    result = resize(out, size.pop("n"), unit=size.pop("privacy_unit", "add_remove"), rng=rng, impute_kwargs=pad,
                    **size)
    data = result.data
    if source_column is not None:
        data = data.assign(**{source_column: result.source})
    logger.info("resized to %d records (c=%d, s=%.4g)", len(data), result.c, result.s)
    return ProcessingResult(data=data, resized=result)
