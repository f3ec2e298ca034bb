import logging
import subprocess
import sys
import warnings

import dpknn
from dpknn.exceptions import BudgetExceededError, DomainError, PrivacyLeakWarning
from dpknn.progress import progress_bar


def test_public_names():
    for name in dpknn.__all__:
        assert hasattr(dpknn, name)


def test_exception_hierarchy():
    assert issubclass(BudgetExceededError, ValueError)
    assert issubclass(DomainError, ValueError)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        warnings.warn("bounds from data", PrivacyLeakWarning, stacklevel=1)
    assert w[0].category is PrivacyLeakWarning


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
