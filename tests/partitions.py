"""Folders of Parquet partitions for the out-of-core tests (imputation and synthesis)."""

import pandas as pd

from dpknn.utils._cluster import parquet_partitions


def write_partitions(df, folder, sizes):
    """``df`` cut into consecutive partitions of ``sizes`` rows (names sort naturally, not
    lexicographically: part.10 comes after part.9)."""
    folder.mkdir(parents=True)
    assert sum(sizes) == len(df)
    start = 0
    for i, size in enumerate(sizes):
        df.iloc[start:start + size].to_parquet(folder / f"part.{i}.parquet")
        start += size


def read_folder(folder, **concat):
    """The partitions of ``folder`` in order, as one frame."""
    return pd.concat([pd.read_parquet(f) for f in parquet_partitions(folder)], **concat)
