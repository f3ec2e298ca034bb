"""Reading tables and writing output files all or nothing (used by the command line and the
experiments): every file goes to a temporary name beside its target and is renamed into place
only when all of them are complete, so a failed run leaves nothing behind."""

from __future__ import annotations

import logging
import math
import os
import sys
import tempfile
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["IMPUTED_MARKER", "NA_VALUES", "check_not_inside", "check_outputs", "figure_writer", "is_marked_imputed",
           "markdown_table", "read_table", "read_toml", "table_writer", "text_writer", "write_files",
           "write_with_figures"]

logger = logging.getLogger(__name__)

#: Key of the marker that ``dpknn impute`` writes into its outputs (Parquet key-value metadata and
#: the JSON sidecar); ``dpknn release`` refuses marked input, whose imputed values it would take as
#: observed.
IMPUTED_MARKER = "dpknn:imputed"


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_not_inside(output, input_dir, what="output"):
    """Refuse ``output`` when it resolves inside the folder ``input_dir`` (or is it).

    The next run on that folder would read the output as more records of the input (an imputed
    copy doubles the rows and counts every record twice).
    """
    folder = Path(input_dir).resolve()
    r = Path(output).resolve()
    if r == folder or folder in r.parents:
        raise ValueError(f"{what} {str(output)!r} lies inside the input folder {str(input_dir)!r}: the next run on "
                         f"that folder would read it as input records. Choose a path outside {str(input_dir)!r}.")


def check_outputs(outputs, inputs):
    """Refuse, before any work, outputs that resolve to an input, lie inside an input folder, or
    resolve to each other."""
    seen = {}
    ins = {Path(p).resolve(): str(p) for p in inputs if p is not None}
    folders = [p for p in inputs if p is not None and Path(p).is_dir()]
    for out in outputs:
        if out is None:
            continue
        r = Path(out).resolve()
        if r in ins:
            raise ValueError(f"output {str(out)!r} is the input {ins[r]!r}; refusing to overwrite an input.")
        for folder in folders:
            check_not_inside(out, folder)
        if r in seen:
            raise ValueError(f"outputs {seen[r]!r} and {str(out)!r} are the same file.")
        seen[r] = str(out)


# Removals of temporary microdata under way, and signals that arrived during them (see defer_signal).
_cleaning = [0]
_pending = []


def defer_signal(signum):
    """For a signal handler that ends the run: True while :func:`remove_tree` runs, and then the signal
    is delivered again when the removal is complete, so that it cannot stop the removal halfway."""
    if _cleaning[0]:
        _pending.append(signum)
        return True
    return False


def remove_tree(path):
    """Remove the folder ``path`` (temporary, confidential microdata); a termination signal that arrives
    meanwhile is held back until the folder is gone (:func:`defer_signal`)."""
    import shutil
    import signal
    import time

    _cleaning[0] += 1
    try:
        # A cancelled Dask task that was already running may still be writing a file into the folder while
        # it is removed (rmtree then cannot remove the folder): try again while such writers finish. They
        # never recreate a removed folder, so the folder is gone once they stop.
        for attempt in range(50):
            shutil.rmtree(path, ignore_errors=True)
            if not os.path.exists(path):
                break
            time.sleep(0.02 * (attempt + 1))
    finally:
        _cleaning[0] -= 1
        if not _cleaning[0] and _pending:
            signum = _pending[-1]
            _pending.clear()
            signal.raise_signal(signum)


def partition_files(folder):
    """The Parquet files of a folder that are partitions: not under a name starting with '.' or '_'
    (hidden files, metadata, and the temporary folders of an interrupted run)."""
    folder = Path(folder)
    return [p for p in folder.rglob("*.parquet")
            if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(folder).parts)]


def is_marked_imputed(path):
    """True when ``path`` was written by ``dpknn impute`` (Parquet metadata or JSON sidecar; for a
    folder of Parquet partitions, when any partition is marked)."""
    import json

    path = Path(path)
    if path.is_dir():
        return any(is_marked_imputed(f) for f in partition_files(path))
    side = Path(str(path) + ".json")
    if side.exists():
        try:
            if json.loads(side.read_text(encoding="utf-8")).get(IMPUTED_MARKER):
                return True
        except (ValueError, OSError, AttributeError):
            pass
    if path.suffix.lower() == ".parquet" and path.exists():
        import pyarrow.parquet as pq

        meta = pq.read_schema(path).metadata or {}
        return IMPUTED_MARKER.encode() in meta
    return False


def read_toml(path, what):
    """The parsed TOML file ``path``; ``what`` names it in errors ("schema file", ...)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist.")
    with path.open("rb") as fh:
        try:
            return tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{what} {str(path)!r} is not valid TOML: {exc}") from None


#: The strings read as a missing cell in a CSV besides an empty field, unless a caller says otherwise:
#: none. pandas' defaults would also read "NA", "None", "null", "NaN" and a dozen more as missing,
#: silently turning a category named "NA" (North America) or "None" into a gap.
NA_VALUES = ()


def read_table(path, *, na_values=NA_VALUES, attributes=()):
    """Read a CSV or Parquet file (by extension).

    In a CSV, an empty field (as pandas writes a missing cell) and the strings in ``na_values``
    are missing cells; every other string is a value, so a category spelt "NA" or "None" stays a
    category. Pass ``na_values=("NA",)`` for files written by R.

    ``attributes`` (declared attributes: a schema's or an attributes file's) give a CSV's columns
    the types they declare instead of the types guessed from the text: a categorical attribute whose
    categories are strings is read as text, so the codes "9", "10" stay the strings they are declared
    as even when the file happens to hold only numbers (a synthetic file in which a category did not
    occur, say) and "01" keeps its zero.
    """
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"input {str(path)!r} does not exist.")
    if path.suffix.lower() == ".parquet":
        return pd.read_parquet(path)
    if path.suffix.lower() in (".csv", ".gz"):
        extra = [na_values] if isinstance(na_values, str) else list(na_values)
        text = {a.name: str for a in attributes
                if getattr(a, "categories", None) and all(isinstance(c, str) for c in a.categories)}
        return pd.read_csv(path, keep_default_na=False, na_values=["", *extra], dtype=text or None)
    raise ValueError(f"input {str(path)!r}: use a .csv or .parquet file.")


def write_files(files):
    """Write ``[(path, write)]``: each ``write(tmp_path)`` first, then rename them all."""
    temps = []
    try:
        for path, write in files:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            os.close(fd)
            temps.append((tmp, path))
            write(tmp)
            # mkstemp creates 0600; outputs follow the umask like any other file.
            os.chmod(tmp, 0o666 & ~_umask())
        for tmp, path in temps:
            os.replace(tmp, path)
    finally:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)


def write_with_figures(files, make_figures):
    """:func:`write_files` of ``files`` plus the PNGs of ``make_figures() -> [(path, figure)]``.

    Without matplotlib (the ``plot`` extra) the figures are skipped with a warning and the other
    files are still written. The figures are closed afterwards. Returns the paths written.
    """
    figures = []
    try:
        figures = list(make_figures())
    except ImportError:
        logger.warning("matplotlib is not installed: figures skipped (pip install 'dpknn[plot]')")
    try:
        files = [*files, *((path, figure_writer(fig)) for path, fig in figures)]
        write_files(files)
    finally:
        if figures:
            import matplotlib.pyplot as plt

            for _, fig in figures:
                plt.close(fig)
    return [Path(p) for p, _ in files]


def table_writer(df, path, *, metadata=None):
    """A writer for :func:`write_files` choosing CSV or Parquet by the target's extension.

    ``metadata`` (str -> str) goes into the Parquet file's key-value metadata.
    """
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        if metadata:
            def write(tmp):
                import pyarrow as pa
                import pyarrow.parquet as pq

                table = pa.Table.from_pandas(df, preserve_index=False)
                meta = dict(table.schema.metadata or {})
                meta.update({k.encode(): v.encode() for k, v in metadata.items()})
                pq.write_table(table.replace_schema_metadata(meta), tmp)
            return write
        return lambda tmp: df.to_parquet(tmp, index=False)
    if suffix in (".csv", ".gz"):
        return lambda tmp: df.to_csv(tmp, index=False)
    raise ValueError(f"output {str(path)!r}: use a .csv or .parquet file name.")


def text_writer(text):
    """A writer (for :func:`write_files`) of ``text`` as a UTF-8 file."""
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
    return write


def figure_writer(fig):
    """A writer saving a matplotlib figure as PNG (the temporary name has no .png suffix)."""
    return lambda tmp: fig.savefig(tmp, format="png", dpi=120)


def markdown_table(df, fmt="{:.4f}"):
    """A Markdown table of ``df`` with its index as the first column; floats formatted by ``fmt``."""
    cols = list(df.columns)
    lines = ["| " + " | ".join([str(df.index.name), *cols]) + " |", "|" + "---|" * (len(cols) + 1)]
    for idx, row in df.iterrows():
        cells = [fmt.format(v) if isinstance(v, float) and not math.isnan(v) else ("" if isinstance(v, float)
                 else str(v)) for v in row]
        lines.append("| " + " | ".join([str(idx), *cells]) + " |")
    return "\n".join(lines)
