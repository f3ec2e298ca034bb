"""The command line run in this process, for the tests (not a test module: importable by any of them)."""

import contextlib
import io
import logging
import os
import subprocess
import tempfile
import warnings


@contextlib.contextmanager
def _inside(folder):
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def run(*args, cwd=None):
    """Run ``dpknn ARGS`` in this process: ``dpknn.cli._main.main`` from ``cwd``, with its stdout, stderr
    (warnings and log records included) and exit status, as ``python -m dpknn`` would give them. A fresh
    interpreter per command cost 1-2 CPU-s each (issue 47, finding 13); ``tests/test_cli.py`` keeps one real
    ``python -m dpknn`` run."""
    from dpknn.cli._main import main

    out, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO if "-v" in args or "--verbose" in args else logging.WARNING)
    cwd = cwd or tempfile.mkdtemp()
    try:
        with _inside(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings():
            warnings.simplefilter("default")   # as a fresh interpreter shows them, once each
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:   # argparse's own errors and --help
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    return subprocess.CompletedProcess(["dpknn", *map(str, args)], code, out.getvalue(), err.getvalue())
