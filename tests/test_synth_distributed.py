"""Synthesis of a folder of Parquet partitions (dpknn.synth._distributed) against the in-memory fit on the same rows:
the same releases, model and published record for the same seed; partitions a function of the model and their
stream; resumable; refusals before any work."""

import json
import pickle

import numpy as np
import pandas as pd
import partitions
import pytest
from partitions import write_partitions
from people import ATTRS, people

from dpknn import Categorical, DomainError, Ordinal
from dpknn.accounting import BudgetAccountant
from dpknn.datasets._census import census_schema, make_census
from dpknn.exceptions import ImputedDataError
from dpknn.schema._discretization import Discretization
from dpknn.schema._flags import flag_column
from dpknn.synth import AIMSynthesizer, AutoSynthesizer, MSTSynthesizer, PrivBayes
from dpknn.synth._data import Counts, RankPlan
from dpknn.utils._cluster import parquet_partitions

distributed = pytest.importorskip("dask.distributed")
pytest.importorskip("pyarrow")
synth_distributed = pytest.importorskip("dpknn.synth._distributed")


def read_folder(folder):
    return partitions.read_folder(folder, ignore_index=True)


def census(n=6000, seed=0):
    df = make_census(n, rng=seed).drop(columns=["INCWAGE_TRUE"])
    df.loc[df.index % 5 == 0, "INCWAGE"] = 0.0   # a point mass
    return df


CENSUS = [*census_schema().known, *census_schema().imputed]
KNOWN = [a.name for a in census_schema().known]


def same_fit(a, b):
    """Every released value, the fitted model and the published record agree exactly."""
    assert json.dumps(a.public_params(), default=str) == json.dumps(b.public_params(), default=str)
    fa = getattr(a, "synthesizer_", a)
    fb = getattr(b, "synthesizer_", b)
    assert len(fa.measurements_) == len(fb.measurements_)
    for ma, mb in zip(fa.measurements_, fb.measurements_):
        assert ma.attributes == mb.attributes and ma.sigma == mb.sigma
        np.testing.assert_array_equal(ma.counts, mb.counts)
    for ra, rb in zip(fa.rank_sums_, fb.rank_sums_):
        np.testing.assert_array_equal(ra.sums, rb.sums)
    assert fa.bin_edges_ == fb.bin_edges_ and fa.point_masses_ == fb.point_masses_
    for pa, pb in zip(fa.model_.clique_marginals(), fb.model_.clique_marginals()):
        np.testing.assert_array_equal(pa, pb)
    # The model is the same function: the same stream draws the same rows.
    pd.testing.assert_frame_equal(a.sample(500, rng=9), b.sample(500, rng=9))


@pytest.mark.parametrize(("make", "data"), [
    (lambda: AutoSynthesizer(CENSUS, epsilon=2.0, never_missing=KNOWN, rng=3), "census"),
    (lambda: MSTSynthesizer(CENSUS, epsilon=1.0, never_missing=KNOWN, analyses=["INCWAGE ~ AGE + SEX"], rng=4),
     "census"),
    (lambda: AIMSynthesizer(CENSUS[5:], epsilon=3.0, workload=3, bins="quantiles", rng=5), "census"),
    (lambda: MSTSynthesizer(ATTRS, epsilon=1.0, never_missing=["AGE", "SEX"], mcar_rates={"WORK": 0.1}, rng=6),
     "people"),
    (lambda: AutoSynthesizer(ATTRS, epsilon=1.0, never_missing=["AGE", "SEX", "WORK"], rng=7), "people"),
    # with complete-case tables (AGE and WORK select INCOME's complete cases): counted in the same pass
    (lambda: AIMSynthesizer(ATTRS, epsilon=1.0, never_missing=["AGE", "SEX"], analyses=["INCOME ~ AGE + SEX + WORK"],
                            rng=8), "people"),
])
def test_folder_fit_equals_the_in_memory_fit(tmp_path, client, make, data):
    df = census() if data == "census" else people(3000)
    before = df.copy()
    write_partitions(df, tmp_path / "in", [1000, 1, 2499, len(df) - 3500])   # a partition of one row too
    memory = make().fit(df)
    pd.testing.assert_frame_equal(df, before)
    done = synth_distributed.synthesize_parquet(tmp_path / "in", tmp_path / "out", make(), rows=1234,
                                                rows_per_partition=500, client=client, rng=1)
    same_fit(memory, done.synthesizer)
    inner = [getattr(f, "synthesizer_", f) for f in (memory, done.synthesizer)]
    coarse = [[m.groups for m in f.measurements_ if m.groups is not None] for f in inner]
    assert coarse[0] == coarse[1]
    assert bool(coarse[0]) == ("INCOME ~ AGE + SEX + WORK" in getattr(memory, "analyses", ()))
    out = read_folder(tmp_path / "out")
    assert len(out) == 1234 and done.partitions == 3 and list(out.columns) == [a.name for a in make().attributes]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"part.0000{i}.parquet" for i in range(3)]
    if data == "people":   # universes and never_missing hold in the written rows
        assert out.loc[out["AGE"] < 15, "INCOME"].isna().all() and out[["AGE", "SEX"]].notna().all().all()
    assert not list(tmp_path.glob(".*"))   # no hidden folder left


def test_a_partition_is_a_function_of_the_model_and_its_stream(tmp_path, client):
    df = people(2000)
    write_partitions(df, tmp_path / "in", [700, 1300])
    make = lambda: MSTSynthesizer(ATTRS, epsilon=1.0, never_missing=["AGE"], rng=2)  # noqa: E731
    a = synth_distributed.synthesize_parquet(tmp_path / "in", tmp_path / "a", make(), rows=1000,
                                             rows_per_partition=300, client=client, rng=11)
    synth_distributed.synthesize_parquet(tmp_path / "in", tmp_path / "b", make(), rows=1000,
                                             rows_per_partition=300, client=client, rng=11)
    c = synth_distributed.synthesize_parquet(tmp_path / "in", tmp_path / "c", make(), rows=1000,
                                             rows_per_partition=300, client=client, rng=12)
    files = parquet_partitions(tmp_path / "a")
    assert [len(pd.read_parquet(f)) for f in files] == [250, 250, 250, 250]
    pd.testing.assert_frame_equal(read_folder(tmp_path / "a"), read_folder(tmp_path / "b"))
    assert not read_folder(tmp_path / "a").equals(read_folder(tmp_path / "c"))
    # Partition i: the model's rows drawn with child i of the run's seed sequence, nothing else.
    entropy = np.random.SeedSequence(11).entropy
    for i, f in enumerate(files):
        gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(i,))))
        a.synthesizer.sample(250, rng=gen).to_parquet(tmp_path / "expected.parquet", index=False)
        pd.testing.assert_frame_equal(pd.read_parquet(f), pd.read_parquet(tmp_path / "expected.parquet"))
    assert c.synthesizer.public_params() == a.synthesizer.public_params()   # the fit's seed is the synthesiser's


def test_an_interrupted_run_resumes_with_its_model_and_no_budget(tmp_path, client, monkeypatch):
    df = people(2000)
    write_partitions(df, tmp_path / "in", [1000, 1000])
    make = lambda: MSTSynthesizer(ATTRS, epsilon=1.0, never_missing=["AGE"], rng=2)  # noqa: E731
    whole = synth_distributed.synthesize_parquet(tmp_path / "in", tmp_path / "whole", make(), rows=900,
                                                 rows_per_partition=200, client=client, rng=4)
    real = synth_distributed._sample_task

    def failing(model, rows, entropy, index, folder):
        if index == 3:
            raise OSError("disk full")
        return real(model, rows, entropy, index, folder)

    monkeypatch.setattr(synth_distributed, "_sample_task", failing)
    acc = BudgetAccountant(epsilon=1.0, delta=1e-9)
    with pytest.raises(OSError, match="disk full"):
        synth_distributed.synthesize_parquet(tmp_path / "in", tmp_path / "out", make(), rows=900,
                                             rows_per_partition=200, client=client, rng=4, accountant=acc)
    partial = tmp_path / ".out.partial"
    assert partial.is_dir() and not (tmp_path / "out").exists() and acc.spent()[0] == 1.0
    # The saved model is public: the curator's count of values outside universes is not in it.
    saved = pickle.loads((partial / "_state" / "plan.pkl").read_bytes())
    # The saved model is public: not the curator's count of values outside universes, nor the seeded noise source
    # (its state would give back every noise drawn).
    assert not hasattr(saved.model, "n_outside_universe_") and hasattr(saved.model, "model_")
    assert saved.model.rng is None and saved.seeded
    with pytest.raises(ValueError, match="other parameters"):   # the record would not be this run's
        synth_distributed.synthesize_parquet(tmp_path / "in", tmp_path / "out", MSTSynthesizer(ATTRS, epsilon=2.0),
                                             rows=900, rows_per_partition=200, client=client, resume=True)
    with pytest.raises(FileExistsError, match="resume"):
        synth_distributed.synthesize_parquet(tmp_path / "in", tmp_path / "out", make(), rows=900,
                                             rows_per_partition=200, client=client, rng=4)
    with pytest.raises(ValueError, match="same rows"):
        synth_distributed.synthesize_parquet(tmp_path / "in", tmp_path / "out", None, rows=901,
                                             rows_per_partition=200, client=client, resume=True)
    monkeypatch.setattr(synth_distributed, "_sample_task", real)
    # The same method and options (another seed is fine: nothing is fitted), no accountant: nothing is spent; the
    # rows are those of the uninterrupted run.
    resumed_with = MSTSynthesizer(ATTRS, epsilon=1.0, never_missing=["AGE"], rng=99)
    done = synth_distributed.synthesize_parquet(tmp_path / "in", tmp_path / "out", resumed_with, rows=900,
                                                rows_per_partition=200, client=client, resume=True)
    assert not hasattr(resumed_with, "model_")
    assert done.resumed and done.synthesizer.public_params() == whole.synthesizer.public_params()
    pd.testing.assert_frame_equal(read_folder(tmp_path / "out"), read_folder(tmp_path / "whole"))
    assert not partial.exists() and not (tmp_path / "out" / "_state").exists()
    assert done.seeded and not list((tmp_path / "out").glob(".*"))
    with pytest.raises(FileNotFoundError, match="nothing to resume"):   # resume never starts a new fit
        synth_distributed.synthesize_parquet(tmp_path / "in", tmp_path / "new", make(), rows=900, client=client,
                                             resume=True)


def test_a_table_no_pass_counted_costs_one_more_pass(tmp_path, client):
    df = census(3000)
    write_partitions(df, tmp_path / "in", [1000, 2000])
    disc = Discretization(CENSUS, 10)
    data = synth_distributed.ParquetData(parquet_partitions(tmp_path / "in"), [a.name for a in CENSUS], client)
    ext_sizes = disc.sizes + 1
    counts, _ = data.count(disc, ext_sizes, [(0,), (0, 1)], RankPlan((), ()))
    from dpknn.schema._marginals import extended_codes
    memory = Counts(extended_codes(disc.encode(df), disc.sizes), disc.sizes, ext_sizes, n_jobs=1)
    for s in [(0,), (1, 0), (2, 5, 9), (3,)]:
        np.testing.assert_array_equal(counts[s], memory[s])
    assert counts.further_passes == 2


def test_refusals_name_the_partition_and_come_before_any_release(tmp_path, client):
    df = people(600)
    bad = df.copy()
    bad.loc[450, "AGE"] = 120
    write_partitions(bad, tmp_path / "dom", [400, 200])
    acc = BudgetAccountant(epsilon=5.0, delta=1e-6)
    with pytest.raises(DomainError, match=r"part\.1\.parquet.*AGE"):
        synth_distributed.synthesize_parquet(tmp_path / "dom", tmp_path / "o1", MSTSynthesizer(ATTRS, epsilon=1.0),
                                             rows=10, client=client)
    gappy = df.copy()
    gappy.loc[10, "SEX"] = np.nan
    write_partitions(gappy, tmp_path / "gap", [400, 200])
    with pytest.raises(ValueError, match=r"part\.0\.parquet.*never_missing"):
        synth_distributed.synthesize_parquet(tmp_path / "gap", tmp_path / "o2",
                                             MSTSynthesizer(ATTRS, epsilon=1.0, never_missing=["SEX"]), rows=10,
                                             client=client, accountant=acc)
    assert acc.spent()[0] == 1.0   # charged before the data are read, as in memory
    write_partitions(df, tmp_path / "in", [600])
    (tmp_path / "short").mkdir()
    df.drop(columns="WORK").to_parquet(tmp_path / "short" / "part.0.parquet")
    with pytest.raises(ValueError, match=r"part\.0\.parquet.*lacks the attribute columns \['WORK'\]"):
        synth_distributed.synthesize_parquet(tmp_path / "short", tmp_path / "o5", MSTSynthesizer(ATTRS, epsilon=1),
                                             rows=10, client=client)
    with pytest.raises(TypeError, match="PrivBayes"):
        synth_distributed.synthesize_parquet(tmp_path / "in", tmp_path / "o3", PrivBayes(ATTRS, epsilon=1.0),
                                             rows=10, client=client)
    (tmp_path / "exists").mkdir()
    with pytest.raises(FileExistsError):
        synth_distributed.synthesize_parquet(tmp_path / "in", tmp_path / "exists", MSTSynthesizer(ATTRS, epsilon=1),
                                             rows=10, client=client)
    with pytest.raises(ValueError, match="inside the input folder"):
        synth_distributed.synthesize_parquet(tmp_path / "in", tmp_path / "in" / "out",
                                             MSTSynthesizer(ATTRS, epsilon=1), rows=10, client=client)
    flagged = df.assign(**{flag_column("INCOME"): False})
    write_partitions(flagged, tmp_path / "imp", [600])
    with pytest.raises(ImputedDataError):
        synth_distributed.synthesize_parquet(tmp_path / "imp", tmp_path / "o4", MSTSynthesizer(ATTRS, epsilon=1),
                                             rows=10, client=client)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith((".o", "o"))]   # nothing written


def test_cli_folder_record_equals_the_in_memory_record(tmp_path):
    from dpknn.cli._main import main

    attrs = [Ordinal("AGE", 0, 99), Categorical("SEX", [1, 2]), Categorical("WORK", ["yes", "no"])]
    (tmp_path / "a.toml").write_text("".join(
        f'[[attribute]]\nname = "{a.name}"\n' + ('type = "ordinal"\nlower = 0\nupper = 99\n' if a.name == "AGE" else
                                                 f'type = "categorical"\ncategories = {json.dumps(a.categories)}\n')
        for a in attrs))
    df = people(1500)[["AGE", "SEX", "WORK"]]
    df.to_csv(tmp_path / "all.csv", index=False)
    write_partitions(df, tmp_path / "in", [500, 1000])
    common = ["synth", "--attributes", str(tmp_path / "a.toml"), "--epsilon", "1", "--rows", "700", "--seed", "3",
              "--never-missing", "AGE,SEX,WORK"]
    assert main([*common, "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
                 "--partition-rows", "300", "--diagnostics", str(tmp_path / "diag.json")]) == 0
    diag = json.loads((tmp_path / "diag.json").read_text())   # the curator's: the rows read stay here
    assert diag["input_rows"] == 1500 and set(diag["seconds"]) == {"scan", "count", "fit", "sample"}
    assert main([*common, "--input", str(tmp_path / "all.csv"), "--output", str(tmp_path / "mem.csv")]) == 0
    folder = json.loads((tmp_path / "out.json").read_text())
    memory = json.loads((tmp_path / "mem.csv.json").read_text())
    assert folder.pop("partitions") == 3 and folder == memory
    assert len(read_folder(tmp_path / "out")) == 700
    # A method that needs the table in memory is refused before any work.
    assert main([*common, "--input", str(tmp_path / "in"), "--output", str(tmp_path / "o2"),
                 "--method", "privbayes"]) == 2
    assert not (tmp_path / "o2").exists()
    assert main([*common, "--input", str(tmp_path / "all.csv"), "--output", str(tmp_path / "m2.csv"),
                 "--partition-rows", "300"]) == 2   # folder options on a file are refused
    # The curator's diagnostics may not land in the folder to publish.
    assert main([*common, "--input", str(tmp_path / "in"), "--output", str(tmp_path / "o3"),
                 "--diagnostics", str(tmp_path / "o3" / "d.json")]) == 2
    assert not (tmp_path / "o3").exists()
