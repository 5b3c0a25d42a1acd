"""The linter (ruff) and the type checker (mypy) pass on the tree, with the configuration in pyproject.toml.

Both come with the ``dev`` extra. Locally, a missing tool skips its test; under
``CI=true`` a missing tool fails, so CI never passes without having checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _tool(name: str) -> list[str]:
    exe = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if exe is None:
        if IN_CI:
            pytest.fail(f"{name} is not installed: pip install -e '.[dev]'")
        pytest.skip(f"{name} is not installed")
    return [exe]


def test_ruff_finds_nothing() -> None:
    proc = subprocess.run([*_tool("ruff"), "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_finds_nothing() -> None:
    # files and options: [tool.mypy] (topology, accounting, and asyncdp's public API through tests/typing)
    proc = subprocess.run([*_tool("mypy"), "--no-incremental"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
