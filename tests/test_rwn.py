
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_rwn import neighbourhoods
from scipy import stats

from dpknn.sdc._neighbourhoods import pairs_from_indices
from dpknn.sdc._rwn import RWN, perturb_parquet


def continuous(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n) * 3 + 1,
                         "c": rng.choice(["x", "y", "z"], size=n), "id": np.arange(n) + 1000},
                        index=pd.Index(np.arange(n)[::-1] * 7, name="label"))


@pytest.mark.parametrize("method,kw", [("exact", {}), ("sampled_points", {"m": 20}), ("sampled_pairs", {"m": 10}),
                                       ("partitioned", {"partitions": 3})])
def test_q0_returns_input_and_shape_dtypes_labels_kept(method, kw):
    df = continuous()
    with pytest.warns(UserWarning, match=r"columns \['id'\] have a different value in every row"):
        assert RWN(q=0.0, method=method, rng=1, **kw).fit_transform(df).equals(df)
    out = RWN(q=0.5, method=method, rng=1, **kw).set_params(columns=["a", "b", "c"]).fit_transform(df)
    assert out.shape == df.shape and list(out.columns) == list(df.columns)
    assert out.dtypes.equals(df.dtypes) and out.index.equals(df.index) and out["id"].equals(df["id"])
    assert set(out["c"]) <= {"x", "y", "z"}


@pytest.mark.parametrize("radius", [None, 0.4, 1.5])
def test_exact_values_come_from_the_brute_force_neighbourhood(radius):
    df = continuous(200, seed=3)
    cols = ["a", "b", "c"]
    hood = neighbourhoods(df, cols, k=4, radius=radius)
    rwn = RWN(k=4, radius=radius, q=1.0, rng=5)
    out = rwn.set_params(columns=cols).fit_transform(df)
    np.testing.assert_array_equal(rwn.neighbourhood_sizes_, [len(h) for h in hood])
    a_row = {v: i for i, v in enumerate(df["a"])}
    b_row = {v: i for i, v in enumerate(df["b"])}
    for i in range(len(df)):
        assert a_row[out["a"].iloc[i]] in hood[i] and b_row[out["b"].iloc[i]] in hood[i]
        assert out["c"].iloc[i] in set(df["c"].iloc[list(hood[i])])
    # Without ties the neighbourhood size is max(k, |ball|).
    if radius is not None:
        ball = [len(h) for h in neighbourhoods(df, cols, k=1, radius=radius)]
        assert [len(h) for h in hood] == [max(4, b if b > 1 else 1) if b > 4 else 4 for b in ball]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2**31), st.sampled_from([None, 0.0, 1.0, 2.5]))
def test_tied_data_neighbourhoods_match_brute_force(k, seed, radius):
    # Integer data with many identical rows: grouping into classes must not change anything.
    rng = np.random.default_rng(seed)
    n = 40
    df = pd.DataFrame({"u": rng.integers(0, 3, n), "v": rng.integers(0, 2, n), "g": rng.choice(["p", "q"], n)})
    rwn = RWN(k=k, radius=radius, rng=seed)
    rwn.fit_transform(df)
    hood = neighbourhoods(df, list(df.columns), k=k, radius=radius)
    np.testing.assert_array_equal(rwn.neighbourhood_sizes_, [len(h) for h in hood])


@pytest.mark.slow   # CI runs it in its second step (pytest -m slow); the README's command stays within 5 min
def test_draws_for_different_variables_are_independent():
    df = continuous(60, seed=8)
    target = 17
    size = len(neighbourhoods(df, ["a", "b"], k=5)[target])
    a_row = {v: i for i, v in enumerate(df["a"])}
    b_row = {v: i for i, v in enumerate(df["b"])}
    pairs = []
    for seed in range(2500):
        out = RWN(k=5, rng=seed).set_params(columns=["a", "b"]).fit_transform(df)
        pairs.append((a_row[out["a"].iloc[target]], b_row[out["b"].iloc[target]]))
    table = pd.crosstab(*zip(*pairs)).to_numpy()
    assert table.shape == (size, size)
    assert stats.chi2_contingency(table).pvalue > 1e-3
    # Each donor equally likely (uniform over the neighbourhood).
    assert stats.chisquare(table.sum(axis=1)).pvalue > 1e-3


def test_pairs_from_indices_against_enumeration():
    for n in range(2, 301):
        i, j = pairs_from_indices(np.arange(n * (n - 1) // 2), n)
        expected = [(a, b) for b in range(1, n) for a in range(b)]
        assert list(zip(i.tolist(), j.tolist())) == expected, n
    with pytest.raises(ValueError, match="outside"):
        pairs_from_indices([45], 10)


def test_pair_sampler_is_uniform():
    n = 20
    r = np.random.default_rng(4).integers(0, n * (n - 1) // 2, size=200_000)
    i, j = pairs_from_indices(r, n)
    counts = np.bincount(j * (j - 1) // 2 + i, minlength=190)
    assert (i < j).all() and stats.chisquare(counts).pvalue > 1e-3
    # Each record is equally likely to appear in a pair.
    assert stats.chisquare(np.bincount(np.concatenate([i, j]), minlength=n)).pvalue > 1e-3


def test_sampled_methods_pick_from_their_candidates():
    df = continuous(400, seed=2)
    a_row = {v: i for i, v in enumerate(df["a"])}
    for kw in ({"m": 30}, {"m": 30, "fresh": True}):
        rwn = RWN(k=3, method="sampled_points", rng=7, **kw)
        out = rwn.set_params(columns=["a", "b"]).fit_transform(df)
        donors = np.array([a_row[v] for v in out["a"]])
        assert (donors != np.arange(len(df))).all() and (rwn.neighbourhood_sizes_ >= 3).all()
        if "fresh" not in kw:
            assert len(set(donors)) <= 30   # one shared sample of 30 records
    rwn = RWN(k=3, method="sampled_pairs", m=8, rng=7)
    out = rwn.set_params(columns=["a", "b"]).fit_transform(df)
    donors = np.array([a_row[v] for v in out["a"]])
    alone = rwn.neighbourhood_sizes_ == 0   # no sampled partner: the record keeps its values
    assert (donors[~alone] != np.arange(len(df))[~alone]).all() and (donors[alone] == np.flatnonzero(alone)).all()
    # The sampled partners, redrawn from the seed the way RWN draws them (one chunk of n·m/2 pairs):
    # each neighbourhood is the k nearest of its partners, and every donor is one of them.
    n = len(df)
    seed, = np.random.SeedSequence(int(np.random.default_rng(7).integers(2**63))).spawn(1)
    r = np.random.default_rng(seed).integers(0, n * (n - 1) // 2, size=n * 8 // 2, dtype=np.int64)
    partners = [set() for _ in range(n)]
    for i, j in zip(*pairs_from_indices(r, n)):
        partners[i].add(j)
        partners[j].add(i)
    n_partners = np.array([len(p) for p in partners])
    assert (rwn.neighbourhood_sizes_ == np.minimum(3, n_partners)).all()
    assert all(donors[i] in partners[i] for i in np.flatnonzero(~alone))


def test_theorem_correlation_recovered_as_radius_shrinks():
    rng = np.random.default_rng(11)
    xy = rng.multivariate_normal([0, 0], [[1, 0.8], [0.8, 1]], size=5000)
    df = pd.DataFrame(xy, columns=["x", "y"])
    sample = np.corrcoef(df["x"], df["y"])[0, 1]
    error = {}
    for radius in (1.0, 0.2, 0.05):
        out = RWN(k=1, radius=radius, q=1.0, rng=3).fit_transform(df)
        error[radius] = abs(np.corrcoef(out["x"], out["y"])[0, 1] - sample)
    # Independent draws within small neighbourhoods keep the correlation (the paper's theorem);
    # large neighbourhoods attenuate it.
    assert error[1.0] > error[0.2] > error[0.05]
    assert error[0.05] < 0.01 and abs(sample - 0.8) < 0.02


def test_partitioned_on_dask_matches_per_partition_exact():
    distributed = pytest.importorskip("distributed")
    df = continuous(600, seed=9)
    local = RWN(k=4, method="partitioned", partitions=3, rng=21)
    expected = local.set_params(columns=["a", "b", "c"]).fit_transform(df)
    key = np.random.default_rng(21).integers(0, 3, size=len(df))  # the same random partition key
    for p, seed in enumerate(local.partition_seeds_):
        part = df.iloc[np.flatnonzero(key == p)]
        own = RWN(k=4, rng=np.random.default_rng(seed)).set_params(columns=["a", "b", "c"]).fit_transform(part)
        pd.testing.assert_frame_equal(expected.loc[part.index], own)
    with distributed.Client(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as client:
        on_dask = RWN(k=4, method="partitioned", partitions=3, rng=21, client=client,
                      columns=["a", "b", "c"]).fit_transform(df)
    pd.testing.assert_frame_equal(on_dask, expected)
    by_column = RWN(k=2, method="partitioned", partition_key="c", rng=1, columns=["a", "b"]).fit_transform(df)
    assert (by_column.groupby(df["c"])["a"].apply(lambda s: s.isin(df.loc[s.index, "a"]).all())).all()


def _folder(df, folder, rows=300):
    """``df`` as a folder of Parquet partitions of ``rows`` consecutive records."""
    folder.mkdir()
    for p in range(0, len(df), rows):
        df.iloc[p:p + rows].to_parquet(folder / f"part.{p // rows}.parquet")
    return folder


def _three_partitions(tmp_path):
    """900 continuous records and a folder of three Parquet partitions of 300 of them."""
    df = continuous(900, seed=4).reset_index(drop=True)
    return df, _folder(df, tmp_path / "in")


def test_perturb_parquet_out_of_core(tmp_path):
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("pyarrow")
    df, src = _three_partitions(tmp_path)
    with distributed.Client(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as client:
        info = perturb_parquet(src, tmp_path / "out", RWN(k=3, rng=5), columns=["a", "b"], client=client)
        # The RWN's own columns parameter when the call names none: the same output.
        same = perturb_parquet(src, tmp_path / "out2", RWN(k=3, rng=5, columns=["a", "b"]), client=client)
    assert info["partitions"] == 3 and same["changed_share"] == info["changed_share"]
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out2"), pd.read_parquet(tmp_path / "out"))
    out = pd.read_parquet(tmp_path / "out").sort_index()
    assert out.shape == df.shape and out["id"].equals(df["id"]) and not out["a"].equals(df["a"])
    for p in range(3):
        part = df.iloc[p * 300:(p + 1) * 300]
        assert out.loc[part.index, "a"].isin(part["a"]).all()   # donors come from the same partition


def test_perturb_parquet_runs_the_rwn_method_within_each_partition(tmp_path):
    # Folders ran the exact method whatever rwn.method said; now each partition runs it on its own
    # records, with the child seed of its partition number ("partitioned": exact within each).
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("pyarrow")
    _, src = _three_partitions(tmp_path)
    cols = ["a", "b", "c"]
    cases = [("sampled_pairs", {"m": 6}), ("sampled_points", {"m": 15}), ("sampled_points", {"m": 15, "fresh": True}),
             ("partitioned", {"partitions": 7}), ("exact", {})]
    outs = {}
    with distributed.Client(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as client:
        for i, (method, kw) in enumerate(cases):
            rwn = RWN(k=3, radius=1.5, method=method, rng=5, n_jobs=2, progress=True, **kw)
            info = perturb_parquet(src, tmp_path / f"out{i}", rwn, columns=cols, client=client)
            assert info["partitions"] == 3 and info["rows"] == 900
            outs[i] = out = pd.read_parquet(tmp_path / f"out{i}").rename_axis(None)  # dask names the index
            for p in range(3):
                part = pd.read_parquet(src / f"part.{p}.parquet")
                seed = np.random.default_rng(np.random.SeedSequence(5, spawn_key=(p,)))
                inner = {k: v for k, v in kw.items() if k != "partitions"}
                expected = RWN(k=3, radius=1.5, method="exact" if method == "partitioned" else method, rng=seed,
                               **inner).set_params(columns=cols).fit_transform(part)
                pd.testing.assert_frame_equal(out.loc[part.index], expected, check_dtype=False)
        with pytest.raises(ValueError, match="needs m"):
            perturb_parquet(src, tmp_path / "bad", RWN(method="sampled_pairs", rng=5), columns=cols, client=client)
    exact = outs[len(cases) - 1]
    for i in range(3):
        assert not outs[i]["a"].equals(exact["a"])   # the sampled methods are not the exact one
    pd.testing.assert_frame_equal(outs[3], exact)
    assert not (tmp_path / "bad").exists()


def test_errors():
    df = continuous(50)
    with pytest.raises(ValueError, match="q must be"):
        RWN(q=1.5).fit_transform(df)
    with pytest.raises(ValueError, match="method"):
        RWN(method="swap").fit_transform(df)
    with pytest.raises(ValueError, match="not in the data"):
        RWN().set_params(columns=["zz"]).fit_transform(df)
    with pytest.raises(TypeError, match="m must be"):
        RWN(method="sampled_pairs", m=2.5).fit_transform(df)
    with pytest.raises(ValueError, match="infinite value"):
        RWN().fit_transform(df.assign(a=np.inf))


@pytest.mark.parametrize("method,kw", [("exact", {}), ("sampled_points", {"m": 40}),
                                       ("partitioned", {"partitions": 2})])
def test_a_gap_is_a_value_and_the_warning_names_dpknn_impute(method, kw):
    """Issue 47, finding 5: columns with gaps no longer block a run. A gap is one more value, copied from
    neighbours like any value; its records' neighbours are mostly gaps too (a gap sits far from values),
    and the warning points to dpknn impute, not to data-independent filling."""
    rng = np.random.default_rng(4)
    n = 400
    group = rng.integers(0, 2, n)
    df = pd.DataFrame({"id": np.arange(n), "a": rng.normal(size=n) + 3 * group,
                       "b": pd.Series(np.where(group == 1, "x", "y"), dtype=object),
                       "c": np.where(group == 1, np.nan, rng.normal(size=n))})   # c applies to group 0 only
    df.loc[rng.random(n) < 0.1, "b"] = None
    before = df.copy()
    with pytest.warns(UserWarning, match=r"RWN on columns with gaps \{'b': \d+, 'c': \d+\}.*dpknn impute"):
        out = RWN(k=4, method=method, rng=1, **kw).set_params(columns=["a", "b", "c"]).fit_transform(df)
    pd.testing.assert_frame_equal(df, before)
    assert out.c.isna().sum() == pytest.approx(df.c.isna().sum(), rel=0.15)
    # Gaps stay where the neighbours have gaps: records of group 1 (no c) keep no c, group 0 mostly keeps one.
    assert out.c[group == 1].isna().mean() > 0.9 and out.c[group == 0].notna().mean() > 0.9
    assert out.b.isna().any() and not out.a.equals(df.a)


@pytest.mark.parametrize("kw,match", [
    ({"weights": {"a": np.inf}}, r"weight of column 'a' must be a finite positive number, got inf"),
    ({"scales": {"a": (0.0, np.nan)}}, r"scales\['a'\] must be a pair \(mean, standard deviation\) of finite"),
    ({"scales": {"a": (np.inf, 1.0)}}, r"scales\['a'\] must be a pair"),
    ({"scales": {"a": (0.0, -1.0)}}, r"standard deviation >= 0"),
])
def test_non_finite_weights_and_scales_are_refused_by_name(kw, match):
    with pytest.raises(ValueError, match=match):
        RWN(rng=0, **kw).fit_transform(continuous(50))




@pytest.mark.parametrize("method,kw", [("exact", {}), ("partitioned", {"partitions": 2})])
def test_fewer_records_than_k_uses_all_others(method, kw):
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0, 10.0], "g": ["u", "v", "u", "v"]})
    with pytest.raises(ValueError, match=r"k=5 must be below the number of records \(4\)"):
        RWN(k=5, method=method, rng=0, **kw).fit(df)
    rwn = RWN(k=3, method=method, rng=0, **kw)
    out = rwn.fit_transform(df)
    assert out["a"].isin(df["a"]).all() and out.shape == df.shape
    if method == "exact":
        np.testing.assert_array_equal(rwn.neighbourhood_sizes_, [3, 3, 3, 3])
        np.testing.assert_array_equal(rwn.neighbourhood_sizes_,
                                      [len(h) for h in neighbourhoods(df, ["a", "g"], k=3)])
    else:
        # Partitions of 2 records hold fewer than k = 3: all other records of the partition.
        assert rwn.partition_seeds_ is not None


def test_sampled_methods_name_m_and_identifiers_warn():
    df = continuous()
    for method in ("sampled_points", "sampled_pairs"):
        with pytest.raises(ValueError, match=f"method='{method}' needs m"):
            RWN(method=method).set_params(columns=["a"]).fit(df)
    with pytest.warns(UserWarning, match=r"\['id'\]"):
        RWN().set_params(columns=["a", "id"]).fit(df)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RWN().set_params(columns=["a", "b", "c"]).fit(df)  # floats unique per row are not identifiers
        RWN().set_params(columns=["id"]).fit(df.head(30))  # too few rows to tell


def test_rwn_scikit_learn_manners():
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError

    import dpknn

    assert dpknn.RWN is RWN
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=50), "z": rng.integers(0, 3, 50), "id": np.arange(50)})
    rwn = RWN(k=3, rng=5)
    twin = clone(rwn)
    assert twin.get_params() == rwn.get_params() and twin.set_params(k=4).k == 4 and rwn.k == 3
    with pytest.raises(NotFittedError, match="not fitted"):
        rwn.transform(df)
    out = rwn.set_params(columns=["x", "z"]).fit(df).transform(df)
    assert rwn.n_features_in_ == 3 and list(rwn.feature_names_in_) == ["x", "z", "id"]
    assert rwn.columns_ == ["x", "z"]
    np.testing.assert_array_equal(out["id"], df["id"])
    assert not np.array_equal(out["x"], df["x"])
    pd.testing.assert_frame_equal(RWN(k=3, rng=5, columns=["x", "z"]).fit_transform(df), out)
    with pytest.raises(ValueError, match="fitted on"):
        rwn.transform(df[["z", "x", "id"]])


def _survey(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "income": rng.lognormal(10, 1, n),
                         "gender": rng.choice(["f", "m"], n)})


def test_a_categorical_column_left_unchanged_is_reported_and_named():
    # Issue 28, finding 9: with default weights every neighbour shares the record's gender.
    df = _survey()
    rwn = RWN(rng=1)
    with pytest.warns(UserWarning, match=r"column 'gender'.*every neighbour.*shares the record's value.*radius"):
        out = rwn.fit_transform(df)
    assert set(rwn.changed_share_) == {"age", "income", "gender"}
    assert rwn.changed_share_["gender"] < 0.01
    assert rwn.changed_share_["gender"] == pytest.approx((out["gender"] != df["gender"]).mean())
    # A one-valued column cannot change at all: share 0, warned.
    df["country"] = "x"
    with pytest.warns(UserWarning, match="column 'country'") as caught:
        RWN(rng=1, radius=3.0).set_params(columns=["age", "country"]).fit_transform(df)
    assert not [w for w in caught if "'age'" in str(w.message)]
    rwn = RWN(rng=1, radius=3.0)
    with pytest.warns(UserWarning):
        rwn.set_params(columns=["age", "country"]).fit_transform(df)
    assert rwn.changed_share_["country"] == 0.0


@pytest.mark.parametrize("method,kw", [("exact", {}), ("partitioned", {"partitions": 2}),
                                       ("sampled_points", {"m": 60}), ("sampled_pairs", {"m": 60})])
def test_changed_shares_without_warning_when_every_column_changes(method, kw):
    import warnings

    df = _survey()
    rwn = RWN(radius=2.0, method=method, rng=1, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = rwn.fit_transform(df)
    for c, share in rwn.changed_share_.items():
        assert 0 < share <= 1 and share == pytest.approx((out[c] != df[c]).mean())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert RWN(q=0.0, rng=1).fit(df).transform(df).equals(df)   # q = 0 asks for no change


def test_perturb_parquet_reports_changed_shares_and_warns(tmp_path):
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("pyarrow")
    df = _survey(600)
    _folder(df, tmp_path / "in")
    with distributed.Client(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as client:
        with pytest.warns(UserWarning, match="column 'gender'"):
            info = perturb_parquet(tmp_path / "in", tmp_path / "out", RWN(k=3, rng=5), client=client)
    out = pd.read_parquet(tmp_path / "out").sort_index()
    assert list(out.columns) == list(df.columns) and info["rows"] == 600
    for c in df.columns:
        assert info["changed_share"][c] == pytest.approx((out[c] != df[c]).mean())
    assert info["changed_share"]["gender"] < 0.01 < info["changed_share"]["age"]


def _imputed_survey(n):
    """A survey as KNNImputer leaves it: an imputed column and its flag column."""
    from dpknn.schema._flags import flag_column

    df = _survey(n)
    df[flag_column("age")] = np.arange(n) % 7 == 0
    return df


def test_imputation_flags_are_never_perturbed_and_left_out_unless_kept():
    # Issue 28, finding 1: RWN is not DP, so imputed data pass, but their flags must not be perturbed.
    # Issue 47, finding 5: the flags tell who did not answer, so the output leaves them out unless kept on purpose.
    df = _imputed_survey(400)
    before = df.copy()
    for columns in (None, ["age", "gender", "dpknn_imputed_age"]):
        with pytest.warns(UserWarning, match=r"\['dpknn_imputed_age'\] are never perturbed and are left out"):
            out = RWN(k=3, rng=2).set_params(columns=columns).fit_transform(df)
        assert "dpknn_imputed_age" not in out.columns and not out["age"].equals(df["age"])
        assert list(out.columns) == [c for c in df.columns if c != "dpknn_imputed_age"]
        with pytest.warns(UserWarning, match=r"are carried through unchanged \(keep_flags"):
            kept = RWN(k=3, rng=2, keep_flags=True).set_params(columns=columns).fit_transform(df)
        assert kept["dpknn_imputed_age"].equals(df["dpknn_imputed_age"])
        pd.testing.assert_frame_equal(kept.drop(columns="dpknn_imputed_age"), out)
    pd.testing.assert_frame_equal(df, before)


def test_perturb_parquet_keeps_flags_and_writes_all_or_nothing(tmp_path):
    import warnings

    distributed = pytest.importorskip("distributed")
    pytest.importorskip("pyarrow")
    df = _imputed_survey(600)
    _folder(df, tmp_path / "in")
    bad = df.copy()
    bad["age"] = bad["age"].astype(float)
    bad.loc[450, "age"] = np.inf   # the second partition fails on a worker, after the first was written
    _folder(bad, tmp_path / "bad")
    with distributed.Client(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as client:
        with pytest.warns(UserWarning, match="dpknn_imputed_age"):
            perturb_parquet(tmp_path / "in", tmp_path / "out", RWN(k=3, rng=5, keep_flags=True), client=client)
        with pytest.warns(UserWarning, match="left out"):
            perturb_parquet(tmp_path / "in", tmp_path / "dropped", RWN(k=3, rng=5), client=client)
        with pytest.raises(ValueError, match="infinite value"), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the flags, said above
            perturb_parquet(tmp_path / "bad", tmp_path / "out2", RWN(k=3, rng=5), client=client)
        with pytest.raises(FileExistsError):
            perturb_parquet(tmp_path / "in", tmp_path / "out", RWN(k=3, rng=5), client=client)
    out = pd.read_parquet(tmp_path / "out").sort_index()
    assert out["dpknn_imputed_age"].equals(df["dpknn_imputed_age"]) and not out["age"].equals(df["age"])
    dropped = pd.read_parquet(tmp_path / "dropped").sort_index()
    pd.testing.assert_frame_equal(dropped, out.drop(columns="dpknn_imputed_age"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad", "dropped", "in", "out"]


def _reference_neighbourhoods(X, pi, pj, k, radius):
    """Brute force: each record's distinct partners sorted by (float32 distance, index), the k
    nearest with all ties at the k-th distance, or all within the radius if more."""
    n = X.shape[0]
    partners = [dict() for _ in range(n)]
    for a, b in zip(pi, pj):
        d = np.float32(np.sqrt(np.sum((X[a].astype(np.float64) - X[b].astype(np.float64)) ** 2)))
        partners[a][b] = d
        partners[b][a] = d
    out = []
    for v in range(n):
        items = sorted((d, u) for u, d in partners[v].items() if np.isfinite(d))
        take = min(k, len(items))
        while 0 < take < len(items) and items[take][0] == items[take - 1][0]:
            take += 1
        if radius >= 0:
            take = max(take, sum(1 for d, _ in items if d <= radius))
        out.append([u for _, u in items[:take]])
    return out


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 25), st.integers(1, 3), st.integers(0, 60), st.integers(1, 6),
       st.sampled_from([-1.0, 0.0, 0.5, 1.5]), st.integers(0, 2**32 - 1))
def test_pair_kernels_equal_a_brute_force_neighbourhood(n, p, n_pairs, k, radius, seed):
    from dpknn._core import _rwn

    rng = np.random.default_rng(seed)
    # Few distinct coordinates: ties at the k-th distance and duplicate pairs are common.
    X = rng.integers(0, 3, size=(n, p)).astype(np.float32) * np.float32(0.5)
    r = rng.integers(0, n * (n - 1) // 2, size=n_pairs)
    pi, pj = pairs_from_indices(r, n)
    degree = np.bincount(pi, minlength=n) + np.bincount(pj, minlength=n)
    ptr = np.r_[0, np.cumsum(degree)].astype(np.int64)
    edges = np.empty(ptr[-1], dtype=np.uint64)
    half = n_pairs // 2   # two chunks, as RWN fills them
    fill = ptr[:-1].copy()
    _rwn.fill_pairs(pi[:half], pj[:half], X, fill, edges)
    _rwn.fill_pairs(pi[half:], pj[half:], X, fill, edges)
    assert np.array_equal(fill, ptr[1:])
    nbr_of = (edges & np.uint64(0xFFFFFFFF)).astype(np.int32)
    dist_of = (edges >> np.uint64(32)).astype(np.uint32).view(np.float32)
    expected = _reference_neighbourhoods(X, pi, pj, k, radius)
    out_ptr, out = _rwn.select_edges(ptr, edges.copy(), k, radius)
    assert [out[out_ptr[v]:out_ptr[v + 1]].tolist() for v in range(n)] == expected
    # The same neighbourhoods from separate partner and distance arrays (sampled_points' entry).
    out_ptr2, out2 = _rwn.select_neighbours(ptr, nbr_of, dist_of, k, radius)
    assert np.array_equal(out_ptr2, out_ptr) and np.array_equal(out2, out)


def test_columns_is_a_parameter_that_clone_and_pipeline_carry():
    """Issue 49, finding 7: ``columns`` is a constructor parameter; fit's old argument still works, with a
    DeprecationWarning, and gives the same result."""
    from sklearn.base import clone
    from sklearn.pipeline import Pipeline

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.normal(size=80), "z": rng.normal(size=80), "id": np.arange(80.0)})
    rwn = RWN(k=3, rng=5, columns=["x", "z"])
    out = rwn.fit_transform(df)
    assert rwn.columns_ == ["x", "z"] and clone(rwn).get_params()["columns"] == ["x", "z"]
    np.testing.assert_array_equal(out["id"], df["id"])
    piped = Pipeline([("rwn", clone(rwn))]).fit_transform(df)
    pd.testing.assert_frame_equal(piped, out)
    with pytest.warns(DeprecationWarning, match="RWN\\(columns=...\\)"):
        old = RWN(k=3, rng=5).fit_transform(df, columns=["x", "z"])
    pd.testing.assert_frame_equal(old, out)
