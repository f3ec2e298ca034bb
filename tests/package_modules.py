"""The public modules of dpknn, imported: what the docstring and parameter-constraint tests walk."""

import importlib
import pkgutil

import dpknn


def public_modules():
    """dpknn and every module under it whose dotted path has no private part (the optional torch
    module of DP-MisGAN is left out: it needs the extra)."""
    yield dpknn
    for info in pkgutil.walk_packages(dpknn.__path__, "dpknn."):
        if any(p.startswith("_") for p in info.name.split(".")[1:]) or info.name.endswith("misgan_torch"):
            continue
        yield importlib.import_module(info.name)
