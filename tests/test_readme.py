import re
import warnings
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_quickstart_runs(tmp_path, monkeypatch):
    """Verbatim, in an empty folder: a new user pastes it as it is."""
    text = README.read_text()
    code = re.search(r"## Quickstart\n\n```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    assert not any(tmp_path.iterdir())
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)   # a new user's first run warns of nothing
        exec(compile(code, "README quickstart", "exec"), namespace)
    assert namespace["imp"].l1_ >= 1 and namespace["perturbed"].shape == namespace["known"].shape


def test_readme_names_the_test_command():
    text = README.read_text()
    assert 'pip install ".[test]" && pytest' in text and "dpknn demo" in text


def test_ci_runs_the_readme_command_before_any_extra():
    """CI's first step is the README's test command, exactly, with no optional extra installed before it."""
    ci = (README.parent / "ci" / "test.sh").read_text()
    run = (README.parent / ".ci" / "run").read_text()
    assert "ci/test.sh" in run
    lines = [line.strip() for line in ci.splitlines() if line.strip() and not line.strip().startswith("#")]
    first = lines.index('pip install ".[test]" && pytest')
    assert not any("torch" in line and "pip install" in line for line in lines[:first])
    assert any(line == "pytest -m slow" for line in lines[first + 1:]), "the torch tests run in a second step"
