import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_quickstart_runs(tmp_path, monkeypatch):
    text = README.read_text()
    code = re.search(r"## Quickstart\n\n```python\n(.*?)```", text, re.S).group(1)
    # The quickstart reads a schema file of the user's; give it one.
    from dpknn.datasets import census_schema

    (tmp_path / "schema.toml").write_text(census_schema().to_toml())
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, "README quickstart", "exec"), namespace)
    assert namespace["imp"].l1_ >= 1 and namespace["perturbed"].shape == namespace["known"].shape


def test_readme_names_the_test_command():
    text = README.read_text()
    assert 'pip install ".[test]" && pytest' in text and "dpknn demo" in text
