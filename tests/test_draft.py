import numpy as np
import pandas as pd
import pytest
from cli_run import run

from dpknn import Categorical, Continuous, KNNImputer, Ordinal, PrivacyLeakWarning, Schema
from dpknn.schema._draft import draft_schema


def sample(n=120, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"ID": np.arange(n) + 10, "AGE": rng.integers(0, 90, n), "REGION": rng.choice(["N", "S"], n),
                       "HOURS": rng.integers(0, 60, n).astype(float), "WAGE": rng.uniform(0, 900, n),
                       "RATIO": rng.random(n), "CODE": [f"r{i}" for i in range(n)]})
    df.loc[rng.random(n) < 0.2, "WAGE"] = np.nan
    df.loc[rng.random(n) < 0.1, "HOURS"] = np.nan
    return df


def test_draft_roles_types_and_warning(tmp_path):
    df = sample()
    before = df.copy()
    with pytest.warns(PrivacyLeakWarning, match="READ FROM THE DATA"):
        draft = draft_schema(df, label="ID")
    pd.testing.assert_frame_equal(df, before)
    s = draft.schema
    assert s.known == (Ordinal("AGE", int(df.AGE.min()), int(df.AGE.max())), Categorical("REGION", ["N", "S"]))
    assert [type(a) for a in s.imputed] == [Ordinal, Continuous] and s.imputed_names == ("HOURS", "WAGE")
    assert set(draft.left_out) == {"RATIO", "CODE"} and "identifier" in draft.left_out["CODE"]
    text = draft.to_toml(source="x.csv")
    assert text.startswith("# DRAFT") and "not public" in text and "READ FROM THE DATA" in text
    (tmp_path / "s.toml").write_text(text)
    # The draft marker is a key, not only a comment: refused until the user deletes it.
    with pytest.raises(ValueError, match="delete the line 'draft = true'"):
        Schema.from_file(tmp_path / "s.toml")
    with pytest.warns(PrivacyLeakWarning, match="DRAFT"):
        assert Schema.from_file(tmp_path / "s.toml", allow_draft=True) == s
    (tmp_path / "s.toml").write_text(text.replace("\ndraft = true\n", "\n"))
    assert Schema.from_file(tmp_path / "s.toml") == s
    KNNImputer(s).fit(df)
    with pytest.warns(PrivacyLeakWarning), pytest.raises(ValueError, match="nothing to impute"):
        draft_schema(df.dropna())


def test_schema_command(tmp_path):
    sample().to_csv(tmp_path / "d.csv", index=False)
    res = run("schema", "--input", str(tmp_path / "d.csv"), "--output", str(tmp_path / "s.toml"), "--label", "ID")
    assert res.returncode == 0, res.stderr
    assert "PrivacyLeakWarning" in res.stderr and "READ FROM THE DATA" in res.stderr
    with pytest.warns(PrivacyLeakWarning):
        schema = Schema.from_file(tmp_path / "s.toml", allow_draft=True)
    assert schema.label == "ID" and schema.imputed_names == ("HOURS", "WAGE")
    res = run("schema", "--input", str(tmp_path / "d.csv"), "--output", str(tmp_path / "d.csv"))
    assert res.returncode == 2 and "refusing to overwrite an input" in res.stderr


def test_integer_row_identifier_left_out_with_label_advice():
    """A CSV's unnamed row number (pandas reads it as 'Unnamed: 0') is not a matching attribute."""
    df = sample().drop(columns="ID")
    df.insert(0, "Unnamed: 0", np.arange(1, len(df) + 1))
    with pytest.warns(PrivacyLeakWarning):
        draft = draft_schema(df)
    assert "Unnamed: 0" not in draft.schema.known_names
    assert "--label 'Unnamed: 0'" in draft.left_out["Unnamed: 0"]
    # Few rows, or repeated values: an ordinary ordinal.
    with pytest.warns(PrivacyLeakWarning):
        assert "Unnamed: 0" in draft_schema(df.head(20)).schema.known_names


def test_a_drafted_schema_is_refused_everywhere_until_the_line_is_deleted(tmp_path):
    from dpknn.schema._discretization import read_attributes

    df = sample()
    df.to_csv(tmp_path / "d.csv", index=False)
    assert run("schema", "--input", "d.csv", "--output", "s.toml", "--label", "ID", cwd=tmp_path).returncode == 0
    text = (tmp_path / "s.toml").read_text()
    assert "\ndraft = true\n" in text
    spec = {"draft": True, "known": [{"name": "AGE", "type": "ordinal", "lower": 0, "upper": 9}],
            "imputed": [{"name": "WAGE", "type": "continuous", "lower": 0, "upper": 1}]}
    with pytest.raises(ValueError, match="DRAFT"):
        Schema.from_dict(spec)
    with pytest.warns(PrivacyLeakWarning):
        assert Schema.from_dict(spec, allow_draft=True).known_names == ("AGE",)
    assert Schema.from_dict({**spec, "draft": False}).known_names == ("AGE",)
    with pytest.raises(ValueError, match="true or false"):
        Schema.from_dict({**spec, "draft": "yes"})
    with pytest.raises(ValueError, match="DRAFT"):
        read_attributes(tmp_path / "s.toml")
    (tmp_path / "a.toml").write_text('draft = true\n\n[[attribute]]\nname = "AGE"\ntype = "ordinal"\nlower = 0\n'
                                     'upper = 99\n')
    with pytest.raises(ValueError, match="DRAFT"):
        read_attributes(tmp_path / "a.toml")
    with pytest.warns(PrivacyLeakWarning):
        assert [a.name for a in read_attributes(tmp_path / "a.toml", allow_draft=True)] == ["AGE"]
    (tmp_path / "q.toml").write_text('[[query]]\nname = "n"\ntype = "count"\nepsilon = 1.0\n')
    for cmd in (["impute", "--schema", "s.toml", "--input", "d.csv", "--output", "o.csv"],
                ["release", "--schema", "s.toml", "--queries", "q.toml", "--input", "d.csv", "--output", "r.json",
                 "--epsilon", "1"],
                ["synth", "--attributes", "s.toml", "--input", "d.csv", "--output", "o.csv", "--epsilon", "1",
                 "--rows", "5"]):
        res = run(*cmd, cwd=tmp_path)
        assert res.returncode == 2 and "draft = true" in res.stderr, (cmd, res.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.toml", "d.csv", "q.toml", "s.toml"]
