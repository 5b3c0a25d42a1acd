"""The ``asyncdp`` command-line interface.

``asyncdp <command> ...`` dispatches to sub-commands registered from the
modules listed in :data:`COMMAND_MODULES`. Each such module exposes
``register(subparsers) -> None``, which adds its parser to ``subparsers`` and
sets ``func`` (a callable ``(argparse.Namespace) -> int``) on it with
``set_defaults``. Adding a command means adding a module to the tuple.

Exit codes: 0 on success, 2 on a usage error (argparse) or on unusable input
(any of :data:`USER_ERRORS`: every :class:`~asyncdp.errors.AsyncdpError`, the
``topology`` and ``accounting`` errors and unreadable files; reported as one ``asyncdp: error: <message>``
line on stderr, never a traceback). A file that cannot be written (read-only
file system, full disk: any ``OSError``) and a ``MemoryError`` are reported
the same way, with exit code 2. Ctrl-C (SIGINT) prints ``asyncdp: interrupted``
and exits with 130; a reader of the output that went away (``| head``) ends the command quietly with 141, not
1 (a violation of ``privacy check``); output files are written atomically (see
:mod:`asyncdp.cli.outputs`), so none is left half-written.

Example:
    >>> main(["--version"])  # doctest: +SKIP
    asyncdp 0.1.0
    0
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn
from importlib import metadata

from accounting.errors import AccountingError
from topology.errors import TopologyError

from ..errors import AsyncdpError

__all__ = ["COMMAND_MODULES", "EXIT_INTERRUPTED", "USER_ERRORS", "build_parser", "console_main", "format_error",
           "get_version", "main"]

COMMAND_MODULES: tuple[str, ...] = ("asyncdp.cli.demo", "asyncdp.cli.run", "asyncdp.cli.privacy", "asyncdp.cli.topology", "asyncdp.cli.sweep",
                                     "asyncdp.cli.reproduce")
"""Modules (dotted names) whose ``register(subparsers)`` adds a sub-command."""

USER_ERRORS: tuple[type[BaseException], ...] = (
    TopologyError,
    AsyncdpError,
    AccountingError,
    FileNotFoundError,
    IsADirectoryError,
    PermissionError,
)
"""Exceptions caused by the user's input: reported in one line, exit code 2."""

PROG = "asyncdp"

EXIT_INTERRUPTED = 130
"""Exit code after Ctrl-C (SIGINT), as shells report a process killed by SIGINT."""

EXIT_BROKEN_PIPE = 141
"""Exit code when the reader of the output went away (``asyncdp ... | head``), as shells report a process killed by
SIGPIPE: not 1, which ``privacy check`` and ``privacy audit`` give a violation."""


def get_version() -> str:
    """The installed package version (``asyncdp.__version__`` if not installed)."""
    try:
        return metadata.version("asyncdp")
    except metadata.PackageNotFoundError:
        from asyncdp import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    """The top-level argument parser with every sub-command of :data:`COMMAND_MODULES`.

    Returns:
        An ``argparse.ArgumentParser``; a parsed namespace has ``func``.

    Example:
        >>> args = build_parser().parse_args(["topology", "info", "ring.json"])
        >>> callable(args.func)
        True
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Differentially private distributed optimization: simulator, "
        "privacy accounting and topology audits.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {get_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def format_error(exc: BaseException) -> str:
    """A one-line message for a user error (an ``OSError`` shows file and reason).

    Example:
        >>> format_error(FileNotFoundError(2, "No such file or directory", "x.json"))
        'x.json: No such file or directory'
    """
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        msg = f"{exc.filename}: {exc.strerror}"
    else:
        msg = str(exc) or type(exc).__name__
    return " ".join(msg.splitlines())


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 1


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
        pass


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """Warnings during a command: one ``asyncdp: warning: <message>`` line on stderr (no source line)."""
    print(f"{PROG}: warning: {' '.join(str(message).splitlines())}", file=sys.stderr)


def _unrecognized(parser: argparse.ArgumentParser, words: Sequence[str], extra: Sequence[str]) -> NoReturn:
    """Exit through the sub-command's parser: ``unrecognized arguments: ...``, naming the closest option of that
    command for a misspelt one (``--rnus``: did you mean ``--runs``?)."""
    sub, rest = parser, list(words)
    while True:
        actions = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
        name = next((w for w in rest if actions and w in actions[0].choices), None)
        if name is None:
            break
        sub, rest = actions[0].choices[name], rest[rest.index(name) + 1:]
    options = [s for a in sub._actions for s in a.option_strings if s.startswith("--")]
    hints = []
    for word in extra:
        close = difflib.get_close_matches(word.split("=", 1)[0], options, n=1) if word.startswith("-") else []
        if close:
            hints.append(f"{word.split('=', 1)[0]}: did you mean {close[0]}?")
    sub.error(f"unrecognized arguments: {' '.join(extra)}" + (f" ({'; '.join(hints)})" if hints else ""))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``asyncdp`` command line.

    Args:
        argv: the arguments without the program name; default ``sys.argv[1:]``.

    Returns:
        The exit code: 0 on success, 2 for a usage error, unusable input or an
        unwritable output, 130 on Ctrl-C (a command may define more, e.g.
        ``privacy check``), 141 when the reader of the output went away.
    """
    parser = build_parser()
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        args, extra = parser.parse_known_args(words)
        if extra:  # said by the command's own parser (its usage), with the option the user may have meant
            _unrecognized(parser, words, extra)
    except SystemExit as exc:  # --help, --version and usage errors
        return _exit_code(exc.code)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            result = args.func(args)
            sys.stdout.flush()  # a reader gone after a short output: found here, not at exit (120)
    except USER_ERRORS as exc:
        print(f"{PROG}: error: {format_error(exc)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. ``asyncdp ... | head``: stop quietly
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:  # e.g. a read-only file system or a full disk while writing
        print(f"{PROG}: error: {format_error(exc)}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"{PROG}: error: out of memory (use fewer runs, rounds or nodes)", file=sys.stderr)
        return 2
    return 0 if result is None else int(result)


def console_main() -> NoReturn:
    """The ``asyncdp`` executable and ``python -m asyncdp``: :func:`main`, then exit with its code.

    After a handled Ctrl-C (:data:`EXIT_INTERRUPTED`) the exit code is forced
    with ``os._exit`` once the standard streams are flushed. Reason: CPython
    ends a process by SIGINT when a ``KeyboardInterrupt`` went unhandled
    (bpo-1054041), and it marks one as unhandled whenever it leaves a nested
    ``eval``/``exec`` of a string, even if an outer ``except`` then handles
    it. An interrupt that lands in such a call (``collections.namedtuple``
    during a lazy import, for one) would otherwise make the process die by
    SIGINT (return code -2) after printing ``asyncdp: interrupted``. Every
    command has cleaned up (no partial output file) before :func:`main`
    returns, so skipping the interpreter's exit handlers loses nothing.

    Raises:
        SystemExit: with :func:`main`'s exit code, except after Ctrl-C.
    """
    code = main()
    if code == EXIT_INTERRUPTED:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed or broken stream: nothing more can be shown
                pass
        os._exit(code)
    sys.exit(code)
