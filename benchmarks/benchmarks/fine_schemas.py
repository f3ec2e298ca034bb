"""Census data with fine-grained ordinal attributes (the schemas of the exact-L1 benchmarks).

``census``: the shipped schema (AGE by decade). ``age_years``: AGE in single years.
``hours``: AGE in years plus HRSWORK, an ordinal 0-98 drawn around 40. ``rent``: ``hours`` plus
RENT, an ordinal 0-999 drawn lognormal with median about 150.
"""

import dataclasses

import numpy as np

from dpknn import Ordinal
from dpknn.datasets import census_schema, make_census

SCHEMAS = ("census", "age_years", "hours", "rent")


def fine_schema(name):
    base = census_schema()
    if name == "census":
        return base
    known = [Ordinal("AGE", 0, 99) if a.name == "AGE" else a for a in base.known]
    if name in ("hours", "rent"):
        known.append(Ordinal("HRSWORK", 0, 98))
    if name == "rent":
        known.append(Ordinal("RENT", 0, 999))
    return dataclasses.replace(base, known=known)


def fine_census(name, n, *, rng=0):
    """make_census(n) with the extra columns of schema ``name`` (drawn from a separate stream)."""
    df = make_census(n, rng=rng)
    extra = np.random.default_rng([rng, 1])
    if name in ("hours", "rent"):
        df["HRSWORK"] = np.clip(np.rint(extra.normal(40, 12, n)), 0, 98).astype(np.int64)
    if name == "rent":
        df["RENT"] = np.clip(np.rint(extra.lognormal(np.log(150), 0.8, n)), 0, 999).astype(np.int64)
    return df


def fine_case(name, n, *, rng=0):
    schema = fine_schema(name)
    return schema, fine_census(name, n, rng=rng)


def wide_case(n, *, rng=0):
    """Eight ordinals of 1000 codes and four categoricals of 12: 2·10^28 cells, past int64 keys."""
    from dpknn import Categorical, Continuous, Schema

    gen = np.random.default_rng(rng)
    known, cols = [], {}
    for j in range(8):
        known.append(Ordinal(f"o{j}", 0, 999, weight=1 + j % 3))
        cols[f"o{j}"] = np.clip(np.rint(gen.normal(500, 4 + 2 * j, n)), 0, 999).astype(np.int64)
    for j in range(4):
        known.append(Categorical(f"c{j}", list(range(12)), weight=2))
        cols[f"c{j}"] = gen.choice(12, n, p=gen.dirichlet(np.ones(12)))
    cols["y"] = np.where(gen.random(n) < 0.2, np.nan, 1.0)
    import pandas as pd

    return Schema(known=known, imputed=[Continuous("y", 0, 2)]), pd.DataFrame(cols)


__all__ = ["SCHEMAS", "fine_case", "fine_census", "fine_schema", "wide_case"]
