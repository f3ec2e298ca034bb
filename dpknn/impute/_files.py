"""The staging files of the out-of-core imputation (:mod:`dpknn.impute._distributed`): one ``.npy`` file per
column, written whole and read by ranges or memory-mapped, each value in its narrowest exact dtype."""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["INBOX", "LABELS", "STAGED", "NpyColumn", "compact", "concat_columns", "index_dtype", "map_npy",
           "read_columns", "staged_rows", "write_columns"]


INBOX = "donors-{:05d}"
STAGED = "staged-{:05d}"
LABELS = "labels-{:05d}.npy"


def write_columns(folder, columns):
    """Numeric columns as one .npy file each in ``folder``, so that readers can map them."""
    folder = Path(folder)
    folder.mkdir(exist_ok=True)  # a task Dask runs again after losing a worker writes the same files
    for name, col in columns.items():
        np.save(folder / f"{name}.npy", np.ascontiguousarray(col))
# The header of a 1-d array written by numpy.save (format 1.0, 2.0 or 3.0).
_NPY_HEADER = re.compile(rb"'descr':\s*'([^']+)',\s*'fortran_order':\s*False,\s*'shape':\s*\((\d+),?\)")


@dataclass(frozen=True)
class NpyColumn:
    """A one-dimensional ``.npy`` file: its path, dtype, length and the byte offset of its data.

    The passes read 10^6 pieces of 10^3 staging files at 10^9 rows; ``numpy.load`` spends about
    77 µs per file parsing the header with ``ast`` (and needs a lock, ``_NPY_LOCK``), while this
    reads it with one small read and a regular expression, and slices are read with ``pread``.
    """

    path: str
    dtype: np.dtype
    size: int
    offset: int

    @classmethod
    def open(cls, path):
        with open(path, "rb") as f:
            head = f.read(512)
        match = _NPY_HEADER.search(head) if head[:6] == b"\x93NUMPY" else None
        if match is None:   # another layout: let numpy read it
            arr = map_npy(path)
            return cls(str(path), arr.dtype, int(arr.size), int(arr.offset))
        start = 10 if head[6] == 1 else 12
        length = int.from_bytes(head[8:start], "little")
        return cls(str(path), np.dtype(match.group(1).decode()), int(match.group(2)), start + length)

    def rows(self, lo, hi):
        """Values [lo, hi), read (not mapped)."""
        lo, hi = int(lo), int(hi)
        if hi <= lo:
            return np.zeros(0, dtype=self.dtype)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            data = os.pread(fd, (hi - lo) * self.dtype.itemsize, self.offset + lo * self.dtype.itemsize)
        finally:
            os.close(fd)
        return np.frombuffer(data, dtype=self.dtype).copy()

    def mapped(self):
        """The whole column memory-mapped: a binary search or a gather reads only what it touches."""
        return np.memmap(self.path, dtype=self.dtype, mode="r", offset=self.offset, shape=(self.size,))


def read_columns(folder, names):
    """The :class:`NpyColumn` of each of ``names`` in a folder written by :func:`write_columns`."""
    return {name: NpyColumn.open(Path(folder) / f"{name}.npy") for name in names}
# np.load parses each .npy header with ast.literal_eval, which is not thread-safe before CPython 3.11.8
# (the AST constructor's recursion counter, CPython gh-106905: "SystemError: AST constructor recursion
# depth mismatch"); Dask workers with several threads, or in-process clients, load concurrently.
_NPY_LOCK = threading.Lock()


def map_npy(path):
    """``numpy.load(path, mmap_mode="r")``, one header at a time (see ``_NPY_LOCK``)."""
    with _NPY_LOCK:
        return np.load(path, mmap_mode="r")


def concat_columns(parts, names):
    """Each of ``names`` concatenated over ``parts`` (dicts of equal-keyed column arrays)."""
    return {name: np.concatenate([p[name] for p in parts]) for name in names}


def index_dtype(n):
    """The narrowest signed integer dtype that holds 0 .. n - 1."""
    return compact(np.array([0, max(int(n) - 1, 0)])).dtype


def compact(values):
    """``values`` in the narrowest dtype that holds every one of them exactly: float32 for floats
    that survive the round trip (NaN included), the narrowest integer type for codes. Readers
    widen them again (float64, int64) before any arithmetic, so nothing computed changes."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            narrow = values.astype(np.float32)
            exact = (narrow == values) | np.isnan(values)
        return narrow if exact.all() else values
    if values.dtype.kind in "iu":
        if values.size == 0:
            return values.astype(np.int8)
        low, high = int(values.min()), int(values.max())
        narrow = next((t for t in (np.int8, np.int16, np.int32, np.int64)
                       if np.iinfo(t).min <= low and high <= np.iinfo(t).max), None)
        return values if narrow is None else values.astype(narrow)
    return values


def staged_rows(cols, rows, offset):
    """Rows of one staging file (a (lo, hi) range, or positions), with their global row numbers
    ``gid`` and their labels (the row numbers when the data have no label column)."""
    if isinstance(rows, tuple):
        out = {name: col.rows(*rows) for name, col in cols.items()}
    else:
        out = {name: np.asarray(col.mapped()[rows]) for name, col in cols.items()}
    out["gid"] = offset + out.pop("row").astype(np.int64)
    if "label" not in out:
        out["label"] = out["gid"]
    return out
