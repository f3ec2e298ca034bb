import logging
import re
import subprocess
import sys
import warnings

import pandas as pd
import pytest

import dpknn
import dpknn.datasets._census
from dpknn.exceptions import BudgetExceededError, DomainError, PrivacyLeakWarning, WorkLimitError
from dpknn.utils._progress import progress_bar


def test_public_names():
    for name in dpknn.__all__:
        assert hasattr(dpknn, name)


def test_exception_hierarchy(monkeypatch, capsys):
    """Every error the package raises on purpose reaches a command-line user as one line (the CLI
    turns ValueError and the named WorkLimitError into exit 2), and the leak warning is a real
    RuntimeWarning that the library emits."""
    from dpknn import exceptions
    from dpknn.cli._main import main
    from dpknn.schema._draft import draft_schema

    classes = [getattr(exceptions, n) for n in exceptions.__all__ if isinstance(getattr(exceptions, n), type)]
    errors = [c for c in classes if not issubclass(c, Warning)]
    assert BudgetExceededError in errors and DomainError in errors
    for cls in errors:
        assert issubclass(cls, ValueError) or cls is WorkLimitError, cls

        def boom(*args, cls=cls, **kwargs):
            raise cls(f"a {cls.__name__}")
        monkeypatch.setattr(dpknn.datasets._census, "make_census", boom)
        assert main(["census", "--n", "10"]) == 2
        assert capsys.readouterr().err == f"dpknn census: error: a {cls.__name__}\n"
    assert issubclass(PrivacyLeakWarning, RuntimeWarning)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        draft_schema(pd.DataFrame({"a": [1, 2, 3], "b": [1.0, None, 2.0]}))
    assert [x.category for x in w] == [PrivacyLeakWarning] and "READ FROM THE DATA" in str(w[0].message)


def test_library_logs_silently_by_default():
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("dpknn").handlers)


def test_progress_bar_switch():
    bar = progress_bar(range(3), progress=False)
    assert bar.disable and list(bar) == [0, 1, 2]


def test_import_without_built_kernels_explains_how_to_build(tmp_path):
    code = ("import sys; sys.modules['dpknn._core._grouping'] = None\n"
            "try:\n    import dpknn\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout
    assert "compiled kernels (dpknn._core) are not built" in out
    assert "pip install ." in out and "build_ext --inplace" in out


def test_gan_tests_carry_the_declared_slow_marker():
    """The torch tests are a large share of the suite's time; `-m "not slow"` must leave them out."""
    import ast
    from pathlib import Path

    here = Path(__file__).resolve().parent

    def slow_tests(name):
        tree = ast.parse((here / name).read_text())
        return {f.name: "pytest.mark.slow" in map(ast.unparse, f.decorator_list) for f in tree.body
                if isinstance(f, ast.FunctionDef) and f.name.startswith("test_")}, tree

    misgan, tree = slow_tests("test_misgan.py")
    torch_at = next(n.lineno for n in tree.body if isinstance(n, ast.Assign) and "importorskip" in ast.unparse(n))
    with_torch = {name for name, f in ((f.name, f) for f in tree.body if isinstance(f, ast.FunctionDef))
                  if name in misgan and f.lineno > torch_at}
    assert with_torch and all(misgan[n] for n in with_torch)
    assert not any(misgan[n] for n in set(misgan) - with_torch)   # the checks without torch stay quick
    assert slow_tests("test_cli.py")[0]["test_synth_dpmisgan_writes_rows_and_public_sidecar"]


def test_the_command_line_parser_loads_no_heavy_library(tmp_path):
    """Issue 49, finding 8: every command paid 1.9 CPU-s of imports before reading an argument. The package's
    names load lazily (dpknn.utils._lazy); building the parser must not import scikit-learn, SciPy or pandas."""
    import subprocess
    import sys

    probe = ("import sys; import dpknn; from dpknn.cli._main import build_parser; build_parser(); "
             "print(','.join(x for x in ('sklearn', 'scipy', 'pandas', 'dask', 'torch') if x in sys.modules))")
    # From an empty folder: the installed package, not a source tree without its compiled kernels.
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True,
                         cwd=tmp_path).stdout.strip()
    assert out == ""
    # Negative control: a public name still loads its module on first use.
    probe = "import sys, dpknn; dpknn.KNNImputer; print('sklearn' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True,
                          cwd=tmp_path).stdout.strip() == "True"


def test_lazy_names_resolve_and_list():
    import importlib
    import importlib.util

    for pkg in ("dpknn", "dpknn.accounting", "dpknn.datasets", "dpknn.impute", "dpknn.mechanisms", "dpknn.metrics",
                "dpknn.models", "dpknn.processing", "dpknn.releases", "dpknn.schema", "dpknn.sdc", "dpknn.synth"):
        module = importlib.import_module(pkg)
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{pkg}.{name}"
            assert name in dir(module)
        with pytest.raises(AttributeError):
            module.no_such_name


def test_names_that_are_also_submodules_stay_functions():
    """``dpknn.metrics.pmse`` and ``dpknn.releases.release`` are functions defined in ``_pmse`` and ``_release``:
    importing those modules must not turn the package's name into the module (as a lazy name would let it)."""
    import types

    import dpknn.metrics._pmse
    import dpknn.releases._release  # noqa: F401
    from dpknn.metrics import pmse
    from dpknn.releases import release

    assert not isinstance(pmse, types.ModuleType) and not isinstance(release, types.ModuleType)


def test_a_protected_package_keeps_its_public_names_from_a_submodule():
    """What importlib does after importing ``pkg.f`` (sets it on ``pkg``) leaves a public function ``f`` of a
    ProtectedPackage in place, and rebinds it in a plain module (negative control)."""
    import types

    from dpknn.utils._lazy import ProtectedPackage

    def f():
        """The function."""

    for cls, kept in ((ProtectedPackage, True), (types.ModuleType, False)):
        pkg = cls("pkg")
        pkg.__all__, pkg.f = ["f"], f
        pkg.f = types.ModuleType("pkg.f")
        pkg.g = types.ModuleType("pkg.g")   # an unlisted name is set as usual
        assert (pkg.f is f) is kept and isinstance(pkg.g, types.ModuleType)


def test_old_module_paths_load_the_private_module_with_a_warning():
    """The implementation modules took a leading underscore (issue 49); every old public path still imports, as
    the same module object (so its classes are the same classes), with a DeprecationWarning that names the
    package to import from."""
    import importlib
    import importlib.util
    import types

    from dpknn.utils._lazy import MovedModules

    finder = next(f for f in sys.meta_path if isinstance(f, MovedModules))
    assert len(finder.moved) == 86   # every renamed module (dpknn.impute.flags now loads dpknn.schema._flags)
    for old, new in finder.moved.items():
        if new.endswith("_misgan_torch") and importlib.util.find_spec("torch") is None:
            continue   # DP-MisGAN's torch module needs the extra, at its old path as at its new one
        sys.modules.pop(old, None)
        parent, _, name = old.rpartition(".")
        before = getattr(importlib.import_module(parent), name, None) if name in importlib.import_module(
            parent).__all__ else None
        with pytest.warns(DeprecationWarning, match=rf"{re.escape(old)} is a private module now"):
            module = importlib.import_module(old)
        assert module is importlib.import_module(new)
        assert module.__spec__.name == new   # its own spec, so that a reload reloads it
        # an old path that is also a public function's name (dpknn.metrics.pmse) leaves the function in place
        if before is not None:
            assert getattr(importlib.import_module(parent), name) is before and not isinstance(before, types.ModuleType)
    sys.modules.pop("dpknn.impute.knn", None)
    sys.modules.pop("dpknn.impute.flags", None)
    with pytest.warns(DeprecationWarning, match="import its public names from dpknn.impute"):
        from dpknn.impute.knn import KNNImputer
    assert KNNImputer is dpknn.KNNImputer
    with pytest.warns(DeprecationWarning, match="from dpknn.impute"):
        from dpknn.impute.flags import flag_column
    assert flag_column is dpknn.impute.flag_column
    # An old path reached as an attribute or through importlib warns at the caller's line, where Python's default
    # filters show a DeprecationWarning (not at importlib's).
    mechanisms = importlib.import_module("dpknn.mechanisms")
    vars(mechanisms).pop("noise", None)   # set by the loop above, as importlib does after an import
    sys.modules.pop("dpknn.impute.knn", None)
    with pytest.warns(DeprecationWarning) as caught:
        assert mechanisms.noise is importlib.import_module("dpknn.mechanisms._noise")
        importlib.import_module("dpknn.impute.knn")
    assert [w.filename for w in caught] == [__file__, __file__]
    # Negative control: a path that never existed is not invented.
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("dpknn.impute.no_such_module")
    for old in finder.moved:   # leave the other tests the namespace they would have had
        sys.modules.pop(old, None)
        parent, _, name = old.rpartition(".")
        if isinstance(vars(sys.modules[parent]).get(name), types.ModuleType):
            del vars(sys.modules[parent])[name]


def test_names_that_left_a_public_list_load_with_a_warning():
    """A name dropped from a subpackage's ``__all__`` (an implementation detail now) still loads from the
    package, with a DeprecationWarning, and is not listed by ``dir()``; a public name loads silently."""
    import warnings

    import dpknn.mechanisms
    from dpknn.mechanisms._base import jsonable

    with pytest.warns(DeprecationWarning, match="dpknn.mechanisms.jsonable is internal now"):
        assert dpknn.mechanisms.jsonable is jsonable
    assert "jsonable" not in dir(dpknn.mechanisms) and "jsonable" not in dpknn.mechanisms.__all__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dpknn.mechanisms.Laplace is dpknn.Laplace
        from dpknn.processing import ProcessingPlan, run_plan  # run_plan's argument is public too  # noqa: F401
    # A name public elsewhere says where, and is the same object.
    import dpknn.synth

    with pytest.warns(DeprecationWarning, match="moved to dpknn.schema.Discretization"):
        assert dpknn.synth.Discretization is dpknn.schema.Discretization
    with pytest.warns(DeprecationWarning, match="privacy_unit"):
        from dpknn.synth._base import NEIGHBOURS
    assert NEIGHBOURS == "add/remove one record"


def test_python_dash_m_dpknn_is_the_command_line(tmp_path):
    """``dpknn/__main__.py``: ``python -m dpknn`` runs the same command line as ``dpknn`` and passes on its exit
    status (2 for a usage error)."""
    import subprocess
    import sys

    ok = subprocess.run([sys.executable, "-m", "dpknn", "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0 and "usage: dpknn" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "dpknn", "no-such-command"], capture_output=True, text=True,
                         cwd=tmp_path)
    assert bad.returncode == 2 and "no-such-command" in bad.stderr
