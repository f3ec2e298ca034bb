"""Reading tables and writing output files all or nothing (used by the command line and the
experiments): every file goes to a temporary name beside its target and is renamed into place
only when all of them are complete, so a failed run leaves nothing behind."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["figure_writer", "read_table", "table_writer", "text_writer", "write_files"]


def read_table(path):
    """Read a CSV or Parquet file (by extension)."""
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"input {str(path)!r} does not exist.")
    if path.suffix.lower() == ".parquet":
        return pd.read_parquet(path)
    if path.suffix.lower() in (".csv", ".gz"):
        return pd.read_csv(path)
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
        for tmp, path in temps:
            os.replace(tmp, path)
    finally:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)


def table_writer(df, path):
    """A writer for :func:`write_files` choosing CSV or Parquet by the target's extension."""
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        return lambda tmp: df.to_parquet(tmp, index=False)
    if suffix in (".csv", ".gz"):
        return lambda tmp: df.to_csv(tmp, index=False)
    raise ValueError(f"output {str(path)!r}: use a .csv or .parquet file name.")


def text_writer(text):
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
    return write


def figure_writer(fig):
    """A writer saving a matplotlib figure as PNG (the temporary name has no .png suffix)."""
    return lambda tmp: fig.savefig(tmp, format="png", dpi=120)
