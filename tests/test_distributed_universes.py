"""Universes out of core: impute_parquet and ParquetStatistics against the in-memory imputer on the same rows."""

import dataclasses
import json
import os

import numpy as np
import pandas as pd
import pytest
from partitions import read_folder, write_partitions
from test_distributed import random_problem, random_sizes

from dpknn import Categorical, Continuous, Ordinal, Schema
from dpknn.impute._distributed import impute_parquet
from dpknn.impute._knn import KNNImputer
from dpknn.schema._flags import flag_column

pytest.importorskip("dask.distributed")


def universe_problem(seed):
    """:func:`random_problem` with an indicator ``niu`` and each imputed attribute in one of three
    universes (records with ``niu`` false, a range of ``o0``, every record), shared or not."""
    schema, df, k, rng = random_problem(seed)
    n = len(df)
    df["niu"] = rng.random(n) < rng.uniform(0.0, 0.6)
    upper = schema.attribute("o0").upper
    low = int(rng.integers(0, upper + 1))
    choices = [{"niu": [False]}, {"o0": (low, upper)}, None]
    universes = [choices[0], *(choices[int(i)] for i in rng.integers(0, 3, 2))]
    imputed = [dataclasses.replace(a, universe=u) for a, u in zip(schema.imputed, universes)]
    schema = Schema(known=[*schema.known, Categorical("niu", [False, True])], imputed=imputed, label=schema.label)
    return schema, df, k, rng


def same_cells(got, expected):
    """Equal frames, missing cells equal whatever their kind (NaN, None, <NA>)."""
    assert list(got.index) == list(expected.index) and list(got.columns) == list(expected.columns)
    for c in expected.columns:
        a, b = got[c].astype(object).to_numpy(), expected[c].astype(object).to_numpy()
        gone_a, gone_b = pd.isna(a), pd.isna(b)
        assert np.array_equal(gone_a, gone_b), c
        assert np.array_equal(a[~gone_a], b[~gone_b]), c


def check_universes_as_in_memory(fit, schema, df, k, out_dir, donors_dir):
    imp = KNNImputer(schema, k=k)
    expected = imp.fit_transform(df)
    assert fit.l1_ == imp.l1_ and fit.l1_cases_ == imp.l1_cases_
    assert len(fit.groups_) == len(imp.groups_)
    for mine, theirs in zip(fit.groups_, imp.groups_):
        assert (mine.attributes, mine.universe, mine.l1, mine.l1_cases) == \
            (theirs.attributes, theirs.universe, theirs.l1, theirs.l1_cases)
        assert (mine.n_records, mine.n_incomplete) == (theirs.rows.size, theirs.incomplete_index.size)
    for columns in (["y"], ["g"], ["m"], ["y", "g", "m"], ["o0", "niu"]):
        assert fit.l1_for(columns) == imp.l1_for(columns)
    assert fit.n_incomplete_ == imp.incomplete_index_.size
    assert (fit.n_classes_, fit.n_donorless_classes_, fit.n_donorless_records_, fit.l1_work_) == \
        (imp.n_classes_, imp.n_donorless_classes_, imp.n_donorless_records_, imp.l1_work_)
    assert fit.n_outside_universe_ == imp.n_outside_universe_
    fitted = [g.imputer for g in imp.groups_ if g.imputer is not None]
    assert fit.max_donee_count_ == max((int(i.donee_counts_.max(initial=0)) for i in fitted), default=0)
    assert list(expected.columns) == [*df.columns, *(flag_column(a) for a in schema.imputed_names)]
    same_cells(read_folder(out_dir), expected)
    # The donors file: a row per (incomplete record, universe), the donors' labels in order.
    labels = schema.encode(df).labels
    donors = read_folder(donors_dir)
    width = max(g.donors.shape[1] for g in imp.groups_)
    assert list(donors.columns) == ["label", "attributes", *(f"donor_{s + 1}" for s in range(width))]
    want = sorted((",".join(g.attributes), int(labels[x]), *(int(labels[d]) for d in row))
                  for g in imp.groups_ for x, row in zip(g.incomplete_index, g.donors))
    got = sorted((a, int(lab), *(int(d) for d in row if not pd.isna(d)))
                 for a, lab, row in zip(donors["attributes"], donors["label"],
                                        donors.drop(columns=["label", "attributes"]).to_numpy(dtype=object)))
    assert got == want
    return imp


# Six seeds in the README's test command; four more in CI's slow step (it must stay within minutes).
@pytest.mark.parametrize("seed", [*range(6), *(pytest.param(s, marks=pytest.mark.slow) for s in range(6, 10))])
def test_random_universe_problems_match_the_in_memory_imputer(seed, tmp_path, client):
    schema, df, k, rng = universe_problem(seed)
    assert schema.has_universes
    write_partitions(df, tmp_path / "in", random_sizes(rng, len(df)))
    fit = impute_parquet(tmp_path / "in", tmp_path / "out", schema, k=k, client=client,
                         buckets=int(rng.integers(1, 9)), donors_dir=tmp_path / "donors")
    check_universes_as_in_memory(fit, schema, df, k, tmp_path / "out", tmp_path / "donors")
    assert sorted(os.listdir(tmp_path)) == ["donors", "in", "out"]   # no staging left


def test_an_empty_universe_and_a_universe_with_fewer_complete_records_than_k(tmp_path, client):
    rng = np.random.default_rng(4)
    n = 300
    df = pd.DataFrame({"a": rng.integers(0, 4, n), "niu": rng.random(n) < 0.5, "y": rng.uniform(0, 10, n),
                       "z": np.nan, "w": rng.uniform(0, 1, n)})
    df.loc[rng.random(n) < 0.3, "y"] = np.nan
    df.loc[df.index[df["a"] == 3][:2], "z"] = [1.0, 2.0]            # two complete records in z's universe
    df.loc[df["niu"] & (rng.random(n) < 0.5), "w"] = np.nan
    schema = Schema(known=[Ordinal("a", 0, 5), Categorical("niu", [False, True])],
                    imputed=[Continuous("y", 0, 10, universe={"a": (4, 5)}),      # no record has a >= 4
                             Continuous("z", 0, 10, universe={"a": (3, 3)}),
                             Continuous("w", 0, 1, universe={"niu": [True]})])
    write_partitions(df, tmp_path / "in", [100, 0, 200])
    fit = impute_parquet(tmp_path / "in", tmp_path / "out", schema, k=3, client=client, donors_dir=tmp_path / "donors")
    imp = check_universes_as_in_memory(fit, schema, df, 3, tmp_path / "out", tmp_path / "donors")
    assert fit.groups_[0].n_records == 0 and fit.groups_[0].l1 == 1
    assert imp.groups_[1].donors.shape[1] == 2                     # k = 3, two donors in z's universe
    # Every observed y lies outside its (empty) universe: not applicable, written missing.
    assert read_folder(tmp_path / "out")["y"].isna().all() and fit.n_outside_universe_["y"] == df["y"].notna().sum()


def test_a_universe_without_complete_records_is_refused_as_in_memory(tmp_path, client):
    schema, df, k, _ = universe_problem(5)
    u = schema.attribute("y").universe
    df.loc[u.mask(df), "y"] = np.nan
    with pytest.raises(ValueError) as memory:
        KNNImputer(schema, k=k).fit(df)
    write_partitions(df, tmp_path / "in", [len(df) // 2, len(df) - len(df) // 2])
    with pytest.raises(ValueError) as folder:
        impute_parquet(tmp_path / "in", tmp_path / "out", schema, k=k, client=client)
    assert str(folder.value) == str(memory.value) and "no complete records" in str(memory.value)
    assert sorted(os.listdir(tmp_path)) == ["in"]


@pytest.mark.parametrize("seed", [1, pytest.param(7, marks=pytest.mark.slow)])
def test_releases_with_universes_read_the_same_counts_and_sums_as_in_memory(tmp_path, client, seed):
    from dpknn.accounting import BudgetAccountant
    from dpknn.releases import InMemoryStatistics, PrivateImputation
    from dpknn.releases._parquet import ParquetStatistics
    from dpknn.releases._query import check_where
    from dpknn.releases._statistics import universe_of

    schema, df, k, rng = universe_problem(seed)
    write_partitions(df, tmp_path / "in", random_sizes(rng, len(df)))
    memory = InMemoryStatistics(KNNImputer(schema, k=k).fit(df), df)
    with ParquetStatistics(tmp_path / "in", schema, k=k, client=client) as stats:
        (tmp,) = tmp_path.glob(".dpknn-imputed-*")
        left = sorted({p.name.split("-")[0] for group in tmp.iterdir() for p in group.iterdir()})
        assert left in ([], ["donors"])      # no staged records, no label files
        for columns in (["y"], ["g", "m"], ["o0"]):
            assert stats.l1_for(columns) == memory.l1_for(columns)
        for where in ({"g": ["a"]}, {"m": (2, 6), "o0": (0, 3)}, {"y": (10, 60)}, {"niu": [True]}, {}):
            w = check_where(schema, where)
            for observed_only in (False, True):
                assert stats.count(w, observed_only=observed_only) == memory.count(w, observed_only=observed_only)
                for column, bounds in (("y", (0.0, 100.0)), ("m", (0.0, 8.0))):
                    universe = universe_of(schema, column)
                    assert stats.count(w, observed_only=observed_only, universe=universe) == \
                        memory.count(w, observed_only=observed_only, universe=universe)
                    assert stats.moments(column, w, bounds, observed_only=observed_only, universe=universe) == \
                        memory.moments(column, w, bounds, observed_only=observed_only, universe=universe)
        private = PrivateImputation.from_statistics(stats, accountant=BudgetAccountant(2.0), rng=3)
        twin = PrivateImputation.from_statistics(memory, accountant=BudgetAccountant(2.0), rng=3)
        assert private.mean("y", epsilon=1.0, count_epsilon=0.5).to_dict() == \
            twin.mean("y", epsilon=1.0, count_epsilon=0.5).to_dict()
    assert sorted(os.listdir(tmp_path)) == ["in"]


def check_run(args, run):
    done = run(*args)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow   # two Dask commands, 10 s: CI's slow step; the library's folder paths run in the README's command
def test_the_folder_command_imputes_and_releases_with_universes(tmp_path):
    """``dpknn impute`` and ``dpknn release`` on a folder whose schema has universes, against the same
    commands on the concatenated file."""
    from cli_run import run

    schema, df, k, _ = universe_problem(2)
    schema = Schema(known=schema.known, imputed=schema.imputed)    # row positions as labels
    df = df.drop(columns=[c for c in ("id",) if c in df.columns]).reset_index(drop=True)
    write_partitions(df, tmp_path / "in", [len(df) // 3, len(df) - len(df) // 3])
    df.to_parquet(tmp_path / "whole.parquet")
    (tmp_path / "s.toml").write_text(schema.to_toml())
    args = ["--schema", str(tmp_path / "s.toml"), "--k", str(k)]
    check_run(["impute", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), *args,
             "--diagnostics", str(tmp_path / "diag.json")], run)
    check_run(["impute", "--input", str(tmp_path / "whole.parquet"), "--output", str(tmp_path / "whole_out.parquet"),
             *args, "--diagnostics", str(tmp_path / "diag_whole.json")], run)
    same_cells(read_folder(tmp_path / "out"), pd.read_parquet(tmp_path / "whole_out.parquet"))
    diag, whole = (json.loads((tmp_path / f).read_text()) for f in ("diag.json", "diag_whole.json"))
    assert diag["confidential"] and diag["l1"] == whole["l1"] and diag["l1_cases"] == whole["l1_cases"]
    assert [u["l1"] for u in diag["universes"]] == [g.l1 for g in KNNImputer(schema, k=k).fit(df).groups_]
    assert diag["observed_outside_universe"] == whole["observed_outside_universe"]
    (tmp_path / "q.toml").write_text('[[query]]\ntype = "mean"\ncolumn = "y"\nepsilon = 1.0\ncount_epsilon = 0.5\n'
                                     '[[query]]\ntype = "count"\nwhere = {niu = [false]}\nepsilon = 0.5\n')
    for src, out in (("in", "r_folder.json"), ("whole.parquet", "r_whole.json")):
        check_run(["release", "--input", str(tmp_path / src), "--schema", str(tmp_path / "s.toml"), "--queries",
                   str(tmp_path / "q.toml"), "--k", str(k), "--seed", "7", "--epsilon", "2",
                   "--output", str(tmp_path / out)], run)
    folder, memory = (json.loads((tmp_path / f).read_text()) for f in ("r_folder.json", "r_whole.json"))
    assert folder["releases"] == memory["releases"]


def test_statistics_from_a_placement_equal_those_that_place_their_own_donors(tmp_path, client):
    """``ParquetStatistics.from_placement`` (issue 49): statistics over donors placed by the caller, nothing run
    at construction, equal to those that run the placement themselves."""
    from dpknn.impute._distributed import folder_imputer, place_donors
    from dpknn.releases._parquet import ParquetStatistics
    from dpknn.releases._query import check_where
    from dpknn.releases._statistics import universe_of

    schema, df, k, rng = universe_problem(4)
    write_partitions(df, tmp_path / "in", random_sizes(rng, len(df)))
    imp, files = folder_imputer(tmp_path / "in", schema, k=k)
    staging = tmp_path / "staging"
    staging.mkdir()
    placement = place_donors(client, imp, files, staging)
    with pytest.raises(ValueError, match="partitions"):
        ParquetStatistics.from_placement(placement, files[:-1] + files, client=client)
    mine = ParquetStatistics.from_placement(placement, files, client=client)
    with ParquetStatistics(tmp_path / "in", schema, k=k, client=client) as own:
        assert mine.l1_for(["y"]) == own.l1_for(["y"]) and mine.n_incomplete == own.n_incomplete
        where = check_where(schema, {"o0": (0, 3)})
        universe = universe_of(schema, "y")
        for observed_only in (False, True):
            assert mine.moments("y", where, (0.0, 100.0), observed_only=observed_only, universe=universe) == \
                own.moments("y", where, (0.0, 100.0), observed_only=observed_only, universe=universe)
    mine.close()
    assert staging.exists()        # the caller's folder: closing the statistics leaves it to the caller
