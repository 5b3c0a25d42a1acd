"""The Python code blocks of the documentation pages run, from the repository's root, each in a fresh namespace.

The gallery's examples run during the build (sphinx-gallery) and the
packages' docstring examples under pytest's ``--doctest-modules``; this test
covers the code in the pages themselves. Exempt: shell blocks (``bash``:
installation, ``asyncdp`` commands, starting a server or a Dask cluster),
which the command-line tests cover, and blocks marked ``python-no-run``
(none so far).
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
BLOCKS = [(page, n, code) for page in sorted((ROOT / "docs").rglob("*.md")) if "_build" not in page.parts
          for n, code in enumerate(BLOCK.findall(page.read_text(encoding="utf-8")), 1)]


def test_the_pages_have_python_blocks() -> None:
    assert BLOCKS, "no ```python block found in docs/: the pattern or the pages changed"
    assert BLOCK.findall("text\n```python\nx = 1\n```\nmore\n```bash\nls\n```\n") == ["x = 1\n"]


@pytest.mark.parametrize(("page", "n", "code"), BLOCKS,
                         ids=[f"{p.relative_to(ROOT / 'docs')}-{n}" for p, n, _ in BLOCKS])
def test_python_block_runs(page: Path, n: int, code: str) -> None:
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            exec(compile(code, f"{page.name}, block {n}", "exec"), {"__name__": "__docs__"})  # noqa: S102
    finally:
        os.chdir(cwd)
    for line in code.splitlines():  # a "# value" comment after print(...) is the value the page promises
        m = re.match(r"print\((.+)\)\s+#\s*(\S+)$", line.strip())
        if m:
            assert m.group(2) in out.getvalue(), f"{page.name}, block {n}: {line.strip()!r}; printed:\n{out.getvalue()}"
