"""dpknn.impute.impute_parquet against the in-memory KNNImputer on the same rows."""

import itertools
import math
import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from partitions import read_folder, write_partitions

from dpknn import Categorical, Continuous, DomainError, Ordinal, Schema
from dpknn.accounting import BudgetAccountant
from dpknn.datasets._census import census_schema, make_census
from dpknn.impute._distributed import impute_parquet, parquet_partitions
from dpknn.impute._knn import KNNImputer
from dpknn.schema._flags import flag_column

distributed = pytest.importorskip("dask.distributed")


def random_problem(seed):
    """Small domains (many ties), three kinds of imputed attribute, shuffled labels or none."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 1500))
    known = [Ordinal("o0", 0, int(rng.integers(0, 6)), weight=int(rng.integers(1, 3))),
             Categorical("c1", list(range(int(rng.integers(1, 4)))), weight=int(rng.integers(1, 3)))]
    if rng.random() < 0.5:
        known.append(Ordinal("o2", 0, 20, bin_width=int(rng.integers(1, 8))))
    cols = {a.name: rng.integers(0, (a.upper if isinstance(a, Ordinal) else a.n_codes - 1) + 1, n) for a in known}
    # Clustered missingness: some cells have no donor, some have no incomplete record.
    skew = rng.random(n) < rng.uniform(0.05, 0.7) * (cols["o0"] % 2 + 0.3)
    cols["y"] = np.where(skew, np.nan, rng.uniform(0, 100, n))
    cols["g"] = pd.Categorical(np.where(skew & (rng.random(n) < 0.9), None, rng.choice(["a", "b", "c"], n)))
    cols["m"] = pd.array(np.where(skew & (rng.random(n) < 0.5), None, rng.integers(0, 9, n)), dtype="Int64")
    cols["other"] = rng.normal(size=n)
    label = None
    if rng.random() < 0.6:
        cols["id"] = rng.permutation(10 * n)[:n] - 5 * n
        label = "id"
    df = pd.DataFrame(cols)
    df.index = rng.permutation(n) + 1000
    imputed = [Continuous("y", 0, 100), Categorical("g", ["a", "b", "c"]), Ordinal("m", 0, 8)]
    schema = Schema(known=known, imputed=imputed, label=label)
    k = int(rng.choice([1, 2, 3, 5]))
    return schema, df, k, rng


def random_sizes(rng, n):
    parts = int(rng.integers(1, 25))
    cuts = np.sort(rng.integers(0, n + 1, parts - 1))
    return np.diff(np.r_[0, cuts, n]).tolist()


def check_same_as_in_memory(fit, schema, df, k, out_dir, donors_dir, aggregate="auto"):
    imp = KNNImputer(schema, k=k, aggregate=aggregate)
    expected = imp.fit_transform(df)
    assert fit.l1_ == imp.l1_
    assert fit.l1_cases_ == imp.l1_cases_
    assert fit.n_classes_ == imp.n_classes_
    assert fit.n_donorless_classes_ == imp.n_donorless_classes_
    assert fit.n_donorless_records_ == imp.n_donorless_records_
    assert fit.n_incomplete_ == imp.incomplete_index_.size
    assert fit.max_donee_count_ == imp.donee_counts_.max(initial=0)
    assert fit.l1_work_ == imp.l1_work_
    got = read_folder(out_dir)
    # The input's columns, then the same imputation flag columns as in memory.
    flags = [flag_column(a) for a in schema.imputed_names]
    assert list(expected.columns) == [*df.columns, *flags]
    assert list(got.index) == list(df.index) and list(got.columns) == list(expected.columns)
    for c in expected.columns:
        assert np.array_equal(got[c].astype(object).to_numpy(), expected[c].astype(object).to_numpy()), c
    labels = schema.encode(df).labels
    donors = read_folder(donors_dir)
    assert np.array_equal(donors["label"].to_numpy(), labels[imp.incomplete_index_])
    kk = imp.donors_.shape[1]
    assert np.array_equal(donors[[f"donor_{s + 1}" for s in range(kk)]].to_numpy(), labels[imp.donors_])
    return imp


@pytest.mark.parametrize("seed", range(12))
def test_random_problems_match_the_in_memory_imputer(seed, tmp_path, client):
    schema, df, k, rng = random_problem(seed)
    # Sort a stretch by missingness: partitions with no complete and no incomplete record.
    head = int(rng.integers(0, len(df)))
    df = pd.concat([df.iloc[:head].sort_values("y", na_position="first"), df.iloc[head:]])
    write_partitions(df, tmp_path / "in", random_sizes(rng, len(df)))
    fit = impute_parquet(tmp_path / "in", tmp_path / "out", schema, k=k, client=client,
                         buckets=int(rng.integers(1, 9)), donors_dir=tmp_path / "donors")
    check_same_as_in_memory(fit, schema, df, k, tmp_path / "out", tmp_path / "donors")


def test_census_300k_rows_several_partitionings(tmp_path, client):
    schema, df = census_schema(), make_census(300_000, rng=3)
    for i, (sizes, k, buckets) in enumerate([([300_000], 1, None), ([1, 99_999, 0, 120_000, 80_000], 1, 3),
                                             ([30_000] * 10, 3, 17)]):
        src, out, don = tmp_path / f"in{i}", tmp_path / f"out{i}", tmp_path / f"don{i}"
        write_partitions(df, src, sizes)
        fit = impute_parquet(src, out, schema, k=k, client=client, buckets=buckets, donors_dir=don)
        check_same_as_in_memory(fit, schema, df, k, out, don)
        assert fit.n_partitions_ == len(sizes) and fit.n_records_ == len(df)


def test_more_partitions_than_classes_and_fewer_complete_records_than_k(tmp_path, client):
    rng = np.random.default_rng(0)
    n = 120
    df = pd.DataFrame({"a": rng.integers(0, 2, n), "y": np.nan})
    df.loc[[5, 70, 71], "y"] = [1.0, 2.0, 3.0]
    schema = Schema(known=[Ordinal("a", 0, 1)], imputed=[Continuous("y", 0, 10)])
    write_partitions(df, tmp_path / "in", [4] * 30)
    fit = impute_parquet(tmp_path / "in", tmp_path / "out", schema, k=5, client=client, buckets=40,
                         donors_dir=tmp_path / "donors")
    assert fit.n_classes_ == 2 < fit.n_partitions_
    imp = check_same_as_in_memory(fit, schema, df, 5, tmp_path / "out", tmp_path / "donors")
    assert imp.l1_ == n - 3  # every added complete record joins every donor set


def test_mean_and_median_aggregates(tmp_path, client):
    schema, df, _, rng = random_problem(3)
    write_partitions(df, tmp_path / "in", random_sizes(rng, len(df)))
    fit = impute_parquet(tmp_path / "in", tmp_path / "out", schema, k=4, aggregate="mean", client=client,
                         donors_dir=tmp_path / "donors")
    check_same_as_in_memory(fit, schema, df, 4, tmp_path / "out", tmp_path / "donors", aggregate="mean")


def test_refusals_leave_nothing_behind(tmp_path, client):
    schema, df, _, _ = random_problem(1)
    schema = Schema(known=schema.known, imputed=schema.imputed, label="id")
    df = df.assign(id=np.arange(len(df)))
    bad = df.copy()
    bad.loc[bad.index[-1], "id"] = 0           # a label repeated in another partition
    write_partitions(bad, tmp_path / "dup", [len(df) // 2, len(df) - len(df) // 2])
    with pytest.raises(DomainError, match="duplicate labels across partitions"):
        impute_parquet(tmp_path / "dup", tmp_path / "out", schema, client=client)
    outside = df.copy()
    outside.loc[outside.index[-1], "o0"] = 99
    write_partitions(outside, tmp_path / "dom", [len(df) - 3, 3])
    with pytest.raises(DomainError, match=r"part\.1\.parquet"):
        impute_parquet(tmp_path / "dom", tmp_path / "out", schema, client=client)
    assert sorted(os.listdir(tmp_path)) == ["dom", "dup"]   # no output, no staging, no partial folder
    (tmp_path / "out").mkdir()
    with pytest.raises(FileExistsError, match="output_dir"):
        impute_parquet(tmp_path / "dup", tmp_path / "out", schema, client=client)
    with pytest.raises(ValueError, match="no .parquet"):
        impute_parquet(tmp_path / "out", tmp_path / "out2", schema, client=client)
    with pytest.raises(ValueError, match="aggregate"):
        impute_parquet(tmp_path / "dup", tmp_path / "out2", schema, aggregate="mode", client=client)
    with pytest.raises(ValueError, match="k must"):
        impute_parquet(tmp_path / "dup", tmp_path / "out2", schema, k=0, client=client)
    empty = df.assign(y=np.nan, g=None, m=pd.NA)
    write_partitions(empty, tmp_path / "none", [len(df)])
    with pytest.raises(ValueError, match="no complete records"):
        impute_parquet(tmp_path / "none", tmp_path / "out2", schema, client=client)


def test_overlapping_label_ranges_are_checked_and_accepted(tmp_path, client):
    schema, df, k, rng = random_problem(2)
    schema = Schema(known=schema.known, imputed=schema.imputed, label="id")
    df = df.assign(id=rng.permutation(len(df)))       # every partition spans the whole range
    write_partitions(df, tmp_path / "in", [len(df) // 3, len(df) // 3, len(df) - 2 * (len(df) // 3)])
    fit = impute_parquet(tmp_path / "in", tmp_path / "out", schema, k=k, client=client,
                         donors_dir=tmp_path / "donors")
    check_same_as_in_memory(fit, schema, df, k, tmp_path / "out", tmp_path / "donors")


def test_outputs_are_marked_imputed_and_diagnostics_are_confidential(tmp_path, client):
    from dpknn.utils._io import is_marked_imputed

    schema, df = census_schema(), make_census(2000, rng=1)
    write_partitions(df, tmp_path / "in", [1000, 1000])
    fit = impute_parquet(tmp_path / "in", tmp_path / "out", schema, client=client)
    assert all(is_marked_imputed(f) for f in parquet_partitions(tmp_path / "out"))
    assert is_marked_imputed(tmp_path / "out")
    diag = fit.curator_dict()
    assert diag["confidential"] is True and diag["l1"] == fit.l1_
    assert fit.l1_for(["INCWAGE"]) == fit.l1_ and fit.l1_for(["AGE"]) == 0


def test_parquet_releases_read_the_same_counts_and_sums_as_in_memory(tmp_path, client):
    from dpknn.accounting import BudgetAccountant
    from dpknn.exceptions import BudgetExceededError
    from dpknn.releases import InMemoryStatistics, PrivateImputation
    from dpknn.releases._parquet import ParquetStatistics
    from dpknn.releases._query import check_where

    schema, df = census_schema(), make_census(30_000, rng=6)
    write_partitions(df, tmp_path / "in", [10_000, 0, 20_000])
    memory = InMemoryStatistics(KNNImputer(schema, k=2).fit(df), df)
    stats = ParquetStatistics(tmp_path / "in", schema, k=2, client=client)
    with PrivateImputation.from_statistics(stats, accountant=BudgetAccountant(3.0)) as private:
        # Nothing imputed is written: only the donors' values, in one hidden temporary folder.
        (imputed_dir,) = tmp_path.glob(".dpknn-imputed-*")
        assert stats.imputed_files is None and private.l1 == memory.fit.l1_
        assert not list(imputed_dir.rglob("*.parquet")) and not list(imputed_dir.rglob("staged-*"))
        where = check_where(schema, {"AGE": (20, 59), "SEX": [1]})
        wage = check_where(schema, {"INCWAGE": (100, None)})
        for w in (where, wage, {}):
            for observed_only in (False, True):
                assert stats.count(w, observed_only=observed_only) == memory.count(w, observed_only=observed_only)
        for observed_only in (False, True):
            # Exact moments (fractions), partition by partition: equal to the in-memory ones, not just close.
            assert stats.moments("INCWAGE", where, (0.0, 2000.0), observed_only=observed_only) == \
                memory.moments("INCWAGE", where, (0.0, 2000.0), observed_only=observed_only)
        rel = private.mean("INCWAGE", where=where, epsilon=1.5, count_epsilon=1.0)
        assert rel.epsilon == 2.5 and set(rel.to_dict()) >= {"value", "epsilon", "params"}
        assert rel.mechanism == "smooth_polyplace"
        with pytest.raises(BudgetExceededError):
            private.count(where, epsilon=1.0)     # refused before any pass over the data
    assert not imputed_dir.exists()              # the imputed microdata are removed on exit
    assert sorted(os.listdir(tmp_path)) == ["in"]


def test_parquet_releases_from_kept_imputed_partitions_equal_those_filled_on_the_fly(tmp_path, client, monkeypatch):
    from dpknn.releases import CachedStatistics, PrivateImputation
    from dpknn.releases._parquet import ParquetStatistics
    from dpknn.releases._query import check_where
    from dpknn.releases._statistics import universe_of

    schema, df = census_schema(), make_census(20_000, rng=16)
    write_partitions(df, tmp_path / "in", [7_000, 13_000])
    kept = tmp_path / "kept"
    with ParquetStatistics(tmp_path / "in", schema, k=3, client=client, imputed_dir=kept) as sa, \
            ParquetStatistics(tmp_path / "in", schema, k=3, client=client) as sb:
        a = PrivateImputation.from_statistics(sa, accountant=BudgetAccountant(math.inf), rng=5)
        cached = CachedStatistics(sb)
        b = PrivateImputation.from_statistics(cached, accountant=BudgetAccountant(math.inf), rng=5)
        assert len(sa.imputed_files) == 2 and sb.imputed_files is None and a.l1 == b.l1
        where = check_where(schema, {"AGE": (30, 49)})
        assert sa.moments("INCWAGE", where, (0.0, 3000.0)) == sb.moments("INCWAGE", where, (0.0, 3000.0))
        assert a.mean("INCWAGE", where=where, bounds=(0.0, 3000.0), epsilon=1.0, count_epsilon=0.5).value == \
            b.mean("INCWAGE", where=where, bounds=(0.0, 3000.0), epsilon=1.0, count_epsilon=0.5).value
        # The count of the mean's records was asked again: answered from the first pass.
        universe = universe_of(schema, "INCWAGE")
        expected = sa.count(where, universe=universe)   # uncached: a pass of its own, before map is stubbed
        calls = []
        monkeypatch.setattr(sb.client, "map", lambda *args, **kwargs: calls.append(args))
        assert cached.count(where, universe=universe) == expected
        assert not calls
    assert kept.exists() and sorted(os.listdir(tmp_path)) == ["in", "kept"]


def test_partitions_with_only_complete_only_incomplete_or_no_records(tmp_path, client):
    schema, df = census_schema(), make_census(6000, rng=9)
    missing = df["INCWAGE"].isna()
    parts = [df[~missing].iloc[:1500], df[missing].iloc[:400], df.iloc[:0], df[missing].iloc[400:],
             df[~missing].iloc[1500:]]
    whole = pd.concat(parts)
    write_partitions(whole, tmp_path / "in", [len(p) for p in parts])
    kinds = [(p["INCWAGE"].notna().any(), p["INCWAGE"].isna().any()) for p in parts]
    assert (True, False) in kinds and (False, True) in kinds and (False, False) in kinds
    for k in (1, 4):
        fit = impute_parquet(tmp_path / "in", tmp_path / f"out{k}", schema, k=k, client=client,
                             donors_dir=tmp_path / f"donors{k}")
        check_same_as_in_memory(fit, schema, whole, k, tmp_path / f"out{k}", tmp_path / f"donors{k}")


def test_float_coded_integer_categories_impute_as_in_memory(tmp_path, client):
    # What pandas writes for an integer category column with gaps: float64 with NaN. The write
    # pass used to put the schema's category objects into the float column and fail.
    rng = np.random.default_rng(5)
    n = 300
    g = rng.integers(1, 4, n).astype(np.float64)
    g[rng.random(n) < 0.3] = np.nan
    df = pd.DataFrame({"a": rng.integers(0, 4, n), "g": g, "y": np.where(rng.random(n) < 0.2, np.nan,
                                                                        rng.uniform(0, 9, n))})
    schema = Schema(known=[Ordinal("a", 0, 3)], imputed=[Categorical("g", [1, 2, 3]), Continuous("y", 0, 10)])
    write_partitions(df, tmp_path / "in", [100, 150, 50])
    for k in (1, 3):
        out, don = tmp_path / f"out{k}", tmp_path / f"don{k}"
        fit = impute_parquet(tmp_path / "in", out, schema, k=k, client=client, donors_dir=don)
        expected = check_same_as_in_memory(fit, schema, df, k, out, don).transform(df)
        for f in parquet_partitions(out):
            assert pd.read_parquet(f)["g"].dtype == expected["g"].dtype == np.float64


def test_flags_in_every_partition_and_flagged_folders_are_refused(tmp_path, client):
    from dpknn import ImputedDataError
    from dpknn.releases._parquet import ParquetStatistics

    schema, df = census_schema(), make_census(900, rng=2)
    write_partitions(df, tmp_path / "in", [300, 0, 600])
    impute_parquet(tmp_path / "in", tmp_path / "out", schema, client=client)
    flags = [flag_column(a) for a in schema.imputed_names]
    for f in parquet_partitions(tmp_path / "out"):
        part = pd.read_parquet(f)
        assert list(part.columns[-len(flags):]) == flags
        for a, flag in zip(schema.imputed_names, flags):
            original = pd.read_parquet(tmp_path / "in" / f.name)
            assert np.array_equal(part[flag].to_numpy(), original[a].isna().to_numpy())
    # A copy of one imputed partition, without the metadata marker, is still refused by its columns.
    (tmp_path / "copy").mkdir()
    pd.read_parquet(parquet_partitions(tmp_path / "out")[0]).to_parquet(tmp_path / "copy" / "p.parquet")
    with pytest.raises(ImputedDataError, match="dpknn_imputed_"):
        impute_parquet(tmp_path / "copy", tmp_path / "again", schema, client=client)
    with pytest.raises(ImputedDataError, match="dpknn_imputed_"):
        ParquetStatistics(tmp_path / "copy", schema, client=client)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "in", "out"]


def test_outputs_inside_the_input_folder_are_refused(tmp_path, client):
    from dpknn.sdc._rwn import RWN, perturb_parquet

    schema, df = census_schema(), make_census(300, rng=4)
    write_partitions(df, tmp_path / "in", [300])
    for kwargs in ({}, {"donors_dir": tmp_path / "in" / "donors"}, {"staging_dir": tmp_path / "in"}):
        out = tmp_path / "out" if kwargs else tmp_path / "in" / "imp"
        with pytest.raises(ValueError, match="inside the input folder"):
            impute_parquet(tmp_path / "in", out, schema, client=client, **kwargs)
    with pytest.raises(ValueError, match="inside the input folder"):
        perturb_parquet(tmp_path / "in", tmp_path / "in" / "rwn", RWN(rng=1), columns=["AGE"], client=client)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]
    assert [p.name for p in (tmp_path / "in").iterdir()] == ["part.0.parquet"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=False, width=64),
                          st.integers(-2**24, 2**24).map(float)), max_size=30),
       st.lists(st.integers(-2**40, 2**40), max_size=30))
def test_compact_staging_dtypes_hold_every_value_exactly(floats, ints):
    from dpknn.impute._distributed import compact

    x = np.array(floats, dtype=np.float64)
    c = compact(x)
    assert c.dtype in (np.float32, np.float64)
    np.testing.assert_array_equal(c.astype(np.float64), x)   # NaN where NaN, every other bit kept
    if x.size and np.all(np.isnan(x) | (np.abs(x) <= 2**24) & (x == np.round(x))):
        assert c.dtype == np.float32
    y = np.array(ints, dtype=np.int64)
    d = compact(y)
    assert d.dtype.kind == "i" and np.array_equal(d.astype(np.int64), y)
    assert d.itemsize == min(t.itemsize for t in (np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32),
                                                  np.dtype(np.int64))
                             if not y.size or (np.iinfo(t).min <= y.min() and y.max() <= np.iinfo(t).max))


@pytest.mark.parametrize("seed", [3, 8, 21])
def test_releases_on_random_problems_with_labels_equal_in_memory(tmp_path, client, seed):
    from dpknn.releases import InMemoryStatistics
    from dpknn.releases._parquet import ParquetStatistics
    from dpknn.releases._query import check_where

    schema, df, k, rng = random_problem(seed)
    if schema.label is None:   # a label column: its staged files must go too
        df["id"] = rng.permutation(10 * len(df))[:len(df)]
        schema = Schema(known=schema.known, imputed=schema.imputed, label="id")
    write_partitions(df, tmp_path / "in", random_sizes(rng, len(df)))
    memory = InMemoryStatistics(KNNImputer(schema, k=k).fit(df), df)
    with ParquetStatistics(tmp_path / "in", schema, k=k, client=client) as private:
        (tmp,) = tmp_path.glob(".dpknn-imputed-*")
        left = sorted({p.name.split("-")[0] for group in tmp.iterdir() for p in group.iterdir()})
        assert left in ([], ["donors"])      # no staged records, no label files
        assert private.fit.l1_ == memory.fit.l1_
        for where in ({"g": ["a"]}, {"m": (2, 6), "o0": (0, 3)}, {"y": (10, 60)}, {}):
            w = check_where(schema, where)
            for observed_only in (False, True):
                assert private.count(w, observed_only=observed_only) == memory.count(w, observed_only=observed_only)
            assert private.moments("y", w, (0.0, 100.0)) == memory.moments("y", w, (0.0, 100.0))
            assert private.moments("m", w, (0.0, 8.0)) == memory.moments("m", w, (0.0, 8.0))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.booleans()), min_size=1, max_size=30), st.integers(1, 50))
def test_needed_runs_cover_the_needed_classes_and_skip_large_unneeded_ones(classes, max_gap):
    from dpknn.impute._donor_pass import needed_runs as _needed_runs

    sizes = [size for size, _ in classes]
    key = np.repeat(np.arange(len(classes)) * 3, sizes)   # sorted class keys, gaps between values
    needed = np.array([3 * i for i, (_, want) in enumerate(classes) if want], dtype=np.int64)
    runs = _needed_runs(key, needed, max_gap=max_gap)
    covered = np.zeros(key.size, dtype=bool)
    for a, b in runs:
        covered[a:b] = True
    assert covered[np.isin(key, needed)].all()
    starts = np.r_[0, np.cumsum(sizes)]
    for i, (size, want) in enumerate(classes):
        if not want and size >= max_gap:   # a large class nobody needs is never read
            assert not covered[starts[i]:starts[i + 1]].any()
    assert all(a < b for a, b in runs) and all(b1 < a2 for (_, b1), (a2, _) in itertools.pairwise(runs))
