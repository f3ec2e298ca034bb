"""Fixed-width IPUMS extracts streamed into Parquet partitions, in bounded memory.

A census extract of 10^7-10^9 lines does not fit a reader that builds one table (ipumspy's
``read_microdata`` holds it all, and parses about 10^5 lines a second here). The layout is in the DDI
codebook: each variable is a field of known columns, so a block of lines is a byte matrix and a field a
slice of it. :func:`fixed_width_to_parquet` reads the (gzip) file in blocks of about 64 MB, cuts them at
the last line end, parses every field of the block with numpy (digits times powers of ten; a field of
blanks is missing; implied decimals divide), maps the special codes by the codebook
(:func:`dpknn.schema.coded_files.apply_codebook`: gaps and not-applicable codes missing, ``NAME_niu``
indicators), and writes a Parquet partition every ``rows_per_partition`` records. Memory is a few blocks,
whatever the file's size. The folder is written under a hidden temporary name and renamed when complete,
so a failed run leaves nothing; then ``dpknn impute``, ``release``, ``rwn`` read it out of core.

A hierarchical extract (household and person lines) gives one row per record of ``record_type`` with the
variables of the last line of each other type above it (its household), as :func:`read_coded` does in
memory; the rows and values equal those of :func:`read_coded` on the same file (tested on the IPUMS
fixtures).
"""

from __future__ import annotations

import gzip
import logging
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpknn.schema.codebook import Codebook, read_codebook
from dpknn.utils.progress import progress_bar

__all__ = ["ConvertedExtract", "fixed_width_to_parquet", "iter_fixed_width"]

logger = logging.getLogger(__name__)

BLOCK_BYTES = 64 << 20
_POW10 = 10 ** np.arange(18, dtype=np.int64)


@dataclass(frozen=True)
class ConvertedExtract:
    """What :func:`fixed_width_to_parquet` wrote: rows, partitions, the folder and the seconds it took."""

    rows: int
    partitions: int
    output: Path
    seconds: float


def _open(path):
    raw = open(path, "rb")
    stream = gzip.GzipFile(fileobj=raw) if str(path).lower().endswith(".gz") else raw
    return raw, stream


def _chars(buf, starts, lengths, start, width):
    """The (n, width) byte matrix of a field; columns past a line's end read as blanks."""
    cols = start + np.arange(width)
    idx = starts[:, None] + cols[None, :]
    chars = buf[np.minimum(idx, buf.size - 1)]
    return np.where(cols[None, :] < lengths[:, None], chars, np.uint8(32))


def _parse(v, chars):
    """A field's values: text, nullable Int64 or float64 (implied decimals divided)."""
    if v.kind in ("text",) or (v.kind == "categorical" and any(isinstance(c, str) for c in v.values)):
        text = np.ascontiguousarray(chars).view(f"S{chars.shape[1]}").ravel()
        return pd.array([t.decode("ascii", "replace").strip() for t in text], dtype="string")
    digits = chars.astype(np.int16) - 48
    is_digit = (digits >= 0) & (digits <= 9)
    blank = ~is_digit.any(axis=1)
    width = chars.shape[1]
    if width > 18:
        values = np.array([float(b.decode("ascii").strip() or "nan") for b in
                           np.ascontiguousarray(chars).view(f"S{width}").ravel()])
        return values / 10 ** v.decimals if v.decimals else values
    values = (np.where(is_digit, digits, 0).astype(np.int64) * _POW10[width - 1::-1][None, :]).sum(axis=1)
    values = np.where((chars == 45).any(axis=1), -values, values)
    if v.decimals:
        out = values / 10.0 ** v.decimals
        out[blank] = np.nan
        return out
    return pd.arrays.IntegerArray(values, blank)


def _frame(buf, starts, lengths, variables):
    return pd.DataFrame({v.name: _parse(v, _chars(buf, starts, lengths, v.start, v.width)) for v in variables})


def iter_fixed_width(path, codebook, *, record_type="P", block_bytes=BLOCK_BYTES, progress=False):
    """The records of a fixed-width extract, block by block, as raw (uncoded) DataFrames.

    Yields frames with the codebook's variables (one row per ``record_type`` record of a hierarchical
    extract, with the variables of the other record types above it attached). Special codes are left as
    they are: :func:`fixed_width_to_parquet` maps them.
    """
    if not isinstance(codebook, Codebook):
        codebook = read_codebook(codebook)
    if codebook.file_format != "ipums-ddi" or any(v.start is None for v in codebook.variables):
        raise ValueError(f"codebook {codebook.source!r} gives no fixed-width layout (a DDI .xml does).")
    if codebook.hierarchical:
        if record_type not in codebook.record_types:
            raise ValueError(f"extract {str(path)!r} has record types {sorted(codebook.record_types)}, not "
                             f"{record_type!r}.")
        try:
            rectype = codebook.variable("RECTYPE")
        except KeyError:
            raise ValueError(f"hierarchical codebook {codebook.source!r} has no RECTYPE variable.") from None
        own = [v for v in codebook.variables if record_type in v.record_types]
        others = {t: [v for v in codebook.variables if t in v.record_types and v.name not in {o.name for o in own}]
                  for t in codebook.record_types if t != record_type}
    else:
        own, others, rectype = list(codebook.variables), {}, None
    carried = {t: None for t in others}     # the last line of each other type, from the blocks before
    raw, stream = _open(path)
    size = os.path.getsize(path)
    bar = progress_bar(progress=progress, total=size / 1e6, desc="reading", unit="MB")
    rest = b""
    try:
        while True:
            chunk = stream.read(block_bytes)
            data = rest + chunk
            if not data:
                break
            cut = data.rfind(b"\n") + 1 if chunk else len(data)
            if cut == 0:
                rest = data
                continue
            block, rest = data[:cut], data[cut:]
            bar.update(raw.tell() / 1e6 - bar.n)
            buf = np.frombuffer(block, dtype=np.uint8)
            ends = np.flatnonzero(buf == 10)
            if not block.endswith(b"\n"):
                ends = np.append(ends, buf.size)
            starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
            lengths = ends - starts
            lengths = lengths - (buf[np.maximum(ends - 1, 0)] == 13)   # CRLF line ends
            keep = lengths > 0
            starts, lengths = starts[keep], lengths[keep]
            if rectype is None:
                yield _frame(buf, starts, lengths, own)
                continue
            types = np.ascontiguousarray(_chars(buf, starts, lengths, rectype.start, rectype.width)) \
                .view(f"S{rectype.width}").ravel()
            mine = types == record_type.encode()
            rows = _frame(buf, starts[mine], lengths[mine], own)
            for t, variables in others.items():
                is_t = types == t.encode()
                parsed = _frame(buf, starts[is_t], lengths[is_t], variables)
                if carried[t] is not None:
                    parsed = pd.concat([carried[t], parsed], ignore_index=True)
                # Index of the last line of type t at or above each line (-1: from an earlier block).
                last = np.maximum.accumulate(np.where(is_t, np.cumsum(is_t) - 1, -1))
                offset = 0 if carried[t] is None else 1
                pos = last[mine] + offset
                if (pos < 0).any():
                    raise ValueError(f"extract {str(path)!r}: {record_type} records precede every {t} record; "
                                     "the file is not in IPUMS's hierarchical order.")
                rows = pd.concat([rows, parsed.iloc[pos].reset_index(drop=True)], axis=1)
                if len(parsed):
                    carried[t] = parsed.iloc[[-1]].reset_index(drop=True)
            yield rows
    finally:
        bar.close()
        stream.close()
        raw.close()


def fixed_width_to_parquet(path, codebook, output, *, rows_per_partition=1_000_000, record_type="P",
                           block_bytes=BLOCK_BYTES, progress=False):
    """Stream a fixed-width extract into a folder of Parquet partitions, its codes mapped by its codebook.

    Parameters
    ----------
    path : str or Path
        The extract (``.dat`` or ``.dat.gz``).
    codebook : Codebook or str or Path
        Its DDI codebook.
    output : str or Path
        A new folder; written under a hidden temporary name beside it and renamed when complete.
    rows_per_partition : int, default 1_000_000
        Records per Parquet file (the last one holds the rest).
    record_type : str, default "P"
        Of a hierarchical extract: the records to write, with their household's variables.
    block_bytes : int
        Bytes read per block (memory is a few blocks).
    progress : bool, default False
        A progress bar over the input's bytes.

    Returns
    -------
    ConvertedExtract
    """
    from dpknn.schema.coded_files import apply_codebook

    if not isinstance(codebook, Codebook):
        codebook = read_codebook(codebook)
    output = Path(output)
    if output.exists():
        raise FileExistsError(f"output {str(output)!r} exists; choose a new folder.")
    if rows_per_partition < 1:
        raise ValueError(f"rows_per_partition must be at least 1, got {rows_per_partition}.")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpknn.utils.io import remove_tree

    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=output.parent, prefix=f".{output.name}.", suffix=".tmp"))
    t0 = time.perf_counter()
    rows = parts = 0
    pending, pending_rows = [], 0
    schema = None

    def flush(frames):
        nonlocal parts, schema
        table = pa.Table.from_pandas(pd.concat(frames, ignore_index=True), preserve_index=False)
        if schema is None:
            schema = table.schema
        pq.write_table(table.cast(schema), tmp / f"part-{parts:05d}.parquet")
        parts += 1

    try:
        for block in iter_fixed_width(path, codebook, record_type=record_type, block_bytes=block_bytes,
                                      progress=progress):
            mapped, _ = apply_codebook(block, codebook)
            start = 0
            while start < len(mapped):
                take = min(rows_per_partition - pending_rows, len(mapped) - start)
                pending.append(mapped.iloc[start:start + take])
                pending_rows += take
                start += take
                if pending_rows == rows_per_partition:
                    flush(pending)
                    pending, pending_rows = [], 0
            rows += len(mapped)
        if pending_rows or not parts:
            flush(pending or [apply_codebook(pd.DataFrame(), codebook)[0]])
        os.replace(tmp, output)
    finally:
        if tmp.exists():
            remove_tree(tmp)   # temporary microdata never outlive the run
    seconds = time.perf_counter() - t0
    logger.info("%s: %d records in %d partitions, %.1f s", path, rows, parts, seconds)
    return ConvertedExtract(rows, parts, output, seconds)
