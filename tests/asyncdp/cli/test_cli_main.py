"""Tests of the top-level ``asyncdp`` command line (asyncdp.cli)."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

import asyncdp
import asyncdp.cli as cli
from asyncdp.errors import AsyncdpError, SweepError, TranscriptError
from topology.errors import ParameterError


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "asyncdp", *args], capture_output=True, text=True, cwd=cwd, timeout=60
    )


def test_version_in_process(capsys):
    assert cli.main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == f"asyncdp {cli.get_version()}"
    assert cli.get_version() == asyncdp.__version__ == "0.1.0"


def test_help_lists_topology_command(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: asyncdp")
    assert "topology" in out


def test_no_command_is_usage_error(capsys):
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert "asyncdp: error: the following arguments are required: COMMAND" in err


def test_unknown_command_is_usage_error(capsys):
    assert cli.main(["frobnicate"]) == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_build_parser_sets_func_for_registered_commands():
    args = cli.build_parser().parse_args(["topology", "info", "x.json"])
    assert callable(args.func) and args.command == "topology"


def test_user_errors_tuple():
    assert set(cli.USER_ERRORS) >= {FileNotFoundError, IsADirectoryError, PermissionError}
    assert any(issubclass(ParameterError, e) for e in cli.USER_ERRORS)
    assert not any(issubclass(RuntimeError, e) for e in cli.USER_ERRORS)


def test_format_error_is_one_line():
    assert cli.format_error(FileNotFoundError(2, "No such file or directory", "a.json")) == (
        "a.json: No such file or directory"
    )
    assert cli.format_error(ParameterError("first\nsecond")) == "first second"


def _fake_command_module(monkeypatch, behaviour):
    """Register a module ``asyncdp_fake_cmd`` with a ``fake`` command running ``behaviour``."""
    mod = types.ModuleType("asyncdp_fake_cmd")

    def register(subparsers):
        p = subparsers.add_parser("fake", help="test command")
        p.set_defaults(func=lambda args: behaviour())

    mod.register = register  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "asyncdp_fake_cmd", mod)
    monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, "asyncdp_fake_cmd"))


def test_commands_come_from_command_modules(monkeypatch, capsys):
    _fake_command_module(monkeypatch, lambda: print("fake ran") or 3)
    assert cli.main(["fake"]) == 3
    assert capsys.readouterr().out == "fake ran\n"


@pytest.mark.parametrize(
    "exc",
    [
        ParameterError("bad parameter B=0\nsecond line"),
        SweepError("bad grid parameter 'x' (value [])"),
        TranscriptError("unknown transcript file suffix '.csv'"),
        AsyncdpError("any asyncdp error"),
        FileNotFoundError(2, "No such file or directory", "nope.json"),
        IsADirectoryError(21, "Is a directory", "somedir"),
        PermissionError(13, "Permission denied", "secret.json"),
    ],
)
def test_user_error_gives_one_line_and_exit_2(monkeypatch, capsys, exc):
    def boom():
        raise exc

    _fake_command_module(monkeypatch, boom)
    assert cli.main(["fake"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("asyncdp: error: ")
    assert "Traceback" not in captured.err and captured.out == ""


def test_programming_errors_are_not_swallowed(monkeypatch):
    def boom():
        raise RuntimeError("a bug")

    _fake_command_module(monkeypatch, boom)
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main(["fake"])


def test_python_dash_m_version_and_help():
    res = _run("--version")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "asyncdp 0.1.0"
    res = _run("--help")
    assert res.returncode == 0 and "topology" in res.stdout


def test_python_dash_m_usage_error_exits_2():
    res = _run("topology", "audit")
    assert res.returncode == 2
    assert "the following arguments are required" in res.stderr
    assert "Traceback" not in res.stderr


def test_console_script_runs():
    script = Path(sys.executable).parent / "asyncdp"
    if not script.exists():
        pytest.skip("console script not installed next to the interpreter")
    res = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "asyncdp 0.1.0"


def test_every_command_has_help(capsys):
    """`asyncdp --help` and each sub-command's `--help` exit 0 and describe themselves."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert {"run", "topology"} <= set(sub.choices)
    for name in sub.choices:
        assert cli.main([name, "--help"]) == 0
        assert capsys.readouterr().out.startswith(f"usage: asyncdp {name}")
