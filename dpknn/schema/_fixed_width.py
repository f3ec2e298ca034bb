"""Fixed-width IPUMS extracts streamed into Parquet partitions, in bounded memory.

A census extract of 10^7-10^9 lines does not fit a reader that builds one table (ipumspy's
``read_microdata`` holds it all, and parses about 10^5 lines a second here). The layout is in the DDI
codebook: each variable is a field of known columns, so a block of lines is a byte matrix and a field a
slice of it. :func:`fixed_width_to_parquet` reads the (gzip) file in blocks of about 8 MB, cuts them at
the last line end, parses every field of the block with numpy (digits times powers of ten; a field of
blanks is missing; implied decimals divide), maps the special codes by the codebook
(:func:`dpknn.schema._coded_files.apply_codebook`: gaps and not-applicable codes missing, ``NAME_niu``
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
import itertools
import logging
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpknn.schema._codebook import Codebook, read_codebook
from dpknn.utils._progress import progress_bar

__all__ = ["ConvertedExtract", "fixed_width_to_parquet", "iter_fixed_width"]

logger = logging.getLogger(__name__)

BLOCK_BYTES = 8 << 20
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
    """The (n, width) byte matrix of a field (columns past a line's end read as blanks): a view of the block
    where its lines are evenly spaced (a rectangular extract), a gather otherwise."""
    n = starts.size
    if n and starts[0] == 0 and n * (starts[1] - starts[0] if n > 1 else lengths[0] + 1) <= buf.size:
        stride = int(starts[1] - starts[0]) if n > 1 else int(lengths[0]) + 1
        if stride > start + width - 1 and (n == 1 or bool((np.diff(starts) == stride).all())):
            return buf[:n * stride].reshape(n, stride)[:, start:start + width]
    cols = start + np.arange(width)
    idx = starts[:, None] + cols[None, :]
    chars = buf[np.minimum(idx, buf.size - 1)]
    return np.where(cols[None, :] < lengths[:, None], chars, np.uint8(32))


def _parse(v, chars, lines):
    """A field's values: text, nullable Int64 or float64 (implied decimals divided). A number is optional
    leading blanks, an optional minus and digits, with at most one explicit decimal point (then the value is
    as written); a field of blanks is missing. Anything else is an error naming the line (``lines``: the
    1-based line number of each row), never a number read from a malformed field."""
    if v.kind in ("text",) or (v.kind == "categorical" and any(isinstance(c, str) for c in v.values)):
        text = np.ascontiguousarray(chars).view(f"S{chars.shape[1]}").ravel()
        return pd.array([t.decode("latin-1").strip() for t in text], dtype="string")
    width = chars.shape[1]
    digit = chars - np.uint8(48)            # uint8: wraps below '0', so one comparison tests a digit
    is_digit = digit <= 9
    nonblank = chars != 32
    is_minus = chars == 45
    is_dot = chars == 46
    blank = ~nonblank.any(axis=1)
    bad = ~(is_digit | ~nonblank | is_minus | is_dot).all(axis=1)               # another character
    bad |= (nonblank[:, :-1] & ~nonblank[:, 1:]).any(axis=1)                   # a blank after the number
    bad |= (is_minus[:, 1:] & nonblank[:, :-1]).any(axis=1)                    # a minus inside it
    bad |= ~blank & ~is_digit.any(axis=1)                                      # no digit at all
    dotted = is_dot.any(axis=1)
    if dotted.any():
        bad |= is_dot.sum(axis=1) > 1
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        shown = bytes(chars[row]).decode("latin-1")
        raise ValueError(f"line {int(lines[row])}: field {v.name!r} (columns {v.start + 1}-{v.start + width}) holds "
                         f"{shown!r}, not a number as the codebook lays it out; {int(bad.sum())} such line(s) in this "
                         "block. Is the codebook the extract's own?")
    if width > 15 or dotted.any():
        # Explicit decimals, or more digits than a float holds exactly: the text as written.
        text = np.ascontiguousarray(chars).view(f"S{width}").ravel()
        values = np.array([float(t) if t.strip() else np.nan for t in text])
        implied = ~dotted & ~blank
        if v.decimals:
            values[implied] = values[implied] / 10 ** v.decimals
            return values
        if dotted.any():
            return values
        return pd.arrays.IntegerArray(np.where(blank, 0, values).astype(np.int64), blank)
    # Digits times powers of ten: a float matrix-vector product, exact below 10^15.
    values = (np.where(is_digit, digit, 0).astype(np.float64) @ _POW10[width - 1::-1].astype(np.float64))
    values = np.where(is_minus.any(axis=1), -values, values)
    if v.decimals:
        out = values / 10.0 ** v.decimals
        out[blank] = np.nan
        return out
    return pd.arrays.IntegerArray(values.astype(np.int64), blank)


def _frame(buf, starts, lengths, variables, lines, ws):
    """The fields of ``variables`` on the lines at ``starts``; a line too short for its layout is an error."""
    need = max(v.start + v.width for v in variables)
    short = lengths < need
    if short.any():
        row = int(np.flatnonzero(short)[0])
        raise ValueError(f"line {int(lines[row])} has {int(lengths[row])} characters; the codebook lays out "
                         f"{need} (a truncated file, or not the extract's codebook).")
    mat = _evenly_spaced(buf, starts, lengths)
    done = {} if mat is None else _parse_numbers(mat, variables, lines, ws)
    return pd.DataFrame({v.name: done[v.name] if v.name in done else
                         _parse(v, _chars(buf, starts, lengths, v.start, v.width), lines) for v in variables})


def _evenly_spaced(buf, starts, lengths):
    """The block as an (n, stride) byte matrix when its lines are evenly spaced from its start (a rectangular
    extract), else None."""
    n = starts.size
    if n < 2 or starts[0] != 0:
        return None
    stride = int(starts[1] - starts[0])
    if n * stride > buf.size or not bool((np.diff(starts) == stride).all()):
        return None
    return buf[:n * stride].reshape(n, stride)


def _textlike(v):
    return v.kind == "text" or (v.kind == "categorical" and any(isinstance(c, str) for c in v.values))


class _Workspace:
    """Buffers reused from block to block. A fresh array of a block's size is paged in anew each time (the
    allocator returns large ones to the system), which cost more than the arithmetic on it."""

    def __init__(self):
        self._buffers = {}

    def get(self, name, shape, dtype):
        size = int(np.prod(shape))
        buf = self._buffers.get(name)
        if buf is None or buf.size < size or buf.dtype != dtype:
            buf = self._buffers[name] = np.empty(size, dtype=dtype)
        return buf[:size].reshape(shape)


def _parse_numbers(mat, variables, lines, ws):
    """The numeric fields of evenly spaced lines, all at once: the block is transposed into a reused buffer (a
    column of the file becomes a contiguous row), each character class is one pass over it, each field's test
    one contiguous reduction over its columns, and its value ten times the value so far plus the next digit, column by
    column. The same rules and errors as :func:`_parse`; fields it leaves out (text, more than 15 digits,
    explicit decimal points, overlapping layouts) go to :func:`_parse`."""
    fields = sorted((v for v in variables if not _textlike(v) and v.width <= 15), key=lambda v: v.start)
    if not fields or any(a.start + a.width > b.start for a, b in itertools.pairwise(fields)):
        return {}
    n = mat.shape[0]
    first, last = fields[0].start, fields[-1].start + fields[-1].width
    width = last - first
    cols = ws.get("cols", (width, n), np.uint8)
    np.copyto(cols, mat[:, first:last].T)
    starts = np.array([v.start for v in fields]) - first
    ends = starts + np.array([v.width for v in fields])

    def any_in_field(m):
        # One contiguous reduction per field (numpy's reduceat along this axis is some 50 times slower).
        return np.stack([m[a:e].any(axis=0) for a, e in zip(starts, ends)])    # (fields, n)

    inner = np.zeros((width - 1, 1), dtype=bool)                   # column pairs (j, j + 1) inside one field
    for a, e in zip(starts, ends):
        inner[a:e - 1] = True
    digit = np.subtract(cols, np.uint8(48), out=ws.get("digit", cols.shape, np.uint8))   # wraps below '0'
    is_digit = np.less_equal(digit, 9, out=ws.get("is_digit", cols.shape, bool))
    nonblank = np.not_equal(cols, 32, out=ws.get("nonblank", cols.shape, bool))
    is_minus = np.equal(cols, 45, out=ws.get("is_minus", cols.shape, bool))
    is_dot = np.equal(cols, 46, out=ws.get("is_dot", cols.shape, bool))
    tmp = ws.get("tmp", cols.shape, bool)
    np.logical_not(nonblank, out=tmp)
    tmp |= is_digit
    tmp |= is_minus
    tmp |= is_dot
    np.logical_not(tmp, out=tmp)
    bad = any_in_field(tmp)                                        # another character
    np.logical_not(nonblank[1:], out=tmp[:-1])
    tmp[:-1] &= nonblank[:-1]
    tmp[:-1] &= inner
    tmp[-1] = False
    bad |= any_in_field(tmp)                                       # a blank after the number
    np.logical_and(is_minus[1:], nonblank[:-1], out=tmp[1:])
    tmp[1:] &= inner
    tmp[0] = False
    bad |= any_in_field(tmp)                                       # a minus inside it
    blank = ~any_in_field(nonblank)
    bad |= ~blank & ~any_in_field(is_digit)                        # no digit at all
    dotted = any_in_field(is_dot).any(axis=1)
    negative = any_in_field(is_minus)
    out = {}
    acc = ws.get("acc", (n,), np.int64)
    for j, v in enumerate(fields):
        if dotted[j]:
            continue                                   # explicit decimals: the text as written (_parse)
        if bad[j].any():
            row = int(np.flatnonzero(bad[j])[0])
            _parse(v, mat[row:row + 1, v.start:v.start + v.width], lines[row:row + 1])   # raises its error
        acc[:] = 0
        for k in range(starts[j], ends[j]):
            acc *= 10
            np.add(acc, digit[k], out=acc, where=is_digit[k])
        values = np.where(negative[j], -acc, acc)
        if v.decimals:
            values = values / 10.0 ** v.decimals
            values[blank[j]] = np.nan
            out[v.name] = values
        else:
            out[v.name] = pd.arrays.IntegerArray(values, blank[j].copy())
    return out


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
                  for t in codebook.parents(record_type)}
    else:
        own, others, rectype = list(codebook.variables), {}, None
    carried = {t: None for t in others}     # the last line of each other type, from the blocks before
    raw, stream = _open(path)
    size = os.path.getsize(path)
    bar = progress_bar(progress=progress, total=size / 1e6, desc="reading", unit="MB")
    rest, line0, ws = b"", 0, _Workspace()
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
            lines = line0 + np.flatnonzero(keep) + 1
            line0 += ends.size
            starts, lengths = starts[keep], lengths[keep]
            if rectype is None:
                yield _frame(buf, starts, lengths, own, lines, ws)
                continue
            types = np.ascontiguousarray(_chars(buf, starts, lengths, rectype.start, rectype.width)) \
                .view(f"S{rectype.width}").ravel()
            mine = types == record_type.encode()
            rows = _frame(buf, starts[mine], lengths[mine], own, lines[mine], ws)
            for t, variables in others.items():
                is_t = types == t.encode()
                parsed = _frame(buf, starts[is_t], lengths[is_t], variables, lines[is_t], ws)
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
                           attributes=(), block_bytes=BLOCK_BYTES, progress=False):
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
    attributes : sequence of attributes, optional
        The schema's: a known Categorical that lists a not-applicable code keeps it as a value
        (:func:`~dpknn.schema._coded_files.apply_codebook`).
    block_bytes : int
        Bytes read per block, 8 MB by default (memory is a few blocks; larger blocks were slower here).
    progress : bool, default False
        A progress bar over the input's bytes.

    Returns
    -------
    ConvertedExtract
    """
    from dpknn.schema._coded_files import apply_codebook

    if not isinstance(codebook, Codebook):
        codebook = read_codebook(codebook)
    output = Path(output)
    if output.exists():
        raise FileExistsError(f"output {str(output)!r} exists; choose a new folder.")
    if rows_per_partition < 1:
        raise ValueError(f"rows_per_partition must be at least 1, got {rows_per_partition}.")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpknn.utils._io import remove_tree

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
            mapped, _ = apply_codebook(block, codebook, attributes=attributes)
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
            flush(pending or [apply_codebook(pd.DataFrame(), codebook, attributes=attributes)[0]])
        os.replace(tmp, output)
    finally:
        if tmp.exists():
            remove_tree(tmp)   # temporary microdata never outlive the run
    seconds = time.perf_counter() - t0
    logger.info("%s: %d records in %d partitions, %.1f s", path, rows, parts, seconds)
    return ConvertedExtract(rows, parts, output, seconds)
