"""Sweep checkpoints: every finished chunk on disk as soon as it completes, so a long sweep loses no finished work.

A checkpoint is a folder that the *parent* process of a sweep writes (remote
Dask workers share no file system with it):

* ``sweep.json``: what the sweep is (:func:`fingerprint`): the factory's and
  the metrics function's identity (:mod:`.identity`: a script's SHA-256; a function's code,
  closure values, defaults, ``partial`` arguments and the module-level values
  it reads), the grid, ``runs``, ``chunk_runs``, ``seed``, ``engine``, the
  registered paper records (:func:`~asyncdp.experiments.identity._papers`: their lemmas and adjacency classes,
  which ``epsilon_accountant`` reads) and the versions of asyncdp, numpy and Python.
  Resuming checks it field by field; the executor may differ.
* one file per finished chunk, ``p<point>-c<chunk>-<sha256>.npz``: the
  chunk's result columns in NumPy's ``.npz`` format (lossless: the table
  assembled from the files is bitwise the one an uninterrupted sweep
  returns), named after the SHA-256 of its own bytes. Each file is written
  under a temporary name and renamed once complete
  (:func:`asyncdp.atomic_write.write_atomically`), so a crash, a kill or a
  full disk leaves only complete chunks; a file whose bytes no longer match
  its checksum (truncated, corrupt) is deleted and its chunk run again, with a
  warning. Each file also holds the SHA-256 of the sweep's fingerprint, so a
  chunk file copied in from another sweep's folder (same grid size, runs and
  chunking) is run again too, with a warning, not reused.
* ``lock``: held (``flock``) by the sweep that writes the folder, so two
  sweeps never write one checkpoint; the operating system releases it when the
  sweep's process ends, however it ends.

Files are not ``fsync``-ed: a crashed or killed process loses nothing the
kernel accepted, a power failure may lose the last chunks (they run again).

Example:
    >>> import tempfile
    >>> from asyncdp.experiments.grid import _Task
    >>> folder = Path(tempfile.mkdtemp()) / "demo.checkpoint"
    >>> task = _Task(point=0, chunk=0, params={}, first=0, runs=2, seed=0)
    >>> with Checkpoint.open(folder, {"runs": 2}, [task], resume=False) as ck:
    ...     ck.save(0, {"run": np.arange(2)})
    >>> with Checkpoint.open(folder, {"runs": 2}, [task], resume=True) as ck:
    ...     sorted(ck.kept), ck.kept[0]["run"].tolist()
    ([0], [0, 1])
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import re
import warnings
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from ..atomic_write import write_atomically
from ..errors import SweepError
from .factories import _fmt
from .grid import _Task
from .identity import _ADDRESS_MARK, _CACHE_HINT, _grid_value, _identity, _import_values, _papers, _read_values, _versions

__all__ = ["Checkpoint", "SweepInterrupted", "SweepStopped", "fingerprint", "default_folder", "remove_checkpoint", "MANIFEST"]

MANIFEST = "sweep.json"
"""The file of a checkpoint folder that says which sweep it belongs to."""

_LOCK = "lock"
_CHUNK = re.compile(r"^p(\d+)-c(\d+)-([0-9a-f]{64})\.npz$")
_FORMAT = 2
"""The checkpoint layout this asyncdp writes and reads; 2: the chunks hold ``delta_accountant``."""


class SweepStopped(SweepError):
    """A sweep stopped early (a worker kept dying, the disk is full); its finished chunks are kept.

    Attributes:
        kept: chunks in the checkpoint.
        total: chunks of the sweep.
        folder: the checkpoint folder (``None`` without one).
    """

    def __init__(self, message: str, kept: int, total: int, folder: Path | None) -> None:
        super().__init__(message)
        self.kept, self.total, self.folder = kept, total, folder


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep; the chunks finished so far are kept (attributes as :class:`SweepStopped`).

    Chunks in flight are abandoned (their worker processes stopped, their
    Dask futures cancelled): a resumed sweep runs them again.
    """

    def __init__(self, message: str, kept: int, total: int, folder: Path | None) -> None:
        super().__init__(message)
        self.kept, self.total, self.folder = kept, total, folder


def fingerprint(factory: Any, grid: Sequence[Mapping[str, Any]], *, runs: int, chunk_runs: int, seed: int,
                engine: str, metrics: Any) -> dict[str, Any]:
    """What a checkpoint must agree with to be resumed: everything that determines the sweep's numbers.

    Args:
        factory: the sweep's factory (a :class:`ScriptFactory` is identified by its source's SHA-256).
        grid: the sweep's points (values compared through their full ``repr``, so ``1`` and ``1.0`` differ;
            a repr longer than 200 characters is kept as its SHA-256).
        runs, chunk_runs, seed, engine: as given to :func:`asyncdp.experiments.sweep.sweep`.
        metrics: the user's metrics function or ``None``.

    Returns:
        A JSON-serializable dict (the manifest's ``sweep`` entry).

    Example:
        >>> f = fingerprint(None, [{"a": 1}], runs=2, chunk_runs=1, seed=0, engine="batch", metrics=None)
        >>> f["grid"], f["runs"], f["factory"]
        ([['a=1']], 2, 'none')
    """
    return {
        "factory": _identity(factory),
        "metrics": _identity(metrics),
        "grid": [[_grid_value(k, v) for k, v in point.items()] for point in grid],
        "runs": int(runs),
        "chunk_runs": int(chunk_runs),
        "seed": int(seed),
        "engine": str(engine),
        "papers": _papers(),
        **_versions(),
    }


def _short(value: Any, width: int = 60) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    half = (width - 3) // 2
    return text if len(text) <= width else f"{text[:half]}...{text[-half:]}"


def _difference(key: str, theirs: Any, ours: Any) -> str:
    """One field of a refused resume: the checkpoint's value and ours, or the module-level names a function reads
    whose values changed (their fingerprints say nothing to the reader), or the paper records that changed."""
    if key == "papers" and isinstance(theirs, Mapping) and isinstance(ours, Mapping):
        names = sorted(k for k in theirs.keys() | ours.keys() if theirs.get(k) != ours.get(k))
        shown = [k for k in names if _ADDRESS_MARK in json.dumps(ours.get(k))]
        address = (f"; the lemma or adjacency class of {', '.join(map(repr, shown))} reads a value whose repr shows its "
                   "memory address, which differs in every process: give that value a repr of its contents"
                   if shown else "")
        return (f"papers (the paper record(s) {', '.join(map(repr, names))} are not registered alike since the "
                f"checkpoint was written: another lemma or adjacency class, which epsilon_accountant reads, or none"
                f"{address})")
    changed = sorted(k for k, v in _read_values(ours).items() if _read_values(theirs).get(k) != v)
    if changed:
        return (f"{key} (the module-level {', '.join(changed)} it reads changed since the checkpoint was written; "
                f"{_CACHE_HINT})")
    imports = _import_values(ours)
    changed = sorted(k for k in imports.keys() | _import_values(theirs).keys() if _import_values(theirs).get(k) != imports.get(k))
    if changed and str(theirs).split(":imports:")[0] == str(ours).split(":imports:")[0]:
        return f"{key} (the file of the module {', '.join(changed)} the script imports changed since the checkpoint was written)"
    return f"{key} ({_short(theirs)} in the checkpoint, {_short(ours)} now)"


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _is_temporary(name: str) -> bool:
    """A temporary file of :func:`write_atomically` for a chunk or the manifest (never complete once left)."""
    return name.startswith(".") and (name.endswith(".part.npz")
                                     or (name.startswith(f".{MANIFEST}.") and name.endswith(".part.json")))


def _write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (a temporary file of :func:`write_atomically`)."""
    with open(path, "wb") as fh:
        fh.write(data)


_STAMP = "__sweep__"
"""The entry of every chunk file holding :func:`_stamp` of the sweep that wrote it."""


def _stamp(sweep: Mapping[str, Any]) -> str:
    """The SHA-256 of a sweep's fingerprint: each chunk file carries it, so a chunk copied from another
    sweep's folder (same grid size, runs and chunking) is run again rather than reused."""
    return hashlib.sha256(json.dumps(dict(sweep), sort_keys=True, default=repr).encode()).hexdigest()


def _encode(columns: Mapping[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    arrays: dict[str, Any] = {k: np.asarray(v) for k, v in columns.items()}
    np.savez(buf, **arrays)
    return buf.getvalue()


_LOCK_TRIES = 5
"""How many times :meth:`_Lock.acquire` opens a lock file that was replaced while being locked."""


def _same_file(fh: Any, path: Path) -> bool:
    """Whether the open file ``fh`` is still the file at ``path`` (not unlinked or replaced)."""
    try:
        here = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fh.fileno())
    return (held.st_dev, held.st_ino) == (here.st_dev, here.st_ino)


class _Lock:
    """An exclusive ``flock`` on a file, released when closed or when the process ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: Any = None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`SweepError` naming the process that holds it.

        A lock taken on a file that :func:`remove_checkpoint` unlinked in the
        meantime would lock nothing (the next sweep creates a new file and
        locks that one too): after ``flock`` the file open is compared with
        the file at the path, and on a mismatch the path is opened again.

        Raises:
            SweepError: another process holds the lock, or the lock file kept
                being replaced (more than ``_LOCK_TRIES`` times).
            OSError: the lock file cannot be opened (the caller names it).
        """
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            self._fh = open(self.path, "a+")  # noqa: SIM115 - held until release()
            return
        for _ in range(_LOCK_TRIES):
            fh = open(self.path, "a+")  # noqa: SIM115 - held until release()
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                fh.seek(0)
                holder = fh.read().strip() or "unknown"
                fh.close()
                if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise SweepError(f"checkpoint {self.path.parent} is in use by another running sweep (process "
                                     f"{holder}); wait for it to end or use another checkpoint folder") from None
                raise
            if _same_file(fh, self.path):
                break
            fh.close()  # locked a removed lock file: open the path again
        else:
            raise SweepError(f"checkpoint {self.path.parent}: its lock file was replaced {_LOCK_TRIES} times while "
                             "being locked (is the folder being removed?); try again")
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        if self._fh is not None:
            self._fh.close()  # closing drops the flock
            self._fh = None


class Checkpoint:
    """A sweep's checkpoint folder, open and locked (use :meth:`open`, as a context manager).

    Attributes:
        folder: the folder.
        tasks: the sweep's tasks; chunk files are named by their ``(point, chunk)``.
        kept: task index -> result columns, for every complete chunk on disk.
        resumed: how many chunks were already there when it was opened.
    """

    def __init__(self, folder: Path, tasks: Sequence[_Task]) -> None:
        self.folder = folder
        self.tasks = list(tasks)
        self.kept: dict[int, dict[str, np.ndarray]] = {}
        self.resumed = 0
        self._stamp = ""
        self._lock = _Lock(folder / _LOCK)

    @classmethod
    def open(cls, folder: str | os.PathLike[str], sweep: Mapping[str, Any], tasks: Sequence[_Task], *,
             resume: bool) -> Checkpoint:
        """Create or reopen a checkpoint folder, lock it and read its complete chunks.

        Args:
            folder: the folder (created with its parents if missing).
            sweep: the sweep's :func:`fingerprint`.
            tasks: the sweep's tasks, in order.
            resume: continue the sweep found in ``folder``; without it a
                folder that already holds a sweep is an error (never
                silently overwritten). With ``resume=True`` and nothing in
                the folder, the sweep starts afresh.

        Returns:
            The open, locked checkpoint.

        Raises:
            SweepError: the folder holds another sweep (naming the fields that
                differ) or, without ``resume``, any sweep; it is locked by a
                running sweep; it cannot be created or written; it is a file.
        """
        folder = Path(folder)
        if folder.exists() and not folder.is_dir():
            raise SweepError(f"checkpoint {folder}: is a file, not a folder")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SweepError(f"checkpoint {folder}: cannot create the folder: {_reason(exc)}") from None
        ck = cls(folder, tasks)
        ck._stamp = _stamp(sweep)
        try:
            ck._lock.acquire()
        except OSError as exc:
            raise SweepError(f"checkpoint {folder}: cannot write there: {_reason(exc)}") from None
        try:
            ck._start(dict(sweep), resume)
        except BaseException:
            ck.close()
            raise
        return ck

    def _start(self, sweep: dict[str, Any], resume: bool) -> None:
        manifest = self.folder / MANIFEST
        chunks = self._chunk_files()
        if not resume and not chunks and manifest.is_file():
            manifest.unlink()  # a sweep that finished no chunk: nothing to lose
        if not manifest.is_file():
            if chunks:
                raise SweepError(f"checkpoint {self.folder} holds chunk files but no {MANIFEST}; "
                                 "it cannot be checked against this sweep: delete the folder to start afresh")
            if resume:
                warnings.warn(f"no checkpoint to resume in {self.folder}; starting the sweep afresh",
                              RuntimeWarning, stacklevel=4)
            self._write_manifest(sweep)
            return
        try:
            found = json.loads(manifest.read_text(encoding="utf-8"))
            theirs = found["sweep"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SweepError(f"checkpoint {self.folder}: unreadable {MANIFEST} ({exc}); "
                             "delete the folder to start afresh") from None
        if found.get("format") != _FORMAT:
            raise SweepError(f"checkpoint {self.folder} was written in checkpoint format {found.get('format')!r}; this "
                             f"asyncdp reads format {_FORMAT} only (its chunks hold other columns): delete the folder "
                             "to start afresh")
        diff = [_difference(key, theirs.get(key), value) for key, value in sweep.items() if theirs.get(key) != value]
        hint = ""
        if any(_ADDRESS_MARK in str(value) for key, value in sweep.items()
               if theirs.get(key) != value and key != "papers"):  # (papers: said in their difference)
            hint = (" (a captured or grid value's repr shows its memory address, which differs in every process: give "
                    "it a repr of its contents, or pass the sweep a script factory)")
        if not resume and diff:  # e.g. the sweep stopped on a bad grid value and runs again with another grid
            raise SweepError(f"checkpoint {self.folder} already holds another sweep ({len(chunks)} of "
                             f"{found.get('chunks', '?')} chunks finished; it differs in {'; '.join(diff)}): it cannot "
                             f"be resumed by this one{hint}; delete the folder to start afresh, or give this sweep "
                             "another folder (--checkpoint DIR, or checkpoint=)")
        if not resume:
            raise SweepError(f"checkpoint {self.folder} already holds a sweep ({len(chunks)} of {len(self.tasks)} chunks "
                             "finished, this one's); resume it (--resume, or resume=True) or delete the "
                             "folder to start afresh")
        if diff:
            raise SweepError(f"cannot resume: checkpoint {self.folder} belongs to another sweep: {'; '.join(diff)}"
                             f"{hint}")
        self._load(chunks)
        self.resumed = len(self.kept)

    def _write_manifest(self, sweep: dict[str, Any]) -> None:
        text = json.dumps({"format": _FORMAT, "chunks": len(self.tasks), "sweep": sweep}, indent=1)
        try:
            write_atomically(self.folder / MANIFEST, lambda tmp: _write_bytes(tmp, text.encode()))
        except OSError as exc:
            raise SweepError(f"checkpoint {self.folder}: cannot write {MANIFEST}: {_reason(exc)}") from None

    def _chunk_files(self) -> list[tuple[Path, re.Match[str]]]:
        out = []
        for path in sorted(self.folder.iterdir()):
            if _is_temporary(path.name):
                path.unlink(missing_ok=True)  # left by a process killed while writing: never complete
                continue
            m = _CHUNK.match(path.name)
            if m is not None:
                out.append((path, m))
        return out

    def _load(self, chunks: list[tuple[Path, re.Match[str]]]) -> None:
        index = {(t.point, t.chunk): i for i, t in enumerate(self.tasks)}
        for path, m in chunks:
            point, chunk, digest = int(m[1]), int(m[2]), m[3]
            i = index.get((point, chunk))
            if i is None:
                raise SweepError(f"checkpoint {self.folder}: {path.name} is no chunk of this sweep")
            task = self.tasks[i]
            problem = None
            data = path.read_bytes()
            if hashlib.sha256(data).hexdigest() != digest:
                problem = "truncated or corrupt (its checksum does not match)"
            else:
                try:
                    with np.load(io.BytesIO(data), allow_pickle=True) as npz:
                        cols = {k: npz[k] for k in npz.files}
                except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
                    problem = f"unreadable ({exc})"
                else:
                    expected = np.arange(task.first, task.first + task.runs)
                    stamp = cols.pop(_STAMP, None)
                    sizes = {len(v) for v in cols.values()}
                    if stamp is None or str(stamp) != self._stamp:
                        problem = "written by another sweep (a chunk file copied from another checkpoint folder)"
                    elif "run" not in cols or not np.array_equal(cols["run"], expected) or sizes != {task.runs}:
                        problem = "not the runs this chunk holds"
            if problem is not None:
                warnings.warn(f"checkpoint chunk {chunk} of point {point} ({path.name}) is {problem}; "
                              "running it again", RuntimeWarning, stacklevel=5)
                path.unlink(missing_ok=True)
                continue
            if i in self.kept:  # two copies of one chunk (not written under one lock): keep the first
                path.unlink(missing_ok=True)
                continue
            self.kept[i] = cols

    def save(self, index: int, columns: Mapping[str, np.ndarray]) -> None:
        """Write task ``index``'s result columns as a complete chunk file (atomically, named by its checksum).

        Raises:
            SweepStopped: the file cannot be written (e.g. a full disk); no
                partial file is left and the finished chunks are kept.
        """
        task = self.tasks[index]
        data = _encode({**columns, _STAMP: np.array(self._stamp)})
        name = f"p{task.point:06d}-c{task.chunk:06d}-{hashlib.sha256(data).hexdigest()}.npz"
        try:
            write_atomically(self.folder / name, lambda tmp: _write_bytes(tmp, data))
        except OSError as exc:
            raise SweepStopped(
                f"cannot write chunk {task.chunk} of point {task.point} ({_fmt(task.params)}) to checkpoint "
                f"{self.folder}: {_reason(exc)}; the {len(self.kept)} of {len(self.tasks)} chunks finished "
                "before are kept there; resume once it can be written", len(self.kept), len(self.tasks), self.folder,
            ) from None
        self.kept[index] = dict(columns)

    def close(self) -> None:
        """Release the lock (the files stay)."""
        self._lock.release()

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def default_folder(out: str | os.PathLike[str]) -> Path:
    """The checkpoint folder of a sweep whose table goes to ``out``: ``<out>.checkpoint`` next to it.

    Example:
        >>> default_folder("results/eps.csv").as_posix()
        'results/eps.csv.checkpoint'
    """
    out = Path(out)
    return out.with_name(out.name + ".checkpoint")


def remove_checkpoint(folder: str | os.PathLike[str]) -> None:
    """Delete a checkpoint's own files and, if it is then empty, its folder (once the sweep's table is saved).

    Files that are not the checkpoint's are left, with the folder. The chunk
    files go first and the manifest last, so a removal cut short (Ctrl-C, a
    crash) leaves a checkpoint that still resumes: the removed chunks are
    run again.

    Raises:
        SweepError: a running sweep holds the folder's lock.

    Example:
        >>> remove_checkpoint("no-such.checkpoint")  # nothing there: nothing to do
    """
    folder = Path(folder)
    if not folder.is_dir():
        return
    lock = _Lock(folder / _LOCK)
    lock.acquire()
    try:
        for path in folder.iterdir():
            if _CHUNK.match(path.name) or _is_temporary(path.name):
                path.unlink(missing_ok=True)
        (folder / MANIFEST).unlink(missing_ok=True)
        (folder / _LOCK).unlink(missing_ok=True)  # while held: a sweep that opened it meanwhile sees it replaced
    finally:
        lock.release()
    try:
        folder.rmdir()
    except OSError:
        pass  # other files of the user's: leave them


Done = Callable[[int, dict[str, np.ndarray]], None]
"""Called in the parent process with (task index, result columns) as each chunk finishes."""
