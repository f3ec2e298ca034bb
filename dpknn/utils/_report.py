"""One base for the package's reports: Markdown, JSON and PNG figures, written all or nothing.

:class:`~dpknn.impute.CuratorReport` and :class:`~dpknn.metrics.EvaluationReport` hold different
measures but are written the same way: ``<stem>.md``, ``<stem>.json`` (strict JSON: NaN and
infinities become null) and the figures, to a temporary name each and moved into place only when
all are ready (:func:`dpknn.utils._io.write_with_figures`); the figures are skipped with a warning
without matplotlib.
"""

from __future__ import annotations

import abc
import json
import math
from pathlib import Path

from dpknn.utils._io import text_writer, write_with_figures

__all__ = ["Report", "crowded", "strict_json"]


def crowded(counts, *, share=0.9, fraction=0.2):
    """Whether a histogram's mass sits in a few of its bars: ``share`` of it in at most ``fraction`` of the
    bins (an amount on a wide public range, income on 0-500,000, has nearly everything in the first of
    ten equal bins). A figure then cuts the attribute at quantiles instead, so that its bars show something."""
    import numpy as np

    c = np.sort(np.asarray(counts, dtype=np.float64))[::-1]
    if c.size < 2 or c.sum() <= 0:
        return False
    needed = int(np.searchsorted(np.cumsum(c), share * c.sum())) + 1
    return needed <= max(1, int(fraction * c.size))


def strict_json(value):
    """``value`` (JSON-ready data) with every non-finite float replaced by None, so that the file is
    strict JSON that any reader accepts."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value


class Report(abc.ABC):
    """A report written as ``<stem>.md``, ``<stem>.json`` and PNG figures; subclasses set ``stem``."""

    stem = None

    @abc.abstractmethod
    def to_dict(self):
        """The report as JSON-ready data."""

    @abc.abstractmethod
    def to_markdown(self):
        """The report as Markdown."""

    @abc.abstractmethod
    def figures(self):
        """``[(file name, matplotlib Figure)]`` of the report's plots (needs matplotlib)."""

    def files(self, directory):
        """``(files, make_figures)`` for :func:`dpknn.utils._io.write_with_figures`: what :meth:`write`
        writes, for callers that write the report together with other files (all or nothing)."""
        directory = Path(directory)
        if directory.exists() and not directory.is_dir():
            raise ValueError(f"report directory {str(directory)!r} exists and is not a directory.")
        text = json.dumps(strict_json(self.to_dict()), indent=2, allow_nan=False) + "\n"
        files = [(directory / f"{self.stem}.md", text_writer(self.to_markdown() + "\n")),
                 (directory / f"{self.stem}.json", text_writer(text))]
        return files, lambda: [(directory / name, fig) for name, fig in self.figures()]

    def write(self, directory):
        """Write ``<stem>.md``, ``<stem>.json`` and the PNG figures to ``directory`` (all or nothing; the
        figures are skipped with a warning without matplotlib). Returns the paths written."""
        files, make_figures = self.files(directory)
        return write_with_figures(files, make_figures)
