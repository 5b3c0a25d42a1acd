"""``asyncdp sweep`` loses no finished work: checkpoints, ``--resume``, dead workers, Ctrl-C, a full disk.

The command runs in a subprocess. The sweep script below is small (six
agents, 15 rounds) and carries deterministic hooks, switched on by marker
files, that kill a worker process or interrupt the sweep at a given point:

* ``kill_once``: the first *worker* process (not the command's own) that builds
  the point ``epsilon=3`` removes the marker and kills itself with SIGKILL;
* ``kill_always``: every worker process that builds ``epsilon=3`` kills itself;
* ``interrupt``: holding a number ``n``, the command's own process sends
  itself SIGINT (as Ctrl-C does) in its ``n``-th factory call;
* ``slow``: worker processes take half a second per chunk.

Every factory call appends its process id to ``calls.log``. With the
in-process executor the command calls the factory once per chunk it runs,
plus once to check point 0 before anything starts.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

SCRIPT = """
import multiprocessing
import os
import signal
import time
from pathlib import Path

from asyncdp import Huang2015

HERE = Path({here!r})


def factory(epsilon):
    with open(HERE / "calls.log", "a") as fh:
        fh.write(f"{{os.getpid()}}\\n")
    worker = multiprocessing.parent_process() is not None
    if worker and (HERE / "slow").exists():
        time.sleep(0.5)
    if worker and epsilon == 3:
        if (HERE / "kill_always").exists():
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            (HERE / "kill_once").unlink()  # exactly one process claims the kill
        except FileNotFoundError:
            pass
        else:
            os.kill(os.getpid(), signal.SIGKILL)
    interrupt = HERE / "interrupt"
    if not worker and interrupt.exists():
        mine = (HERE / "calls.log").read_text().split().count(str(os.getpid()))
        if mine >= int(interrupt.read_text()):
            interrupt.unlink()
            os.kill(os.getpid(), signal.SIGINT)
    base = Huang2015.example_scenario(seed=3)
    return base.replace(algorithm=Huang2015(epsilon=epsilon, c=0.2, q=0.8, p=0.9), horizon=15)
"""

# 2 points x 3 chunks of 2 runs = 6 chunks
ARGS = ["--grid", "epsilon=1,3", "--runs", "6", "--chunk-runs", "2", "--seed", "5"]
CHUNKS = 6
TIMEOUT = 240

# the command with a full disk from the 4th chunk file on: half the bytes are written, then ENOSPC
FULL_DISK = """
import errno, sys
from asyncdp.experiments import checkpoint
from asyncdp.cli import main

real, count = checkpoint._write_bytes, [0]

def full(path, data):
    if path.name.endswith(".part.npz"):
        count[0] += 1
        if count[0] >= 4:
            with open(path, "wb") as fh:
                fh.write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
    real(path, data)

checkpoint._write_bytes = full
sys.exit(main(sys.argv[1:]))
"""


def make_work(folder: Path) -> Path:
    (folder / "scenario.py").write_text(SCRIPT.format(here=str(folder)))
    return folder


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return make_work(tmp_path)


def asyncdp(work: Path, *args: str, prefix: tuple[str, ...] = ("-m", "asyncdp"),
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    (work / "calls.log").unlink(missing_ok=True)
    return subprocess.run([sys.executable, *prefix, *args], cwd=work, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False, env=None if env is None else {**os.environ, **env})


def sweep_args(work: Path, out: str, *extra: str, script: str = "scenario.py") -> list[str]:
    return ["sweep", str(work / script), *ARGS, "--out", str(work / out), *extra]


def calls(work: Path) -> int:
    return len((work / "calls.log").read_text().split())


def chunk_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("p*-c*-*.npz"))


def assert_complete(folder: Path) -> None:
    """Every chunk file's bytes match the checksum in its name; no temporary file is left."""
    for path in chunk_files(folder):
        assert hashlib.sha256(path.read_bytes()).hexdigest() == path.stem.rsplit("-", 1)[1], path
    assert not [p for p in folder.iterdir() if p.name.endswith(".part.npz")]


def error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("asyncdp: error:")]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The uninterrupted sweep's table, as bytes (the script's folder does not enter the numbers)."""
    work = make_work(tmp_path_factory.mktemp("reference"))
    proc = asyncdp(work, *sweep_args(work, "ref.csv"))
    assert proc.returncode == 0, proc.stderr
    assert calls(work) == 2 + CHUNKS  # the point check (two calls), then every chunk
    assert not (work / "ref.csv.checkpoint").exists()  # removed once the table is written
    return (work / "ref.csv").read_bytes()


def interrupt_at_half(work: Path) -> subprocess.CompletedProcess[str]:
    """Ctrl-C in the command's 6th factory call: after the point check (two calls) + 3 chunks, while building the
    4th."""
    (work / "interrupt").write_text("6")
    proc = asyncdp(work, *sweep_args(work, "out.csv"))
    assert proc.returncode == 130, proc.stderr
    return proc


def test_ctrl_c_keeps_finished_chunks_and_resume_runs_only_the_rest(work, reference):
    proc = interrupt_at_half(work)
    assert "Traceback" not in proc.stderr
    folder = work / "out.csv.checkpoint"
    assert len(chunk_files(folder)) == 3 and not (work / "out.csv").exists()
    assert_complete(folder)
    assert f"3 of {CHUNKS} chunks finished and kept in {folder}" in proc.stderr
    assert "in flight were abandoned" in proc.stderr
    resume = re.search(r"^asyncdp: resume with: (.*)$", proc.stderr, re.M)
    assert resume is not None, proc.stderr
    argv = shlex.split(resume.group(1))
    assert argv[:2] == ["asyncdp", "sweep"] and argv[-1] == "--resume"

    # the printed command, as printed
    again = asyncdp(work, *argv[1:])
    assert again.returncode == 0, again.stderr
    assert calls(work) == 2 + (CHUNKS - 3)  # the point check (two calls), then only the three missing chunks
    assert (work / "out.csv").read_bytes() == reference
    assert not folder.exists()


def test_ctrl_c_to_the_process_group_stops_the_worker_processes_quietly(work, reference):
    """As a terminal's Ctrl-C: SIGINT to the command and its worker processes alike, chunks in flight."""
    (work / "slow").touch()
    (work / "calls.log").unlink(missing_ok=True)
    folder = work / "out.csv.checkpoint"
    proc = subprocess.Popen([sys.executable, "-m", "asyncdp", *sweep_args(work, "out.csv", "--executor", "processes",
                                                                          "--workers", "2")],
                            cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while len(chunk_files(folder)) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    kept = len(chunk_files(folder))
    assert 2 <= kept < CHUNKS
    assert f"{kept} of {CHUNKS} chunks finished and kept" in stderr
    workers = {int(pid) for pid in (work / "calls.log").read_text().split()} - {proc.pid}
    assert workers, "no worker process ran"
    for pid in workers:  # every worker process is gone (none left orphaned)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    (work / "slow").unlink()
    again = asyncdp(work, *sweep_args(work, "out.csv", "--resume"))
    assert again.returncode == 0, again.stderr
    assert calls(work) == 2 + CHUNKS - kept  # the point check (two calls), the chunks not kept
    assert (work / "out.csv").read_bytes() == reference


def test_sigkill_of_the_whole_command_leaves_complete_chunks_and_no_stale_lock(work, reference):
    """A crash of the command itself (SIGKILL to it and its workers): no clean-up code runs at all."""
    (work / "slow").touch()
    (work / "calls.log").unlink(missing_ok=True)
    folder = work / "out.csv.checkpoint"
    proc = subprocess.Popen([sys.executable, "-m", "asyncdp", *sweep_args(work, "out.csv", "--executor", "processes",
                                                                          "--workers", "2")],
                            cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while len(chunk_files(folder)) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    kept = len(chunk_files(folder))
    assert 2 <= kept < CHUNKS
    for path in chunk_files(folder):  # a temporary file may be left if the kill came mid-write; never a chunk
        assert hashlib.sha256(path.read_bytes()).hexdigest() == path.stem.rsplit("-", 1)[1], path
    (work / "slow").unlink()
    again = asyncdp(work, *sweep_args(work, "out.csv", "--resume"))  # the dead command's lock is gone with it
    assert again.returncode == 0, again.stderr
    assert calls(work) == 2 + CHUNKS - kept  # the point check (two calls), the chunks not kept
    assert (work / "out.csv").read_bytes() == reference


def test_existing_checkpoint_is_not_overwritten_and_a_different_sweep_cannot_resume(work, reference):
    interrupt_at_half(work)
    folder = work / "out.csv.checkpoint"
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.name != "lock"}

    plain = asyncdp(work, *sweep_args(work, "out.csv"))
    lines = error_lines(plain.stderr)
    assert plain.returncode == 2 and len(lines) == 1 and len(plain.stderr.strip().splitlines()) == 1
    assert "already holds a sweep" in lines[0] and "--resume" in lines[0] and "delete the folder" in lines[0]

    (work / "other.py").write_text(SCRIPT.format(here=str(work)) + "\n# another script\n")
    changed = {
        "grid": ["sweep", str(work / "scenario.py"), "--grid", "epsilon=1,4", *ARGS[2:]],
        "runs": ["sweep", str(work / "scenario.py"), *ARGS[:3], "8", *ARGS[4:]],
        "engine": ["sweep", str(work / "scenario.py"), *ARGS, "--engine", "simpy"],
        "factory": ["sweep", str(work / "other.py"), *ARGS],
    }
    for field, argv in changed.items():
        proc = asyncdp(work, *argv, "--out", str(work / "out.csv"), "--resume")
        lines = error_lines(proc.stderr)
        assert proc.returncode == 2 and len(lines) == 1 and len(proc.stderr.strip().splitlines()) == 1, field
        assert "cannot resume" in lines[0] and f"{field} (" in lines[0], (field, lines[0])
        assert calls(work) == 2, field  # the point check (two calls) only: no chunk ran
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name != "lock"} == before  # untouched

    # another executor may resume it
    proc = asyncdp(work, *sweep_args(work, "out.csv", "--resume", "--executor", "processes", "--workers", "2"))
    assert proc.returncode == 0, proc.stderr
    assert (work / "out.csv").read_bytes() == reference


def test_truncated_chunk_is_detected_and_run_again(work, reference):
    interrupt_at_half(work)
    folder = work / "out.csv.checkpoint"
    victim = chunk_files(folder)[1]
    victim.write_bytes(victim.read_bytes()[:100])
    proc = asyncdp(work, *sweep_args(work, "out.csv", "--resume"))
    assert proc.returncode == 0, proc.stderr
    warning = [line for line in proc.stderr.splitlines() if "truncated or corrupt" in line]
    assert len(warning) == 1 and victim.name in warning[0] and "running it again" in warning[0]
    assert calls(work) == 2 + (CHUNKS - 3) + 1
    assert (work / "out.csv").read_bytes() == reference


def test_full_disk_is_one_error_line_and_leaves_only_complete_chunks(work, reference):
    proc = asyncdp(work, *sweep_args(work, "out.csv"), prefix=("-c", FULL_DISK))
    lines = error_lines(proc.stderr)
    assert proc.returncode == 2 and len(lines) == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "No space left on device" in lines[0] and "chunk 0 of point 1 (epsilon=3)" in lines[0]
    assert "3 of 6 chunks" in lines[0] and "--resume" in lines[0]
    folder = work / "out.csv.checkpoint"
    assert len(chunk_files(folder)) == 3 and not (work / "out.csv").exists()
    assert_complete(folder)
    again = asyncdp(work, *sweep_args(work, "out.csv", "--resume"))
    assert again.returncode == 0, again.stderr
    assert (work / "out.csv").read_bytes() == reference


def test_killed_process_worker_is_retried_and_the_table_is_bitwise_equal(work, reference):
    (work / "kill_once").touch()
    proc = asyncdp(work, *sweep_args(work, "out.csv", "--executor", "processes", "--workers", "2"))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (work / "kill_once").exists()  # a worker did die
    notes = [line for line in proc.stderr.splitlines() if "killed by signal 9" in line]
    assert len(notes) == 1 and "of point 1 (epsilon=3)" in notes[0] and "retry 1 of 2" in notes[0]
    assert (work / "out.csv").read_bytes() == reference


def test_worker_that_keeps_dying_stops_the_sweep_in_one_line_keeping_finished_chunks(work, reference):
    (work / "kill_always").touch()
    proc = asyncdp(work, *sweep_args(work, "out.csv", "--executor", "processes", "--workers", "1", "--retries", "1"))
    lines = error_lines(proc.stderr)
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "chunk 0 of point 1 (epsilon=3) failed: its worker process was killed by signal 9 (SIGKILL), " \
           "often the system's out-of-memory killer" in lines[0]
    assert "3 of 6 chunks finished" in lines[0] and "--resume" in lines[0]
    folder = work / "out.csv.checkpoint"
    assert len(chunk_files(folder)) == 3  # one worker: point 0's chunks, in order, before the first death
    (work / "kill_always").unlink()
    again = asyncdp(work, *sweep_args(work, "out.csv", "--resume", "--executor", "processes", "--workers", "1"))
    assert again.returncode == 0, again.stderr
    assert (work / "out.csv").read_bytes() == reference


def test_killed_dask_worker_is_replaced_and_the_table_is_bitwise_equal(work, reference):
    (work / "kill_once").touch()
    proc = asyncdp(work, *sweep_args(work, "out.csv", "--executor", "dask", "--local-cluster", "2"))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (work / "kill_once").exists()  # a worker did die
    assert (work / "out.csv").read_bytes() == reference


def test_dask_killed_worker_is_one_error_line_keeping_finished_chunks(work):
    (work / "kill_always").touch()
    no_retry = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}  # KilledWorker at the first death
    proc = asyncdp(work, *sweep_args(work, "out.csv", "--executor", "dask", "--local-cluster", "1"), env=no_retry)
    lines = error_lines(proc.stderr)
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    # Dask blames every task the dying worker held (running or queued), so the chunk named may be another one
    assert re.search(r"chunk \d of point \d \(epsilon=\d\) failed: the Dask workers running it died \(KilledWorker, "
                     r"after the scheduler's allowed retries; a worker killed by a signal, often the system's "
                     r"out-of-memory killer", lines[0]), lines[0]
    kept = len(chunk_files(work / "out.csv.checkpoint"))
    assert f"{kept} of {CHUNKS} chunks finished, kept in" in lines[0] and "--resume" in lines[0]


def test_ctrl_c_before_any_chunk_finished_keeps_nothing(tmp_path, capsys):
    from asyncdp.cli import main

    script = tmp_path / "early.py"
    script.write_text("from asyncdp import Huang2015\n\nCALLS = []\n\n\ndef factory(epsilon):\n"
                      "    CALLS.append(epsilon)\n"
                      "    if len(CALLS) == 3:  # the first chunk, after the point check (two calls)\n"
                      "        raise KeyboardInterrupt\n"
                      "    return Huang2015.example_scenario(seed=3).replace(horizon=15)\n")
    assert main(["sweep", str(script), *ARGS, "--out", str(tmp_path / "out.csv")]) == 130
    err = capsys.readouterr().err.splitlines()
    assert err == [f"asyncdp: sweep interrupted before any of its {CHUNKS} chunks finished; nothing was kept",
                   "asyncdp: interrupted"]
    assert list(tmp_path.iterdir()) == [script]  # no table, no checkpoint folder
