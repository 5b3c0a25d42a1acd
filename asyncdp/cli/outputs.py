"""Output paths of every ``asyncdp`` command: checked before computing, written atomically.

One rule for every output option (``--json``, ``--out``, ``-o``, ``--ledger``,
``--transcript``, ``--worst-pair``, the ``reproduce``/``demo`` directories):

* **Checked before computing.** :func:`prepare_file` / :func:`prepare_dir`
  run before any simulation: the suffix must be one the writer knows, the path
  must not be (or sit under) an existing file of the wrong kind, and the
  directory must be writable (a probe file is created and removed there, so a
  read-only file system or a permission problem is reported at once).
* **Missing parent directories are created** (for every option alike).
* **Existing files are overwritten, and the command says so**: one line
  ``asyncdp: replaced existing file PATH`` on stderr per replaced file
  (stdout keeps only the command's own output).
* **No partial file**: a file is written to a temporary name in the same
  directory and renamed over the target only once complete; on an error or
  Ctrl-C (exit code 130) the temporary file is removed
  (:func:`asyncdp.atomic_write.write_atomically`). This holds for each file
  of a ``reproduce`` or ``demo`` directory too: an interrupted run leaves the
  files written so far complete and the others absent.
* A write failure (read-only file system, full disk, ...) is one
  ``asyncdp: error: --OPTION PATH: cannot write: <reason>`` line, exit code 2.

Example:
    >>> import tempfile, pathlib
    >>> target = prepare_file(pathlib.Path(tempfile.mkdtemp()) / "sub" / "r.json", "--json", (".json",))
    >>> target.write_text("{}").name
    'r.json'
    >>> prepare_file("r.txt", "--json", (".json",))
    Traceback (most recent call last):
    ...
    asyncdp.cli.outputs.OutputError: --json r.txt: unknown suffix '.txt' (use .json)
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic_write import write_atomically
from ..errors import AsyncdpError

__all__ = ["OutputError", "OutputFile", "OutputDir", "prepare_file", "prepare_dir"]


class OutputError(AsyncdpError, ValueError):
    """An output path is unusable (bad suffix, a file in the way, not writable, disk full)."""


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _check_ancestors(path: Path, option: str) -> None:
    """Refuse a path under an existing non-directory (``out.csv/fig`` when ``out.csv`` is a file)."""
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{option} {path}: {parent} is a file, not a directory")
            return


def _make_dirs(directory: Path, path: Path, option: str) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{option} {path}: cannot create directory {directory}: {_reason(exc)}") from None


def _probe(directory: Path, path: Path, option: str) -> None:
    """Create and remove a file in ``directory``: a read-only or full file system is reported now."""
    try:
        fd, name = tempfile.mkstemp(prefix=".asyncdp-probe-", dir=directory)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise OutputError(f"{option} {path}: cannot write to {directory}: {_reason(exc)}") from None


@dataclass(frozen=True)
class OutputFile:
    """A checked output file (see :func:`prepare_file`).

    Attributes:
        path: the file.
        option: the command-line option that named it (for messages).
        existed: whether a file was there before (it is replaced).
    """

    path: Path
    option: str
    existed: bool

    def write(self, writer: Callable[[Path], Any]) -> Path:
        """Write :attr:`path` with ``writer`` atomically (:func:`asyncdp.atomic_write.write_atomically`).

        A replaced file is announced on stderr (``asyncdp: replaced existing file PATH``).

        Returns:
            :attr:`path`.

        Raises:
            OutputError: the file could not be written (the temporary file is removed).
        """
        try:
            write_atomically(self.path, writer)
        except OSError as exc:
            raise OutputError(f"{self.option} {self.path}: cannot write: {_reason(exc)}") from None
        if self.existed:
            print(f"asyncdp: replaced existing file {self.path}", file=sys.stderr)
        return self.path

    def write_text(self, text: str) -> Path:
        """Write ``text`` (UTF-8) atomically (see :meth:`write`)."""
        return self.write(lambda tmp: tmp.write_text(text, encoding="utf-8"))


@dataclass(frozen=True)
class OutputDir:
    """A checked output directory (see :func:`prepare_dir`).

    Attributes:
        path: the directory (it exists once prepared).
        option: the command-line option that named it.
        existing: names of the files that were already in it.
    """

    path: Path
    option: str
    existing: frozenset[str]

    def written(self, since: float) -> list[Path]:
        """The files of the directory (recursively) modified at or after ``since`` (a ``time.time()``)."""
        return sorted(f for f in self.path.rglob("*") if f.is_file() and f.stat().st_mtime >= since - 1e-3)

    def note_replaced(self, files: Iterable[str | os.PathLike[str]]) -> None:
        """Announce on stderr each of ``files`` that replaced a file already in the directory."""
        for f in map(Path, files):
            if f.name in self.existing and f.parent.resolve() == self.path.resolve():
                print(f"asyncdp: replaced existing file {f}", file=sys.stderr)

    def report(self, files: Iterable[str | os.PathLike[str]]) -> str:
        """Lines telling where ``files`` were written; a replaced file is also announced on stderr."""
        names = [Path(f) for f in files]
        self.note_replaced(names)
        return "\n".join([f"wrote {len(names)} file(s) to {self.path}:"] + [f"  {f}" for f in names])


def prepare_file(path: str | os.PathLike[str], option: str, suffixes: Iterable[str] | None = None,
                 inputs: Iterable[str | os.PathLike[str]] = ()) -> OutputFile:
    """Check an output file before computing anything (the module's rule), creating its parent directories.

    Args:
        path: the file named on the command line.
        option: the option (``"--json"``, ``"-o"``, ...), used in messages.
        suffixes: accepted suffixes (lower case, with the dot); ``None`` accepts any.
            A Parquet suffix also needs ``pyarrow`` to be installed.
        inputs: the command's input files, which the output must not replace.

    Returns:
        An :class:`OutputFile` to write with.

    Raises:
        OutputError: unknown suffix (or Parquet without pyarrow); the path is
            a directory or sits under a file, or is one of ``inputs``; the
            directory cannot be created or written.

    Example:
        >>> prepare_file("/", "--json").path  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        asyncdp.cli.outputs.OutputError: --json /: is a directory
    """
    p = Path(path)
    if suffixes is not None:
        known = tuple(suffixes)
        if p.suffix.lower() not in known:
            found = repr(p.suffix) if p.suffix else "no suffix"
            raise OutputError(f"{option} {p}: unknown suffix {found} (use {', '.join(known)})")
    if p.suffix.lower() in (".parquet", ".pq") and importlib.util.find_spec("pyarrow") is None:
        raise OutputError(f"{option} {p}: writing Parquet needs the optional pyarrow (pip install pyarrow)")
    if p.is_dir():
        raise OutputError(f"{option} {p}: is a directory")
    for source in inputs:
        if p.exists() and Path(source).exists() and os.path.samefile(p, source):
            raise OutputError(f"{option} {p}: is the input file {source}, which writing it would replace; "
                              "write to another file")
    _check_ancestors(p, option)
    parent = p.parent
    _make_dirs(parent, p, option)
    _probe(parent, p, option)
    return OutputFile(p, option, p.exists())


def prepare_dir(path: str | os.PathLike[str], option: str) -> OutputDir:
    """Check (and create) an output directory before computing anything.

    Args:
        path: the directory named on the command line.
        option: the option, used in messages.

    Returns:
        An :class:`OutputDir`; files already in it will be replaced.

    Raises:
        OutputError: the path is a file or sits under one; it cannot be
            created or written.

    Example:
        >>> import tempfile
        >>> prepare_dir(tempfile.mkdtemp(), "--out").existing
        frozenset()
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputError(f"{option} {p}: is a file, not a directory")
    _check_ancestors(p, option)
    _make_dirs(p, p, option)
    _probe(p, p, option)
    existing = frozenset(f.name for f in p.iterdir() if f.is_file())
    return OutputDir(p, option, existing)
