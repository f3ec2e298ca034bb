"""The modules of dpknn, imported: what the public-API, docstring and parameter-constraint tests walk."""

import importlib
import pkgutil

import dpknn


def package_modules():
    """dpknn and every module under it, the private implementation modules included (the compiled
    kernels of ``dpknn._core`` and the optional torch module of DP-MisGAN are left out: the one has
    no Python docstrings to check, the other needs the extra; so is ``dpknn.__main__``, which runs the
    command line when imported)."""
    yield dpknn
    for info in pkgutil.walk_packages(dpknn.__path__, "dpknn."):
        if info.name.startswith("dpknn._core") or info.name.endswith("misgan_torch") or info.name == "dpknn.__main__":
            continue
        yield importlib.import_module(info.name)


def public_modules():
    """dpknn and every module under it whose dotted path has no private part: the public surface."""
    return [m for m in package_modules() if not any(p.startswith("_") for p in m.__name__.split(".")[1:])]
