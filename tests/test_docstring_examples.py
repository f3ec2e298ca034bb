"""Every docstring example of dpknn runs (issue 49): doctest over the public modules, found afresh each run so that a
new example is run too; DP-MisGAN's need torch and run under the ``slow`` marker (CI's second step)."""

import doctest
import io

import pytest
from package_modules import package_modules

OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def docstring_tests():
    """The doctests of every module, with at least one example each."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    return [t for module in package_modules() for t in finder.find(module, module.__name__) if t.examples]


def _param(test):
    slow = "misgan" in test.name
    return pytest.param(test, id=test.name, marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("test", [_param(t) for t in docstring_tests()])
def test_docstring_example_runs(test):
    if "misgan" in test.name:
        pytest.importorskip("torch")
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    runner.run(test, out=out.write)
    assert runner.failures == 0, out.getvalue()


def test_there_are_examples_and_a_wrong_one_fails():
    tests = docstring_tests()
    assert sum(len(t.examples) for t in tests) >= 37
    # Negative control: an example whose printed value is wrong is reported.
    parser = doctest.DocTestParser()
    bad = parser.get_doctest(">>> 1 + 1\n3\n", {}, "bad", None, 0)
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    runner.run(bad, out=io.StringIO().write)
    assert runner.failures == 1
