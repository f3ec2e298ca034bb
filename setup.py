"""Build the Cython kernels of dpknn.

Every ``dpknn/_core/*.pyx`` becomes an extension compiled against numpy's headers with the
directives the kernels are written for (no bounds checks, no negative indexing, C division).
Set ``DPKNN_DEBUG=1`` to turn bounds and wraparound checks back on while debugging a kernel.
"""

import os
import sys
from glob import glob

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("DPKNN_DEBUG", "0") not in ("", "0", "false", "False")
# The kernels are independent: translate and compile them on every core (pip builds the package on each
# install from a checkout; one at a time it took 1m44s on the 2-core CI machine).
JOBS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
# Cython translates in worker processes; where they are spawned rather than forked (macOS, Windows) it translates
# in this one. Compiling in build_ext's threads is safe everywhere.
TRANSLATORS = JOBS if sys.platform.startswith("linux") else 0

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "cdivision": not DEBUG,
    "initializedcheck": DEBUG,
}

extensions = [
    Extension(
        name="dpknn._core." + os.path.splitext(os.path.basename(path))[0],
        sources=[path],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O0", "-g"] if DEBUG else ["-O3"],
    )
    for path in sorted(glob(os.path.join("dpknn", "_core", "*.pyx")))
]

setup(
    ext_modules=cythonize(extensions, compiler_directives=directives, annotate=False, nthreads=TRANSLATORS),
    options={"build_ext": {"parallel": JOBS}},
)
