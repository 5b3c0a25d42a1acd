"""``asyncdp.atomic_write.write_atomically``: a file is complete or absent, never cut short."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from asyncdp.atomic_write import write_atomically


def test_writes_through_a_temporary_file_with_the_same_suffix(tmp_path: Path) -> None:
    seen: list[Path] = []

    def writer(tmp: Path) -> None:
        seen.append(tmp)
        assert not (tmp_path / "r.csv").exists()  # the target appears only once complete
        tmp.write_text("a,b\n")

    assert write_atomically(tmp_path / "r.csv", writer) == tmp_path / "r.csv"
    assert seen[0].parent == tmp_path and seen[0].suffix == ".csv" and seen[0] != tmp_path / "r.csv"
    assert [p.name for p in tmp_path.iterdir()] == ["r.csv"] and (tmp_path / "r.csv").read_text() == "a,b\n"


def test_a_replaced_file_keeps_its_mode_and_a_new_one_gets_the_umask_default(tmp_path: Path) -> None:
    old = tmp_path / "old.txt"
    old.write_text("x")
    old.chmod(0o640)
    write_atomically(old, lambda tmp: tmp.write_text("y"))
    assert old.stat().st_mode & 0o777 == 0o640 and old.read_text() == "y"
    umask = os.umask(0o022)
    try:
        write_atomically(tmp_path / "new.txt", lambda tmp: tmp.write_text("z"))
    finally:
        os.umask(umask)
    assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), KeyboardInterrupt(),
                                   ValueError("bad data")])
def test_a_failed_write_leaves_the_old_content_and_no_temporary_file(tmp_path: Path, error: BaseException) -> None:
    target = tmp_path / "r.json"
    target.write_text("old")

    def writer(tmp: Path) -> None:
        tmp.write_text("half")
        if isinstance(error, OSError):
            raise OSError(error.errno, error.strerror, str(tmp))  # as a full disk reports it
        raise error

    with pytest.raises(type(error)) as info:
        write_atomically(target, writer)
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"] and target.read_text() == "old"
    if isinstance(error, OSError):
        assert info.value.filename == str(target) and info.value.errno == errno.ENOSPC


def test_a_missing_directory_is_an_oserror_naming_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomically(tmp_path / "missing" / "r.txt", lambda tmp: tmp.write_text("x"))


def test_a_missing_directory_names_the_users_file_not_a_temporary_one(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "r.json"
    with pytest.raises(FileNotFoundError) as info:
        write_atomically(target, lambda tmp: tmp.write_text("x"))
    assert info.value.filename == str(target)


def test_a_symbolic_link_stays_a_link_to_the_replaced_file(tmp_path: Path) -> None:
    real = tmp_path / "data" / "r.txt"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "r.txt"
    link.symlink_to(real)
    assert write_atomically(link, lambda tmp: tmp.write_text("new")) == link
    assert link.is_symlink() and real.read_text() == "new"
    assert sorted(p.name for p in real.parent.iterdir()) == ["r.txt"]


def test_a_figure_without_suffix_is_written_in_the_default_format(tmp_path: Path) -> None:
    from asyncdp.reproduce._outputs import pyplot, save_figure

    fig, _ax = pyplot().subplots()
    save_figure(fig, tmp_path / "plot", dpi=20)
    assert (tmp_path / "plot").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # savefig.format defaults to png
