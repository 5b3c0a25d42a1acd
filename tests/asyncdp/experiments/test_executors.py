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
        _run_task(factory, task, "batch", None, (ours[0], ours[1], json.dumps(sent), ours[3]))


def _swept_rule() -> type:
    """A small Gaussian averaging rule (no paper record of its own)."""
    from dataclasses import dataclass, replace
    from typing import ClassVar

    import numpy as np

    from asyncdp.algorithms import Algorithm, Channel, NoiseDeclaration

    @dataclass(frozen=True)
    class SweptRule(Algorithm):
        name: ClassVar[str] = "test-executors-swept-rule"
        channels: ClassVar[tuple] = (Channel("y", "gaussian"),)
        dim: int = 0

        def bind(self, problem):
            return replace(self, dim=problem.dim)

        def initial_state(self, x0, agents, problem):
            return {"x": np.array(x0, dtype=float)}

        def noise(self, t, channel):
            return NoiseDeclaration("gaussian", 1.0, self.dim, 0.2)

        def message(self, state, t, noise, agents, problem):
            return {"y": state["x"] + noise["y"]}

        def update(self, state, mixed, t, agents, problem):
            return {"x": mixed["y"]}

        def decision(self, state):
            return state["x"]

        def claimed_privacy(self, horizon):
            return 5.0, 1e-5

    return SweptRule


def test_a_worker_without_the_sweeps_paper_record_is_refused():
    """Before: a paper record registered in the sweep's process only (a notebook, or under ``if __name__ ==
    "__main__"``) was not registered in a worker process, which imports the factory's module afresh: the worker's
    ``epsilon_accountant`` was NaN (no sensitivity), the in-process one a number, with nothing said. The worker now
    refuses such a task; a record registered again with another lemma as well."""
    import numpy as np

    import topology
    from asyncdp import Scenario, rendezvous_problem
    from asyncdp.errors import SweepError
    from asyncdp.experiments.executors import _identities, _run_task
    from asyncdp.experiments.grid import _Task
    from asyncdp.papers import GradientClass, Paper, register, unregister

    rule = _swept_rule()

    def factory(horizon):
        problem = rendezvous_problem(np.random.default_rng(1).uniform(-1, 1, (4, 2)))
        return Scenario(problem, topology.static(np.full((4, 4), 0.25)), rule(), horizon=horizon, seed=1)

    def record(factor):
        return Paper(rule.name, (rule,), lemma=lambda sc: np.full(sc.horizon, 0.2 * factor),
                     adjacency=lambda sc: GradientClass(1.0, "l2"))

    task = _Task(point=0, chunk=0, params={"horizon": 4}, first=0, runs=1, seed=0)
    register(record(1.0))
    try:
        ours = _identities(factory, None)
        assert _run_task(factory, task, "batch", None, ours)["epsilon_accountant"][0] > 0  # the same process
    finally:
        unregister(rule.name)
    with pytest.raises(SweepError, match=r"point 0 \(horizon=4\): worker process \d+ has no paper record for rule "
                       r"'test-executors-swept-rule', the sweep's process paper record 'test-executors-swept-rule'"):
        _run_task(factory, task, "batch", None, ours)  # (as a worker process that never registered it)
    register(record(2.0))
    try:
        with pytest.raises(SweepError, match="with another lemma or adjacency class"):
            _run_task(factory, task, "batch", None, ours)
    finally:
        unregister(rule.name)


class _Slots:
    """A setting whose repr shows its memory address (``__slots__``, no ``__repr__``): another in every process."""

    __slots__ = ("scale",)

    def __init__(self, scale):
        self.scale = scale


_SETTING = _Slots(0.2)


def test_a_record_reading_a_value_shown_by_its_address_is_the_same_in_a_worker():
    """Before: the worker compared the record's identities as text, and a lemma reading a value whose repr shows its
    memory address (a digest that differs in every process) refused every task under ``executor="processes"``
    ("another lemma"), though the module gives every process the same record; the factory's own check
    (:func:`~asyncdp.experiments.identity._identity_change`) ignores such values, and so does this one now. A worker
    process is simulated by another address digest in what the sweep's process sent."""
    import re

    import numpy as np

    import topology
    from asyncdp import Scenario, rendezvous_problem
    from asyncdp.experiments.executors import _identities, _run_task
    from asyncdp.experiments.grid import _Task
    from asyncdp.experiments.identity import _ADDRESS_MARK
    from asyncdp.papers import GradientClass, Paper, register, unregister

    rule = _swept_rule()

    def factory(horizon):
        problem = rendezvous_problem(np.random.default_rng(1).uniform(-1, 1, (4, 2)))
        return Scenario(problem, topology.static(np.full((4, 4), 0.25)), rule(), horizon=horizon, seed=1)

    task = _Task(point=0, chunk=0, params={"horizon": 4}, first=0, runs=1, seed=0)
    register(Paper(rule.name, (rule,), lemma=lambda sc: np.full(sc.horizon, _SETTING.scale),
                   adjacency=lambda sc: GradientClass(1.0, "l2")))
    try:
        ours = _identities(factory, None)
        pattern = "[0-9a-f]{16}" + re.escape(_ADDRESS_MARK)
        assert re.search(pattern, ours[3])
        elsewhere = re.sub(pattern, "0" * 16 + _ADDRESS_MARK, ours[3])
        assert _run_task(factory, task, "batch", None, (*ours[:3], elsewhere))["epsilon_accountant"][0] > 0
    finally:
        unregister(rule.name)
