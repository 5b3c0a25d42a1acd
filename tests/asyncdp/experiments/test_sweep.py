"""Monte-Carlo sweeps (asyncdp.experiments.sweep) and the ``asyncdp sweep`` command."""

from __future__ import annotations

import importlib
import math
import os
import runpy
import subprocess
import sys
import warnings
from pathlib import Path

import distributed
import numpy as np
import pytest
from pandas.testing import assert_frame_equal

from asyncdp import Async, Huang2015, Scenario
from asyncdp.cli import main
from asyncdp.errors import AlgorithmParameterError, AsyncdpError, ScenarioError, SweepError
from asyncdp.experiments.executors import WorkerDied, _show_progress
from asyncdp.experiments.factories import ScriptFactory
from asyncdp.experiments.grid import derive_seed, grid_points
from asyncdp.experiments.results_io import read_results, write_results
from asyncdp.experiments.summaries import METRICS, format_summary, summarize
from asyncdp.experiments.sweep import sweep

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SCRIPT = EXAMPLES / "sweep_epsilon.py"
COLUMNS = ["epsilon", "point", "run", "task_seed", *METRICS]


def small_factory(epsilon: float, c: float = 0.2) -> Scenario:
    """Six agents, 15 rounds: fast. Module-level, so picklable by reference."""
    base = Huang2015.example_scenario(seed=3)
    return base.replace(algorithm=Huang2015(epsilon=epsilon, c=c, q=0.8, p=0.9), horizon=15)


def labelled_factory(epsilon: float, label: str) -> Scenario:
    return small_factory(epsilon)


def variant_factory(epsilon: float) -> Scenario:
    """A user's rule without a paper record (so no sensitivity lemma for the accountant)."""
    own = runpy.run_path(str(Path(__file__).resolve().parents[3] / "examples" / "privacy_check_own_algorithm.py"))
    return small_factory(epsilon).replace(algorithm=own["NoisyConsensusGD"]())


PID_SCRIPT = """
import os
import runpy

_example = runpy.run_path({script!r})


def factory(epsilon):
    return _example["factory"](epsilon)


def worker_pid(result, scenario):
    return {{"pid": os.getpid(), "seed_seen": scenario.seed}}
"""


@pytest.fixture(scope="module")
def dask_cluster():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    yield cluster
    cluster.close()


# --------------------------------------------------------------------------- grids and seeds


def test_grid_points_order_and_columns():
    grid = {"epsilon": [1.0, 5.0], "c": [0.1, 0.2, 0.3]}
    points = grid_points(grid)
    assert points == [{"epsilon": e, "c": c} for e in (1.0, 5.0) for c in (0.1, 0.2, 0.3)]  # last key fastest
    df = sweep(small_factory, grid, runs=2, seed=1)
    assert list(df.columns) == ["epsilon", "c", "point", "run", "task_seed", *METRICS]
    assert df["point"].tolist() == [p for p in range(6) for _ in range(2)]
    assert df["run"].tolist() == [0, 1] * 6
    firsts = df.drop_duplicates("point")
    assert list(zip(firsts["epsilon"], firsts["c"])) == [(p["epsilon"], p["c"]) for p in points]


def test_seed_layout_reproduces_every_row():
    grid = {"epsilon": [1.0, 5.0]}
    df = sweep(small_factory, grid, runs=5, seed=7, chunk_runs=2)
    for p, params in enumerate(grid_points(grid)):
        for k, (start, size) in enumerate([(0, 2), (2, 2), (4, 1)]):
            expected = int(np.random.SeedSequence(7, spawn_key=(p, k)).generate_state(1, dtype=np.uint64)[0]) >> 1
            assert derive_seed(7, p, k) == expected
            rows = df[(df["point"] == p) & df["run"].between(start, start + size - 1)]
            assert rows["task_seed"].tolist() == [expected] * size
            res = small_factory(**params).replace(seed=expected).run("batch", runs=size, keep="final")
            assert np.array_equal(rows["optimality_error"].to_numpy(), res.optimality_error[:, -1])
            assert np.array_equal(rows["deviation"].to_numpy(), res.deviation[:, -1])
            assert np.array_equal(rows["consensus_error"].to_numpy(), res.consensus_error())
    assert df["task_seed"].nunique() == 6  # every task has its own seed


def test_chunk_runs_is_part_of_the_experiment():
    a = sweep(small_factory, {"epsilon": [1.0]}, runs=6, seed=2, chunk_runs=4)
    b = sweep(small_factory, {"epsilon": [1.0]}, runs=6, seed=2)  # one chunk of 6
    # chunk 0 shares its seed and its noise is drawn run-major, so runs 0..3 agree ...
    assert_frame_equal(a.iloc[:4], b.iloc[:4], check_exact=True)
    # ... while runs 4, 5 come from another task seed under chunk_runs=4
    assert (a["task_seed"].iloc[4:] != b["task_seed"].iloc[4:]).all()
    assert not np.array_equal(a["optimality_error"].iloc[4:], b["optimality_error"].iloc[4:])


# --------------------------------------------------------------------------- executors


def test_executors_are_bitwise_identical(tmp_path, dask_cluster):
    script = tmp_path / "pid_script.py"
    script.write_text(PID_SCRIPT.format(script=str(SCRIPT)))
    factory = ScriptFactory.from_path(script)
    pid = ScriptFactory.from_path(script, name="worker_pid")
    kw = {"runs": 6, "seed": 11, "chunk_runs": 4, "metrics": pid}
    ref = sweep(factory, {"epsilon": [1, 10]}, executor="inprocess", **kw)
    procs = sweep(factory, {"epsilon": [1, 10]}, executor="processes", workers=2, **kw)
    dask = sweep(factory, {"epsilon": [1, 10]}, executor="dask", scheduler=dask_cluster.scheduler_address, **kw)
    assert len(ref) == 12 and ref.groupby("point")["task_seed"].nunique().tolist() == [2, 2]  # 2 chunks a point
    assert (ref["seed_seen"] == ref["task_seed"]).all()  # metrics see the simulated scenario
    assert set(ref["pid"]) == {os.getpid()}
    assert os.getpid() not in set(procs["pid"]) and os.getpid() not in set(dask["pid"])  # really elsewhere
    for other in (procs, dask):
        assert_frame_equal(ref.drop(columns="pid"), other.drop(columns="pid"), check_exact=True)
    # the example's default-argument factory, through the example script itself
    plain = ScriptFactory.from_path(SCRIPT)
    a = sweep(plain, {"epsilon": [1, 10]}, runs=6, seed=11, chunk_runs=4)
    b = sweep(plain, {"epsilon": [1, 10]}, runs=6, seed=11, chunk_runs=4, executor="dask",
              scheduler=dask_cluster.scheduler_address)
    assert_frame_equal(a, b, check_exact=True)
    assert_frame_equal(a, ref.drop(columns=["pid", "seed_seen"]), check_exact=True)


FACTORY_MODULE = """
from asyncdp import Huang2015


def factory(epsilon):
    base = Huang2015.example_scenario(seed=3)
    return base.replace(algorithm=Huang2015(epsilon=epsilon, c=0.2, q=0.8, p=0.9), horizon=15)
"""


def test_module_level_factory_on_processes(tmp_path, monkeypatch):
    # workers start fresh (forkserver/spawn): the factory must come from a module they can import
    (tmp_path / "asyncdp_sweep_test_factory.py").write_text(FACTORY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "asyncdp_sweep_test_factory", raising=False)
    factory = importlib.import_module("asyncdp_sweep_test_factory").factory
    kw = {"runs": 6, "seed": 5, "chunk_runs": 4}
    ref = sweep(factory, {"epsilon": [1.0, 3.0]}, **kw)
    assert_frame_equal(ref, sweep(factory, {"epsilon": [1.0, 3.0]}, executor="processes", workers=2, **kw),
                       check_exact=True)


def test_a_module_value_set_at_run_time_is_refused_on_worker_processes(tmp_path, monkeypatch):
    """Before: ``module.C = 0.1`` set in the sweep's process was not seen by the worker processes, which import the
    module afresh (C = 0.2 there): the "processes" table differed from the "inprocess" one, silently."""
    (tmp_path / "asyncdp_sweep_test_global.py").write_text(FACTORY_MODULE.replace("c=0.2", "c=C") + "\nC = 0.2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "asyncdp_sweep_test_global", raising=False)
    module = importlib.import_module("asyncdp_sweep_test_global")
    monkeypatch.setattr(module, "C", 0.1)
    with pytest.raises(SweepError, match=r"point 0 \(epsilon=1.0\): the factory in worker process \d+ is not the one "
                       r"of the sweep's process: the module-level C it reads has another value there .*partial"):
        sweep(module.factory, {"epsilon": [1.0]}, runs=1, executor="processes", workers=1)


UNLOADABLE_MODULE = FACTORY_MODULE + """

class Unloadable:
    \"\"\"The factory as an object that cannot be unpickled (as a script's factory a worker cannot import).\"\"\"

    def __init__(self):
        self.state = 1

    def __call__(self, epsilon):
        return factory(epsilon)

    def __setstate__(self, state):
        raise ImportError("cannot import the factory here")
"""


def test_a_worker_that_cannot_start_stops_the_sweep_at_once_saying_why(tmp_path, monkeypatch):
    """Before: a worker process that could not import the factory (a script calling the sweep without an
    ``if __name__ == "__main__":`` guard) was retried twice, then reported as 'exited with code 1'."""
    (tmp_path / "asyncdp_sweep_test_unloadable.py").write_text(UNLOADABLE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "asyncdp_sweep_test_unloadable", raising=False)
    factory = importlib.import_module("asyncdp_sweep_test_unloadable").Unloadable()
    with warnings.catch_warnings(record=True) as record, pytest.raises(
            SweepError, match=r"chunk 0 of point 0 \(epsilon=1.0\) failed: its worker process exited with code 1 "
            r"before it could run a chunk: .*if __name__ == '__main__'") as info:
        warnings.simplefilter("always")
        sweep(factory, {"epsilon": [1.0]}, runs=1, executor="processes", workers=1)
    assert isinstance(info.value.__cause__, WorkerDied)
    assert not [w for w in record if "running the chunk again" in str(w.message)]  # no retry: it would fail again


def global_random_factory(epsilon: float) -> Scenario:
    """Draws its step size from np.random's global state: each call another scenario."""
    return small_factory(epsilon, c=0.1 + 0.1 * np.random.rand())


def test_a_factory_drawing_from_a_global_random_state_is_refused():
    """Before: every task built its own scenario from the advancing global state, so chunk 1 ran another c than
    chunk 0 and the "processes" table differed from the "inprocess" one (workers start from their own state)."""
    np.random.seed(0)
    with pytest.raises(SweepError, match=r"point 0 \(epsilon=1.0\): the factory returned another scenario when "
                       r"called again with the same parameters .*np.random"):
        sweep(global_random_factory, {"epsilon": [1.0]}, runs=2, chunk_runs=1)


class _Rings:
    """A user's graph maker with the default repr (``<... at 0x...>``): a fresh one in every factory call."""

    def __call__(self, t: int) -> np.ndarray:
        n = 6
        return 0.5 * np.eye(n) + 0.5 * np.roll(np.eye(n), 1 + t % 2, axis=0)


def generated_topology_factory(epsilon: float) -> Scenario:
    """Deterministic: its round function captures a fresh maker object (only its memory address differs)."""
    import topology

    rings = _Rings()
    return small_factory(epsilon).replace(topology=topology.generated(6, lambda t: rings(t)))


def test_a_deterministic_factory_whose_scenario_captures_a_fresh_object_passes_the_point_check():
    """Before: the point check compared the hashed identity of the round function, whose captured object's address
    differs between the two calls: a deterministic factory was refused as drawing from a global random state."""
    df = sweep(generated_topology_factory, {"epsilon": [1.0]}, runs=2, chunk_runs=1)
    assert len(df) == 2
    from asyncdp.experiments.identity import _same_contents

    tiny = np.zeros(3)
    tiny[2] = 5e-324  # arrays are compared bitwise (their bytes), not by a repr
    assert not _same_contents([np.zeros(3)], [tiny]) and _same_contents([np.zeros(3)], [np.zeros(3)])


def test_dask_local_cluster_is_started_and_closed():
    kw = {"runs": 3, "seed": 4}
    ref = sweep(small_factory, {"epsilon": [2.0]}, **kw)
    out = sweep(ScriptFactory.from_path(SCRIPT), {"epsilon": [2.0]}, executor="dask", local_cluster=2, **kw)
    assert len(out) == 3 and out["epsilon"].tolist() == [2.0] * 3
    assert not np.array_equal(out["optimality_error"], ref["optimality_error"])  # another factory: other numbers
    with pytest.raises(ValueError):
        distributed.default_client()  # the sweep's client was closed


def test_simpy_engine_runs_are_seeded_per_run():
    a = sweep(small_factory, {"epsilon": [1.0]}, runs=3, seed=9, engine="simpy")
    b = sweep(small_factory, {"epsilon": [1.0]}, runs=3, seed=9, engine="simpy", chunk_runs=2)
    assert_frame_equal(a, b, check_exact=True)  # SimPy chunks only group runs for dispatch
    assert a["task_seed"].tolist() == [derive_seed(9, 0, r) for r in range(3)]
    direct = small_factory(1.0).replace(seed=derive_seed(9, 0, 2)).run("simpy")
    assert a["optimality_error"].iloc[2] == direct.optimality_error()[-1]
    assert a["consensus_error"].iloc[2] == pytest.approx(direct.consensus_error()[-1], rel=1e-12)
    # run 0 uses batch chunk 0's seed: on this lockstep lossless scenario the engines agree to round-off
    batch = sweep(small_factory, {"epsilon": [1.0]}, runs=3, seed=9)
    for col in ("optimality_error", "deviation", "consensus_error"):
        assert a[col].iloc[0] == pytest.approx(batch[col].iloc[0], rel=1e-9, abs=1e-12)
    assert a["epsilon_accountant"].iloc[0] == batch["epsilon_accountant"].iloc[0]


def test_async_scenarios_sweep_on_the_batch_engine():
    def async_factory(epsilon):
        return small_factory(epsilon).replace(timing=Async())

    out = sweep(async_factory, {"epsilon": [1.0]}, runs=3, seed=2)
    assert len(out) == 3 and len(set(out["optimality_error"].tolist())) == 3
    # run 0 of the batch chunk is the SimPy run of the chunk's seed (async runs are bitwise equal)
    direct = async_factory(1.0).replace(seed=int(out["task_seed"].iloc[0])).run("simpy")
    assert out["optimality_error"].iloc[0] == direct.optimality_error()[-1]


# --------------------------------------------------------------------------- metrics


def test_means_behave_sensibly_over_epsilon():
    factory = ScriptFactory.from_path(SCRIPT)
    s = summarize(sweep(factory, {"epsilon": [10, 100, 1000]}, runs=200, seed=0))
    means, sems = s["optimality_error_mean"].to_numpy(), s["optimality_error_sem"].to_numpy()
    # decreasing, each gap at least 4 combined standard errors
    for i in range(2):
        assert means[i] - means[i + 1] > 4 * math.hypot(sems[i], sems[i + 1])
    # on the script's default grid the agents' spread shrinks as epsilon grows
    d = summarize(sweep(factory, factory.default_grid(), runs=100, seed=0))
    assert d["epsilon"].tolist() == [0.5, 1, 2, 5]
    dev, dsem = d["deviation_mean"].to_numpy(), d["deviation_sem"].to_numpy()
    assert all(dev[i] - dev[i + 1] > 4 * math.hypot(dsem[i], dsem[i + 1]) for i in range(3))
    for table in (s, d):
        assert np.array_equal(table["epsilon_claimed_mean"], table["epsilon"].astype(float))
        ratio = table["epsilon_accountant_mean"] / table["epsilon_claimed_mean"]
        assert ((ratio <= 1 + 1e-9) & (ratio > 0.999)).all()  # the accountant confirms the claim


def test_user_metrics_add_columns():
    def metrics(result, scenario):
        return {"final_x0": result.final[:, 0, 0], "horizon": scenario.horizon}

    df = sweep(small_factory, {"epsilon": [1.0]}, runs=4, seed=3, chunk_runs=3, metrics=metrics)
    assert list(df.columns[-2:]) == ["final_x0", "horizon"]
    assert df["horizon"].tolist() == [15] * 4
    res = small_factory(1.0).replace(seed=derive_seed(3, 0, 0)).run("batch", runs=3, keep="final")
    assert np.array_equal(df["final_x0"].iloc[:3], res.final[:, 0, 0])
    s = summarize(df)
    assert {"final_x0_mean", "final_x0_sem", "horizon_mean"} <= set(s.columns)


@pytest.mark.parametrize(
    "metrics, message",
    [
        (lambda r, s: {"bad": np.zeros(7)}, "shape"),
        (lambda r, s: {"deviation": 1.0}, "clashes"),
        (lambda r, s: [1.0], "dict"),
    ],
)
def test_bad_metrics(metrics, message):
    with pytest.raises(SweepError, match=message):
        sweep(small_factory, {"epsilon": [1.0]}, runs=2, metrics=metrics)


def test_epsilon_accountant_nan_without_sensitivity_or_releases():
    df = sweep(variant_factory, {"epsilon": [1.0]}, runs=2)
    assert df["epsilon_accountant"].isna().all() and np.isfinite(df["epsilon_claimed"]).all()
    inf = sweep(small_factory, {"epsilon": [math.inf]}, runs=2)  # noise-free: an empty ledger
    assert inf["epsilon_accountant"].isna().all() and np.isinf(inf["epsilon_claimed"]).all()
    ok = sweep(small_factory, {"epsilon": [1.0]}, runs=2)
    assert np.isfinite(ok["epsilon_accountant"]).all()


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "factory, grid, kwargs, message",
    [
        (small_factory, {"epsilon": []}, {}, "'epsilon' has no values"),
        (small_factory, {"epsilon": "1,2"}, {}, "list of values"),
        (small_factory, {"run": [1]}, {}, "clashes"),
        (small_factory, {"epsilon": [1.0]}, {"executor": "gpu"}, "unknown executor 'gpu'"),
        (small_factory, {"epsilon": [1.0]}, {"engine": "fast"}, "unknown engine 'fast'"),
        (small_factory, {"epsilon": [1.0]}, {"runs": 0}, "runs must be >= 1, got 0"),
        (small_factory, {"epsilon": [1.0]}, {"runs": True}, "runs must be"),
        (small_factory, {"epsilon": [1.0]}, {"seed": -1}, "seed"),
        (small_factory, {"epsilon": [1.0]}, {"chunk_runs": 0}, "chunk_runs"),
        (small_factory, {"epsilon": [1.0]}, {"workers": 2}, "workers applies to executor 'processes'"),
        (small_factory, {"epsilon": [1.0]}, {"executor": "processes", "scheduler": "tcp://x:1"}, "dask"),
        (small_factory, {"epsilon": [1.0]}, {"executor": "dask", "scheduler": "tcp://x:1", "local_cluster": 2},
         "not both"),
        (small_factory, {"epsilon": [1.0]}, {"executor": "dask"}, "active distributed.Client"),
        (lambda epsilon: small_factory(epsilon), {"epsilon": [1.0]}, {"executor": "processes"}, "pickled"),
        (lambda epsilon: 42, {"epsilon": [1.0]}, {}, r"returned int, not an asyncdp Scenario"),
        (small_factory, {"epsilon": [1.0], "gamma": [0.5]}, {}, r"parameter 'gamma' \(value 0.5\)"),
        (small_factory, {"c": [0.2]}, {}, "epsilon"),
        ("not callable", {"epsilon": [1.0]}, {}, "callable"),
    ],
)
def test_sweep_errors(factory, grid, kwargs, message):
    with pytest.raises(SweepError, match=message):
        sweep(factory, grid, **kwargs)


def test_factory_error_names_point_and_value():
    with pytest.raises(SweepError, match=r"point 1 \(epsilon=-1\).*AlgorithmParameterError") as info:
        sweep(small_factory, {"epsilon": [1.0, -1]}, runs=1)
    assert isinstance(info.value.__cause__, AlgorithmParameterError)
    assert issubclass(SweepError, AsyncdpError) and issubclass(SweepError, ValueError)
    assert not issubclass(SweepError, ScenarioError)  # a sibling of the scenario errors (issue 13)


@pytest.mark.parametrize("engine", ["batch", "simpy"])
def test_a_scenario_that_fails_to_run_names_its_point(engine):
    """Huang et al.'s step c must lie in (0, 1/C3): the factory builds point 1's scenario, its run refuses it. The
    error was the rule's message alone (which of the points?), while the factory's own errors name the point."""
    with pytest.raises(SweepError, match=r"^point 1 \(epsilon=1\.0, c=0\.9\): AlgorithmParameterError: huang2015: "
                       r"c must be in \(0, 1/C3\)") as info:
        sweep(small_factory, {"epsilon": [1.0], "c": [0.2, 0.9]}, runs=1, engine=engine)
    assert isinstance(info.value.__cause__, AlgorithmParameterError)


def dpsda_factory(epsilon: float) -> Scenario:
    """DP-SDA's example (gradient noise xi from its xi_seed), 3 rounds."""
    from asyncdp import REGISTRY

    return REGISTRY["dpsda-c"].example_scenario(seed=0).replace(horizon=3)


def test_runs_sharing_a_rules_own_gradient_noise_are_warned_about():
    """The sweep re-seeds Scenario.seed per run; DP-SDA's xi comes from its xi_seed, the same in every run, so the
    runs' spread left xi's out, silently."""
    import warnings

    with pytest.warns(UserWarning, match=r"2 runs of each point share dpsda-c's gradient noise xi: .*xi_seed=0"):
        sweep(dpsda_factory, {"epsilon": [1.0]}, runs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sweep(dpsda_factory, {"epsilon": [1.0]}, runs=1)
        sweep(small_factory, {"epsilon": [1.0]}, runs=2)


# --------------------------------------------------------------------------- files, summaries, progress


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_results_round_trip(tmp_path, suffix):
    df = sweep(labelled_factory, {"epsilon": [1.5, math.inf], "label": ["a b", "c"]}, runs=3, seed=1)
    assert df["epsilon_accountant"].isna().any() and np.isinf(df["epsilon_claimed"]).any()
    path = write_results(df, tmp_path / "sub" / f"results{suffix}")
    assert path.is_file()
    assert_frame_equal(read_results(path), df, check_exact=True)


def test_summarize_and_format():
    df = sweep(small_factory, {"epsilon": [1.0, 3.0]}, runs=4, seed=6)
    s = summarize(df)
    assert s["runs"].tolist() == [4, 4]
    for p in (0, 1):
        x = df.loc[df["point"] == p, "optimality_error"].to_numpy()
        assert s["optimality_error_mean"].iloc[p] == pytest.approx(x.mean(), rel=1e-12)
        assert s["optimality_error_sem"].iloc[p] == pytest.approx(x.std(ddof=1) / 2, rel=1e-12)
    text = format_summary(s)
    lines = text.splitlines()
    assert len(lines) == 3 and "optimality_error" in lines[0] and "+/-" in lines[1]


def test_progress_bar(capsys, monkeypatch):
    sweep(small_factory, {"epsilon": [1.0, 2.0]}, runs=1, progress=True)
    assert "2/2" in capsys.readouterr().err
    sweep(small_factory, {"epsilon": [1.0, 2.0]}, runs=1, progress=False)
    assert capsys.readouterr().err == ""
    sweep(small_factory, {"epsilon": [float(e) for e in range(1, 23)]}, runs=1)  # 22 tasks, stderr not a TTY
    assert capsys.readouterr().err == ""

    class TTY:
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", TTY())
    assert _show_progress(None, 21) and not _show_progress(None, 20) and not _show_progress(False, 100)


# --------------------------------------------------------------------------- the example and the CLI


def test_example_matches_rendezvous_scenario_and_runs(capsys):
    ns = runpy.run_path(str(SCRIPT))
    base = runpy.run_path(str(EXAMPLES / "huang2015_rendezvous.py"))["scenario"]
    ours = ns["factory"](epsilon=1.0)
    assert ours.horizon == base.horizon and ours.seed == base.seed and ours.algorithm == base.algorithm
    a, b = ours.run("batch", runs=3, keep="final"), base.run("batch", runs=3, keep="final")
    assert np.array_equal(a.final, b.final) and np.array_equal(a.optimality_error, b.optimality_error)
    df = ns["main"](runs=5)
    out = capsys.readouterr().out
    assert len(df) == 20 and "epsilon" in out and len(out.strip().splitlines()) == 6


def test_cli_sweep_writes_results(tmp_path, capsys):
    out = tmp_path / "results.csv"
    code = main(["sweep", str(SCRIPT), "--grid", "epsilon=1,10", "--runs", "4", "--seed", "3",
                 "--chunk-runs", "3", "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    df = read_results(out)
    assert list(df.columns) == COLUMNS and len(df) == 8
    assert f"wrote 8 rows to {out}" in text and "optimality_error" in text
    api = sweep(ScriptFactory.from_path(SCRIPT), {"epsilon": [1, 10]}, runs=4, seed=3, chunk_runs=3)
    assert_frame_equal(df, api, check_exact=True)


def test_cli_uses_script_default_grid(tmp_path, capsys):
    out = tmp_path / "results.parquet"
    assert main(["sweep", str(SCRIPT), "--runs", "2", "--out", str(out)]) == 0
    df = read_results(out)
    assert sorted(df["epsilon"].unique()) == [0.5, 1, 2, 5] and list(df.columns) == COLUMNS
    text = capsys.readouterr().out
    assert len(text.strip().splitlines()) == 1 + 4 + 1  # header, 4 points, "wrote ..."


def test_cli_without_any_grid_runs_one_point(tmp_path, capsys):
    script = tmp_path / "one.py"
    script.write_text("from asyncdp import Huang2015\n\n"
                      "def factory():\n    return Huang2015.example_scenario(seed=1)\n")
    out = tmp_path / "one.csv"
    assert main(["sweep", str(script), "--runs", "3", "--out", str(out)]) == 0
    df = read_results(out)
    assert list(df.columns) == ["point", "run", "task_seed", *METRICS] and df["point"].tolist() == [0, 0, 0]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--grid", "epsilon"], "bad grid entry 'epsilon'"),
        (["--grid", "epsilon=1,,2"], "empty value"),
        (["--grid", "epsilon=1", "--executor", "gpu"], "unknown executor 'gpu'"),
        (["--grid", "epsilon=1", "--engine", "fast"], "unknown engine 'fast'"),
        (["--grid", "epsilon=1", "--runs", "0"], "runs must be >= 1, got 0"),
        (["--grid", "gamma=1"], "does not accept grid parameter 'gamma'"),
        (["--grid", "epsilon=1", "--out", "x.xlsx"], ".csv or .parquet"),
    ],
)
def test_cli_errors_are_one_line(args, message, capsys):
    assert main(["sweep", str(SCRIPT), *args]) == 2
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("asyncdp: error:") and message in lines[0]
    assert "Traceback" not in cap.err


def test_cli_bad_scripts(tmp_path, capsys):
    nofactory = tmp_path / "nofactory.py"
    nofactory.write_text("x = 1\n")
    assert main(["sweep", str(nofactory)]) == 2
    assert "does not define 'factory'" in capsys.readouterr().err
    assert main(["sweep", str(tmp_path / "missing.py")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No such file or directory" in err[0]


def test_cli_entry_point_registered(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "asyncdp", "sweep", str(SCRIPT), "--grid", "epsilon=2",
                           "--runs", "2"], check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert list(tmp_path.iterdir()) == []  # its checkpoint (SCRIPT.py.checkpoint here) is removed once done
    assert proc.stdout.splitlines()[0].split()[:3] == ["epsilon", "runs", "optimality_error"]


def test_sweep_module_has_only_its_own_names():
    """No re-exports for old import paths: each name is imported from the module that defines it."""
    from asyncdp.experiments import sweep as module

    assert module.__all__ == ["sweep", "ENGINES", "DEFAULT_CHUNK_RUNS"]
    for gone in ("summarize", "format_summary", "write_results", "read_results", "derive_seed",
                 "grid_from_strings", "METRICS", "AUTO_PROGRESS_TASKS"):
        assert not hasattr(module, gone), gone  # imported from their own modules
    assert module.sweep.__module__ == "asyncdp.experiments.sweep"


def seeded_noise_factory(epsilon: float, point_noise: str = "seeded") -> Scenario:
    """A factory that builds its own noise source (ignores the sweep's per-task seed), or ZeroNoise."""
    from asyncdp.noise import SeededNoise, ZeroNoise

    return small_factory(epsilon).replace(noise=SeededNoise(0) if point_noise == "seeded" else ZeroNoise())


@pytest.mark.parametrize("engine, chunk_runs", [("simpy", None), ("batch", 2)])
def test_a_factorys_own_noise_source_is_refused_when_its_runs_would_repeat(engine, chunk_runs):
    """Before: every SimPy run (every batch chunk) of a point drew the same noise: 4 identical rows, stderr 0."""
    with pytest.raises(SweepError, match=r"point 0 \(epsilon=1\.0\): the factory's scenario has its own noise source "
                                         r"\(SeededNoise\), which the sweep's per-task seed does not re-seed"):
        sweep(seeded_noise_factory, {"epsilon": [1.0]}, runs=4, engine=engine, chunk_runs=chunk_runs)


def test_own_noise_in_one_task_per_point_and_zero_noise_are_accepted():
    one_chunk = sweep(seeded_noise_factory, {"epsilon": [1.0]}, runs=3, engine="batch")
    assert one_chunk["optimality_error"].nunique() == 3  # one batch: its rows differ
    zero = sweep(seeded_noise_factory, {"epsilon": [1.0], "point_noise": ["zero"]}, runs=2, engine="simpy")
    assert len(zero) == 2
