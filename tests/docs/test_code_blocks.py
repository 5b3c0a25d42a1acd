"""The Python code blocks of the documentation pages run, from the repository's root.

The blocks of one page run in order in one namespace, as a reader would run
them one after the other; each page starts from a fresh namespace. A
``# value`` comment after a ``print(...)`` (one token, e.g. ``# True`` or
``# (200,)``) is what the page promises the line prints, and is checked.

The gallery's examples run during the build (sphinx-gallery) and the
packages' docstring examples under pytest's ``--doctest-modules``; this test
covers the code in the pages themselves. Exempt: shell blocks (``bash``:
installation, ``asyncdp`` commands, starting a server or a Dask cluster),
which the command-line tests cover.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
PROMISE = re.compile(r"print\((.+)\)\s+#\s*(\S+)$")
PAGES = {page: BLOCK.findall(page.read_text(encoding="utf-8"))
         for page in sorted((ROOT / "docs").rglob("*.md")) if "_build" not in page.parts}
PAGES = {page: blocks for page, blocks in PAGES.items() if blocks}


def test_the_block_and_promise_patterns() -> None:
    assert BLOCK.findall("text\n```python\nx = 1\n```\nmore\n```bash\nls\n```\n") == ["x = 1\n"]
    assert PROMISE.match("print(x > 0)  # True").group(2) == "True"
    assert PROMISE.match("print(p.optimum)  # the mean of the addresses") is None
    assert {"tutorials/write-a-scenario.md", "privacy-check.md"} <= {p.relative_to(ROOT / "docs").as_posix()
                                                                       for p in PAGES}


@pytest.mark.parametrize("page", sorted(PAGES), ids=[p.relative_to(ROOT / "docs").as_posix() for p in sorted(PAGES)])
def test_python_blocks_of_the_page_run(page: Path) -> None:
    namespace: dict = {"__name__": "__docs__"}
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for n, code in enumerate(PAGES[page], 1):
            with contextlib.redirect_stdout(io.StringIO()) as out:
                # dont_inherit: as a reader runs them, without this module's `from __future__ import annotations`
                # (under it a block's dataclass looks its string annotations up in a module that does not exist)
                exec(compile(code, f"{page.name}, block {n}", "exec", dont_inherit=True), namespace)  # noqa: S102
            for line in code.splitlines():
                m = PROMISE.match(line.strip())
                if m:
                    assert m.group(2) in out.getvalue(), (f"{page.name}, block {n}: {line.strip()!r} printed:\n"
                                                          f"{out.getvalue()}")
    finally:
        os.chdir(cwd)
