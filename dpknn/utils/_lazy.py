"""Lazy package namespaces (as SciPy's subpackages load): a package lists its public names and the modules
that define them, and a name's module is imported on first access. ``import dpknn`` and a command's
``--help`` then cost a fraction of a second instead of loading scikit-learn, SciPy and pandas."""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__all__ = ["MovedModules", "install_moved_modules", "lazy_exports"]


def lazy_exports(package, exports, *, moved=None, internal=None):
    """``(__getattr__, __dir__)`` for the package ``package`` whose public names load on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : dict of str to str
        Public name -> the module that defines it. Any other name that is a submodule of the package
        (``dpknn.impute._knn``) is imported on access as well.
    moved : dict of str to str, optional
        Names that left the package: name -> their module now. They still load, with a
        DeprecationWarning naming the new path, and are not listed by ``dir()``.
    internal : dict of str to str, optional
        Names that were public here and are implementation details now (issue 49): name -> their
        private module. They still load, with a DeprecationWarning, and are not listed by ``dir()``.

    Returns
    -------
    tuple of callables
        To assign to the package's ``__getattr__`` and ``__dir__`` (PEP 562).
    """

    moved = dict(moved or {})
    internal = dict(internal or {})

    def __getattr__(name):
        module = exports.get(name)
        if name in moved:
            warnings.warn(f"{package}.{name} moved to {moved[name]}.{name}; the old path will go.",
                          DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(moved[name]), name)
        if name in internal:
            warnings.warn(f"{package}.{name} is internal now (in {internal[name]}) and leaves the public API; "
                          "the old path will go.", DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(internal[name]), name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        else:
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        setattr(sys.modules[package], name, value)   # later accesses are plain lookups
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Old import paths of modules that were renamed, loading the module where it lives now.

    ``import dpknn.impute.knn`` finds no file since the implementation modules became private
    (``dpknn/impute/_knn.py``, issue 49); this finder, last on ``sys.meta_path``, answers for the old
    dotted names it lists: it warns (DeprecationWarning, naming the public package to import from) and
    returns the module object itself, so the old and new names are one module and its classes one class.

    Parameters
    ----------
    moved : dict of str to str
        Old dotted module name -> the dotted name of the module now.
    public : dict of str to str
        Old dotted module name -> what to import instead, for the warning's text.
    """

    def __init__(self, moved, public):
        self.moved = dict(moved)
        self.public = dict(public)

    def find_spec(self, fullname, path=None, target=None):
        """A spec for ``fullname`` if it is an old path, else None (the regular finders ran first)."""
        if fullname not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        """The module at its new path, imported, after the deprecation warning."""
        warnings.warn(f"{spec.name} is a private module now ({self.moved[spec.name]}); import its public "
                      f"names from {self.public[spec.name]}. The old path will go.", DeprecationWarning,
                      stacklevel=2)
        return importlib.import_module(self.moved[spec.name])

    def exec_module(self, module):
        """Nothing: the module ran when it was imported at its new path."""


def install_moved_modules(package, modules, *, elsewhere=None):
    """Make the old public paths of ``package``'s renamed modules import, with a DeprecationWarning.

    Parameters
    ----------
    package : str
        The top package's name (``dpknn``).
    modules : dict of str to tuple of str
        Subpackage -> the names its modules had before they took a leading underscore: the old
        ``package.sub.name`` loads ``package.sub._name``.
    elsewhere : dict of str to str, optional
        Old dotted module name -> its module now, for modules that also changed package.
    """
    moved, public = {}, {}
    for sub, names in modules.items():
        for name in names:
            moved[f"{package}.{sub}.{name}"] = f"{package}.{sub}._{name}"
            public[f"{package}.{sub}.{name}"] = f"{package}.{sub}"
    for old, new in (elsewhere or {}).items():
        moved[old] = new
        public[old] = new.rsplit("._", 1)[0]
    if not any(isinstance(f, MovedModules) for f in sys.meta_path):
        sys.meta_path.append(MovedModules(moved, public))
