"""Sweep executors (asyncdp.experiments.executors); that every executor gives bitwise the same table is tested in test_sweep.py."""

from __future__ import annotations

import pytest


def test_worker_processes_are_not_forked():
    from asyncdp.experiments.executors import _process_context

    assert _process_context().get_start_method() in ("forkserver", "spawn")


def test_a_worker_with_other_library_versions_is_refused():
    """Before: a remote Dask worker with another numpy (or asyncdp) ran its chunks silently; its numbers could differ
    from the sweep process's. The check runs in the worker, on the versions the sweep's process sent."""
    import json

    from asyncdp import Huang2015
    from asyncdp.errors import SweepError
    from asyncdp.experiments.executors import _identities, _run_task
    from asyncdp.experiments.grid import _Task

    def factory(epsilon):
        return Huang2015.example_scenario(seed=3).replace(horizon=5)

    task = _Task(point=0, chunk=0, params={"epsilon": 1.0}, first=0, runs=1, seed=0)
    ours = _identities(factory, None)
    assert len(_run_task(factory, task, "batch", None, ours)["run"]) == 1  # the same process: the same versions
    sent = json.loads(ours[2])
    sent["numpy"] = "0.0.1"
    with pytest.raises(SweepError, match=r"point 0 \(epsilon=1.0\): worker process \d+ runs other versions than the "
                       r"sweep's process \(numpy .* on the worker, 0.0.1 in the sweep's process\)"):
        _run_task(factory, task, "batch", None, (ours[0], ours[1], json.dumps(sent)))
