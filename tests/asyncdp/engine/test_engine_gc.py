"""The SimPy engine's garbage-collection policy (freeze_gc), and runs that make no reference cycles."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import topology
from asyncdp import Huang2015
from asyncdp.problems.costs import FunctionClass, UserCost
from asyncdp.problems.domains import Box
from asyncdp.errors import CostValueError, ScenarioError
from asyncdp.engine.links import LinkModel, Links, LogNormalLatency
from asyncdp.problems.problem import Problem, rendezvous_problem
from asyncdp.scenario import Scenario
from asyncdp.engine.timing import Async, Deadline, Lockstep

ADDRESSES = np.array([[0.5, 0.2], [-0.4, 0.1], [0.0, -0.6], [0.3, 0.3]])
RING = 0.5 * (np.eye(4) + np.roll(np.eye(4), 1, axis=0))
LOSSY = Links(LinkModel(LogNormalLatency(0.1, 0.5), loss=0.1))
FC = FunctionClass(gradient_bound=4 * np.sqrt(2), strong_convexity=2.0, hessian_bound=2.0)


def _problem(gradient) -> Problem:
    """f_i(x) = ||x||^2 with a user gradient callable."""
    return Problem(Box(-1.0, 1.0, dim=2), UserCost([lambda x: float(x @ x)] * 4, [gradient] * 4, FC, dim=2))


def _scenario(problem, horizon: int = 5, **kw):
    return Scenario(problem, topology.static(RING), Huang2015(epsilon=1.0, c=0.2, q=0.8, p=0.9), horizon=horizon,
                    seed=1, **kw)


@pytest.fixture
def clean_gc():
    """No frozen objects and the collector on, before and after each test."""
    assert gc.get_freeze_count() == 0
    was = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()
    if not was:
        gc.disable()


def _observing(seen: list[tuple[bool, int]], nan_at_call: int | None = None):
    def gradient(x):
        seen.append((gc.isenabled(), gc.get_freeze_count()))
        return np.array([np.nan, 0.0]) if len(seen) == nan_at_call else 2 * x
    return gradient


def test_run_freezes_the_existing_heap_and_unfreezes_after(clean_gc):
    seen: list[tuple[bool, int]] = []
    _scenario(_problem(_observing(seen))).run()
    assert seen and all(enabled and frozen > 0 for enabled, frozen in seen)  # collector on, old heap frozen
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    seen.clear()
    _scenario(_problem(_observing(seen))).run(freeze_gc=False)
    assert seen and all(enabled and frozen == 0 for enabled, frozen in seen)


def test_a_heap_frozen_by_the_user_is_left_alone(clean_gc, monkeypatch):
    gc.freeze()  # e.g. a server that froze its heap before forking
    calls: list[str] = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
    _scenario(rendezvous_problem(ADDRESSES)).run()
    assert calls == []  # neither frozen again nor unfrozen by the run
    monkeypatch.undo()
    assert gc.get_freeze_count() > 0


def test_unfrozen_when_the_run_fails(clean_gc):
    seen: list[tuple[bool, int]] = []
    with pytest.raises(CostValueError, match="round 3"):
        _scenario(_problem(_observing(seen, nan_at_call=9))).run()  # calls 9-12 are round 3
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_cyclic_garbage_of_user_code_is_collected_during_the_run(clean_gc):
    """A cost function that makes a reference cycle per call: the cycles do not pile up while the run goes on."""
    alive: list[weakref.ref] = []
    live_counts: list[int] = []  # sampled inside the run

    class Node:
        pass

    def gradient(x):
        node = Node()
        node.self = node  # a cycle, as closures, tracebacks or graphs make
        alive.append(weakref.ref(node))
        if len(alive) % 200 == 0:
            live_counts.append(sum(r() is not None for r in alive))
        return 2 * x

    sc = _scenario(_problem(gradient), horizon=600, record_transcript=False)
    alive.clear()  # building the problem evaluates the gradient a few times
    live_counts.clear()
    sc.run()
    assert len(live_counts) >= 12  # 4 agents x 600 rounds = 2400 calls, sampled every 200
    # with the collector running, at most about one young generation (700 objects) is ever alive;
    # had it been paused, the count would grow to 2400 by the end of the run
    assert max(live_counts) < 1000


@pytest.mark.parametrize("bad", ["yes", 1, None])
@pytest.mark.parametrize("engine", ["simpy", "batch"])
def test_freeze_gc_must_be_a_bool(engine, bad):
    with pytest.raises(ScenarioError, match="freeze_gc must be True or False"):
        _scenario(rendezvous_problem(ADDRESSES)).run(engine=engine, freeze_gc=bad)


@pytest.mark.parametrize("timing, links, mode", [
    (Lockstep(), Links(), "broadcast"),
    (Lockstep(missing="stale"), LOSSY, "unicast"),
    (Deadline(deadline=0.5, missing="renormalize"), LOSSY, "broadcast"),
    (Async(rate=2.0), LOSSY, "broadcast"),
    (Async(rate=2.0, staleness=2), LOSSY, "unicast"),
])
def test_cyclic_garbage_of_a_run_does_not_grow_with_its_length(clean_gc, timing, links, mode):
    """Reference counting frees everything a run makes per message and round.

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
            result = sc.run(freeze_gc=False)
            assert result.messages_sent > 0
            del result
            return gc.collect()
        finally:
            gc.enable()

    garbage(3)  # first use may import modules, which leaves garbage once
    short, long = garbage(5), garbage(40)
    assert long == short <= 16


def _ring_problem(n: int) -> Problem:
    return rendezvous_problem(np.random.default_rng(0).uniform(-1.0, 1.0, size=(n, 2)))


def _ring(n: int):
    """A ring of ``n`` agents with Metropolis weights (sparse: no n x n array)."""
    import networkx as nx

    return topology.from_networkx([nx.cycle_graph(n)], "metropolis", periodic=True)


@pytest.mark.parametrize("n_agents, cap", [(4, None), (100, None), (100, 1500)])
def test_young_generation_scales_with_the_agents_during_the_run_and_is_restored(clean_gc, monkeypatch, n_agents,
                                                                                 cap):
    from asyncdp.engine import simpy_engine

    if cap is not None:
        monkeypatch.setattr(simpy_engine, "YOUNG_OBJECTS_MAX", cap)

    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []
    original = simpy_engine._Run._run

    def observing_run(self):
        seen.append(gc.get_threshold())
        return original(self)

    monkeypatch.setattr(simpy_engine._Run, "_run", observing_run)
    sc = Scenario(_ring_problem(n_agents), _ring(n_agents), Huang2015(epsilon=1.0, c=0.2, q=0.8, p=0.9),
                  horizon=1, seed=1, record_transcript=False)
    sc.run()
    expected = max(before[0], min(20 * n_agents, cap or 10**6))
    assert seen == [(expected, *before[1:])]
    assert gc.get_threshold() == before
    seen.clear()
    sc.run(freeze_gc=False)
    assert seen == [before]


def test_thresholds_restored_when_the_run_fails(clean_gc):
    before = gc.get_threshold()
    with pytest.raises(CostValueError, match="round 3"):
        _scenario(_problem(_observing([], nan_at_call=9))).run()
    assert gc.get_threshold() == before


def test_a_higher_threshold_set_by_the_user_is_kept(clean_gc):
    before = gc.get_threshold()
    seen: list[int] = []

    def gradient(x):
        seen.append(gc.get_threshold()[0])
        return 2 * x

    gc.set_threshold(50_000, *before[1:])
    try:
        _scenario(_problem(gradient)).run()
        assert seen and set(seen) == {50_000}
        assert gc.get_threshold()[0] == 50_000
    finally:
        gc.set_threshold(*before)


def test_runs_in_several_threads_restore_the_collector_once_all_have_ended(clean_gc):
    """Overlapping runs in two threads, the first to start ending first: the collector is restored only at the end."""
    import threading

    before = gc.get_threshold()
    first_done = threading.Event()
    second_seen: list[tuple[int, int]] = []

    def waiting_gradient(x):  # the second run: outlives the first
        first_done.wait(60)
        second_seen.append((gc.get_threshold()[0], gc.get_freeze_count()))
        return 2 * x

    second = _scenario(_problem(waiting_gradient), horizon=2)
    errors: list[BaseException] = []

    def run_second():
        try:
            second.run()
        except BaseException as exc:  # pragma: no cover - reported by the assertion below
            errors.append(exc)

    thread = threading.Thread(target=run_second)
    started: list[bool] = []

    def starting_gradient(x):  # the first run starts the second one, then ends while it waits
        if not started:
            started.append(True)
            thread.start()
        return 2 * x

    n = 100
    problem = Problem(Box(-1.0, 1.0, dim=2), UserCost([lambda x: float(x @ x)] * n, [starting_gradient] * n, FC,
                                                      dim=2))
    Scenario(problem, _ring(n), Huang2015(epsilon=1.0, c=0.2, q=0.8, p=0.9), horizon=2, seed=1).run()
    first_done.set()
    thread.join(60)
    assert not errors and second_seen
    assert all(frozen > 0 for _, frozen in second_seen)  # the heap stays frozen while the second run goes on
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0  # restored once, after both


def test_collection_disabled_by_threshold_zero_stays_disabled(clean_gc):
    before = gc.get_threshold()
    seen: list[int] = []

    def gradient(x):
        seen.append(gc.get_threshold()[0])
        return 2 * x

    gc.set_threshold(0, *before[1:])
    try:
        _scenario(_problem(gradient)).run()
        assert seen and set(seen) == {0} and gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)
