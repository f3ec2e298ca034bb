"""Lazy package namespaces (as SciPy's subpackages load): a package lists its public names and the modules
that define them, and a name's module is imported on first access. ``import dpknn`` and a command's
``--help`` then cost a fraction of a second instead of loading scikit-learn, SciPy and pandas."""

import importlib
import importlib.abc
import importlib.util
import inspect
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

    # A name that left the list: where it is now, and what the warning says of it.
    gone = {name: (home, f"moved to {home}.{name}") for name, home in (moved or {}).items()}
    gone.update({name: (home, f"is internal now (in {home}) and leaves the public API")
                 for name, home in (internal or {}).items()})

    def __getattr__(name):
        module = exports.get(name)
        if name in gone:
            home, what = gone[name]
            # ``from package import name`` looks the name up twice, from the caller's one line: Python's default
            # filter shows the warning once per line.
            warnings.warn(f"{package}.{name} {what}; the old path will go.", DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(home), name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        elif (finder := _moved_modules()) is not None and f"{package}.{name}" in finder.moved:
            # An old module path reached as an attribute (``dpknn.mechanisms.noise``): warned here, so that the
            # warning names the caller's line rather than importlib's.
            old = f"{package}.{name}"
            warnings.warn(finder.message(old), DeprecationWarning, stacklevel=2)
            return importlib.import_module(finder.moved[old])
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

    def message(self, old):
        """The deprecation warning's text for the old path ``old``."""
        return f"{old} is a private module now ({self.moved[old]}); {self.public[old]}. The old path will go."

    def create_module(self, spec):
        """The module at its new path, imported, after the deprecation warning (attributed to the first frame
        outside the import machinery: the caller's ``import`` or ``importlib.import_module`` line)."""
        warnings.warn(self.message(spec.name), DeprecationWarning, stacklevel=_caller_level())
        module = importlib.import_module(self.moved[spec.name])
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        """Nothing runs (the module ran when it was imported at its new path); its own spec is put back."""
        alias = module.__spec__.name
        module.__spec__ = self._specs.pop(alias, module.__spec__)
        module.__loader__ = module.__spec__.loader


def _moved_modules():
    """The installed :class:`MovedModules` finder, or None."""
    return next((f for f in sys.meta_path if isinstance(f, MovedModules)), None)


def _caller_level():
    """The ``stacklevel`` of :func:`warnings.warn`, called from the function that calls this one, that names the
    first frame outside importlib and this module. :func:`warnings.warn` itself passes over the frames of
    ``importlib._bootstrap`` without counting them, so they are not counted here either."""
    frame, level = inspect.currentframe().f_back, 1
    while frame is not None and ("importlib" in frame.f_code.co_filename or frame.f_code.co_filename == __file__):
        frame = frame.f_back
        name = "" if frame is None else frame.f_code.co_filename
        if not ("importlib" in name and "_bootstrap" in name):
            level += 1
    return level


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
