"""Sweep checkpoints through the Python API (asyncdp.experiments.checkpoint, ``sweep(checkpoint=..., resume=...)``).

The command line's acceptance tests (subprocesses, killed workers, Ctrl-C) are
in tests/asyncdp/cli/test_sweep_checkpoint.py.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from pandas.testing import assert_frame_equal

from asyncdp import Huang2015, Scenario
from asyncdp.errors import SweepError
from asyncdp.experiments import checkpoint as checkpoint_module
from asyncdp.experiments import identity as identity_module
from asyncdp.experiments.checkpoint import (
    MANIFEST,
    Checkpoint,
    SweepInterrupted,
    SweepStopped,
    fingerprint,
    remove_checkpoint,
)
from asyncdp.experiments.executors import death_cause
from asyncdp.experiments.factories import ScriptFactory
from asyncdp.experiments.grid import grid_points
from asyncdp.experiments.sweep import sweep

GRID = {"epsilon": [1.0, 3.0]}
KW = {"runs": 5, "seed": 4, "chunk_runs": 2}  # 2 points x 3 chunks
CHUNKS = 6


class CallLog:
    """The factory's calls. A module-level value the factory reads is part of the sweep's fingerprint through its
    repr, which this log keeps fixed: the calls it records do not change what the factory computes."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def append(self, value: float) -> None:
        self.calls.append(value)

    def clear(self) -> None:
        self.calls.clear()

    def __len__(self) -> int:
        return len(self.calls)

    def __iter__(self):
        return iter(self.calls)

    def __eq__(self, other: object) -> bool:
        return self.calls == other

    def __repr__(self) -> str:
        return "CallLog()"


CALLS = CallLog()


def counting_factory(epsilon: float) -> Scenario:
    """Six agents, 15 rounds; every call is recorded in CALLS."""
    CALLS.append(epsilon)
    base = Huang2015.example_scenario(seed=3)
    return base.replace(algorithm=Huang2015(epsilon=epsilon, c=0.2, q=0.8, p=0.9), horizon=15)


def other_factory(epsilon: float) -> Scenario:
    """The same scenarios from another function: another sweep as far as a checkpoint can tell."""
    return counting_factory(epsilon)


@pytest.fixture(autouse=True)
def _reset_calls():
    CALLS.clear()


@pytest.fixture(scope="module")
def reference() -> object:
    return sweep(counting_factory, GRID, **KW)


def files(folder: Path) -> list[Path]:
    return sorted(folder.glob("p*-c*-*.npz"))


def test_each_chunk_is_a_checksummed_file_and_resume_reads_them_back(tmp_path, reference):
    folder = tmp_path / "a" / "run.checkpoint"
    df = sweep(counting_factory, GRID, checkpoint=folder, **KW)
    assert_frame_equal(df, reference, check_exact=True)
    names = [p.name for p in files(folder)]
    assert [n[:15] for n in names] == [f"p{p:06d}-c{k:06d}" for p in range(2) for k in range(3)]
    for path in files(folder):
        assert hashlib.sha256(path.read_bytes()).hexdigest() == path.stem.split("-")[2]
        with np.load(path) as npz:  # plain arrays, no pickle needed for the built-in columns
            assert {"run", "task_seed", "optimality_error"} <= set(npz.files)
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["chunks"] == CHUNKS and manifest["sweep"]["runs"] == 5 and manifest["sweep"]["engine"] == "batch"
    CALLS.clear()
    again = sweep(counting_factory, GRID, checkpoint=folder, resume=True, **KW)
    assert_frame_equal(again, reference, check_exact=True)
    assert len(CALLS) == 2  # the point check (two calls) only: every chunk came from the folder


def test_resume_runs_only_missing_chunks(tmp_path, reference):
    folder = tmp_path / "ck"
    sweep(counting_factory, GRID, checkpoint=folder, **KW)
    for path in files(folder)[2:4]:  # chunk 2 of point 0, chunk 0 of point 1
        path.unlink()
    CALLS.clear()
    df = sweep(counting_factory, GRID, checkpoint=folder, resume=True, executor="inprocess", **KW)
    assert CALLS == [1.0, 1.0, 1.0, 3.0]  # the point check (two calls), then the two missing chunks
    assert_frame_equal(df, reference, check_exact=True)
    assert len(files(folder)) == CHUNKS


def test_truncated_or_corrupt_chunk_is_run_again_with_a_warning(tmp_path, reference):
    folder = tmp_path / "ck"
    sweep(counting_factory, GRID, checkpoint=folder, **KW)
    short, flipped = files(folder)[0], files(folder)[4]
    short.write_bytes(short.read_bytes()[:-7])
    raw = bytearray(flipped.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    flipped.write_bytes(bytes(raw))
    CALLS.clear()
    with pytest.warns(RuntimeWarning, match="truncated or corrupt") as record:
        df = sweep(counting_factory, GRID, checkpoint=folder, resume=True, **KW)
    assert {str(w.message).split("(")[1].split(")")[0] for w in record} == {short.name, flipped.name}
    assert CALLS == [1.0, 1.0, 1.0, 3.0]
    assert_frame_equal(df, reference, check_exact=True)


def test_chunk_file_under_another_chunks_name_is_run_again(tmp_path, reference):
    folder = tmp_path / "ck"
    sweep(counting_factory, GRID, checkpoint=folder, **KW)
    first, second = files(folder)[:2]  # chunks 0 and 1 of point 0
    first.unlink()
    second.rename(folder / f"p000000-c000000-{second.stem.split('-')[2]}.npz")  # intact bytes, wrong runs
    CALLS.clear()
    with pytest.warns(RuntimeWarning, match="chunk 0 of point 0 .* is not the runs this chunk holds"):
        df = sweep(counting_factory, GRID, checkpoint=folder, resume=True, **KW)
    assert CALLS == [1.0, 1.0, 1.0, 1.0]  # the point check (two calls), chunks 0 and 1
    assert_frame_equal(df, reference, check_exact=True)


def test_chunk_file_copied_from_another_sweeps_folder_is_run_again(tmp_path, reference):
    """Before: a chunk of another sweep (same grid size, runs, chunking and seed; another factory) copied into the
    folder, e.g. when merging two machines' checkpoints, was reused silently: its rows entered this sweep's table."""
    other, folder = tmp_path / "other", tmp_path / "ck"
    sweep(other_factory, {"epsilon": [2.0, 5.0]}, checkpoint=other, **KW)
    sweep(counting_factory, GRID, checkpoint=folder, **KW)
    files(folder)[1].unlink()
    stranger = files(other)[1]  # chunk 1 of point 0 of the other sweep: the same runs, other values
    stranger.rename(folder / stranger.name)
    CALLS.clear()
    with pytest.warns(RuntimeWarning, match="chunk 1 of point 0 .* is written by another sweep"):
        df = sweep(counting_factory, GRID, checkpoint=folder, resume=True, **KW)
    assert CALLS == [1.0, 1.0, 1.0]  # the point check (two calls), chunk 1 of point 0
    assert_frame_equal(df, reference, check_exact=True)


def test_leftover_temporary_file_is_removed(tmp_path, reference):
    folder = tmp_path / "ck"
    sweep(counting_factory, GRID, checkpoint=folder, **KW)
    files(folder)[5].unlink()
    part = folder / ".p000001-c000002-abc.npz.x1y2.part.npz"
    part.write_bytes(b"half a chunk")
    manifest_part = folder / f".{MANIFEST}.x1y2.part.json"
    manifest_part.write_text("{")
    df = sweep(counting_factory, GRID, checkpoint=folder, resume=True, **KW)
    assert not part.exists() and not manifest_part.exists()
    assert_frame_equal(df, reference, check_exact=True)


def test_existing_checkpoint_needs_resume(tmp_path):
    folder = tmp_path / "ck"
    sweep(counting_factory, GRID, checkpoint=folder, **KW)
    with pytest.raises(SweepError, match=r"already holds a sweep \(6 of 6 chunks.*resume=True.*delete the folder"):
        sweep(counting_factory, GRID, checkpoint=folder, **KW)
    assert len(files(folder)) == CHUNKS  # untouched


def test_existing_checkpoint_of_another_sweep_says_it_cannot_be_resumed(tmp_path):
    # a sweep that stopped (say on a bad grid value) leaves its chunks; the corrected command, with another grid,
    # was told to resume it "if it is this one", and a resume then failed: the folder's sweep is compared at once
    folder = tmp_path / "ck"
    sweep(counting_factory, GRID, checkpoint=folder, **KW)
    with pytest.raises(SweepError, match=r"already holds another sweep \(6 of 6 chunks finished; it differs in grid "
                                         r"\(.*cannot be resumed by this one; delete the folder.*--checkpoint DIR"):
        sweep(counting_factory, {"epsilon": [1.0, 4.0]}, checkpoint=folder, **KW)
    assert len(files(folder)) == CHUNKS  # untouched


@pytest.mark.parametrize(
    "change, field",
    [
        ({"runs": 6}, "runs"),
        ({"seed": 5}, "seed"),
        ({"chunk_runs": 3}, "chunk_runs"),
        ({"engine": "simpy"}, "engine"),
        ({"grid": {"epsilon": [1.0, 4.0]}}, "grid"),
        ({"grid": {"epsilon": [1, 3]}}, "grid"),  # ints, not floats: another table
        ({"metrics": lambda r, s: {"x": 1.0}}, "metrics"),
        ({"factory": other_factory}, "factory"),
    ],
)
def test_resume_of_another_sweep_names_what_differs(tmp_path, change, field):
    folder = tmp_path / "ck"
    sweep(counting_factory, GRID, checkpoint=folder, **KW)
    kw = {**KW, "factory": counting_factory, "grid": GRID, **change}
    factory, grid = kw.pop("factory"), kw.pop("grid")
    with pytest.raises(SweepError, match=rf"cannot resume: checkpoint .* belongs to another sweep: {field} \("):
        sweep(factory, grid, checkpoint=folder, resume=True, **kw)
    assert len(files(folder)) == CHUNKS  # untouched


def scaled_factory(epsilon: float, scale: float) -> Scenario:
    """``counting_factory`` at ``epsilon * scale``: ``partial(scaled_factory, scale=...)`` makes a family."""
    return counting_factory(epsilon * scale)


def make_factory(scale: float):
    """Factories of one source that differ only in the value their closure captured."""
    def factory(epsilon: float) -> Scenario:
        return counting_factory(epsilon * scale)
    return factory


@pytest.mark.parametrize(
    "first, second",
    [
        (make_factory(1.0), make_factory(100.0)),
        (functools.partial(scaled_factory, scale=1.0), functools.partial(scaled_factory, scale=100.0)),
    ],
    ids=["closure", "partial"],
)
def test_factories_of_one_source_with_other_captured_values_cannot_resume(tmp_path, first, second):
    folder = tmp_path / "ck"
    done = sweep(first, GRID, checkpoint=folder, **KW)
    assert not done.equals(sweep(second, GRID, **KW))  # another sweep indeed
    with pytest.raises(SweepError, match=r"belongs to another sweep: factory \("):
        sweep(second, GRID, checkpoint=folder, resume=True, **KW)
    assert_frame_equal(sweep(first, GRID, checkpoint=folder, resume=True, **KW), done, check_exact=True)



class _Scale:
    """A captured object with the default repr (``<... at 0x...>``): another instance, or the same one in another
    process, shows another address."""

    value = 1.0


def _opaque_factory(scale: _Scale):
    def factory(epsilon: float) -> Scenario:
        return counting_factory(epsilon * scale.value)
    return factory


def test_a_refused_resume_says_when_a_captured_repr_shows_a_memory_address(tmp_path):
    folder = tmp_path / "ck"
    first = _opaque_factory(_Scale())
    done = sweep(first, GRID, checkpoint=folder, **KW)
    assert_frame_equal(sweep(first, GRID, checkpoint=folder, resume=True, **KW), done, check_exact=True)
    with pytest.raises(SweepError, match=r"belongs to another sweep: factory \(.*memory address"):
        sweep(_opaque_factory(_Scale()), GRID, checkpoint=folder, resume=True, **KW)
    with pytest.raises(SweepError) as refused:  # a captured value with a readable repr: no such hint
        sweep(make_factory(100.0), GRID, checkpoint=tmp_path / "ck2", **KW)
        sweep(make_factory(1.0), GRID, checkpoint=tmp_path / "ck2", resume=True, **KW)
    assert "memory address" not in str(refused.value)

    def with_label(epsilon: float, label: object) -> Scenario:
        return counting_factory(epsilon)

    def grid() -> dict:  # a value with an address whose repr is over 200 characters (kept as its hash)
        return {**GRID, "label": [[_Scale(), "x" * 200]]}

    first_grid = grid()  # kept alive: a second _Scale() could otherwise reuse its address and show its repr
    sweep(with_label, first_grid, checkpoint=tmp_path / "ck3", runs=1)
    with pytest.raises(SweepError, match=r"belongs to another sweep: grid \(.*memory address"):
        sweep(with_label, grid(), checkpoint=tmp_path / "ck3", resume=True, runs=1)


def test_a_folder_of_another_sweep_says_when_a_captured_repr_shows_a_memory_address(tmp_path):
    # the same sweep in substance, run again without resume (as in a new process): the factory's fingerprint
    # differs only by an address, and the message must say so, as a refused resume does
    folder = tmp_path / "ck"
    sweep(_opaque_factory(_Scale()), GRID, checkpoint=folder, **KW)
    with pytest.raises(SweepError, match=r"already holds another sweep \(.*it differs in factory \(.*cannot be resumed "
                                         r"by this one \(a captured .*memory address.*\); delete the folder"):
        sweep(_opaque_factory(_Scale()), GRID, checkpoint=folder, **KW)
    assert len(files(folder)) == CHUNKS  # untouched


def test_large_arrays_that_differ_only_inside_are_other_sweeps():
    """numpy abbreviates an array of over 1000 elements with ``...`` in its repr: two such arrays with the same
    ends were the same grid point, and a closure capturing one the same factory."""
    a, b = np.zeros(2000), np.zeros(2000)
    b[1000] = 1.0
    assert "..." in repr(a) and repr(a) == repr(b)  # what the fingerprint read before
    keys = [fingerprint(make_factory(x), [{"w": x}], runs=1, chunk_runs=1, seed=0, engine="batch", metrics=None)
            for x in (a, b)]
    assert keys[0]["grid"] != keys[1]["grid"] and keys[0]["factory"] != keys[1]["factory"]
    assert "sha256:" in keys[0]["grid"][0][0]  # a large array is kept as its bytes' hash


def test_arrays_that_differ_beyond_the_eighth_digit_are_other_sweeps():
    """numpy prints an array's floats to 8 digits: ``[0.1, 0.2]`` and ``[0.1 + 1e-12, 0.2]`` looked alike, so a
    resume with such a changed grid value (or closure value) reused the other sweep's chunks."""
    a = np.array([0.1, 0.2])
    b = a.copy()
    b[0] += 1e-12
    assert repr(a) == repr(b)  # what the fingerprint read before
    keys = [fingerprint(make_factory(x), [{"w": x}], runs=1, chunk_runs=1, seed=0, engine="batch", metrics=None)
            for x in (a, b)]
    assert keys[0]["grid"] != keys[1]["grid"] and keys[0]["factory"] != keys[1]["factory"]
    assert keys[0]["grid"] == [["w=array([0.1, 0.2])"]]  # short arrays stay readable


def test_data_frames_that_differ_in_a_hidden_row_or_digit_are_other_sweeps():
    """pandas shows 60 rows and 6 decimals: a factory capturing a data table (or a grid value that is one) whose
    row 100 or 9th digit changed looked the same, and a resume reused the other sweep's chunks."""
    import pandas as pd

    a = pd.DataFrame({"x": np.linspace(0.0, 1.0, 200), "label": ["a" * 60] * 200})
    b, c, d = a.copy(), a.copy(), a.copy()
    b.loc[100, "x"] += 0.5
    c.loc[1, "x"] += 1e-9
    d.loc[1, "x"] = np.nextafter(d.loc[1, "x"], 1.0)  # one bit (17 decimals of 0.005 show 15 digits)
    assert repr(a) == repr(b) == repr(c) == repr(d)  # what the fingerprint read before
    keys = [fingerprint(make_factory(x), [{"w": x}], runs=1, chunk_runs=1, seed=0, engine="batch", metrics=None)
            for x in (a, b, c, d, a["x"], d["x"])]
    assert len({k["factory"] for k in keys}) == 6 and len({str(k["grid"]) for k in keys}) == 6


def base_factory(base: Scenario):
    """Factories of one source that vary a captured base scenario's algorithm."""
    def factory(epsilon: float) -> Scenario:
        return base.replace(algorithm=Huang2015(epsilon=epsilon, c=0.2, q=0.8, p=0.9))
    return factory


def test_scenarios_and_topologies_that_differ_in_their_data_are_other_sweeps(tmp_path):
    """A scenario's repr shows its cost family's sizes and its graph sequence's size and period, not the agents'
    addresses or the weights: a factory capturing a base scenario whose agent 0 moved, or a grid of two rings of
    other weights, looked the same, and a resume reused the other sweep's chunks."""
    import topology

    base = Huang2015.example_scenario().replace(horizon=4)
    moved = base.replace(problem=base.problem.adjacent(0, address=[0.5, 0.5]))
    assert repr(base) == repr(moved)  # what the fingerprint read before
    folder = tmp_path / "ck"
    done = sweep(base_factory(base), GRID, checkpoint=folder, **KW)
    assert not done.equals(sweep(base_factory(moved), GRID, **KW))  # another sweep indeed
    with pytest.raises(SweepError, match=r"belongs to another sweep: factory \("):
        sweep(base_factory(moved), GRID, checkpoint=folder, resume=True, **KW)
    same = Huang2015.example_scenario().replace(horizon=4)  # rebuilt: the same sweep
    assert_frame_equal(sweep(base_factory(same), GRID, checkpoint=folder, resume=True, **KW), done, check_exact=True)

    cycle = nx.to_numpy_array(nx.cycle_graph(6))
    ring, lazy = topology.periodic([cycle / 2]), topology.periodic([0.5 * np.eye(6) + cycle / 4])
    assert repr(ring) == repr(lazy)
    keys = [fingerprint(None, [{"g": g}], runs=1, chunk_runs=1, seed=0, engine="batch", metrics=None)["grid"]
            for g in (ring, lazy, topology.periodic([cycle / 2]))]
    assert keys[0] != keys[1] and keys[0] == keys[2]


def test_versions_are_part_of_the_sweep(tmp_path):
    folder = tmp_path / "ck"
    sweep(counting_factory, GRID, checkpoint=folder, **KW)
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["sweep"]["numpy"] = "0.0.1"
    (folder / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(SweepError, match=r"numpy \(0\.0\.1 in the checkpoint, "):
        sweep(counting_factory, GRID, checkpoint=folder, resume=True, **KW)


def test_script_factory_is_identified_by_its_content():
    src = "def factory(epsilon):\n    return epsilon\n"
    a = fingerprint(ScriptFactory(src, "a.py"), [{}], runs=1, chunk_runs=1, seed=0, engine="batch", metrics=None)
    b = fingerprint(ScriptFactory(src, "b.py"), [{}], runs=1, chunk_runs=1, seed=0, engine="batch", metrics=None)
    c = fingerprint(ScriptFactory(src + "# edited\n", "a.py"), [{}], runs=1, chunk_runs=1, seed=0, engine="batch",
                    metrics=None)
    assert a == b  # a moved script is the same sweep
    assert a["factory"] != c["factory"] and hashlib.sha256(src.encode()).hexdigest() in a["factory"]


def test_resume_without_a_checkpoint_folder_or_with_an_empty_one(tmp_path, reference):
    with pytest.raises(SweepError, match="resume=True needs the checkpoint folder"):
        sweep(counting_factory, GRID, resume=True, **KW)
    with pytest.warns(RuntimeWarning, match="no checkpoint to resume"):
        df = sweep(counting_factory, GRID, checkpoint=tmp_path / "new", resume=True, **KW)
    assert_frame_equal(df, reference, check_exact=True)


def test_a_checkpoint_in_use_is_locked(tmp_path):
    folder = tmp_path / "ck"
    key = fingerprint(counting_factory, grid_points(GRID), runs=5, chunk_runs=2, seed=4, engine="batch",
                      metrics=None)
    with Checkpoint.open(folder, key, [], resume=False):
        with pytest.raises(SweepError, match=r"in use by another running sweep \(process \d+\)"):
            sweep(counting_factory, GRID, checkpoint=folder, resume=True, **KW)
    # released on close: the same call now runs
    assert len(sweep(counting_factory, GRID, checkpoint=folder, resume=True, **KW)) == 10


def test_full_disk_stops_with_the_finished_chunks_kept(tmp_path, monkeypatch, reference):
    folder = tmp_path / "ck"
    real, written = checkpoint_module._write_bytes, []

    def full_disk(path: Path, data: bytes) -> None:
        if path.name.endswith(".part.npz") and len(written) == 2:
            path.write_bytes(data[:10])
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(path)
        real(path, data)

    monkeypatch.setattr(checkpoint_module, "_write_bytes", full_disk)
    with pytest.raises(SweepStopped, match=r"chunk 1 of point 0 .*No space left on device; the 1 of 6") as info:
        sweep(counting_factory, GRID, checkpoint=folder, **KW)
    assert (info.value.kept, info.value.total, info.value.folder) == (1, CHUNKS, folder)
    assert len(files(folder)) == 1 and not list(folder.glob(".*.part.npz"))
    monkeypatch.undo()
    assert_frame_equal(sweep(counting_factory, GRID, checkpoint=folder, resume=True, **KW), reference,
                       check_exact=True)


ARMED = CallLog()  # armed while it holds an entry; module-level with a fixed repr: not part of the identity


def test_ctrl_c_keeps_finished_chunks(tmp_path, reference):
    ARMED.clear()
    ARMED.append(1.0)

    def interrupting(epsilon: float) -> Scenario:
        if len(ARMED) and len(CALLS) == 5:  # point check (two calls) + 3 chunks done
            ARMED.clear()
            raise KeyboardInterrupt
        return counting_factory(epsilon)

    folder = tmp_path / "ck"
    with pytest.raises(SweepInterrupted, match=r"3 of 6 chunks finished; they are kept in .*resume=True") as info:
        sweep(interrupting, GRID, checkpoint=folder, **KW)
    assert isinstance(info.value, KeyboardInterrupt) and info.value.kept == 3
    assert len(files(folder)) == 3
    CALLS.clear()
    df = sweep(interrupting, GRID, checkpoint=folder, resume=True, **KW)
    assert len(CALLS) == 2 + 3
    assert_frame_equal(df, reference, check_exact=True)


def test_a_sweep_that_finished_no_chunk_leaves_no_checkpoint(tmp_path):
    folder = tmp_path / "ck"
    with pytest.raises(SweepError, match="active distributed.Client"):  # fails in the executor, after opening
        sweep(counting_factory, GRID, checkpoint=folder, executor="dask", **KW)
    assert not folder.exists()


def test_ctrl_c_without_checkpoint_says_nothing_was_kept():
    def interrupting(epsilon: float) -> Scenario:
        if len(CALLS) >= 2:  # after the point check (two calls)
            raise KeyboardInterrupt
        return counting_factory(epsilon)

    with pytest.raises(SweepInterrupted, match=r"0 of 6 chunks finished \(not kept: no checkpoint folder\)"):
        sweep(interrupting, GRID, **KW)


def test_worker_death_without_retries_names_chunk_point_and_cause(tmp_path):
    script = ScriptFactory(
        "import multiprocessing, os\n"
        "from asyncdp import Huang2015\n\n"
        "def factory(epsilon):\n"
        "    if multiprocessing.parent_process() is not None and epsilon == 3.0:\n"
        "        os._exit(3)\n"
        "    return Huang2015.example_scenario(seed=3).replace(horizon=15)\n",
        "dying.py",
    )
    folder = tmp_path / "ck"
    with pytest.raises(SweepStopped, match=r"chunk 0 of point 1 \(epsilon=3.0\) failed: its worker process was "
                                           r"exited with code 3 \(1 times; 0 retries allowed\); 3 of 6") as info:
        sweep(script, GRID, checkpoint=folder, executor="processes", workers=1, retries=0, **KW)
    assert info.value.kept == 3 and len(files(folder)) == 3
    with pytest.raises(SweepError, match="retries must be >= 0"):
        sweep(script, GRID, executor="processes", retries=-1, **KW)
    with pytest.raises(SweepError, match="retries applies to executor 'processes' only"):
        sweep(script, GRID, retries=1, **KW)


def test_death_cause_words():
    assert death_cause(-9) == "killed by signal 9 (SIGKILL), often the system's out-of-memory killer"
    assert death_cause(-15) == "killed by signal 15 (SIGTERM)"
    assert death_cause(1) == "exited with code 1"


def test_remove_checkpoint_leaves_other_files(tmp_path):
    folder = tmp_path / "ck"
    sweep(counting_factory, GRID, checkpoint=folder, **KW)
    (folder / "notes.txt").write_text("mine")
    remove_checkpoint(folder)
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    (folder / "notes.txt").unlink()
    sweep(counting_factory, GRID, checkpoint=folder, **KW)
    remove_checkpoint(folder)
    assert not folder.exists()


def test_a_removal_cut_short_leaves_a_checkpoint_that_resumes(tmp_path, monkeypatch, reference):
    folder = tmp_path / "ck"
    sweep(counting_factory, GRID, checkpoint=folder, **KW)
    listed = Path.iterdir
    removed: list[str] = []
    real_unlink = Path.unlink

    def manifest_first(self):  # whatever order the file system lists: here the manifest first
        return iter(sorted(listed(self), key=lambda p: p.name != MANIFEST))

    def unlink_twice_then_ctrl_c(self, missing_ok=False):
        if len(removed) == 2:
            raise KeyboardInterrupt
        removed.append(self.name)
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "iterdir", manifest_first)
    monkeypatch.setattr(Path, "unlink", unlink_twice_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        remove_checkpoint(folder)
    monkeypatch.undo()
    assert MANIFEST not in removed and len(files(folder)) == CHUNKS - 2
    CALLS.clear()
    df = sweep(counting_factory, GRID, checkpoint=folder, resume=True, **KW)
    assert len(CALLS) == 2 + 2  # the point check's two calls, then the two removed chunks
    assert_frame_equal(df, reference, check_exact=True)


def test_a_checkpoint_of_another_format_is_refused_naming_it(tmp_path):
    folder = tmp_path / "ck"
    sweep(counting_factory, GRID, checkpoint=folder, **KW)
    manifest = folder / MANIFEST
    found = json.loads(manifest.read_text(encoding="utf-8"))
    manifest.write_text(json.dumps({**found, "format": 1}), encoding="utf-8")  # an older layout: other columns
    with pytest.raises(SweepError, match=r"written in checkpoint format 1; this asyncdp reads format 2 only"):
        sweep(counting_factory, GRID, checkpoint=folder, resume=True, **KW)


def test_a_large_data_set_is_fingerprinted_by_its_bytes_quickly():
    """A factory capturing a problem built on a data set: its arrays are hashed, not printed (gigabytes of text)."""
    import time

    a = np.zeros((1000, 1000))
    b = a.copy()
    b[500, 500] = 1e-300
    started = time.perf_counter()
    keys = [fingerprint(make_factory(x), [{}], runs=1, chunk_runs=1, seed=0, engine="batch", metrics=None)["factory"]
            for x in (a, b)]
    assert keys[0] != keys[1] and time.perf_counter() - started < 1.0


def test_a_graph_sequence_that_fails_beyond_its_rounds_is_fingerprinted_up_to_them():
    """An infinite sequence whose round function knows 20 rounds (a sweep of horizon 20): reading 100 rounds for the
    fingerprint must not fail the sweep."""
    import topology

    def known(scale: float):
        mats = [scale * np.eye(3)] * 20
        return topology.generated(3, lambda t: mats[t - 1])

    assert grid_key(known(1.0)) == grid_key(known(1.0)) != grid_key(known(0.5))


def grid_key(value: object) -> list:
    return fingerprint(None, [{"v": value}], runs=1, chunk_runs=1, seed=0, engine="batch", metrics=None)["grid"]


def test_a_data_set_cost_family_is_fingerprinted_by_its_data():
    """BatchLoss describes no structure and its to_dict() holds only sizes: a factory capturing a base scenario whose
    data set changed (another data seed, one feature) looked the same, and a resume reused the other sweep's chunks."""
    from asyncdp.problems.online import BatchLoss

    rng = np.random.default_rng(0)
    features, labels = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3))
    changed = features.copy()
    changed[0, 0, 0] += 1.0
    fams = [BatchLoss("least-squares", f, labels, 2) for f in (features, changed, features.copy())]
    assert fams[0].to_dict() == fams[1].to_dict()  # what the fingerprint read before
    keys = [fingerprint(make_factory(f), [{}], runs=1, chunk_runs=1, seed=0, engine="batch", metrics=None)["factory"]
            for f in fams]
    assert keys[0] != keys[1] and keys[0] == keys[2]


def test_sets_are_fingerprinted_in_an_order_of_their_own():
    """A set's iteration order (its repr) depends on its insertion history and, for strings, on the process's hash
    seed: one sweep got another fingerprint in the resuming process, which then refused its own checkpoint."""
    assert repr({8, 16}) != repr({16, 8})  # equal sets, other reprs
    assert grid_key({8, 16}) == grid_key({16, 8}) != grid_key({8, 17})
    assert grid_key(frozenset({8, 16})) == grid_key(frozenset({16, 8})) != grid_key({8, 16})


def test_sparse_matrices_and_networkx_graphs_are_fingerprinted_by_their_weights():
    """A sparse matrix's repr shows its size and stored entries only: two weight matrices of other weights looked the
    same. A networkx graph's repr is its memory address: a sweep capturing one could never be resumed."""
    import scipy.sparse as sp

    a = sp.csr_array(np.array([[0.5, 0.5], [0.5, 0.5]]))
    b = sp.csr_array(np.array([[0.25, 0.75], [0.75, 0.25]]))
    assert repr(a) == repr(b)
    assert grid_key(a) != grid_key(b) and grid_key(a) == grid_key(sp.coo_array(a.toarray()).tocsr())
    g, h = nx.cycle_graph(4), nx.cycle_graph(4)
    nx.set_edge_attributes(h, 2.0, "weight")
    assert " at 0x" in repr(g)
    assert grid_key(g) != grid_key(h) and grid_key(g) == grid_key(nx.cycle_graph(4))


def test_infinite_graph_sequences_that_differ_after_the_rounds_hashed_are_other_sweeps():
    """Only the first GRAPH_ROUNDS_SHOWN rounds of an infinite sequence are hashed: two that switch graphs at rounds
    150 and 300 looked the same (a sweep of horizon 500 over them reused the other's chunks)."""
    import topology

    def switching(at: int):
        return topology.generated(3, lambda t: np.eye(3) if t < at else np.ones((3, 3)) / 3)

    assert grid_key(switching(150)) != grid_key(switching(300)) and grid_key(switching(150)) == grid_key(switching(150))


ROUNDS_ASKED = CallLog()


def test_a_long_graph_sequence_is_fingerprinted_quickly():
    """Every round of a finite sequence was generated and hashed: 2000 rounds of a random graph took 4.5 s per
    fingerprint. Past GRAPH_ROUNDS_SHOWN rounds its round function (its closure, a seed) tells the rest."""
    import topology
    from asyncdp.experiments.identity import GRAPH_ROUNDS_SHOWN

    ROUNDS_ASKED.clear()

    def seeded(seed: int):
        def round_function(t: int) -> np.ndarray:
            ROUNDS_ASKED.append(t)  # a global of a fixed repr: a closure value would change the identity
            return np.eye(3) if (t + seed) % 500 else np.ones((3, 3)) / 3
        return topology.generated(3, round_function, length=2000)

    keys = [grid_key(seeded(s)) for s in (1, 1, 2)]
    assert keys[0] == keys[1] != keys[2] and max(ROUNDS_ASKED) == GRAPH_ROUNDS_SHOWN
    long = [np.eye(3)] * 150
    changed = long[:149] + [np.ones((3, 3)) / 3]  # round 150 only
    assert grid_key(topology.from_matrices(long)) != grid_key(topology.from_matrices(changed))


C_READ = 0.2  # a module-level constant global_factory reads


def _c() -> float:
    """A helper global_factory calls: what it reads counts too."""
    return C_READ


def global_factory(epsilon: float) -> Scenario:
    base = Huang2015.example_scenario(seed=3)
    return base.replace(algorithm=Huang2015(epsilon=epsilon, c=_c(), q=0.8, p=0.9), horizon=15)


def test_a_module_level_value_the_factory_reads_is_part_of_the_sweep(tmp_path, monkeypatch):
    """Before: resuming after ``C_READ`` changed (here read through a helper) reused the chunks computed with the
    old value; the table mixed two sweeps, silently. Rerun from scratch, the resumed table differed."""
    folder = tmp_path / "ck"
    sweep(global_factory, GRID, checkpoint=folder, **KW)
    monkeypatch.setattr(f"{__name__}.C_READ", 0.1)
    with pytest.raises(SweepError, match=r"cannot resume: .*factory \(the module-level _c it reads changed"):
        sweep(global_factory, GRID, checkpoint=folder, resume=True, **KW)
    monkeypatch.undo()
    key = fingerprint(global_factory, [{}], runs=1, chunk_runs=1, seed=0, engine="batch", metrics=None)
    assert "C_READ" not in key["factory"] and "_c=" in key["factory"]  # the helper, whose identity holds C_READ
    sweep(global_factory, GRID, checkpoint=folder, resume=True, **KW)  # the value restored: the same sweep again


def test_factories_without_source_are_told_apart_by_their_code():
    """Before: a factory typed at a plain Python prompt (no source file) was its name alone, so a redefined
    ``factory`` with another body resumed the old one's checkpoint."""
    template = "def factory(epsilon):\n    return epsilon * {}\n"
    a, b, c = ({} for _ in range(3))
    exec(template.format(2), a)  # noqa: S102 - a function without source
    exec(template.format(3), b)  # noqa: S102
    exec(template.format(2), c)  # noqa: S102
    keys = [fingerprint(ns["factory"], [{}], runs=1, chunk_runs=1, seed=0, engine="batch", metrics=None)["factory"]
            for ns in (a, b, c)]
    assert keys[0] != keys[1] and keys[0] == keys[2]


class Knob:
    """A user's object read by a module-level value: its methods' reads count too."""

    def value(self) -> float:
        return C_READ


KNOB = Knob()


def knob_factory(epsilon: float) -> Scenario:
    base = Huang2015.example_scenario(seed=3)
    return base.replace(algorithm=Huang2015(epsilon=epsilon, c=KNOB.value(), q=0.8, p=0.9), horizon=15)


def test_a_value_a_user_objects_method_reads_is_part_of_the_factory(monkeypatch):
    def key() -> str:
        return fingerprint(knob_factory, [{}], runs=1, chunk_runs=1, seed=0, engine="batch", metrics=None)["factory"]

    before = key()
    monkeypatch.setattr(f"{__name__}.C_READ", 0.1)
    assert key() != before
    assert "KNOB=" in before and "C_READ" not in before


def test_a_script_reimported_on_a_worker_process_is_the_same_factory():
    """A worker process re-imports the main script as ``__mp_main__``: a factory defined in it read a helper whose
    identity named that module, and every task was refused as another factory than the sweep's (a false error)."""
    source = "C = 0.2\n\ndef helper():\n    return C\n\ndef factory(epsilon):\n    return epsilon * helper()\n"
    keys = []
    for name in ("__main__", "__mp_main__"):
        namespace: dict = {"__name__": name}
        exec(source, namespace)  # noqa: S102 - a script run as the main module, then re-imported by a worker
        keys.append(fingerprint(namespace["factory"], [{}], runs=1, chunk_runs=1, seed=0, engine="batch",
                                metrics=None)["factory"])
    assert keys[0] == keys[1] and "helper=" in keys[0]


def test_a_cached_helper_is_its_function_whatever_its_cache_holds():
    """A functools.lru_cache helper was its repr, a memory address: a factory using one could never resume."""
    namespace: dict = {"__name__": "user_module"}
    exec("import functools\n\n@functools.lru_cache\ndef data(n):\n    return [0.5] * n\n\n"  # noqa: S102
         "def factory(n):\n    return data(n)\n", namespace)

    def key() -> str:
        return fingerprint(namespace["factory"], [{}], runs=1, chunk_runs=1, seed=0, engine="batch",
                           metrics=None)["factory"]

    before = key()
    namespace["factory"](3)
    assert key() == before and "~address" not in before and "data=" in before


def test_a_module_level_value_whose_repr_fails_never_resumes_and_does_not_crash():
    namespace: dict = {"__name__": "user_module"}
    exec("class Broken:\n    def __repr__(self):\n        raise RuntimeError('not set up')\n\n"  # noqa: S102
         "CONF = Broken()\n\ndef factory(epsilon):\n    return CONF, epsilon\n", namespace)
    keys = [fingerprint(namespace["factory"], [{}], runs=1, chunk_runs=1, seed=0, engine="batch",
                        metrics=None)["factory"] for _ in range(2)]
    assert keys[0] != keys[1] and "CONF=" in keys[0] and "~address" in keys[0]
    assert identity_module._same_contents(namespace["CONF"], namespace["CONF"])  # the sweep's point check goes on


def _factory_key(fn) -> str:
    return fingerprint(fn, [{}], runs=1, chunk_runs=1, seed=0, engine="batch", metrics=None)["factory"]


def test_a_value_read_through_a_user_packages_submodule_is_part_of_the_factory():
    """Before: ``user_pkg.config.C`` (a module of the user's reached through another) was left out: changing C
    resumed the chunks computed with the old value."""
    import types

    pkg, config = types.ModuleType("user_pkg"), types.ModuleType("user_pkg.config")
    pkg.config, config.C, config.pkg = config, 0.1, pkg  # the two modules refer to each other
    namespace: dict = {"__name__": "user_module", "user_pkg": pkg}
    exec("def factory(epsilon):\n    return user_pkg.config.C * epsilon\n", namespace)  # noqa: S102
    before = _factory_key(namespace["factory"])
    config.C = 0.2
    assert _factory_key(namespace["factory"]) != before


CLASSES = """
import abc
import functools

GAIN = 0.1


class Base(abc.ABC):
    K = 0.1
    VALUES = [0.1, 0.2]

    def gain(self):
        return GAIN

    @functools.cached_property
    def cached(self):
        return 1.0


class Derived(Base):
    pass


def factory(epsilon):
    return Derived.K + Derived.VALUES[0] + Derived().gain()
"""


@pytest.mark.parametrize("change", ["K", "VALUES", "GAIN"])
def test_what_a_user_class_inherits_is_part_of_the_factory(change):
    """Before: a class was its own members only, and only those of a plain type (a number, a text): an attribute
    or a method inherited from a base class of the user's, or a list class attribute, changed unseen."""
    namespace: dict = {"__name__": "user_module"}
    exec(CLASSES, namespace)  # noqa: S102
    before = _factory_key(namespace["factory"])
    assert "~address" not in before  # an abc class's machinery and a cached_property do not stop a resume
    result = namespace["factory"](1.0)
    if change == "VALUES":
        namespace["Base"].VALUES[0] = 0.5
    elif change == "K":
        namespace["Base"].K = 0.5
    else:
        namespace["GAIN"] = 0.5
    assert namespace["factory"](1.0) != result and _factory_key(namespace["factory"]) != before


CALLABLES = """
SCALE = 2.0


class Factory:
    def __init__(self, c):
        self.c = c

    def __repr__(self):
        return f"Factory({self.c!r})"

    def __call__(self, epsilon):
        return self.c * epsilon * SCALE

    def bound(self, epsilon):
        return self.helper() * epsilon

    def helper(self):
        return SCALE
"""


@pytest.mark.parametrize("kind", ["callable object", "bound method"])
def test_a_callable_objects_class_code_and_reads_are_part_of_the_factory(kind):
    """Before: a callable object (with a repr of its settings) was its repr alone, a bound method its own code and
    object: the code of ``__call__`` or of the methods it calls, and the module-level values they read, changed
    unseen and resumed the old chunks."""
    namespace: dict = {"__name__": "user_module"}
    exec(CALLABLES, namespace)  # noqa: S102
    obj = namespace["Factory"](0.1)
    fn = obj if kind == "callable object" else obj.bound
    before = _factory_key(fn)
    namespace["SCALE"] = 3.0
    assert _factory_key(fn) != before


def test_a_scripts_logger_and_classes_are_the_same_in_a_worker_that_reimports_it():
    """Before: a script's ``log = logging.getLogger(__name__)`` or a dict holding a class of the script showed
    ``__mp_main__`` in a worker process's repr, so every task of a script's factory on the processes executor was
    refused as another factory (a false error)."""
    source = ("import logging\n\nlog = logging.getLogger(__name__)\n\n\nclass Kind:\n    pass\n\n\n"
              "KINDS = {'k': Kind}\n\n\ndef factory(epsilon):\n    log.debug('%s', KINDS)\n    return epsilon\n")
    keys = []
    for name in ("__main__", "__mp_main__"):
        namespace: dict = {"__name__": name}
        exec(source, namespace)  # noqa: S102 - a script run as the main module, then re-imported by a worker
        keys.append(_factory_key(namespace["factory"]))
    assert keys[0] == keys[1]


ENUMS = """
import enum
import typing


class Mode(enum.Enum):
    FAST = 1.0


class Settings(typing.NamedTuple):
    c: float = 0.1


def factory(epsilon):
    return Mode.FAST.value * Settings().c * epsilon
"""


@pytest.mark.parametrize("source", [ENUMS.replace("FAST = 1.0", "FAST = 2.0"), ENUMS.replace("= 0.1", "= 0.2")])
def test_a_user_enum_or_named_tuple_is_part_of_the_factory(source):
    """Before: an Enum or NamedTuple class of the user's counted as the enum or collections module's (a library's,
    its name alone), since its first function is theirs: another member value or default resumed the old chunks."""
    keys = []
    for text in (ENUMS, source):
        namespace: dict = {"__name__": "user_module"}
        exec(text, namespace)  # noqa: S102
        keys.append(_factory_key(namespace["factory"]))
    assert keys[0] != keys[1] and "~address" not in keys[0]


def test_a_module_level_data_set_is_fingerprinted_quickly():
    """Before: an array of under 100,000 elements was fingerprinted through numpy's full repr, quadratic in its
    size: a module-level data set of 60,000 floats the factory reads took several seconds, in the sweep's process and
    again in every task's check on a worker process (90,000: half a minute)."""
    import time

    data = np.random.default_rng(0).normal(size=60_000)
    namespace: dict = {"__name__": "user_module", "DATA": data}
    exec("def factory(epsilon):\n    return DATA[0] * epsilon\n", namespace)  # noqa: S102
    start = time.perf_counter()
    before = _factory_key(namespace["factory"])
    assert time.perf_counter() - start < 1.0  # about 5 ms
    data[37_000] += 1e-12
    assert _factory_key(namespace["factory"]) != before


def test_a_user_object_with_the_default_repr_is_its_attributes():
    """Before: a module-level object of the user's class with the default repr was its memory address: a factory
    reading one could never resume, and a worker process did not compare it, so ``module.CONF.c = 0.1`` set at
    run time gave the processes executor another table than inprocess, silently."""
    from asyncdp.experiments.identity import _identity_change

    source = "class Conf:\n    def __init__(self):\n        self.c = 0.2\n\n\nCONF = Conf()\n\n\n" \
             "def factory(epsilon):\n    return CONF.c * epsilon\n"
    keys = []
    for _ in range(2):  # two imports of one module (a resume, a worker process)
        namespace: dict = {"__name__": "user_module"}
        exec(source, namespace)  # noqa: S102
        keys.append(_factory_key(namespace["factory"]))
    assert keys[0] == keys[1] and "~address" not in keys[0]
    namespace["CONF"].c = 0.1  # set at run time in the sweep's process
    change = _identity_change(_factory_key(namespace["factory"]), keys[0])
    assert change is not None and "CONF" in change


def test_a_module_a_script_imports_is_part_of_the_script_factory(tmp_path, monkeypatch):
    """Before: a script was its text alone: after an edit of a module of the user's it imports (a package installed
    for development, a folder on PYTHONPATH), ``--resume`` reused the chunks the old code computed, silently."""
    import sys

    (tmp_path / "asyncdp_test_lab.py").write_text("C = 0.2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "asyncdp_test_lab", raising=False)
    script = tmp_path / "lab_sweep.py"
    script.write_text("from asyncdp import Huang2015\nfrom asyncdp_test_lab import C\n\n\ndef factory(epsilon):\n"
                      "    base = Huang2015.example_scenario(seed=3)\n"
                      "    return base.replace(algorithm=Huang2015(epsilon=epsilon, c=C, q=0.8, p=0.9), horizon=5)\n")
    factory = ScriptFactory.from_path(script)
    folder = tmp_path / "ck"
    sweep(factory, GRID, checkpoint=folder, runs=2)
    sweep(factory, GRID, checkpoint=folder, resume=True, runs=2)  # unchanged: resumed
    (tmp_path / "asyncdp_test_lab.py").write_text("C = 0.1\n")  # what a fresh process imports now
    with pytest.raises(SweepError, match=r"cannot resume: .*factory \(the file of the module asyncdp_test_lab the "
                       r"script imports changed"):
        sweep(factory, GRID, checkpoint=folder, resume=True, runs=2)
    assert "imports" not in _factory_key(ScriptFactory("from asyncdp import Huang2015\nimport numpy\n"))


def test_a_lock_taken_on_a_removed_lock_file_is_taken_again_on_the_new_one(tmp_path, monkeypatch):
    # A sweep opens the lock file; before it locks it, remove_checkpoint unlinks it. Locking the unlinked file
    # would lock nothing: a second sweep would create a new lock file and run beside the first.
    folder = tmp_path / "ck"
    folder.mkdir()
    path = folder / "lock"
    path.write_text("")
    real_open = open

    def open_then_removed(file, *args, **kwargs):
        fh = real_open(file, *args, **kwargs)
        if Path(file) == path and not opened:
            opened.append(True)
            path.unlink()  # the remover runs between this sweep's open and its flock
        return fh

    opened: list[bool] = []
    monkeypatch.setattr(checkpoint_module, "open", open_then_removed, raising=False)
    first = checkpoint_module._Lock(path)
    first.acquire()
    monkeypatch.undo()
    assert opened and path.is_file()
    with pytest.raises(SweepError, match="in use by another running sweep"):
        checkpoint_module._Lock(path).acquire()
    first.release()
    checkpoint_module._Lock(path).acquire()


def test_remove_checkpoint_unlinks_the_lock_file_while_holding_it(tmp_path, monkeypatch):
    folder = tmp_path / "ck"
    sweep(counting_factory, GRID, checkpoint=folder, **KW)
    at_release: list[bool] = []
    real_release = checkpoint_module._Lock.release

    def release(self):
        at_release.append(self.path.exists())
        real_release(self)

    monkeypatch.setattr(checkpoint_module._Lock, "release", release)
    remove_checkpoint(folder)
    assert at_release == [False] and not folder.exists()


def _recorded_rule_factory():
    """A Laplace averaging rule (4 releases of ``lemma`` per run at scale 1) and a factory of its scenarios."""
    from dataclasses import dataclass, replace
    from typing import ClassVar

    import topology
    from asyncdp import rendezvous_problem
    from asyncdp.algorithms import Algorithm, Channel, NoiseDeclaration

    @dataclass(frozen=True)
    class CheckpointRule(Algorithm):
        name: ClassVar[str] = "test-checkpoint-rule"
        channels: ClassVar[tuple] = (Channel("y", "laplace"),)
        dim: int = 0

        def bind(self, problem):
            return replace(self, dim=problem.dim)

        def initial_state(self, x0, agents, problem):
            return {"x": np.array(x0, dtype=float)}

        def noise(self, t, channel):
            return NoiseDeclaration("laplace", 1.0, self.dim, 0.5)

        def message(self, state, t, noise, agents, problem):
            return {"y": state["x"] + noise["y"]}

        def update(self, state, mixed, t, agents, problem):
            return {"x": mixed["y"]}

        def decision(self, state):
            return state["x"]

        def claimed_privacy(self, horizon):
            return 10.0, 0.0

    def factory(horizon):
        problem = rendezvous_problem(np.random.default_rng(1).uniform(-1, 1, (4, 2)))
        return Scenario(problem, topology.static(np.full((4, 4), 0.25)), CheckpointRule(), horizon=horizon, seed=1)

    return CheckpointRule, factory


def test_a_resume_after_the_paper_record_changed_is_refused(tmp_path):
    """Before: a checkpoint's fingerprint held no paper record, so a sweep resumed after the rule's record was
    registered with another lemma (a fixed lemma, say) kept the old chunks' epsilon_accountant beside the new ones'
    (here every chunk: 2.0 under the old lemma where the new one gives 4.0), silently."""
    from asyncdp.papers import GradientClass, Paper, register, unregister

    CheckpointRule, factory = _recorded_rule_factory()

    def record(factor):
        return Paper(CheckpointRule.name, (CheckpointRule,), lemma=lambda sc: np.full(sc.horizon, 0.5 * factor),
                     adjacency=lambda sc: GradientClass(1.0, "l1"))

    folder, kw = tmp_path / "ck", {"runs": 2, "chunk_runs": 1, "seed": 0, "executor": "inprocess"}
    for factor, expected in ((1.0, 2.0), (2.0, 4.0)):  # 4 releases of sensitivity 0.5 (1.0) at Laplace scale 1
        register(record(factor))
        try:
            if factor == 1.0:
                df = sweep(factory, {"horizon": [4]}, checkpoint=folder, **kw)
            else:
                assert sweep(factory, {"horizon": [4]}, **kw)["epsilon_accountant"].tolist() == [expected] * 2
                with pytest.raises(SweepError, match=r"cannot resume: checkpoint .* belongs to another sweep: papers "
                                                     r"\(the paper record\(s\) 'test-checkpoint-rule' are not "
                                                     r"registered alike"):
                    sweep(factory, {"horizon": [4]}, checkpoint=folder, resume=True, **kw)
        finally:
            unregister(CheckpointRule.name)
        if factor == 1.0:
            assert df["epsilon_accountant"].tolist() == [expected] * 2


class _Slots:
    """A setting whose repr shows its memory address (``__slots__``, no ``__repr__``): another in every process."""

    __slots__ = ("scale",)

    def __init__(self, scale):
        self.scale = scale


_SETTING = _Slots(0.5)


def test_a_resume_refused_for_a_record_read_by_address_says_so(tmp_path):
    """A lemma reading a value whose repr shows its memory address has another fingerprint in every process, so a
    resume is refused (its value cannot be compared). Before, the refusal advised passing a script factory, which
    carries the same record; it now names the record and what to do. Another process is simulated by another
    address digest in the checkpoint."""
    import re

    from asyncdp.experiments.identity import _ADDRESS_MARK
    from asyncdp.papers import GradientClass, Paper, register, unregister

    CheckpointRule, factory = _recorded_rule_factory()
    folder, kw = tmp_path / "ck", {"runs": 2, "chunk_runs": 1, "seed": 0, "executor": "inprocess"}
    register(Paper(CheckpointRule.name, (CheckpointRule,), lemma=lambda sc: np.full(sc.horizon, _SETTING.scale),
                   adjacency=lambda sc: GradientClass(1.0, "l1")))
    try:
        sweep(factory, {"horizon": [4]}, checkpoint=folder, **kw)
        manifest = folder / MANIFEST
        text = manifest.read_text()
        pattern = "[0-9a-f]{16}" + re.escape(_ADDRESS_MARK)
        assert re.search(pattern, text)
        manifest.write_text(re.sub(pattern, "0" * 16 + _ADDRESS_MARK, text))
        with pytest.raises(SweepError, match=r"papers \(.*'test-checkpoint-rule' reads a value whose repr shows its "
                                             r"memory address.*give that value a repr of its contents\)$"):
            sweep(factory, {"horizon": [4]}, checkpoint=folder, resume=True, **kw)
    finally:
        unregister(CheckpointRule.name)
