"""The SimPy engine pauses the cyclic garbage collector during a run, and a run makes no reference cycles."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import topology
from asyncdp.algorithms import Huang2015
from asyncdp.costs import FunctionClass, UserCost
from asyncdp.domains import Box
from asyncdp.errors import CostValueError, ScenarioError
from asyncdp.links import LinkModel, Links, LogNormalLatency
from asyncdp.problem import Problem, rendezvous_problem
from asyncdp.scenario import Scenario
from asyncdp.timing import Async, Deadline, Lockstep

ADDRESSES = np.array([[0.5, 0.2], [-0.4, 0.1], [0.0, -0.6], [0.3, 0.3]])
RING = 0.5 * (np.eye(4) + np.roll(np.eye(4), 1, axis=0))
LOSSY = Links(LinkModel(LogNormalLatency(0.1, 0.5), loss=0.1))


def _probe_problem(seen: list[bool], nan_at_call: int | None = None) -> Problem:
    """f_i(x) = ||x||^2; every gradient call records whether the collector is enabled (call ``nan_at_call`` is NaN)."""

    def gradient(x):
        seen.append(gc.isenabled())
        return np.array([np.nan, 0.0]) if len(seen) == nan_at_call else 2 * x

    fc = FunctionClass(gradient_bound=4 * np.sqrt(2), strong_convexity=2.0, hessian_bound=2.0)
    return Problem(Box(-1.0, 1.0, dim=2), UserCost([lambda x: float(x @ x)] * 4, [gradient] * 4, fc, dim=2))


@pytest.fixture
def gc_enabled():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def _scenario(problem, **kw):
    return Scenario(problem, topology.static(RING), Huang2015(epsilon=1.0, c=0.2, q=0.8, p=0.9), horizon=5,
                    seed=1, **kw)


def test_collector_is_paused_during_the_run_and_restored(gc_enabled):
    seen: list[bool] = []
    _scenario(_probe_problem(seen)).run()
    assert seen and not any(seen)  # paused inside every cost call
    assert gc.isenabled()
    seen.clear()
    _scenario(_probe_problem(seen)).run(pause_gc=False)
    assert seen and all(seen)
    assert gc.isenabled()


def test_collector_stays_off_if_it_was_off(gc_enabled):
    gc.disable()
    _scenario(rendezvous_problem(ADDRESSES)).run()
    assert not gc.isenabled()


def test_collector_is_restored_when_the_run_fails(gc_enabled):
    seen: list[bool] = []
    with pytest.raises(CostValueError, match="round 3"):
        _scenario(_probe_problem(seen, nan_at_call=9)).run()  # calls 9-12 are round 3
    assert gc.isenabled()


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_pause_gc_must_be_a_bool(bad):
    with pytest.raises(ScenarioError, match="pause_gc must be True or False"):
        _scenario(rendezvous_problem(ADDRESSES)).run(pause_gc=bad)


@pytest.mark.parametrize("timing, links, mode", [
    (Lockstep(), Links(), "broadcast"),
    (Lockstep(missing="stale"), LOSSY, "unicast"),
    (Deadline(deadline=0.5, missing="renormalize"), LOSSY, "broadcast"),
    (Async(rate=2.0), LOSSY, "broadcast"),
    (Async(rate=2.0, staleness=2), LOSSY, "unicast"),
])
def test_cyclic_garbage_of_a_run_does_not_grow_with_its_length(gc_enabled, timing, links, mode):
    """What the pause relies on: reference counting frees everything a run makes per message and round.

    The only cycle left is SimPy's Environment, which binds its event classes to
    itself (a fixed handful of objects per run), so a 40-round run leaves
    exactly as much cyclic garbage as a 5-round run.
    """
    def garbage(horizon: int) -> int:
        sc = Scenario(rendezvous_problem(ADDRESSES), topology.static(RING),
                      Huang2015(epsilon=1.0, c=0.2, q=0.8, p=0.9), timing=timing, links=links, mode=mode,
                      horizon=horizon, seed=4, record_transcript=True)
        gc.collect()
        gc.disable()
        try:
            result = sc.run(pause_gc=False)
            assert result.messages_sent > 0
            del result
            return gc.collect()
        finally:
            gc.enable()

    garbage(3)  # first use may import modules, which leaves garbage once
    short, long = garbage(5), garbage(40)
    assert long == short <= 16
