"""Write a file so that it is either complete or absent: temporary file, then rename.

Every file the command line writes (results, ledgers, transcripts, reports,
sweep tables, the reproductions' CSV/JSON/figures, the demo's plot) goes
through :func:`write_atomically`, as do the library's sweep tables,
reproductions and figures (``Ledger.save`` and ``Transcript.save`` called
directly write in place): the content is written to a temporary file in the
target's directory (same file system, so the rename is atomic), given the
mode a new file would get (or the replaced file's mode), and renamed over
the target only once the writer has returned. On any error, a full disk or
Ctrl-C included, the temporary file is removed and the target is left as it
was. A target that is a symbolic link stays one: the file it points to is
replaced.

Example:
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "r.txt"
    >>> write_atomically(target, lambda tmp: tmp.write_text("done")).read_text()
    'done'
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["write_atomically"]


_umask_lock = threading.Lock()


def _file_mode(path: Path) -> int:
    """The replaced file's mode, else the default of a new file (0666 less the umask)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        with _umask_lock:  # reading the umask means setting it: keep other writer threads out meanwhile
            umask = os.umask(0)
            os.umask(umask)
        return 0o666 & ~umask


def write_atomically(path: str | os.PathLike[str], writer: Callable[[Path], Any]) -> Path:
    """Call ``writer(tmp)`` on a temporary file next to ``path`` with the same suffix, then rename it to ``path``.

    Args:
        path: the target file; its directory must exist.
        writer: writes the whole content to the path it is given (the suffix
            is ``path``'s, so writers that pick a format from it still work).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        OSError: the temporary file could not be created, written or renamed
            (e.g. a read-only file system or a full disk); the target is
            unchanged, the temporary file removed, and the error's
            ``filename`` is ``path`` (not the temporary name). Whatever
            ``writer`` raises is re-raised after the same clean-up.
    """
    given = Path(path)
    target = given.resolve()  # a symbolic link keeps pointing at the (replaced) file it names
    tmp: Path | None = None
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".part{target.suffix}", dir=target.parent)
        os.close(fd)
        tmp = Path(name)
        writer(tmp)
        os.chmod(tmp, _file_mode(target))  # mkstemp makes 0600; give the mode a new file would get
        os.replace(tmp, target)
    except OSError as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        if exc.filename is None or tmp is None or Path(exc.filename) == tmp:
            exc.filename = str(given)  # the user's file, not a temporary name they never chose
        raise
    except BaseException:  # KeyboardInterrupt included: never leave a partial file
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise
    return given
