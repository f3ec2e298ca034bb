"""Agency files (issue 50): codebooks as the public source of domains and codes, coded missing values mapped
on reading by the codebook, files written back with their labels and codes.

The IPUMS tests read the real extracts of ``DPKNN_IPUMS_DATA`` (default: ``shared/data/ipums`` beside the
repository) and skip when they are absent; the Stata and SPSS tests make their own files with pyreadstat.
"""

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_run import run

pyreadstat = pytest.importorskip("pyreadstat")

from dpknn import Schema  # noqa: E402
from dpknn.schema._codebook import code_role, read_codebook, schema_from_codebook  # noqa: E402
from dpknn.schema._coded_files import apply_codebook, read_coded, write_coded  # noqa: E402

IPUMS = Path(os.environ.get("DPKNN_IPUMS_DATA", Path(__file__).resolve().parents[2] / "shared" / "data" / "ipums"))
needs_ipums = pytest.mark.skipif(not (IPUMS / "cps_00006.xml").exists(),
                                 reason=f"the IPUMS extracts are not in {IPUMS} (set DPKNN_IPUMS_DATA)")


@pytest.mark.parametrize("label, role", [
    ("NIU", "not_applicable"), ("N.I.U. (Not in Universe)", "not_applicable"), ("N/A", "not_applicable"),
    ("Not applicable", "not_applicable"), ("IAP", "not_applicable"), ("Missing/NIU", "not_applicable"),
    ("N/A (GQ/vacant)", "not_applicable"), ("Missing (DK/refused)", "gap"),
    ("Missing", "gap"), ("Blank", "gap"), ("Unknown/missing", "gap"), ("Refused", "gap"), ("Don't know", "gap"),
    # Negative controls: labels of real categories that merely contain such words.
    ("N/A or no schooling", "value"), ("None", "value"), ("North America", "value"), ("Male", "value"),
    ("Nassau", "value"), ("Known", "value"), ("100 (100+ in 1960-1970)", "value"), ("Not in labor force", "value"),
])
def test_code_roles_from_labels(label, role):
    assert code_role(label) == role


# --- IPUMS extracts --------------------------------------------------------------------------------------

@needs_ipums
def test_ddi_codes_each_kind():
    cps = read_codebook(IPUMS / "cps_00006.xml")
    inc = cps.variable("INCTOT")
    # Stated only in the coding instructions, not as categories.
    assert inc.gaps == {99999998: "Missing"} and list(inc.not_applicable) == [99999999]
    assert inc.kind == "continuous" and inc.upper == 99999997 and inc.lower == -9999999
    assert cps.variable("HWTSUPP").decimals == 4
    h = read_codebook(IPUMS / "cps_00421.xml")
    assert h.hierarchical and set(h.record_types) == {"H", "P"}
    assert h.variable("SEX").not_applicable == {9: "NIU"} and list(h.variable("SEX").values) == [1, 2]
    assert h.variable("RACE").gaps == {999: "Blank"} and 999 not in h.variable("RACE").values
    age = h.variable("AGE")
    assert (age.kind, age.lower, age.upper) == ("ordinal", 0, 99)
    usa = read_codebook(IPUMS / "usa_00172.xml")
    # AGE labelled mostly by its own numbers (with top-coded labels such as "100 (100+ in 1960-1970)"): a scale.
    assert usa.variable("AGE").kind == "ordinal" and usa.variable("SEX").kind == "categorical"


@needs_ipums
def test_fixed_width_codes_never_read_as_numbers():
    from ipumspy import readers

    ddi = readers.read_ipums_ddi(IPUMS / "cps_00006.xml")
    raw = readers.read_microdata(ddi, IPUMS / "cps_00006.dat.gz")
    # Negative control: read as numbers, 2,320 incomes of a hundred million.
    assert int((raw.INCTOT >= 99999998).sum()) == 2320
    coded = read_coded(IPUMS / "cps_00006.dat.gz", IPUMS / "cps_00006.xml")
    d = coded.data
    assert len(d) == len(raw) and float(d.INCTOT.max()) < 99999998
    assert int(d.INCTOT_niu.sum()) == 2209
    assert int((d.INCTOT.isna() & ~d.INCTOT_niu).sum()) == 111
    assert coded.codes["INCTOT"].value_counts().to_dict() == {99999999: 2209, 99999998: 111}
    # The input is not changed and rows keep their order.
    assert int((raw.INCTOT >= 99999998).sum()) == 2320
    pd.testing.assert_series_equal(d.SERIAL, raw.SERIAL.reset_index(drop=True))


@needs_ipums
def test_apply_codebook_blank_and_niu_codes():
    cb = read_codebook(IPUMS / "cps_00421.xml")
    df = pd.DataFrame({"SEX": [1, 2, 9, 1], "RACE": [100, 999, 200, 999], "AGE": [30, 40, 50, 60]})
    before = df.copy()
    out, codes = apply_codebook(df, cb)
    pd.testing.assert_frame_equal(df, before)
    assert out.RACE.isna().tolist() == [False, True, False, True] and "RACE_niu" not in out
    assert out.SEX.isna().tolist() == [False, False, True, False]
    assert out.SEX_niu.tolist() == [False, False, True, False]
    assert codes["RACE"].to_dict() == {1: 999, 3: 999}
    # A known categorical that lists the NIU code keeps it as a value (a known attribute is complete).
    from dpknn import Categorical

    kept, _ = apply_codebook(df, cb, attributes=[Categorical("SEX", [1, 2, 9])])
    assert kept.SEX.tolist() == [1, 2, 9, 1] and "SEX_niu" not in kept


@needs_ipums
def test_hierarchical_extract_one_row_per_person_with_household_variables():
    coded = read_coded(IPUMS / "cps_00421.dat.gz", IPUMS / "cps_00421.xml")
    d = coded.data
    assert len(d) == 201993 and set(d.RECTYPE) == {"P"}
    assert {"STATEFIP", "MONTH", "MISH", "AGE", "SEX"} <= set(d.columns)
    assert not d.STATEFIP.isna().any()
    # Every person of a household (YEAR, MONTH, SERIAL) carries one state: the household's.
    assert int(d.groupby(["YEAR", "MONTH", "SERIAL"]).STATEFIP.nunique().max()) == 1


@needs_ipums
def test_schema_from_codebook_no_domain_typed(tmp_path):
    made = schema_from_codebook(IPUMS / "cps_00006.xml", known=["STATEFIP", "MONTH"], imputed=["INCTOT"])
    s = made.schema
    assert s.attribute("STATEFIP").categories == tuple(read_codebook(IPUMS / "cps_00006.xml")
                                                       .variable("STATEFIP").values)
    inc = s.attribute("INCTOT")
    assert (inc.lower, inc.upper) == (-9999999.0, 99999997.0) and inc.universe.where == {"INCTOT_niu": [False]}
    assert "INCTOT" in made.review   # a range from a field width asks for a review
    path = tmp_path / "s.toml"
    path.write_text(made.to_toml())
    assert "draft" not in Schema.from_file(path).to_dict()   # accepted as written: nothing read from the data
    assert "99999998 = Missing" in path.read_text()
    narrow = schema_from_codebook(IPUMS / "cps_00006.xml", known=["STATEFIP"], imputed=["INCTOT"],
                                  bounds={"INCTOT": (-20000, 100000)})
    assert narrow.schema.attribute("INCTOT").upper == 100000 and "INCTOT" not in narrow.review
    with pytest.raises(ValueError, match="no variable 'WAGE'"):
        schema_from_codebook(IPUMS / "cps_00006.xml", known=["STATEFIP"], imputed=["WAGE"])


@needs_ipums
def test_ipums_extract_to_release_and_synthetic_file(tmp_path):
    xml, dat = IPUMS / "cps_00006.xml", IPUMS / "cps_00006.dat.gz"
    r = run("schema", "--codebook", xml, "--known", "STATEFIP,MONTH", "--imputed", "INCTOT",
            "--bounds", "INCTOT=-20000:100000", "--output", "s.toml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = run("impute", "--input", dat, "--codebook", xml, "--schema", "s.toml", "--output", "imp.sav", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "imputed 111 of 7668" in r.stdout
    back, meta = pyreadstat.read_sav(tmp_path / "imp.sav", user_missing=True)
    # Not applicable stays coded 99999999 (folded back from INCTOT_niu); every gap was imputed.
    assert int((back.INCTOT == 99999999).sum()) == 2209 and int((back.INCTOT == 99999998).sum()) == 0
    assert "INCTOT_niu" not in back and int(back.dpknn_imputed_INCTOT.sum()) == 111
    assert meta.variable_value_labels["MONTH"][1] == "January"
    assert {r_["lo"] for r_ in meta.missing_ranges["INCTOT"]} == {99999998, 99999999}
    # The imputed file is refused by release (its flags), even without its sidecar.
    (tmp_path / "imp.sav.json").unlink()
    (tmp_path / "q.toml").write_text('[[query]]\ntype = "count"\nepsilon = 1.0\n')
    r = run("release", "--input", "imp.sav", "--schema", "s.toml", "--queries", "q.toml", "--epsilon", "1",
            "--output", "r.json", cwd=tmp_path)
    assert r.returncode != 0 and "imputation flag" in r.stderr
    r = run("release", "--input", dat, "--codebook", xml, "--schema", "s.toml", "--queries", "q.toml",
            "--epsilon", "1", "--output", "r.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "r.json").read_text())["releases"][0]["type"] == "count"
    r = run("synth", "--input", dat, "--codebook", xml, "--attributes", "s.toml", "--epsilon", "2", "--rows", "3000",
            "--seed", "1", "--output", "syn.sav", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    syn, _ = pyreadstat.read_sav(tmp_path / "syn.sav", user_missing=True)
    niu_share = float((syn.INCTOT == 99999999).mean())
    assert abs(niu_share - 2209 / 7668) < 0.05          # not applicable kept as a structural share
    assert not syn.INCTOT.isna().any()                   # every synthetic gap carries a code
    values = syn.INCTOT[syn.INCTOT < 99999998]
    assert values.between(-20000, 100000).all()


# --- Stata and SPSS files --------------------------------------------------------------------------------

def _survey(n=400, seed=0):
    rng = np.random.default_rng(seed)
    sex = rng.choice([1.0, 2.0], n)
    age = rng.integers(18, 80, n).astype(float)
    hours = np.where(age < 65, rng.integers(10, 60, n), 99).astype(float)     # 99: inapplicable (retired)
    hours[rng.random(n) < 0.08] = 77.0                                        # refused
    hours[rng.random(n) < 0.04] = 88.0                                        # don't know
    note = np.where(rng.random(n) < 0.1, 88.0, rng.integers(1, 4, n).astype(float))   # not in the schema
    return pd.DataFrame({"sex": sex, "age": age, "hours": hours, "note": note})


SAV_LABELS = {"sex": {1: "Male", 2: "Female"}, "hours": {77: "Refused", 88: "Don't know", 99: "Inapplicable"},
              "note": {1: "one", 2: "two", 3: "three", 88: "Don't know"}}


def _write_sav(path, df):
    pyreadstat.write_sav(df, path, variable_value_labels=SAV_LABELS,
                         missing_ranges={"hours": [77, 88, 99], "note": [88]},
                         variable_measure={"sex": "nominal", "age": "scale", "hours": "scale", "note": "nominal"},
                         variable_format={"sex": "F1.0", "age": "F3.0", "hours": "F2.0", "note": "F2.0"},
                         column_labels={"sex": "Sex", "age": "Age in years", "hours": "Hours worked", "note": "Note"})


def test_sav_codebook_roles_from_user_missing_and_labels(tmp_path):
    _write_sav(tmp_path / "s.sav", _survey())
    cb = read_codebook(tmp_path / "s.sav")
    hours = cb.variable("hours")
    assert hours.gaps == {77: "Refused", 88: "Don't know"} and hours.not_applicable == {99: "Inapplicable"}
    assert cb.variable("sex").kind == "categorical" and list(cb.variable("sex").values) == [1, 2]
    assert (hours.lower, hours.upper) == (-99, 99) and hours.range_source == "display format F2.0"
    data = read_coded(tmp_path / "s.sav").data
    raw = _survey()
    assert data.hours.isna().sum() == raw.hours.isin([77, 88, 99]).sum()
    assert data.hours_niu.tolist() == (raw.hours == 99).tolist()
    assert not data.hours.isin([77, 88, 99]).any()


def test_sav_round_trip_after_impute(tmp_path):
    raw = _survey()
    _write_sav(tmp_path / "s.sav", raw)
    made = schema_from_codebook(tmp_path / "s.sav", known=["sex"], imputed=["hours"],
                                bounds={"hours": (0, 76)})
    (tmp_path / "s.toml").write_text(made.to_toml())
    r = run("impute", "--input", "s.sav", "--schema", "s.toml", "--output", "imp.sav", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    back, meta = pyreadstat.read_sav(tmp_path / "imp.sav", user_missing=True)
    _, meta_in = pyreadstat.read_sav(tmp_path / "s.sav", metadataonly=True, user_missing=True)
    for name in ("sex", "hours", "note"):
        assert meta.variable_value_labels[name] == meta_in.variable_value_labels[name]
    assert meta.missing_ranges["hours"] == meta_in.missing_ranges["hours"]
    assert meta.missing_ranges["note"] == meta_in.missing_ranges["note"]
    # Inapplicable stays 99 on the same rows; refused and don't know were imputed (flagged); a column the
    # schema does not impute keeps each of its own codes.
    assert ((back.hours == 99) == (raw.hours == 99)).all()
    assert back.dpknn_imputed_hours.astype(bool).tolist() == raw.hours.isin([77, 88]).tolist()
    assert not back.hours.isin([77, 88]).any()
    assert (back.note == raw.note).all()
    assert meta.column_names_to_labels["hours"] == "Hours worked"


def _dta_with_letters(path):
    """A Stata file whose q has value labels and two missing letters ("a" refused, "b" not applicable); its
    codebook."""
    df = pd.DataFrame({"q": pd.Series([1, 2, "a", 1, "b", 2, 1, "a"], dtype=object),
                       "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]})
    pyreadstat.write_dta(df, path, variable_value_labels={"q": {1: "yes", 2: "no", "a": "refused",
                                                                "b": "not applicable"}},
                         missing_user_values={"q": ["a", "b"]})
    return read_codebook(path)


def test_dta_letters_round_trip(tmp_path):
    cb = _dta_with_letters(tmp_path / "f.dta")
    q = cb.variable("q")
    assert q.gaps == {"a": "refused"} and q.not_applicable == {"b": "not applicable"}
    coded = read_coded(tmp_path / "f.dta")
    assert coded.data.q.isna().tolist() == [False, False, True, False, True, False, False, True]
    assert coded.data.q_niu.tolist() == [False, False, False, False, True, False, False, False]
    write_coded(coded.data, tmp_path / "g.dta", cb, codes=coded.codes)
    back, meta = pyreadstat.read_dta(tmp_path / "g.dta", user_missing=True)
    assert back.q.tolist() == [1, 2, "a", 1, "b", 2, 1, "a"]
    assert meta.missing_user_values == {"q": ["a", "b"]}
    assert meta.variable_value_labels["q"] == {1: "yes", 2: "no", "a": "refused", "b": "not applicable"}
    # Negative control: without the codes (a synthetic file) the gaps take the first gap code.
    write_coded(coded.data, tmp_path / "h.dta", cb)
    assert pyreadstat.read_dta(tmp_path / "h.dta", user_missing=True)[0].q.tolist()[2] == "a"


def test_dta_letters_beside_whole_and_fractional_numbers(tmp_path):
    # A synthetic amount whose draws include a released point mass (40.0) among fractional values, with its
    # missing codes as letters and value labels: pyreadstat took the int/float mix for text and refused the letters
    # ("missing_user_values not allowed for character variable"), an intermittent failure of docs/agency.md.
    cb = _dta_with_letters(tmp_path / "f.dta")
    synthetic = pd.DataFrame({"q": [40.0, 37.52, np.nan, 41.07, np.nan, 2.0, np.nan, 1.5],
                              "q_niu": [False, False, False, False, True, False, False, False],
                              "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]})
    write_coded(synthetic, tmp_path / "s.dta", cb)
    back, meta = pyreadstat.read_dta(tmp_path / "s.dta", user_missing=True)
    assert back.q.tolist() == [40.0, 37.52, "a", 41.07, "b", 2.0, "a", 1.5]
    assert meta.missing_user_values == {"q": ["a", "b"]}
    # Whole numbers alone stay integers beside the letters (the round trip above).
    write_coded(synthetic.assign(q=synthetic.q.round()), tmp_path / "w.dta", cb)
    assert pyreadstat.read_dta(tmp_path / "w.dta", user_missing=True)[0].q.tolist() == [40, 38, "a", 41, "b", 2, "a", 2]


def test_bad_outputs_and_inputs_are_refused(tmp_path):
    raw = _survey(60)
    _write_sav(tmp_path / "s.sav", raw)
    made = schema_from_codebook(tmp_path / "s.sav", known=["sex"], imputed=["hours"], bounds={"hours": (0, 76)})
    (tmp_path / "s.toml").write_text(made.to_toml())
    raw.to_csv(tmp_path / "s.csv", index=False)
    r = run("impute", "--input", "s.csv", "--schema", "s.toml", "--output", "imp.sav", cwd=tmp_path)
    assert r.returncode != 0 and "Stata or SPSS file is written with" in r.stderr
    assert not (tmp_path / "imp.sav").exists()
    r = run("schema", "--codebook", "s.sav", "--known", "sex", "--output", "x.toml", cwd=tmp_path)
    assert r.returncode != 0 and "--imputed" in r.stderr
    with pytest.raises(ValueError, match="needs its codebook"):
        read_coded(tmp_path / "s.csv")
    with pytest.raises(ValueError, match="not a numeric attribute"):
        schema_from_codebook(tmp_path / "s.sav", known=["sex"], imputed=["hours"], bounds={"age": (0, 99)})
    with pytest.raises(ValueError, match="write .dta, .sav or .zsav"):
        write_coded(raw, tmp_path / "out.sas7bdat", read_codebook(tmp_path / "s.sav"))


# --- streaming a fixed-width extract into Parquet --------------------------------------------------------

@needs_ipums
# The 21-partition read (12-15 s) runs in CI's slow step (pytest -m slow) where the extracts are.
@pytest.mark.parametrize("extract, partitions", [("cps_00006", 1), ("usa_00172", 4),
                                                 pytest.param("cps_00421", 21, marks=pytest.mark.slow)])
def test_streamed_partitions_equal_the_in_memory_read(tmp_path, extract, partitions):
    from dpknn.schema._fixed_width import fixed_width_to_parquet

    # Small blocks (64 KB) so that lines, households and partitions straddle block boundaries.
    done = fixed_width_to_parquet(IPUMS / f"{extract}.dat.gz", IPUMS / f"{extract}.xml", tmp_path / "out",
                                  rows_per_partition=10_000, block_bytes=1 << 16)
    assert done.partitions == partitions and len(list((tmp_path / "out").glob("*.parquet"))) == partitions
    got = pd.read_parquet(tmp_path / "out")
    want = read_coded(IPUMS / f"{extract}.dat.gz", IPUMS / f"{extract}.xml").data
    assert done.rows == len(want)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))
    assert [p.name for p in tmp_path.iterdir()] == ["out"]      # no temporary folder left


@needs_ipums
def test_convert_command_and_refusals(tmp_path):
    r = run("convert", "--input", IPUMS / "cps_00006.dat.gz", "--codebook", IPUMS / "cps_00006.xml",
            "--output", "folder", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = pd.read_parquet(tmp_path / "folder")
    assert int(d.INCTOT_niu.sum()) == 2209 and float(d.INCTOT.max()) < 99999998
    again = run("convert", "--input", IPUMS / "cps_00006.dat.gz", "--codebook", IPUMS / "cps_00006.xml",
                "--output", "folder", cwd=tmp_path)
    assert again.returncode != 0 and "exists" in again.stderr
    # A layout that does not match the file: the error leaves no folder behind.
    bad = tmp_path / "bad.dat"
    bad.write_bytes(b"P" + b"x" * 60 + b"\n")
    r = run("convert", "--input", bad, "--codebook", IPUMS / "cps_00421.xml", "--output", "none", cwd=tmp_path)
    assert r.returncode != 0 and not (tmp_path / "none").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@needs_ipums
def test_a_converted_extract_with_not_applicable_codes_is_imputed_and_released_out_of_core(tmp_path):
    """Issue 50: the codebook's schema (a universe on INCTOT_niu) through the folder path of impute and
    release equals the extract read in memory: the same imputed rows, L1(D) and released values."""
    pytest.importorskip("dask.distributed")
    steps = [("schema", "--codebook", IPUMS / "cps_00006.xml", "--known", "STATEFIP,MONTH", "--imputed", "INCTOT",
              "--bounds", "INCTOT=-20000:100000", "--output", "s.toml"),
             ("convert", "--input", IPUMS / "cps_00006.dat.gz", "--codebook", IPUMS / "cps_00006.xml",
              "--output", "folder", "--rows-per-partition", "3000")]
    coded = ("--input", IPUMS / "cps_00006.dat.gz", "--codebook", IPUMS / "cps_00006.xml")
    (tmp_path / "q.toml").write_text('[[query]]\ntype = "count"\nepsilon = 1.0\n\n[[query]]\ntype = "mean"\n'
                                     'column = "INCTOT"\nepsilon = 1.0\ncount_epsilon = 1.0\n')
    for source, out in (("folder", "folder_"), (coded, "memory_")):
        source = ("--input", source) if isinstance(source, str) else source
        steps += [("impute", *source, "--schema", "s.toml", "--output", out + ("imputed" if out == "folder_" else
                                                                             "imputed.parquet"),
                   "--diagnostics", out + "diag.json"),
                  ("release", *source, "--schema", "s.toml", "--queries", "q.toml", "--epsilon", "3", "--seed", "1",
                   "--output", out + "release.json")]
    for step in steps:
        r = run(*step, cwd=tmp_path)
        assert r.returncode == 0, (step, r.stderr)
    folder = pd.read_parquet(tmp_path / "folder_imputed").reset_index(drop=True)
    memory = pd.read_parquet(tmp_path / "memory_imputed.parquet").reset_index(drop=True)
    assert len(list((tmp_path / "folder_imputed").glob("*.parquet"))) == 3
    pd.testing.assert_frame_equal(folder[memory.columns], memory)
    # The 111 missing incomes imputed, the 2,209 not-applicable ones left missing (outside the universe).
    assert int(folder["dpknn_imputed_INCTOT"].sum()) == 111
    assert int(folder["INCTOT"].isna().sum()) == 2209 == int(folder["INCTOT_niu"].sum())
    diag = {k: json.loads((tmp_path / f"{k}_diag.json").read_text()) for k in ("folder", "memory")}
    assert diag["folder"]["l1"] == diag["memory"]["l1"] and diag["folder"]["l1_cases"] == diag["memory"]["l1_cases"]
    assert diag["folder"]["universes"][0]["universe"] == {"INCTOT_niu": [False]}
    released = {k: json.loads((tmp_path / f"{k}_release.json").read_text())["releases"] for k in ("folder", "memory")}
    assert released["folder"] == released["memory"]


# --- the review's cases (each failed before its fix) ------------------------------------------------------

def test_spss_ranges_open_ends_and_string_missing(tmp_path):
    df = pd.DataFrame({"x": [1.0, -3.0, 99.0, 5.0, -8.0], "y": [1.0, 2.0, 1e9, 3.0, -1e9],
                       "s": ["a", "XX", "b", "c", "XX"]})
    pyreadstat.write_sav(df, tmp_path / "r.sav", variable_value_labels={"x": {-1: "Inapplicable"}},
                         missing_ranges={"x": [{"lo": -9, "hi": -1}, 99], "y": [{"lo": 1e8, "hi": float("inf")}],
                                         "s": ["XX"]})
    cb = read_codebook(tmp_path / "r.sav")
    assert cb.variable("x").gap_ranges == ((-9, -1),) and cb.variable("s").gaps == {"XX": "missing"}
    data = read_coded(tmp_path / "r.sav").data
    assert data.x.isna().tolist() == [False, True, True, False, True]
    assert data.y.isna().tolist() == [False, False, True, False, False]
    assert data.s.isna().tolist() == [False, True, False, False, True]
    # The input's own declaration is written back unchanged (SPSS allows a range and one value).
    write_coded(data, tmp_path / "back.sav", cb, codes=read_coded(tmp_path / "r.sav").codes)
    _, meta = pyreadstat.read_sav(tmp_path / "back.sav", metadataonly=True, user_missing=True)
    assert meta.missing_ranges["x"] == pyreadstat.read_sav(tmp_path / "r.sav", metadataonly=True,
                                                           user_missing=True)[1].missing_ranges["x"]


def test_stata_letters_without_metadata_and_labelled_amounts(tmp_path):
    df = pd.DataFrame({"q": pd.Series([1, "a", "c", 2, "b"], dtype=object),
                       "age": pd.Series([30, 99, 45, "b", 61], dtype=object)})
    pyreadstat.write_dta(df, tmp_path / "f.dta",
                         variable_value_labels={"q": {1: "yes", 2: "no", "a": "Valid skip"},
                                                "age": {99: "99 or older"}},
                         missing_user_values={"q": ["a", "b", "c"], "age": ["b"]})
    cb = read_codebook(tmp_path / "f.dta")
    assert cb.variable("q").not_applicable == {"a": "Valid skip"} and "a" not in cb.variable("q").values
    # One labelled value of an amount marks a value, not the domain.
    assert cb.variable("age").kind == "ordinal" and cb.variable("age").range_source.startswith("storage")
    coded = read_coded(tmp_path / "f.dta")
    assert coded.data.q.isna().tolist() == [False, True, True, False, True]
    assert coded.data.q_niu.tolist() == [False, True, False, False, False]
    # Unlabelled letters (.b, .c) are missing values whose codes come back on writing.
    assert sorted(coded.codes["q"].tolist()) == ["a", "b", "c"]
    write_coded(coded.data, tmp_path / "g.dta", cb, codes=coded.codes)
    assert pyreadstat.read_dta(tmp_path / "g.dta", user_missing=True)[0].q.tolist() == [1, "a", "c", 2, "b"]
    made = schema_from_codebook(tmp_path / "f.dta", known=["age"], imputed=["q"], bounds={"age": (0, 99)})
    assert made.schema.attribute("age").upper == 99 and "metadata" in made.review["q"]


def test_consecutive_nominal_codes_stay_categories(tmp_path):
    xml = (IPUMS / "cps_00006.xml").read_text() if (IPUMS / "cps_00006.xml").exists() else None
    if xml is None:
        pytest.skip("needs an IPUMS codebook to edit")
    relate = ('<var ID="RELATE" files="ExtractData" name="RELATE" intrvl="discrete" dcml="0">'
              '<location StartPos="36" width="2" EndPos="37"/><labl>Relationship</labl>'
              + "".join(f"<catgry><catValu>{i}</catValu><labl>{lab}</labl></catgry>" for i, lab in enumerate(
                  ["Head", "Spouse", "Child", "Stepchild", "Parent", "Sibling", "Grandchild", "Other relative",
                   "Partner", "Roomer", "Employee", "Foster child", "Other non-relative"], start=1))
              + '</var><var ID="EARN" files="ExtractData" name="EARN" intrvl="contin" dcml="2">'
              '<location StartPos="38" width="8" EndPos="45"/><labl>Earnings</labl>'
              '<codInstr><![CDATA[\n999999.99 = NIU\n]]></codInstr></var>')
    (tmp_path / "c.xml").write_text(xml.replace("</dataDscr>", relate + "</dataDscr>"))
    cb = read_codebook(tmp_path / "c.xml")
    assert cb.variable("RELATE").kind == "categorical"
    earn = cb.variable("EARN")
    assert list(earn.not_applicable) == [999999.99] and earn.upper == 999999.98


@needs_ipums
def test_malformed_fixed_width_fields_are_errors_not_numbers(tmp_path):
    from dpknn.schema._fixed_width import fixed_width_to_parquet

    lines = gzip_lines(IPUMS / "cps_00006.dat.gz")[:50]
    good = lines[3]
    for field, why in ((b"123     ", "left-aligned"), (b"0012-345", "inner minus"), (b"0000x123", "letter")):
        bad = good[:35] + field + good[43:]
        (tmp_path / "x.dat").write_bytes(b"".join([*lines[:3], bad, *lines[4:]]))
        with pytest.raises(ValueError, match="line 4: field 'INCTOT'"):
            fixed_width_to_parquet(tmp_path / "x.dat", IPUMS / "cps_00006.xml", tmp_path / f"out-{why}")
        assert not (tmp_path / f"out-{why}").exists()
    (tmp_path / "y.dat").write_bytes(b"".join([*lines[:5], lines[5][:30] + b"\n"]))
    with pytest.raises(ValueError, match="line 6 has 30 characters"):
        fixed_width_to_parquet(tmp_path / "y.dat", IPUMS / "cps_00006.xml", tmp_path / "out-short")
    # Negative control: the untouched lines convert.
    (tmp_path / "z.dat").write_bytes(b"".join(lines))
    assert fixed_width_to_parquet(tmp_path / "z.dat", IPUMS / "cps_00006.xml", tmp_path / "ok").rows == 50


def gzip_lines(path):
    import gzip

    return gzip.open(path).read().splitlines(keepends=True)


@needs_ipums
def test_household_records_alone_and_codebook_with_a_folder(tmp_path):
    from dpknn.schema._fixed_width import fixed_width_to_parquet

    done = fixed_width_to_parquet(IPUMS / "cps_00421.dat.gz", IPUMS / "cps_00421.xml", tmp_path / "h",
                                  record_type="H")
    assert done.rows == 137285 and "AGE" not in pd.read_parquet(tmp_path / "h").columns
    r = run("impute", "--input", tmp_path / "h", "--codebook", IPUMS / "cps_00421.xml", "--schema", "s.toml",
            "--output", "o", cwd=tmp_path)
    assert r.returncode != 0 and "dpknn convert" in r.stderr


def test_written_spss_formats_come_from_the_codebook_not_the_data(tmp_path):
    df = pd.DataFrame({"w": pd.Series([1.5, 812.0, 3.0], dtype=float), "k": [1, 2, 1]})
    pyreadstat.write_dta(df, tmp_path / "d.dta", variable_value_labels={"k": {1: "a", 2: "b"}})
    cb = read_codebook(tmp_path / "d.dta")
    write_coded(df, tmp_path / "one.sav", cb)
    write_coded(df.assign(w=[1.5, 4_350_000.0, 3.0]), tmp_path / "two.sav", cb)
    fmt = [pyreadstat.read_sav(tmp_path / n, metadataonly=True)[1].original_variable_types["w"]
           for n in ("one.sav", "two.sav")]
    assert fmt[0] == fmt[1]


@needs_ipums
def test_dta_output_keeps_numeric_codes_missing(tmp_path):
    """A new user's finding: Stata has no numeric missing values, so IPUMS's 99999999 written into a .dta read back as
    an income of a hundred million. Each numeric code now becomes a special missing value (.a-.z) labelled with it."""
    coded = read_coded(IPUMS / "cps_00006.dat.gz", IPUMS / "cps_00006.xml")
    write_coded(coded.data, tmp_path / "x.dta", coded.codebook, codes=coded.codes)
    plain, _ = pyreadstat.read_dta(tmp_path / "x.dta")
    assert float(plain.INCTOT.max()) < 99999998 and int(plain.INCTOT.isna().sum()) == 2320
    back = read_coded(tmp_path / "x.dta")
    assert int(back.data.INCTOT_niu.sum()) == 2209
    assert int((back.data.INCTOT.isna() & ~back.data.INCTOT_niu).sum()) == 111
    assert "99999999" in next(iter(back.codebook.variable("INCTOT").not_applicable.values()))
    with pytest.raises(ValueError, match="Did you mean 'MONTH'"):
        coded.codebook.variable("month")


def test_a_stata_float_is_read_as_the_decimals_stata_shows(tmp_path):
    """A Stata ``float`` (the default type of a new non-integer variable) comes back from pyreadstat widened to
    float64, 2.2 as 2.2000000476837: read_coded gives the decimals, so a codebook's top code and a gap code written
    as decimals match. Negative control: pyreadstat's own read."""
    df = pd.DataFrame({"height": np.array([1.7, 2.2, 0.3, np.nan, 999.9], dtype=np.float32),
                       "w": np.array([61.25, 70.0, 55.5, 80.0, 1.0], dtype=np.float64)})
    df.to_stata(tmp_path / "f.dta", write_index=False)
    raw = pyreadstat.read_dta(tmp_path / "f.dta")[0]
    assert raw.height.iloc[1] != 2.2 and raw.height.iloc[4] != 999.9
    got = read_coded(tmp_path / "f.dta").data
    assert got.height.tolist()[:3] == [1.7, 2.2, 0.3] and np.isnan(got.height.iloc[3])
    assert got.height.iloc[4] == 999.9 and got.w.tolist() == [61.25, 70.0, 55.5, 80.0, 1.0]
