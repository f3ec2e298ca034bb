"""The ``dpknn`` command line.

Every command has ``--help``. Errors print one line to stderr and exit with status 2; output
files are written to a temporary name and moved into place only when complete, so a failed
run leaves nothing behind. An output that resolves to an input is refused before any work.

Main outputs of ``release`` and ``demo`` hold only what may be published; data-dependent
curator diagnostics (L1(D), noise scales, row counts) are written only with ``--diagnostics``,
to a separate file marked confidential. The query-file format is documented in
``docs/queries.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import traceback
import warnings

from dpknn.cli._common import CLIError
from dpknn.cli._data import add_census_parser, add_convert_parser, add_process_parser, add_schema_parser
from dpknn.cli._experiments import add_demo_parser, add_experiment_parser
from dpknn.cli._impute import add_impute_parser, add_release_parser
from dpknn.cli._sdc import add_rwn_parser
from dpknn.cli._synth import add_evaluate_parser, add_synth_parser
from dpknn.exceptions import PrivacyLeakWarning, WorkLimitError
from dpknn.utils._io import (
    defer_signal,
)

__all__ = ["build_parser", "main"]

logger = logging.getLogger(__name__)






























































class _Parser(argparse.ArgumentParser):
    """An argument parser that takes options only as spelt: argparse's prefix matching would take
    ``--row`` for ``--rows`` and any prefix of a privacy option for it."""

    def __init__(self, *args, **kwargs):
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)
        self.commands = None

    def add_subparsers(self, **kwargs):
        """As argparse's, the action kept as ``commands`` (its ``choices`` name the subcommands' parsers)."""
        self.commands = super().add_subparsers(**kwargs)
        return self.commands


def build_parser():
    """The argument parser of ``dpknn``: each command family adds its own commands."""
    parser = _Parser(
        prog="dpknn",
        description="Differentially private release of survey and census data with missing values.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    commands = (add_census_parser, add_demo_parser, add_experiment_parser, add_impute_parser, add_synth_parser,
                add_evaluate_parser, add_schema_parser, add_convert_parser, add_process_parser, add_rwn_parser,
                add_release_parser)
    for add in commands:
        add(sub)
    return parser


class Terminated(SystemExit):
    """SIGTERM or SIGHUP arrived: unwinds like an exception so that every ``finally`` and context
    manager on the way removes its temporary microdata, then exits with 128 + the signal number."""


@contextlib.contextmanager
def _cleanup_on_termination():
    """Turn SIGTERM and SIGHUP into :class:`Terminated` while a command runs; restore the previous
    handlers afterwards. Staged observed values, partial partitions and the imputed folder of
    ``release --input DIR`` are confidential; by default these signals kill the process without
    running any cleanup. SIGKILL cannot be caught (docs/distributed.md says what it leaves)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield  # handlers can only be set in the main thread; an embedding program keeps its own
        return
    wanted = [s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None]

    def terminate(signum, frame):
        if defer_signal(signum):
            return  # a temporary folder is being removed: the signal comes back when it is gone
        # A second signal during the cleanup must not cut it short.
        for s in wanted:
            signal.signal(s, signal.SIG_IGN)
        raise Terminated(128 + signum)

    previous = {s: signal.signal(s, terminate) for s in wanted}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _unrecognised(parser, argv):
    """The first option of ``argv`` that its command does not know, with the closest it does, as an error
    message; None when every option is known. Checked before argparse, which reports a missing required
    option first (``--shema`` read as "--schema is required")."""
    import difflib

    known, names, current = set(), [], parser
    for token in argv:   # follow the (sub)commands named, gathering the options of each
        known |= {o for a in current._actions for o in a.option_strings}
        if current.commands is not None and token in current.commands.choices:
            current = current.commands.choices[token]
            names.append(token)
    known |= {o for a in current._actions for o in a.option_strings}
    command = " ".join(["dpknn", *names])
    for token in argv:
        if token == "--":
            break
        name = token.split("=", 1)[0]
        if name.startswith("--") and name not in known:
            longer = sorted(o for o in known if o.startswith(name))
            if longer:
                hint = f" (did you mean {longer[0]}? options are taken only as spelt in full)"
            else:
                close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
                hint = f" (did you mean {close[0]}?)" if close else f"; see {command} --help"
            return f"{command}: error: unrecognised option {name}{hint}"
    return None


def _check_codebook_input(args):
    """``--codebook`` reads a file's codes; a folder of Parquet partitions is read as it is, so refuse the pair
    rather than let a folder's raw codes pass as values (``dpknn convert`` maps them into the folder)."""
    from pathlib import Path

    if getattr(args, "codebook", None) is not None and args.command != "convert":
        for option in ("input", "real", "released"):
            path = getattr(args, option, None)
            if path is not None and Path(path).is_dir():
                raise CLIError(f"--codebook applies to a file; {str(path)!r} is a folder of Parquet partitions, "
                               "read as it is. Map the codes while writing the folder: dpknn convert --input "
                               "EXTRACT.dat.gz --codebook EXTRACT.xml --output FOLDER.")


def main(argv=None):
    """Run the ``dpknn`` command line on ``argv`` (None: ``sys.argv[1:]``); the exit status.

    Parameters
    ----------
    argv : sequence of str or None, default None
        The arguments after the program name, e.g. ``["release", "--schema", "S.toml", ...]``;
        None reads ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 on success; 2 for unrecognised arguments or an error about the user's input,
        files or installation, reported in one line. argparse's own errors, ``--help`` and SIGTERM or SIGHUP
        (:class:`Terminated`, status 128 + the signal number) exit by SystemExit instead.
    """
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    message = _unrecognised(parser, argv)
    if message is not None:
        print(message, file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if getattr(args, "progress", False) is None:
        # Long steps show a bar on a terminal unless --no-progress; piped or logged output stays clean.
        args.progress = sys.stderr.isatty()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        with _cleanup_on_termination(), warnings.catch_warnings():
            warnings.showwarning = _one_line_warning(args)
            _check_codebook_input(args)
            return args.func(args)
    # Only errors about the user's input, files or installation become one line; anything else is a
    # bug and keeps its traceback. ValueError covers DomainError and BudgetExceededError;
    # WorkLimitError is a RuntimeError, so it is named.
    except (CLIError, ValueError, OSError, WorkLimitError) as exc:
        return _user_error(args, exc, str(exc))
    except ImportError as exc:
        message = _missing_extra(exc)
        if message is None:
            raise
        return _user_error(args, exc, message)


def _one_line_warning(args):
    """Warnings as one line each, ``dpknn CMD: warning: ...``: no source path and no code line (with -v the
    category and the place that warned are added)."""
    def show(message, category, filename, lineno, file=None, line=None):
        where = f" ({category.__name__} at {filename}:{lineno})" if args.verbose else ""
        # A privacy warning says so even without -v: it is the one a curator must not miss.
        if issubclass(category, PrivacyLeakWarning) and not args.verbose:
            message = f"{category.__name__}: {message}"
        print(f"dpknn {args.command}: warning: {message}{where}", file=sys.stderr)
    return show


def _user_error(args, exc, message):
    """Report an error about the user's input in one line (after its traceback with -v); status 2."""
    if args.verbose:
        traceback.print_exception(exc)
    print(f"dpknn {args.command}: error: {message}", file=sys.stderr)
    return 2


# Optional extras (pyproject.toml) by the top-level module whose absence means the extra is missing.
_EXTRAS = {"matplotlib": "plot", "pyarrow": "parquet", "dask": "distributed,parquet",
           "distributed": "distributed,parquet", "torch": "gan"}


def _missing_extra(exc):
    """The one-line message for an ImportError of a missing optional extra, with the install hint;
    None for any other ImportError."""
    message = str(exc)
    if "pip install" in message:
        return message
    name = (getattr(exc, "name", None) or "").split(".")[0]
    named = [m for m in _EXTRAS if m == name or (not name and m in message)]
    if not named:
        return None
    return f"{message} (an optional extra is missing: pip install 'dpknn[{_EXTRAS[named[0]]}]')"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
