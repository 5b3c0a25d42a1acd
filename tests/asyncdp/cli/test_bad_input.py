"""Issue 17: bad input never ends in a traceback, a hang or a silent accept.

Each class of bad input runs the command (``python -m asyncdp`` in a
subprocess, or :func:`asyncdp.cli.main` in-process where a failure must be
simulated with monkeypatch) and checks the exit code and the one
``asyncdp: error:`` line on stderr, with no traceback.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from asyncdp.cli import main

REPO = Path(__file__).resolve().parents[3]
GOOD_SCRIPT = REPO / "examples" / "huang2015_rendezvous.py"


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "asyncdp", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def one_error_line(stderr: str) -> str:
    """The single ``asyncdp: error:`` line of ``stderr`` (and no traceback)."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("asyncdp: error:")]
    assert len(errors) == 1, stderr
    return errors[0]


def main_error(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 2) -> str:
    assert main(argv) == code
    return one_error_line(capsys.readouterr().err)


# -- 1. scenario scripts ---------------------------------------------------------------------------

SCRIPTS = {
    "syntax-error": ("bad.py", b"import math\nx = (\n", r"bad\.py, line 2: SyntaxError: '\(' was never closed"),
    "raises-at-import": ("boom.py", b"import math\n\nraise RuntimeError('boom')\n",
                         r"boom\.py, line 3: RuntimeError: boom"),
    "scenario-needs-arguments": ("args.py", b"def scenario(n):\n    return n\n",
                                 r"args\.py: scenario\(\) cannot be called with no arguments: .*'n'"),
    "scenario-raises": ("call.py", b"def scenario():\n    return 1 / 0\n",
                        r"call\.py, line 2: ZeroDivisionError: division by zero \(in scenario\(\)\)"),
    "not-a-py-file": ("scenario.txt", b"scenario = None\n", r"scenario\.txt: .*a Python file ending in \.py"),
    "null-bytes": ("nul.py", b"x = 1\x00\n", r"nul\.py: .*null bytes"),
    "sys-exit-3": ("ex.py", b"import sys\nsys.exit(3)\n", r"ex\.py: the script called sys\.exit\(3\) while loading"),
}


@pytest.mark.parametrize("case", sorted(SCRIPTS))
@pytest.mark.parametrize("command", [("run",), ("privacy", "check")])
def test_bad_scenario_script(tmp_path: Path, case: str, command: tuple[str, ...]) -> None:
    name, content, pattern = SCRIPTS[case]
    (tmp_path / name).write_bytes(content)
    proc = run_cli(*command, name, cwd=tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    line = one_error_line(proc.stderr)
    assert re.search(pattern, line), line


@pytest.mark.parametrize("case", ["syntax-error", "raises-at-import", "null-bytes", "sys-exit-3", "not-a-py-file"])
def test_bad_sweep_and_audit_scripts(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    name, content, pattern = SCRIPTS[case]
    path = tmp_path / name
    path.write_bytes(content)
    for argv in (["sweep", str(path)], ["privacy", "audit", str(path), "--epsilon", "1"]):
        line = main_error(capsys, argv)
        assert re.search(pattern, line), line


def test_sweep_factory_raising_names_the_users_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "f.py"
    path.write_text("def factory(x):\n    return {}['missing']\n")
    line = main_error(capsys, ["sweep", str(path), "--grid", "x=1"])
    assert "f.py, line 2: KeyError: 'missing'" in line
