"""Pass 3 of the out-of-core imputation (:mod:`dpknn.impute._distributed`): fill every partition from its
donors, then write it (:func:`write_partition`) or hand it to the releases' statistics
(:meth:`PartitionDonors.fill`, :class:`~dpknn.releases._parquet.ParquetStatistics`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpknn.impute._files import INBOX, concat_columns, read_columns
from dpknn.impute._knn import KNNImputer
from dpknn.impute._scheme import put_values
from dpknn.schema._attributes import Categorical, blank_outside_universes
from dpknn.schema._flags import flag_column
from dpknn.utils._io import IMPUTED_MARKER

__all__ = ["GroupDonors", "PartitionDonors", "filled_partition", "pq_columns", "write_partition"]


# Pass 3: fill every partition from its donors, then write it (impute_parquet) or take its
# statistics (ParquetStatistics).


@dataclass(frozen=True)
class GroupDonors:
    """Where one partition's donors for one universe's attributes lie in that universe's inbox files.

    ``slices`` holds (bucket, start, stop) triples of the inbox files in ``folder``; the rows there
    are the donors of the partition's records inside ``universe`` (None: every record) that miss
    one of ``attributes``, in row and slot order, ``k`` of them each.
    """

    folder: str
    slices: tuple
    k: int
    attributes: tuple
    universe: object


@dataclass(frozen=True)
class PartitionDonors:
    """Where one partition's donors lie in the inbox files of pass 2 (one :class:`GroupDonors` per
    universe, :func:`stage_groups`), and how to use them."""

    groups: tuple
    aggregate: str
    labels: bool

    def fill(self, path, schema, columns=None):
        """CONFIDENTIAL: partition ``path`` (``columns`` of it, the imputed attributes and the columns their
        universes read) with its missing values filled from these donors exactly as
        :meth:`KNNImputer.transform` fills them, and each imputed attribute missing outside its universe."""
        return filled_partition(path, schema, self, columns)[0]


def _donors_of(group, labels):
    """The inbox rows of one partition for one universe, sorted by donee row and slot, values widened again."""
    names = ["row", "slot", *(["label"] if labels else []), *[f"v{j}" for j in range(len(group.attributes))]]
    parts = [{name: col.rows(a, e) for name, col in read_columns(Path(group.folder) / INBOX.format(b), names).items()}
             for b, a, e in group.slices]
    got = concat_columns(parts, names) if parts else {n: np.zeros(0, dtype=np.int64) for n in names}
    srt = np.lexsort((got["slot"], got["row"]))
    return {n: c[srt] for n, c in got.items()}


def filled_partition(path, schema, donors, columns=None):
    """One partition (``columns`` of it, the imputed attributes and the columns of their universes)
    with A filled exactly as :meth:`KNNImputer.transform` fills it; also, per universe, the donors
    and the imputed records' rows."""
    if columns is not None:
        wanted = {*columns, *schema.imputed_names, *schema.universe_names}
        columns = [c for c in pq_columns(path) if c in wanted]
    df = pd.read_parquet(path, columns=columns)
    imp = KNNImputer(schema, k=max(g.k for g in donors.groups), aggregate=donors.aggregate)
    out = blank_outside_universes(df, schema.imputed)
    filled, used = {}, []
    for group in donors.groups:
        got = _donors_of(group, donors.labels)
        k = group.k
        missing_any = np.zeros(len(df), dtype=bool)
        for name in group.attributes:
            missing_any |= schema.attribute(name).read_column(df)[1]
        if group.universe is not None:
            missing_any &= group.universe.mask(df)
        x_rows = np.flatnonzero(missing_any)
        n_x = x_rows.size
        if got["row"].size != n_x * k or not (np.array_equal(got["row"][::k], x_rows)
                                              and np.array_equal(got["slot"], np.tile(np.arange(k), n_x))):
            raise RuntimeError(f"partition {str(path)!r}: the donors found do not match its incomplete records "
                               "(did the input change during the run?).")
        for j, name in enumerate(group.attributes):
            attr = schema.attribute(name)
            missing = df[name].isna().to_numpy()[x_rows]
            values = got[f"v{j}"].reshape(n_x, k)
            if isinstance(attr, Categorical):
                values = np.asarray(attr.categories, dtype=object)[values.astype(np.int64)]
            else:
                values = values.astype(np.float64)
            put_values(out, attr, x_rows[missing], values[missing], imp.aggregate)
            filled[name] = x_rows[missing]
        used.append((group, got, x_rows))
    return out, filled, used


def pq_columns(path):
    """The column names of a Parquet file, from its schema only."""
    import pyarrow.parquet as pq

    return pq.read_schema(path).names


def write_partition(path, rel, offset, schema, donors, out_dir, donors_dir):
    """Fill A in one partition from its donors and write it; return its numbers of rows and of
    imputed records."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out, filled, used = filled_partition(path, schema, donors)
    # The same flag columns as KNNImputer.transform, in every partition (dpknn.schema._flags).
    for name in schema.imputed_names:
        flag = np.zeros(len(out), dtype=bool)
        flag[filled[name]] = True
        out[flag_column(name)] = flag
    table = pa.Table.from_pandas(out)
    meta = dict(table.schema.metadata or {})
    meta[IMPUTED_MARKER.encode()] = b"1"
    if not Path(out_dir).is_dir():
        # The run failed or was interrupted and removed its partial folder; recreating it here
        # would leave imputed microdata behind.
        raise RuntimeError(f"partition {str(path)!r}: the output folder is gone; the run was stopped.")
    target = Path(out_dir) / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.replace_schema_metadata(meta), target)
    if donors_dir is not None:
        target = Path(donors_dir) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(_donor_table(out, offset, schema, used), target)
    imputed = np.zeros(len(out), dtype=bool)
    for _, _, x_rows in used:
        imputed[x_rows] = True
    return {"rows": len(out), "imputed": int(imputed.sum())}


def _donor_table(out, offset, schema, used):
    """The donors file of one partition: each incomplete record's label and its donors' labels in
    order; with universes, one row per record and universe, named by the universe's attributes
    (``attributes``), and a universe with fewer than k donors leaves the last columns empty."""
    import pyarrow as pa

    labels = offset + np.arange(len(out), dtype=np.int64) if schema.label is None else schema.labels(out)
    k = max(g.k for g, _, _ in used)
    columns = {"label": np.concatenate([labels[x_rows] for _, _, x_rows in used])}
    if schema.has_universes:
        columns["attributes"] = pa.array([",".join(g.attributes) for g, _, x_rows in used for _ in range(x_rows.size)],
                                         type=pa.string())
    for s in range(k):
        parts, present = [], []
        for g, got, x_rows in used:
            there = s < g.k
            parts.append(got["label"][s::g.k] if there else np.zeros(x_rows.size, dtype=np.int64))
            present.append(np.full(x_rows.size, there))
        present = np.concatenate(present)
        values = np.concatenate(parts).astype(np.int64)
        columns[f"donor_{s + 1}"] = values if present.all() else pa.array(values, mask=~present)
    return pa.table(columns)
