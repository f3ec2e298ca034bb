"""The public surface of dpknn, listed and tested (issue 49).

- ``USER_NAMES``: the names a user needs, the package's top level (``dpknn.__all__``), at most 60.
- ``public_api.txt`` beside this file: every public module (no underscore in its dotted path) with its ``__all__``.
  A new public module or name fails this test until it is listed there on purpose: run
  ``python tests/test_public_api.py --update`` and review the diff (an implementation module belongs under an
  underscore name, a helper out of ``__all__``).
- numpydoc: every function and class on those lists documents each parameter of its signature (a ``Parameters``
  section, or ``Attributes`` for a record whose fields are its parameters).
"""

import enum
import inspect
import re
import sys
from pathlib import Path

from package_modules import public_modules

import dpknn

LISTING = Path(__file__).with_name("public_api.txt")

USER_NAMES = [
    "RWN", "BudgetAccountant", "BudgetExceededError", "Categorical", "Continuous", "CuratorDiagnostics",
    "CuratorReport", "DPKMeans", "DetachedAccountantError", "DomainError", "EncodedData", "ExponentialMechanism",
    "Gaussian", "Geometric", "ImputedDataError", "KNNImputer", "L1Case", "Laplace", "Ordinal", "PermuteAndFlip",
    "PrivacyLeakWarning", "PrivateImputation", "RandomSource", "RandomizedResponse", "Release", "Schema",
    "SmoothCauchy", "WorkLimitError", "__version__", "check_rng", "curator_report", "estimate_size",
]


def listing():
    """Every public module and its ``__all__``, one line each, sorted."""
    return "".join(f"{m.__name__}: {', '.join(sorted(getattr(m, '__all__', [])))}\n"
                   for m in sorted(public_modules(), key=lambda m: m.__name__))


def _sections(doc):
    out, current = {}, None
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and line.strip() and re.fullmatch(r"-{3,}", lines[i + 1].strip()):
            current = line.strip()
            out[current] = []
        elif current and not re.fullmatch(r"-{3,}", line.strip()):
            out[current].append(line)
    return out


def documented(doc):
    """The parameter names a numpydoc docstring documents (``name :`` or ``a, b :`` lines)."""
    names = set()
    sections = _sections(doc)
    for key in ("Parameters", "Other Parameters", "Attributes"):
        for line in sections.get(key, []):
            if line.startswith(" "):
                continue
            head = line.split(" :", 1)[0] if " :" in line else line.strip()
            names |= {n.strip().lstrip("*") for n in head.split(",")}
    return names


def undocumented_parameters(obj):
    """The parameters of ``obj``'s signature its docstring (or its ``__init__``'s) does not document. An enumeration
    has none: its call signature is the Enum machinery's (``PrivacyUnit("add/remove one record")``), its members
    are what it documents."""
    if inspect.isclass(obj) and issubclass(obj, enum.Enum):
        return []
    try:
        params = [n for n, p in inspect.signature(obj).parameters.items()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and n not in ("self", "cls")]
    except (TypeError, ValueError):
        return []
    have = documented(inspect.getdoc(obj) or "")
    if inspect.isclass(obj) and "__init__" in vars(obj):
        have |= documented(inspect.getdoc(obj.__init__) or "")
    return [n for n in params if n not in have]


def listed_callables():
    """(dotted name, object) of every class and function on the public lists: the top level and each
    subpackage's ``__all__``."""
    out = {}
    for module in public_modules():
        if module.__name__.count(".") > 1:
            continue
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                out.setdefault(f"{obj.__module__}.{obj.__qualname__}", (f"{module.__name__}.{name}", obj))
    return sorted(out.values(), key=lambda item: item[0])


def test_the_names_a_user_needs_are_the_top_level_and_few():
    assert sorted(dpknn.__all__) == sorted(USER_NAMES) and len(USER_NAMES) <= 60


def test_every_public_module_and_name_is_listed():
    now = listing()
    if LISTING.read_text() != now:
        import difflib

        diff = "".join(difflib.unified_diff(LISTING.read_text().splitlines(True), now.splitlines(True),
                                            "tests/public_api.txt", "the package now"))
        raise AssertionError(f"the public surface changed; list it on purpose (python tests/test_public_api.py "
                             f"--update) or make the module or name private:\n{diff}")


def test_listed_functions_and_classes_document_every_parameter():
    missing = {name: params for name, obj in listed_callables() if (params := undocumented_parameters(obj))}
    assert missing == {}


def test_the_checks_find_an_unlisted_name_and_an_undocumented_parameter(monkeypatch):
    # Negative controls: a name added to a subpackage's __all__, and a parameter its docstring does not name.
    import dpknn.models

    def helper(x, y):
        """Summary.

        Parameters
        ----------
        x : int
        """

    monkeypatch.setattr(dpknn.models, "__all__", [*dpknn.models.__all__, "helper"])
    monkeypatch.setattr(dpknn.models, "helper", helper, raising=False)
    assert "dpknn.models: DPKMeans, helper" in listing() and listing() != LISTING.read_text()
    assert undocumented_parameters(helper) == ["y"]


if __name__ == "__main__" and "--update" in sys.argv:
    LISTING.write_text(listing())
    listed = [line.split(":", 1) for line in listing().splitlines()]
    names = {n.strip() for _, ns in listed for n in ns.split(",") if n.strip()}
    print(f"wrote {LISTING}: {len(listed)} public modules, {len(names)} distinct public names, "
          f"{len(dpknn.__all__)} at the top level")
