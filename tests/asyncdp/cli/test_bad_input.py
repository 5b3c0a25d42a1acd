"""Issue 17: bad input never ends in a traceback, a hang or a silent accept.

Each class of bad input runs the command (``python -m asyncdp`` in a
subprocess, or :func:`asyncdp.cli.main` in-process where a failure must be
simulated with monkeypatch) and checks the exit code and the one
``asyncdp: error:`` line on stderr, with no traceback.
"""

from __future__ import annotations

import importlib
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


# -- 2. seeds -----------------------------------------------------------------------------------------

USAGE_ERROR = re.compile(r"^asyncdp( [\w-]+)*: error: ")


def usage_error_line(stderr: str) -> str:
    """argparse's usage error: usage lines, then one ``asyncdp CMD: error:`` line; no traceback."""
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if USAGE_ERROR.match(line)]
    assert len(errors) == 1, stderr
    return errors[0]


@pytest.mark.parametrize("argv", [
    ["privacy", "check", str(REPO / "examples" / "privacy_check_rendezvous.py"), "--seed", "-1"],
    ["demo", "--seed", "-1"],
    ["run", str(GOOD_SCRIPT), "--seed", "-1"],
    ["sweep", str(REPO / "examples" / "sweep_epsilon.py"), "--seed", "-1"],
    ["reproduce", "huang2015-fig1", "--seed", "-1"],
])
def test_negative_seed_is_a_usage_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(argv) == 2
    line = usage_error_line(capsys.readouterr().err)
    assert "argument --seed: value must be >= 0, got -1" in line


@pytest.mark.parametrize("argv, command, hint", [
    (["sweep", str(REPO / "examples" / "sweep_epsilon.py"), "--rnus", "5"], "asyncdp sweep",
     "unrecognized arguments: --rnus 5 (--rnus: did you mean --runs?)"),
    (["privacy", "check", str(REPO / "examples" / "privacy_check_rendezvous.py"), "--rns=5", "--jsn", "x.json"],
     "asyncdp privacy check", "(--rns: did you mean --runs?; --jsn: did you mean --json?)"),
    (["topology", "audit", "g.json", "--algorithm", "huang2015", "--b", "2"], "asyncdp topology audit",
     "(--b: did you mean --B?)"),
])
def test_a_misspelt_option_is_named_by_its_command_with_the_option_meant(capsys: pytest.CaptureFixture[str],
                                                                          argv: list[str], command: str,
                                                                          hint: str) -> None:
    """The top-level parser said "asyncdp: error: unrecognized arguments: --rnus 5" under the top-level usage."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {command} ") and f"{command}: error: " in err and hint in err


def test_negative_seed_in_the_api() -> None:
    from asyncdp import Huang2015
    from asyncdp.errors import ScenarioError
    from asyncdp.experiments.demo import run_demo
    from asyncdp.privacy.check import check_privacy

    sc = Huang2015.example_scenario()
    with pytest.raises(ScenarioError, match="seed must be >= 0, got -1"):
        check_privacy(sc, sc, runs=10, seed=-1)
    with pytest.raises(ScenarioError, match="run_demo: seed must be >= 0, got -1"):
        run_demo(seed=-1)


# -- 3. output paths ----------------------------------------------------------------------------------

RUN = ["run", str(GOOD_SCRIPT), "--horizon", "3"]
CHECK = ["privacy", "check", str(REPO / "examples" / "privacy_check_rendezvous.py"), "--runs", "20",
         "--search-examples", "0"]
SWEEP = ["sweep", str(REPO / "examples" / "sweep_epsilon.py"), "--grid", "epsilon=1", "--runs", "2"]
GENERATE = ["topology", "generate", "static", "--graph", "ring", "--nodes", "5"]


def _ring_file(tmp_path: Path) -> Path:
    ring = tmp_path / "ring.json"
    if not ring.exists():
        assert main([*GENERATE, "-o", str(ring)]) == 0
    return ring


# (name, argv before the option, option, file name): every file output option of every command
FILE_OUTPUTS = [
    ("run-json", RUN, "--json", "out.json"),
    ("run-ledger", RUN, "--ledger", "ledger.csv"),
    ("run-transcript", RUN, "--transcript", "t.npz"),
    ("check-json", CHECK, "--json", "report.json"),
    ("check-worst-pair", CHECK, "--worst-pair", "pair.py"),
    ("sweep-out", SWEEP, "--out", "rows.csv"),
    ("generate-o", GENERATE, "-o", "g.json"),
    ("audit-out", ["topology", "audit", "RING", "--algorithm", "huang2015"], "--out", "audit.txt"),
    ("privacy-audit-json", ["privacy", "audit", "MECH", "--samples", "200"], "--json", "audit.json"),
]
DIR_OUTPUTS = [("demo", ["demo"], "--out"), ("reproduce", ["reproduce", "huang2015-fig1"], "--out")]

MECH = "import numpy as np\nepsilon = 1.0\ndata, data_prime = 0, 1\n" \
       "def mechanism(d, rng):\n    return int(d + rng.integers(2))\n"


def _argv(tmp_path: Path, argv: list[str]) -> list[str]:
    out = []
    for a in argv:
        if a == "RING":
            a = str(_ring_file(tmp_path))
        elif a == "MECH":
            (tmp_path / "mech.py").write_text(MECH)
            a = str(tmp_path / "mech.py")
        out.append(a)
    return out


def _computing_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail if a command starts computing (the output checks must come first)."""
    import asyncdp.scenario

    def no(*_a: object, **_k: object) -> None:
        raise AssertionError("computed before checking the output path")

    monkeypatch.setattr(asyncdp.scenario, "load_script", no)
    monkeypatch.setattr(asyncdp.experiments.factories.ScriptFactory, "from_path", no)


@pytest.mark.parametrize("errno_code", ["EROFS", "ENOSPC", "EACCES"])
@pytest.mark.parametrize("case", [c[0] for c in FILE_OUTPUTS] + [c[0] for c in DIR_OUTPUTS])
def test_unwritable_output_fails_before_computing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str], case: str,
                                                  errno_code: str) -> None:
    import errno
    import os

    import asyncdp.cli.outputs as outputs
    import asyncdp.experiments.factories  # noqa: F401

    spec = {c[0]: c[1:] for c in FILE_OUTPUTS} | {c[0]: (*c[1:], "d") for c in DIR_OUTPUTS}
    argv, option, name = spec[case]
    argv = _argv(tmp_path, argv)
    code = getattr(errno, errno_code)

    def mkstemp(*_a: object, **_k: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(outputs.tempfile, "mkstemp", mkstemp)
    _computing_forbidden(monkeypatch)
    target = tmp_path / "sub" / name
    line = main_error(capsys, [*argv, option, str(target)])
    assert line.startswith(f"asyncdp: error: {option} {target}") and os.strerror(code) in line


@pytest.mark.parametrize("case", [c[0] for c in FILE_OUTPUTS])
def test_full_disk_while_writing_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str], case: str) -> None:
    import errno
    import os

    import asyncdp.cli.outputs as outputs

    argv, option, name = {c[0]: c[1:] for c in FILE_OUTPUTS}[case]
    argv = _argv(tmp_path, argv)
    out_dir = tmp_path / "o"

    real_replace = os.replace

    def replace(src: str, dst: str) -> None:  # the disk fills up while the output file itself is written
        if Path(dst).name != name:
            return real_replace(src, dst)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(outputs.os, "replace", replace)
    code = 1 if case == "check-worst-pair" else 2  # no worst pair is written on a pass
    if case == "check-worst-pair":
        argv = [a.replace("privacy_check_rendezvous", "privacy_check_weak_noise") for a in argv]
    line = main_error(capsys, [*argv, option, str(out_dir / name)], code=2) if code == 2 else None
    if line is not None:
        assert line.startswith(f"asyncdp: error: {option} {out_dir / name}: cannot write: No space left on device")
    else:
        assert main([*argv, option, str(out_dir / name)]) == 2
        assert one_error_line(capsys.readouterr().err).endswith("cannot write: No space left on device")
    # neither the file nor a temporary file; a sweep keeps its finished chunks, so --resume only writes the table
    kept = ["rows.csv.checkpoint"] if case == "sweep-out" else []
    assert [p.name for p in out_dir.iterdir()] == kept


@pytest.mark.parametrize("argv, fail_at", [
    (["demo"], 1),  # the demo's one file, demo.png
    (["reproduce", "showkatbakhsh-fig4", "--runs", "2"], 2),  # fig4.csv written, then the figure fails
])
def test_full_disk_while_writing_a_directory_output_leaves_complete_files_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str],
        fail_at: int) -> None:
    """demo / reproduce: each file is complete or absent; no temporary file is left; one error line."""
    import errno
    import os

    real_replace = os.replace
    calls: list[str] = []
    out = tmp_path / "o"

    def replace(src: str, dst: str) -> None:
        if Path(dst).parent == out:  # only the command's outputs (libraries rename their own caches)
            calls.append(str(dst))
            if len(calls) == fail_at:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    line = main_error(capsys, [*argv, "--out", str(out)])
    assert line == f"asyncdp: error: {calls[-1]}: No space left on device"
    left = sorted(p.name for p in out.iterdir())
    assert left == sorted(Path(c).name for c in calls[:-1])  # the files renamed before the failure, nothing else
    for name in left:
        assert (out / name).stat().st_size > 0


def test_interrupted_reproduction_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    import matplotlib.figure

    def savefig(self: object, fname: object, **_k: object) -> None:
        Path(str(fname)).write_bytes(b"half a png")
        raise KeyboardInterrupt

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    out = tmp_path / "o"
    assert main(["reproduce", "showkatbakhsh-fig4", "--runs", "2", "--out", str(out)]) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == "asyncdp: interrupted"
    assert sorted(p.name for p in out.iterdir()) == ["fig4.csv"]  # the figure is absent, not half written


def test_write_interrupted_leaves_no_partial_file(tmp_path: Path) -> None:
    from asyncdp.cli.outputs import prepare_file

    target = tmp_path / "r.json"
    target.write_text("old")
    out = prepare_file(target, "--json", (".json",))

    def writer(tmp: Path) -> None:
        tmp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        out.write(writer)
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"] and target.read_text() == "old"


@pytest.mark.parametrize("case", [c[0] for c in FILE_OUTPUTS])
def test_output_under_an_existing_file_or_a_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str], case: str) -> None:
    import asyncdp.experiments.factories  # noqa: F401

    argv, option, name = {c[0]: c[1:] for c in FILE_OUTPUTS}[case]
    argv = _argv(tmp_path, argv)
    _computing_forbidden(monkeypatch)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    line = main_error(capsys, [*argv, option, str(blocker / name)])
    assert line == f"asyncdp: error: {option} {blocker / name}: {blocker} is a file, not a directory"
    folder = tmp_path / name
    folder.mkdir()
    line = main_error(capsys, [*argv, option, str(folder)])
    assert line == f"asyncdp: error: {option} {folder}: is a directory"


@pytest.mark.parametrize("case", [c[0] for c in DIR_OUTPUTS])
def test_out_dir_that_is_or_sits_under_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str], case: str) -> None:
    argv, option = {c[0]: c[1:] for c in DIR_OUTPUTS}[case]
    blocker = tmp_path / "file"
    blocker.write_text("x")
    line = main_error(capsys, [*argv, option, str(blocker)])
    assert line == f"asyncdp: error: {option} {blocker}: is a file, not a directory"
    line = main_error(capsys, [*argv, option, str(blocker / "fig")])
    assert line == f"asyncdp: error: {option} {blocker / 'fig'}: {blocker} is a file, not a directory"


@pytest.mark.parametrize("case", ["run-ledger", "run-transcript", "check-json", "check-worst-pair",
                                  "sweep-out", "generate-o"])
def test_output_suffix_checked_before_computing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str], case: str) -> None:
    import asyncdp.experiments.factories  # noqa: F401

    argv, option, name = {c[0]: c[1:] for c in FILE_OUTPUTS}[case]
    _computing_forbidden(monkeypatch)
    line = main_error(capsys, [*_argv(tmp_path, argv), option, str(tmp_path / "out.xlsx")])
    assert str(tmp_path / "out.xlsx") in line and "suffix" in line


@pytest.mark.parametrize("case", ["run-json", "generate-o", "audit-out", "sweep-out"])
def test_missing_parents_created_and_existing_file_replaced_with_a_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    argv, option, name = {c[0]: c[1:] for c in FILE_OUTPUTS}[case]
    argv = _argv(tmp_path, argv)
    target = tmp_path / "a" / "b" / name
    assert main([*argv, option, str(target)]) == 0
    assert target.is_file() and "replaced" not in capsys.readouterr().err
    first = target.stat().st_mode & 0o777
    assert first & 0o044 == 0o044 or first == 0o644 & ~0o022  # not the 0600 of a temporary file
    assert main([*argv, option, str(target)]) == 0
    err = capsys.readouterr().err
    assert f"asyncdp: replaced existing file {target}" in err.splitlines()
    assert sorted(p.name for p in target.parent.iterdir()) == [name]


def test_sigint_exits_130_in_one_line_without_partial_file(tmp_path: Path) -> None:
    import signal
    import time

    script = tmp_path / "long.py"
    script.write_text(
        "import sys\nfrom asyncdp import Huang2015\n"
        "scenario = Huang2015.example_scenario().replace(horizon=10**6)\n"
        "print('loaded', file=sys.stderr, flush=True)\n")
    out = tmp_path / "o" / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "asyncdp", "run", str(script), "--json", str(out)],
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    deadline = time.time() + 60
    while time.time() < deadline and "loaded" not in proc.stderr.readline():
        pass
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "asyncdp: interrupted"
    assert list(out.parent.iterdir()) == []


@pytest.mark.parametrize("how", ["module", "console script"])
def test_interrupt_inside_a_string_eval_still_exits_130(tmp_path: Path, how: str) -> None:
    # CPython marks a KeyboardInterrupt leaving a nested eval of a string as unhandled and would end the
    # process by SIGINT (-2) although the CLI handled it; the executable must still exit with 130
    import shutil

    script = tmp_path / "interrupted.py"
    script.write_text("def _interrupt():\n    raise KeyboardInterrupt\n\neval('_interrupt()')\n")
    exe = shutil.which("asyncdp", path=str(Path(sys.executable).parent))
    if how == "console script" and exe is None:
        pytest.skip("no asyncdp executable beside this interpreter")
    argv = [sys.executable, "-m", "asyncdp"] if how == "module" else [str(exe)]
    proc = subprocess.run([*argv, "run", str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "asyncdp: interrupted" and "Traceback" not in proc.stderr


# -- 4. resource guards -------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, parameter", [
    (["run", str(GOOD_SCRIPT), "--horizon", "1e8"], "--horizon 100000000 (with 10 agents)"),
    (["privacy", "check", str(REPO / "examples" / "privacy_check_rendezvous.py"), "--runs", "1e10"],
     "--runs 10000000000"),
    (["sweep", str(REPO / "examples" / "sweep_epsilon.py"), "--runs", "1e10"], "--runs 10000000000"),
    (["reproduce", "dpsda-olr", "--runs", "1e10", "--out", "OUTDIR"], "--runs 10000000000"),
    (["privacy", "audit", "MECH", "--samples", "1e12"], "--samples 1000000000000"),
    (["reproduce", "huang2015-fig1", "--tune-runs", "1e10", "--out", "OUTDIR"], "--tune-runs 10000000000"),
    (["topology", "generate", "static", "--graph", "ring", "--nodes", "1e7", "-o", "OUT"], "--nodes 10000000"),
    (["topology", "generate", "static", "--graph", "complete", "--nodes", "1e5", "-o", "OUT"], "--nodes 100000"),
    (["topology", "generate", "erdos-renyi", "--nodes", "1e5", "--p", "0.5", "--rounds", "10", "-o", "OUT"],
     "--nodes 100000"),
])
def test_memory_refused_up_front(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str], argv: list[str], parameter: str) -> None:
    import asyncdp.cli.arguments as arguments

    monkeypatch.setattr(arguments, "available_memory", lambda: 8 * 10**9)
    argv = [str(tmp_path / "g.json") if a == "OUT" else str(tmp_path / "d") if a == "OUTDIR" else a for a in argv]
    argv = _argv(tmp_path, argv)
    line = main_error(capsys, argv)
    assert line.startswith(f"asyncdp: error: {parameter}") and "of memory" in line
    assert line.endswith("this machine has 8 GB available: use a smaller value")
    assert not (tmp_path / "g.json").exists()


@pytest.mark.parametrize("argv, option", [
    (["run", str(GOOD_SCRIPT), "--horizon", "1e400"], "--horizon"),
    (["privacy", "check", str(REPO / "examples" / "privacy_check_rendezvous.py"), "--runs", "1e400"], "--runs"),
    (["sweep", str(REPO / "examples" / "sweep_epsilon.py"), "--runs", "1e400"], "--runs"),
    (["reproduce", "huang2015-fig1", "--runs", "1e400"], "--runs"),
    (["topology", "generate", "static", "--graph", "ring", "--nodes", "1e400", "-o", "OUT"], "--nodes"),
])
def test_a_count_beyond_int64_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               argv: list[str], option: str) -> None:
    """``--horizon 1e400`` was read as 10**400, and the memory guard's float of it raised OverflowError (traceback)."""
    argv = [str(tmp_path / "g.json") if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    line = usage_error_line(capsys.readouterr().err)
    assert f"argument {option}: value must be at most 2**63 - 1, got '1e400'" in line
    assert not (tmp_path / "g.json").exists()


def test_counts_accept_scientific_notation_but_not_fractions(capsys: pytest.CaptureFixture[str]) -> None:
    from asyncdp.cli import build_parser

    assert build_parser().parse_args(["run", "x.py", "--horizon", "1e3"]).horizon == 1000
    assert main(["run", "x.py", "--horizon", "2.5"]) == 2
    assert "expected an integer, got '2.5'" in usage_error_line(capsys.readouterr().err)


def test_scientific_notation_is_read_exactly() -> None:
    """``--seed 1e23`` is the seed 10**23; through a float it was 99999999999999991611392 (another run, silently)."""
    from asyncdp.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["run", "x.py", "--seed", "1e23"]).seed == 10**23
    assert parser.parse_args(["sweep", "x.py", "--seed", "2.5e30"]).seed == 25 * 10**29
    assert parser.parse_args(["run", "x.py", "--horizon", "1_000e1"]).horizon == 10_000


# -- 5. Dask scheduler --------------------------------------------------------------------------------

def test_scheduler_not_an_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # the default checkpoint folder (SCRIPT.py.checkpoint here) is this test's own
    line = main_error(capsys, ["sweep", str(REPO / "examples" / "sweep_epsilon.py"), "--grid", "epsilon=1",
                               "--executor", "dask", "--scheduler", "notanaddress"])
    assert "cannot connect to the Dask scheduler at 'notanaddress'" in line


def test_scheduler_that_is_not_dask_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    import asyncdp.experiments.executors as executors

    # the default checkpoint folder (SCRIPT.py.checkpoint in the current directory) is this test's own: a parallel
    # test's sweep of the same script would otherwise find it locked while this one waits for the connection
    monkeypatch.chdir(tmp_path)

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()  # accepts connections (the kernel does) but never speaks
    port = server.getsockname()[1]
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT", 1.0)
    try:
        line = main_error(capsys, ["sweep", str(REPO / "examples" / "sweep_epsilon.py"), "--grid", "epsilon=1",
                                   "--executor", "dask", "--scheduler", f"tcp://127.0.0.1:{port}"])
    finally:
        server.close()
    # the message is raised only once the connection attempt outlived the (patched) 1 s timeout: the command
    # gave up instead of waiting for Dask's own 30 s connect timeout or hanging (no wall-clock bound: CI is noisy)
    assert f"no Dask scheduler answered at 'tcp://127.0.0.1:{port}' within 1 s" in line


# -- 6. silent accepts --------------------------------------------------------------------------------

def test_run_warns_on_a_broken_assumption(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "rowstoch.py"
    script.write_text(
        "import networkx as nx, topology\nfrom asyncdp import Huang2015\n"
        "base = Huang2015.example_scenario()\n"
        "g = nx.DiGraph(); g.add_edges_from([(0, 1), (0, 2), (1, 0), (2, 3), (3, 4), (4, 5), (5, 0)])\n"
        "scenario = base.replace(topology=topology.from_networkx([g], 'row-stochastic', periodic=True), horizon=4)\n")
    assert main(["run", str(script)]) == 0
    err = capsys.readouterr().err
    assert "asyncdp: warning: the topology breaks assumption doubly_stochastic of huang2015" in err
    assert "Traceback" not in err
    assert main(["run", str(GOOD_SCRIPT), "--horizon", "3"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_run_warns_on_an_assumption_the_realized_mixing_breaks(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Huang et al. on a doubly stochastic, strongly connected topology over lossy links under deadline timing: the
    agents combine renormalized rows (columns no longer sum to 1, lost links cut the graph). ``asyncdp run`` audited
    the designed topology only and warned of nothing; an assumption the topology itself breaks is warned of once."""
    script = tmp_path / "lossy.py"
    script.write_text(
        "from asyncdp import Huang2015\nfrom asyncdp.engine.links import LinkModel, Links\n"
        "from asyncdp.engine.timing import Deadline\n"
        "scenario = Huang2015.example_scenario().replace(horizon=4, timing=Deadline(deadline=0.9),\n"
        "                                                links=Links(LinkModel(loss=0.5)))\n")
    assert main(["run", str(script)]) == 0
    err = capsys.readouterr().err
    assert re.search(r"asyncdp: warning: the run's realized mixing \(the weights combined after lost, late or missing "
                     r"messages\) breaks assumption doubly_stochastic of huang2015 \(.*\): round 1: (row|column) \d+ "
                     r"sums to [\d.]+; the paper's guarantees need not hold for this run", err), err
    assert "the topology breaks assumption doubly_stochastic" not in err
    script.write_text(script.read_text().replace("Huang2015.example_scenario()", "base")
                      .replace("from asyncdp import Huang2015\n", "import networkx as nx, topology\nfrom asyncdp "
                               "import Huang2015\nbase = Huang2015.example_scenario().replace(topology=topology."
                               "from_networkx([nx.path_graph(6)], 'row-stochastic', periodic=True))\n"))
    assert main(["run", str(script)]) == 0
    err = capsys.readouterr().err
    assert err.count("breaks assumption doubly_stochastic") == 1 and "the topology breaks assumption doubly" in err


def test_a_realized_mixing_equal_to_the_topology_is_not_audited_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lossless lockstep run combines with the topology's own weights: auditing its realized mixing, round by
    round, cost more than the run (1.6 s after a 1.2 s run of 30 agents x 1000 rounds) and could warn of nothing new.
    A lossy deadline run's realized mixing is still audited."""
    from asyncdp import Huang2015
    from asyncdp.cli.run import realized_assumption_warnings
    from asyncdp.engine.links import LinkModel, Links
    from asyncdp.engine.timing import Deadline

    audited = []
    module = importlib.import_module("topology.audit")  # the package's name ``audit`` is the function
    real_audit = module.audit
    monkeypatch.setattr(module, "audit", lambda seq, *a, **k: audited.append(seq) or real_audit(seq, *a, **k))
    sc = Huang2015.example_scenario().replace(horizon=6)
    run = sc.run()
    assert realized_assumption_warnings(sc, run.realized) == [] and all(seq is not run.realized for seq in audited)
    lossy = sc.replace(timing=Deadline(deadline=0.9), links=Links(LinkModel(loss=0.5)))
    run = lossy.run()
    assert realized_assumption_warnings(lossy, run.realized) and any(seq is run.realized for seq in audited)


@pytest.fixture()
def audit_bound(monkeypatch: pytest.MonkeyPatch) -> int:
    """``asyncdp run``'s audit bound lowered from 1000 to 30 rounds (auditing 1000 rounds took 4 to 6 s a test)."""
    monkeypatch.setattr(importlib.import_module("asyncdp.cli.run"), "AUDIT_MAX_ROUNDS", 30)
    return 30


def test_run_says_which_rounds_it_did_not_audit(audit_bound: int) -> None:
    """``asyncdp run`` audits the first AUDIT_MAX_ROUNDS rounds: a generated topology that disconnects at round 1001
    of 1200 got no warning at all; the rounds left out are now named (not for a horizon within the bound, nor for a
    periodic topology whose period it covers)."""
    import networkx as nx
    import numpy as np

    import topology
    from asyncdp import Huang2015
    from asyncdp.cli.run import assumption_warnings

    bound = audit_bound
    sc = Huang2015.example_scenario()
    w = topology.from_networkx([nx.complete_graph(6)], "metropolis").dense(1)
    late = topology.generated(6, lambda t: w if t <= bound else np.eye(6))
    assert assumption_warnings(sc.replace(topology=late, horizon=bound + 200)) == [
        f"rounds {bound + 1}..{bound + 200} of the topology were not audited against the assumptions of huang2015 "
        f"(asyncdp run audits the first {bound}): a break there is not warned of; topology.audit(scenario.topology, "
        f"..., horizon={bound + 200}) audits every round"]
    assert assumption_warnings(sc.replace(topology=late, horizon=bound)) == []
    assert assumption_warnings(sc.replace(topology=topology.static(w), horizon=bound + 200)) == []


def test_run_says_which_rounds_of_the_realized_mixing_it_did_not_audit(audit_bound: int) -> None:
    """The realized mixing of a run past AUDIT_MAX_ROUNDS rounds is audited over the first AUDIT_MAX_ROUNDS only: a
    run whose weights stop mixing at round 1001 of 1200 got no warning; the rounds left out are now named (not for a
    horizon within the bound)."""
    import networkx as nx
    import numpy as np

    import topology
    from asyncdp import Huang2015
    from asyncdp.cli.run import realized_assumption_warnings

    bound = audit_bound
    w = topology.from_networkx([nx.complete_graph(6)], "metropolis").dense(1)
    sc = Huang2015.example_scenario().replace(topology=topology.static(w), horizon=bound + 200)
    realized = topology.generated(6, lambda t: np.full((6, 6), 1 / 6) if t <= bound else np.eye(6),
                                  length=bound + 200)
    assert realized_assumption_warnings(sc, realized) == [
        f"rounds {bound + 1}..{bound + 200} of the run's realized mixing were not audited against the assumptions of "
        f"huang2015 (asyncdp run audits the first {bound}): a break there is not warned of; "
        f"topology.audit(result.realized, ..., horizon={bound + 200}) audits every round"]
    assert realized_assumption_warnings(sc.replace(horizon=bound), realized) == []


def test_run_seed_warns_when_the_scenario_brings_its_own_noise(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """``--seed`` replaces Scenario.seed, which a noise source of the script's own does not read: say so."""
    script = tmp_path / "own_noise.py"
    script.write_text("from asyncdp import Huang2015\nfrom asyncdp.noise import SeededNoise\n"
                      "scenario = Huang2015.example_scenario().replace(horizon=3, noise=SeededNoise(0))\n")
    assert main(["run", str(script), "--seed", "5"]) == 0
    err = capsys.readouterr().err
    assert "asyncdp: warning: --seed 5 does not change the privacy noise: the scenario brings its own noise source " \
           "(SeededNoise)" in err
    # lockstep lossless rounds: nothing else draws from the seed (the warning said clocks, links, initial states and
    # data change, which no stream does here: every --seed gave the same run)
    assert "nothing else in this scenario draws from Scenario.seed" in err and "initial states" not in err
    script.write_text("from asyncdp import Huang2015, Links, LinkModel, Lockstep\nfrom asyncdp.noise import SeededNoise\n"
                      "scenario = Huang2015.example_scenario().replace(horizon=3, noise=SeededNoise(0), "
                      "timing=Lockstep('renormalize'), links=Links(LinkModel(loss=0.2)))\n")
    assert main(["run", str(script), "--seed", "5"]) == 0
    assert "only the link losses and latencies and the agents' clocks change" in capsys.readouterr().err
    assert main(["run", str(GOOD_SCRIPT), "--seed", "5", "--horizon", "3"]) == 0
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize("kwargs, message", [
    ({"keep": "nothing"}, "keep must be one of ('all', 'final'), got 'nothing'"),
    ({"engine": "batch", "runs": 2, "keep": None}, "keep must be one of ('all', 'final'), got None"),
    ({"keep": "final"}, "keep='final', transcripts=False: batch engine options"),
    ({"transcripts": True}, "keep='all', transcripts=True: batch engine options"),
    ({"engine": "batch", "runs": 2, "transcripts": "yes"}, "transcripts must be True or False, got 'yes'"),
])
def test_run_keep_and_transcripts_are_checked(kwargs: dict[str, object], message: str) -> None:
    from asyncdp import Huang2015
    from asyncdp.errors import ScenarioError

    with pytest.raises(ScenarioError, match=re.escape(message)):
        Huang2015.example_scenario().run(**kwargs)


def test_showkatbakhsh_horizon_shorter_than_both_stages_warns(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from asyncdp import Showkatbakhsh

    sc = Showkatbakhsh.example_scenario()  # T = 15, T2 = 5
    with pytest.warns(UserWarning, match=r"horizon 10 .* \(T \+ T2 = 15 \+ 5\); Stage II never runs"):
        sc.replace(horizon=10)
    with pytest.warns(UserWarning, match="Stage II stops after 2 of its 5 rounds"):
        sc.replace(horizon=17)
    script = tmp_path / "short.py"
    script.write_text("from asyncdp import Showkatbakhsh\n"
                      "scenario = Showkatbakhsh.example_scenario().replace(horizon=10)\n")
    assert main(["run", str(script)]) == 0
    err = capsys.readouterr().err
    assert "asyncdp: warning: horizon 10 is shorter than the 20 rounds showkatbakhsh plans" in err
    assert "Traceback" not in err and "UserWarning" not in err


# -- 8. readable output -------------------------------------------------------------------------------

def test_print_result_is_a_short_summary() -> None:
    from asyncdp import Huang2015

    res = Huang2015.example_scenario().run()
    text = str(res)
    assert text.splitlines()[0].startswith("Result(huang2015: 6 agents in 2-d, 25 rounds, optimality_error=")
    assert "optimality_error" in text and "array" not in text and len(text.splitlines()) <= 12
    assert repr(res).count("\n") == 0 and "array" not in repr(res)


@pytest.mark.parametrize("name, citation", [
    ("huang2015", "Huang, Mitra and Vaidya (ICDCN 2015)"),
    ("showkatbakhsh", "Showkatbakhsh, Karakus and Diggavi (arXiv 2019)"),
    ("wang-basar", "Wang and Basar (Automatica 2023)"),
    ("dpsda-c", "Cheng, Liao and Li (arXiv 2022)"),
])
def test_papers_are_named_by_authors_and_year(name: str, citation: str) -> None:
    from accounting.papers import get_accountant

    assert get_accountant(name).paper == citation


def test_privacy_report_cites_authors_not_seed_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["privacy", "check", str(REPO / "examples" / "privacy_check_rendezvous.py"), "--runs", "60",
                 "--search-examples", "0"]) == 0
    out = capsys.readouterr().out
    assert "Huang, Mitra and Vaidya (ICDCN 2015), Theorem 5" in out and "seed 00" not in out


def test_reproduce_shows_progress_while_it_runs(tmp_path: Path) -> None:
    """The progress lines stream while the reproduction runs (they are not held back until the end)."""
    proc = subprocess.Popen([sys.executable, "-m", "asyncdp", "reproduce", "huang2015-fig1", "--out",
                             str(tmp_path / "fig1")], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        second = proc.stderr.readline()
        still_running = proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
    assert first.startswith(f"reproducing huang2015-fig1 into {tmp_path / 'fig1'}")
    assert second.startswith("epsilon=0.1 (1/") and "tuning (c, q, p)" in second
    assert still_running, "the progress lines arrived only when the reproduction had finished"


def test_reproduce_prints_where_it_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    import asyncdp.reproduce as reproduce

    reproduce.EXPERIMENTS  # noqa: B018 - load the registry

    def fake(out_dir: str, **_k: object) -> dict[str, object]:
        path = Path(out_dir) / "fig.csv"
        path.write_text("a\n")
        return {"files": {"csv": str(path)}}

    monkeypatch.setitem(reproduce.EXPERIMENTS, "huang2015-fig1", fake)
    monkeypatch.setitem(reproduce.TABLES, "huang2015-fig1", lambda s: "table")
    out = tmp_path / "o"
    for replaced in (False, True):
        assert main(["reproduce", "huang2015-fig1", "--out", str(out)]) == 0
        cap = capsys.readouterr()
        assert cap.out.splitlines()[-2:] == [f"wrote 1 file(s) to {out}:", f"  {out / 'fig.csv'}"]
        assert (f"asyncdp: replaced existing file {out / 'fig.csv'}" in cap.err) is replaced


def test_reproduce_missing_optional_package_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import asyncdp.reproduce as reproduce

    reproduce.EXPERIMENTS  # noqa: B018

    def fake(out_dir: str, **_k: object) -> dict[str, object]:
        raise ModuleNotFoundError("No module named 'mlxtend'", name="mlxtend")

    monkeypatch.setitem(reproduce.EXPERIMENTS, "dpsda-classification", fake)
    line = main_error(capsys, ["reproduce", "dpsda-classification", "--out", str(tmp_path)])
    assert "needs the optional package 'mlxtend'" in line and "pip install" in line


def test_reproduce_failed_check_is_explained(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    import asyncdp.reproduce as reproduce

    reproduce.EXPERIMENTS  # noqa: B018

    def fake(out_dir: str, runs: int = 5000, **_k: object) -> dict[str, object]:
        return {"checks": [{"name": "slope", "holds": False, "criterion": "d ~ eps^-2"},
                           {"name": "falls", "holds": True, "criterion": "d decreasing"}]}

    monkeypatch.setitem(reproduce.EXPERIMENTS, "huang2015-fig1", fake)
    monkeypatch.setitem(reproduce.TABLES, "huang2015-fig1", lambda s: "table")
    assert main(["reproduce", "huang2015-fig1", "--runs", "50", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert ("asyncdp: warning: 1 of 2 reproduction checks failed (slope): the paper's trend did not show at these "
            "settings; the [FAIL] lines above give each criterion; --runs 50 is below the experiment's default "
            "5000") in err


def test_run_warns_on_a_disconnected_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "split.py"
    script.write_text(
        "import networkx as nx, topology\nfrom asyncdp import Huang2015\n"
        "base = Huang2015.example_scenario()\n"
        "g = nx.Graph(); g.add_edges_from([(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)])\n"
        "scenario = base.replace(topology=topology.from_networkx([g], 'metropolis', periodic=True), horizon=4)\n")
    assert main(["run", str(script)]) == 0
    err = capsys.readouterr().err
    assert "asyncdp: warning: the topology breaks assumption strongly_connected of huang2015" in err


def test_long_run_is_announced(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncdp.cli.run as run

    monkeypatch.setattr(run, "LONG_RUN", 30)
    assert main(["run", str(GOOD_SCRIPT), "--horizon", "3"]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line]  # the bar redraws itself after "\r"
    assert lines[0].startswith("asyncdp: running 10 agents x 3 rounds on the SimPy engine (about ")
    assert re.match(r"simpy run: +0%.* 0\.00/30\.0 ", lines[1])  # the bar, drawn before the first round
    assert re.match(r"simpy run: 100%.* 30\.0/30\.0 ", lines[-2])
    assert lines[-1].startswith("asyncdp: run finished in ")
    assert main(["run", str(GOOD_SCRIPT), "--horizon", "2"]) == 0
    assert "running" not in capsys.readouterr().err


def test_check_privacy_adjacent_not_a_scenario_and_probe_rounds_zero() -> None:
    from asyncdp import Huang2015
    from asyncdp.errors import ScenarioError
    from asyncdp.privacy.check import check_privacy

    sc = Huang2015.example_scenario()
    with pytest.raises(ScenarioError, match="check_privacy: adjacent must be an asyncdp Scenario, got 'x'"):
        check_privacy(sc, "x", runs=10)  # type: ignore[arg-type]
    with pytest.raises(ScenarioError, match="check_privacy: probe_rounds must be >= 1, got 0"):
        check_privacy(sc, sc, runs=10, probe_rounds=0)


def test_print_batch_result_is_a_short_summary() -> None:
    from asyncdp import Huang2015

    batch = Huang2015.example_scenario().run("batch", runs=3, keep="final")
    assert repr(batch).startswith("BatchResult(huang2015: 3 runs, 6 agents in 2-d, 25 rounds, optimality_error mean=")
    text = str(batch)
    assert "array" not in text and "optimality_error_mean" in text and len(text.splitlines()) <= 8


def test_privacy_check_help_lists_exit_codes_and_every_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["privacy", "check", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "exit codes: 0 pass, 1 violation, 3 inconclusive, 4 no-claim, 2 unusable input" in text
    for option, default in [("--runs RUNS", "2000"), ("--delta DELTA", "1e-06"), ("--confidence CONFIDENCE", "0.95"),
                            ("--seed SEED", "0"), ("--engine {auto,batch,simpy}", "auto"),
                            ("--search-examples SEARCH_EXAMPLES", "30")]:
        after = text.split("options:", 1)[1].split(option, 1)[1]  # the option's own help line
        assert f"(default: {default})" in after.split(" --", 1)[0], option


def test_a_reader_that_went_away_is_exit_141_not_the_violation_code(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # a report longer than the pipe's buffer, read by ``| head``: the write fails with EPIPE; exit 1 would read as
    # privacy check's "violation" under ``set -o pipefail``
    import asyncdp.cli.privacy as privacy_cli

    def reader_gone(args: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(privacy_cli, "check_command", reader_gone)
    assert main(["privacy", "check", str(REPO / "examples" / "privacy_check_rendezvous.py")]) == 141
    assert "Traceback" not in capsys.readouterr().err


def test_a_short_output_whose_reader_went_away_is_exit_141_not_120(tmp_path: Path) -> None:
    # below the pipe's buffer the write fails only at the interpreter's exit flush (exit 120, "Exception ignored")
    # unless main flushes; PYTHONUNBUFFERED would hide this, so it is removed
    import os

    ring = tmp_path / "ring.json"
    assert main(["topology", "generate", "static", "--graph", "ring", "--nodes", "5", "--rounds", "3",
                 "-o", str(ring)]) == 0
    read, write = os.pipe()
    os.close(read)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    done = subprocess.run([sys.executable, "-m", "asyncdp", "topology", "info", str(ring)], stdout=write,
                          stderr=subprocess.PIPE, env=env, timeout=60)
    os.close(write)
    assert (done.returncode, done.stderr) == (141, b"")


def test_privacy_check_memory_guard_counts_what_the_check_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """huang2015 with 50 agents, dim 10, 200 rounds and --runs 1000 peaks at 14.9 GB (measured, /usr/bin/time); the
    guard estimated 3.5 GB (16 bytes per coordinate) and let it start with 12 GB available. Now refused up front."""
    import asyncdp.cli.arguments as arguments
    import asyncdp.privacy.check as check

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("the check started")

    monkeypatch.setattr(arguments, "available_memory", lambda: 12 * 10**9)
    monkeypatch.setattr(check, "check_privacy", started)
    script = tmp_path / "big.py"
    script.write_text(
        "import numpy as np\nimport topology\nfrom asyncdp import Huang2015, Scenario, rendezvous_problem\n"
        "a = np.random.default_rng(3).uniform(-1, 1, size=(50, 10))\nproblem = rendezvous_problem(a)\n"
        "w = 0.5 * np.eye(50) + 0.5 * np.roll(np.eye(50), 1, axis=0)\n"
        "scenario = Scenario(problem, topology.periodic([w]), Huang2015(epsilon=1.0, c=0.05, q=0.9, p=0.97),\n"
        "                    horizon=200, seed=3)\n"
        "adjacent = scenario.replace(problem=problem.adjacent(0, address=-np.ones(10)))\n")
    line = main_error(capsys, ["privacy", "check", str(script), "--runs", "1000"])
    assert line.startswith("asyncdp: error: --runs 1000 needs about 19.5 GB of memory") and "19.5 MB per run" in line


def test_privacy_check_memory_guard_counts_every_link_copy_in_unicast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """huang2015 unicast, 20 agents, dim 10, 50 rounds, --runs 400 peaks at 11.7 GB (measured, /usr/bin/time): its
    messages are (runs, rounds, agents, agents, dim). The guard counted one message per sender (0.7 GB) and let it
    start with 8 GB available; now each link's copy is counted (15.6 GB) and it is refused."""
    import asyncdp.cli.arguments as arguments
    import asyncdp.privacy.check as check

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("the check started")

    monkeypatch.setattr(arguments, "available_memory", lambda: 8 * 10**9)
    monkeypatch.setattr(check, "check_privacy", started)
    script = tmp_path / "unicast.py"
    script.write_text(
        "import numpy as np\nimport topology\nfrom asyncdp import Huang2015, Scenario, rendezvous_problem\n"
        "a = np.random.default_rng(3).uniform(-1, 1, size=(20, 10))\nproblem = rendezvous_problem(a)\n"
        "w = 0.5 * np.eye(20) + 0.25 * np.roll(np.eye(20), 1, axis=0) + 0.25 * np.roll(np.eye(20), -1, axis=0)\n"
        "scenario = Scenario(problem, topology.periodic([w]), Huang2015(epsilon=1.0, c=0.05, q=0.9, p=0.97),\n"
        "                    horizon=50, seed=3, mode='unicast')\n"
        "adjacent = scenario.replace(problem=problem.adjacent(0, address=-np.ones(10)))\n")
    line = main_error(capsys, ["privacy", "check", str(script), "--runs", "400"])
    assert line.startswith("asyncdp: error: --runs 400 needs about 15.6 GB of memory")
