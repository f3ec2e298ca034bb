"""Lazy package namespaces (as SciPy's subpackages load): a package lists its public names and the modules
that define them, and a name's module is imported on first access. ``import dpknn`` and a command's
``--help`` then cost a fraction of a second instead of loading scikit-learn, SciPy and pandas."""

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

__all__ = ["MovedModules", "ProtectedPackage", "install_moved_modules", "lazy_exports"]


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
    warned = set()   # ``from package import name`` looks a name up twice; one warning says it

    def __getattr__(name):
        module = exports.get(name)
        if name in moved:
            if name not in warned:
                warned.add(name)
                warnings.warn(f"{package}.{name} moved to {moved[name]}.{name}; the old path will go.",
                              DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(moved[name]), name)
        if name in internal:
            if name not in warned:
                warned.add(name)
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
    dotted names it lists: it warns (DeprecationWarning, saying where the public names are) and returns
    the module object itself, so the old and new names are one module and its classes one class. The
    module keeps its own ``__spec__`` (importlib sets the alias's on it; :meth:`exec_module` puts it back),
    so that reloading it reloads the module.

    Parameters
    ----------
    moved : dict of str to str
        Old dotted module name -> the dotted name of the module now.
    public : dict of str to str
        Old dotted module name -> where its public names are, for the warning's text.
    """

    def __init__(self, moved, public):
        self.moved = dict(moved)
        self.public = dict(public)
        self._specs = {}

    def find_spec(self, fullname, path=None, target=None):
        """A spec for ``fullname`` if it is an old path, else None (the regular finders ran first)."""
        if fullname not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        """The module at its new path, imported, after the deprecation warning."""
        warnings.warn(f"{spec.name} is a private module now ({self.moved[spec.name]}); {self.public[spec.name]}. "
                      "The old path will go.", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(self.moved[spec.name])
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        """Nothing runs (the module ran when it was imported at its new path); its own spec is put back."""
        alias = module.__spec__.name
        module.__spec__ = self._specs.pop(alias, module.__spec__)
        module.__loader__ = module.__spec__.loader


class ProtectedPackage(types.ModuleType):
    """A package some of whose public functions share their name with an old module path
    (``dpknn.metrics.pmse``, the function, and ``dpknn.metrics.pmse``, the old path of ``_pmse``).

    Importing a submodule makes importlib set it as an attribute of its package; importing such an old
    path would rebind the function's name to the module. This module class ignores that one assignment:
    a module set on a name listed in the package's ``__all__``."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and name in self.__dict__.get("__all__", ()):
            return
        super().__setattr__(name, value)


def install_moved_modules(package, modules, *, elsewhere=None, hints=None):
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
    hints : dict of str to str, optional
        Subpackage or old dotted module name -> where the module's public names are now, for the
        warning; by default "import its public names from package.sub".
    """
    hints = dict(hints or {})
    moved = {f"{package}.{sub}.{name}": f"{package}.{sub}._{name}" for sub, names in modules.items() for name in names}
    moved.update(elsewhere or {})
    public = {}
    for old in moved:
        sub = old.split(".")[1]
        public[old] = hints.get(old, hints.get(sub, f"import its public names from {package}.{sub}"))
    if not any(isinstance(f, MovedModules) for f in sys.meta_path):
        sys.meta_path.append(MovedModules(moved, public))
